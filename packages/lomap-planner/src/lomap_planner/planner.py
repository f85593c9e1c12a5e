"""Goal-conditioned Diffuser planner for Maze2D, with optional LoMAP."""

from __future__ import annotations

import time

import numpy as np
import torch

from lomap_planner._checks import check_real, check_seed
from lomap_planner.diffusion import GaussianDiffusion
from lomap_planner.lomap import LoMAP
from lomap_planner.normalizers import LimitsNormalizer

__all__ = ["DiffuserPlanner"]


class DiffuserPlanner:
    """Plan ``[action, observation]`` windows from a start state to a goal position.

    Parameters
    ----------
    diffusion : GaussianDiffusion
        Trained model (works in the normalised space).
    normalizer : LimitsNormalizer
        Normaliser of the ``[action, observation]`` features.
    lomap : LoMAP, optional
        Manifold projection applied while sampling (training-free).
    guide : callable, optional
        Value guide ``J(x_normalised) -> (B,)``.
    guide_scale : float, default=0.0
    """

    def __init__(
        self,
        diffusion: GaussianDiffusion,
        normalizer: LimitsNormalizer,
        lomap: LoMAP | None = None,
        guide=None,
        guide_scale: float = 0.0,
    ) -> None:
        if not isinstance(diffusion, GaussianDiffusion):
            raise TypeError(f"diffusion must be a GaussianDiffusion, got {type(diffusion).__name__}")  # fmt: skip
        if not isinstance(normalizer, LimitsNormalizer):
            raise TypeError(f"normalizer must be a LimitsNormalizer, got {type(normalizer).__name__}")  # fmt: skip
        if lomap is not None and not isinstance(lomap, LoMAP):
            raise TypeError(f"lomap must be a LoMAP or None, got {type(lomap).__name__}")
        if guide is not None and not callable(guide):
            raise TypeError(f"guide must be callable or None, got {type(guide).__name__}")
        guide_scale = check_real("guide_scale", guide_scale, 0.0)
        if len(normalizer.mins) != diffusion.transition_dim:
            raise ValueError("normalizer and diffusion disagree on transition_dim")
        self.diffusion, self.normalizer, self.lomap = diffusion, normalizer, lomap
        self.guide, self.guide_scale = guide, guide_scale
        self.last_plan_time = 0.0

    @property
    def action_dim(self) -> int:
        return self.diffusion.action_dim

    def _norm_obs(self, obs: np.ndarray, start: int) -> torch.Tensor:
        a = self.action_dim + start
        mins = self.normalizer.mins[a : a + obs.shape[1]]
        scale = self.normalizer.scale[a : a + obs.shape[1]]
        return torch.as_tensor(2.0 * (obs - mins) / scale - 1.0, dtype=torch.float32, device="cpu")

    def plan(self, obs: np.ndarray, goal: np.ndarray, seed: int | None = None) -> np.ndarray:
        """Sample plans from ``obs`` that end at ``goal``.

        Parameters
        ----------
        obs : ndarray, shape (obs_dim,) or (B, obs_dim)
        goal : ndarray, shape (2,) or (B, 2)
            Goal position (the last planned position is inpainted with it).
        seed : int, optional

        Returns
        -------
        ndarray, shape (B, horizon, act_dim + obs_dim)
            Unnormalised plans (B = 1 for 1-D inputs).
        """
        obs = np.atleast_2d(np.asarray(obs, dtype=float))
        goal = np.atleast_2d(np.asarray(goal, dtype=float))
        obs_dim = self.diffusion.transition_dim - self.action_dim
        if obs.ndim != 2 or obs.shape[1] != obs_dim or len(obs) == 0:
            raise ValueError(f"obs must have shape ({obs_dim},) or (B >= 1, {obs_dim}), got {obs.shape}")  # fmt: skip
        if goal.ndim != 2:
            raise ValueError(f"goal must have shape (2,) or ({len(obs)}, 2), got {goal.shape}")
        if goal.shape[1] != 2 or len(goal) not in (1, len(obs)):
            raise ValueError(f"goal must have shape (2,) or ({len(obs)}, 2), got {goal.shape}")
        if not (np.isfinite(obs).all() and np.isfinite(goal).all()):
            raise ValueError("obs and goal must be finite (no NaN/inf)")
        goal = np.broadcast_to(goal, (len(obs), 2))
        return self.sample({0: obs, self.diffusion.horizon - 1: goal}, seed=seed)

    def sample(self, conditions: dict[int, np.ndarray], seed: int | None = None) -> np.ndarray:
        """Sample plans with unnormalised observation features inpainted at fixed steps.

        Parameters
        ----------
        conditions : dict[int, ndarray of shape (B, n)]
            Time index -> the leading ``n`` observation features known there (unnormalised;
            :meth:`plan` uses the full start state and the goal position).
        seed : int, optional

        Returns
        -------
        ndarray, shape (B, horizon, act_dim + obs_dim)
        """
        if not isinstance(conditions, dict) or not conditions:
            raise ValueError("conditions must be a dict fixing at least one time step")
        seed = check_seed("seed", seed)
        obs_dim = self.diffusion.transition_dim - self.action_dim
        cond = {}
        for t, v in conditions.items():
            a = np.asarray(v, dtype=float)
            if a.ndim != 2 or not 1 <= a.shape[1] <= obs_dim:
                raise ValueError(f"conditions[{t!r}] must have shape (B, n <= {obs_dim}), got {a.shape}")  # fmt: skip
            cond[t] = self._norm_obs(a, 0)  # the diffusion model checks keys, B and finiteness
        gen = torch.Generator(device="cpu").manual_seed(seed) if seed is not None else None
        t0 = time.perf_counter()
        x = self.diffusion.sample(
            cond, guide=self.guide, guide_scale=self.guide_scale, lomap=self.lomap, generator=gen
        )
        self.last_plan_time = time.perf_counter() - t0
        return np.asarray(self.normalizer.unnormalize(x.double().cpu().numpy()))
