"""Two-level diffusion planner in the style of HD / HD-DA (Chen et al., 2024).

"Simple Hierarchical Planning with Diffusion" plans a sparse sequence of subgoals with a
high-level Diffuser trained on windows subsampled every ``jump`` steps, then fills each pair
of consecutive subgoals with a low-level Diffuser trained on ``jump + 1``-step windows whose
two ends are inpainted. LoMAP's paper uses a hierarchical planner as its second setting; the
official ``lomaphd`` pipeline projects the subgoal (high) level only. Give a level LoMAP by
passing a :class:`~lomap_planner.lomap.LoMAP` built on that level's own (normalised) windows to
its :class:`~lomap_planner.planner.DiffuserPlanner`.
"""

from __future__ import annotations

import time

import numpy as np

from lomap_planner.datasets import make_windows
from lomap_planner.planner import DiffuserPlanner

__all__ = ["HierarchicalPlanner", "make_hierarchical_windows"]


def make_hierarchical_windows(
    data: dict[str, np.ndarray], n_subgoals: int, jump: int, include_actions: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Training windows of both levels from one dataset.

    Parameters
    ----------
    data : dict
        D4RL-layout dataset.
    n_subgoals : int
        Subgoal intervals ``K`` of a high-level plan (it holds ``K + 1`` states and spans
        ``K * jump`` steps).
    jump : int
        Steps between consecutive subgoals.
    include_actions : bool, default=False

    Returns
    -------
    high : ndarray, shape (n_high, K + 1, C)
        Every ``jump``-th state of each ``K * jump + 1``-step window.
    low : ndarray, shape (n_low, jump + 1, C)
    """
    for name, v in (("jump", jump), ("n_subgoals", n_subgoals)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not isinstance(include_actions, bool | np.bool_):
        raise TypeError(f"include_actions must be a bool, got {include_actions!r}")
    high = make_windows(data, n_subgoals * jump + 1, include_actions=include_actions)[:, ::jump]
    low = make_windows(data, jump + 1, include_actions=include_actions)
    return np.ascontiguousarray(high), low


class HierarchicalPlanner:
    """Plan subgoals with ``high``, join consecutive subgoals with ``low`` (one batch).

    Parameters
    ----------
    high : DiffuserPlanner
        Horizon ``K + 1`` (subgoals every ``jump`` steps), trained with the goal position
        inpainted at its last step (as a flat Maze2D Diffuser).
    low : DiffuserPlanner
        Horizon ``jump + 1``, trained with full states inpainted at both ends
        (``train_diffusion(..., goal_features=obs_dim)``).

    Notes
    -----
    The plan has ``K * jump + 1`` steps: segment ``k`` contributes its first ``jump`` states
    and the last segment all ``jump + 1``. Subgoal ``k`` of the high level is inpainted as
    the end of segment ``k - 1`` and the start of segment ``k``, so the plan passes through
    every subgoal exactly.
    """

    def __init__(self, high: DiffuserPlanner, low: DiffuserPlanner) -> None:
        if not isinstance(high, DiffuserPlanner) or not isinstance(low, DiffuserPlanner):
            raise TypeError("high and low must be DiffuserPlanner instances")
        if high.diffusion.transition_dim != low.diffusion.transition_dim:
            raise ValueError("high and low must plan the same transition features")
        if high.action_dim != low.action_dim:
            raise ValueError("high and low must have the same action_dim")
        if low.diffusion.horizon < 2 or high.diffusion.horizon < 2:
            raise ValueError("both levels need a horizon >= 2")
        self.high, self.low = high, low
        self.last_plan_time = 0.0

    @property
    def action_dim(self) -> int:
        return self.high.action_dim

    @property
    def jump(self) -> int:
        return self.low.diffusion.horizon - 1

    @property
    def horizon(self) -> int:
        """Steps of a full plan: ``K * jump + 1``."""
        return (self.high.diffusion.horizon - 1) * self.jump + 1

    def plan(self, obs: np.ndarray, goal: np.ndarray, seed: int | None = None) -> np.ndarray:
        """Sample plans from ``obs`` to ``goal`` through sampled subgoals.

        Parameters
        ----------
        obs : ndarray, shape (obs_dim,) or (B, obs_dim)
        goal : ndarray, shape (2,) or (B, 2)
        seed : int, optional

        Returns
        -------
        ndarray, shape (B, K * jump + 1, act_dim + obs_dim)
        """
        t0 = time.perf_counter()
        sub = self.high.plan(obs, goal, seed=seed)  # (B, K + 1, C), validates the inputs
        b, kp1, _ = sub.shape
        k, a = kp1 - 1, self.action_dim
        states = sub[:, :, a:]
        states[:, 0] = np.atleast_2d(np.asarray(obs, dtype=float))  # exact start
        jump = self.jump
        seg = self.low.sample(
            {
                0: states[:, :-1].reshape(b * k, -1),
                jump: states[:, 1:].reshape(b * k, -1),
            },
            seed=None if seed is None else seed + 1,
        ).reshape(b, k, jump + 1, -1)
        out = np.concatenate([seg[:, :, :-1].reshape(b, k * jump, -1), seg[:, -1, -1:]], 1)
        self.last_plan_time = time.perf_counter() - t0
        return out
