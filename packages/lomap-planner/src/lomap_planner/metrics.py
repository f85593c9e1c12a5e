"""Evaluation: infeasible-plan fraction, D4RL normalised score, closed-loop rollouts."""

from __future__ import annotations

import time

import numpy as np

from lomap_planner._checks import check_int, check_real
from lomap_planner.env import PointMazeEnv
from lomap_planner.geometry import plan_is_infeasible, segments_hit_walls

__all__ = [
    "D4RL_REF_MAX_SCORE",
    "D4RL_REF_MIN_SCORE",
    "infeasible_plan_fraction",
    "normalized_score",
    "rollout_planner",
]

# Reference returns of D4RL (``d4rl/infos.py``) for maze2d-*-v1.
D4RL_REF_MIN_SCORE = {"umaze": 23.85, "medium": 13.13, "large": 6.7}
D4RL_REF_MAX_SCORE = {"umaze": 161.86, "medium": 277.39, "large": 273.99}


def normalized_score(layout: str, returns: float | np.ndarray) -> float | np.ndarray:
    """D4RL normalised score ``100 * (R - R_random) / (R_expert - R_random)``.

    Parameters
    ----------
    layout : {"umaze", "medium", "large"}
    returns : float or ndarray
        Undiscounted episode returns on the D4RL scale (one point per physics step
        at the goal, episodes of 300/600/800 physics steps).
    """
    if layout not in D4RL_REF_MIN_SCORE:
        raise ValueError(f"layout must be one of {sorted(D4RL_REF_MIN_SCORE)}, got {layout!r}")
    r = np.asarray(returns, dtype=float)
    if not np.isfinite(r).all():
        raise ValueError("returns contains NaN or inf")
    lo, hi = D4RL_REF_MIN_SCORE[layout], D4RL_REF_MAX_SCORE[layout]
    out = 100.0 * (r - lo) / (hi - lo)
    return float(out) if out.ndim == 0 else out


def infeasible_plan_fraction(
    plans: np.ndarray, walls: np.ndarray, pos_slice: slice = slice(0, 2)
) -> float:
    """Fraction of plans with at least one segment crossing a wall (LoMAP's
    "artifact ratio").

    Parameters
    ----------
    plans : ndarray, shape (n_plans, horizon, features)
    walls : ndarray of bool, shape (n_rows, n_cols)
    pos_slice : slice, default=slice(0, 2)
        Columns holding the ``(x, y)`` position.
    """
    p = np.asarray(plans, dtype=float)
    if p.ndim != 3 or len(p) == 0:
        raise ValueError(
            f"plans must be a non-empty array (n_plans, horizon, features), got {p.shape}"
        )
    if not np.isfinite(p).all():
        raise ValueError("plans contain NaN or inf")
    return float(plan_is_infeasible(p[..., pos_slice], walls).mean())


def rollout_planner(
    env: PointMazeEnv,
    planner,
    n_episodes: int = 5,
    seed: int = 0,
    p_gain: float = 10.0,
    d_gain: float = -1.0,
    replan_every: int | None = None,
) -> dict[str, np.ndarray]:
    """Closed-loop evaluation as in Diffuser's Maze2D script.

    Plan once from the reset state to the goal, then track the plan's next
    position with a PD controller (``replan_every`` steps: plan again).  All
    episodes are planned in one batch at every (re)planning step.

    Parameters
    ----------
    env : PointMazeEnv or RoboticsPointMazeEnv
        Anything with ``spawn()``, ``walls``, ``goal`` and ``max_episode_steps``; episodes
        start at random free cells; the goal is ``env.goal`` (D4RL's fixed goal).
    planner : DiffuserPlanner
    n_episodes : int, default=5
    seed : int, default=0
    p_gain, d_gain : float
        PD gains of the plan-tracking controller.
    replan_every : int, optional

    Returns
    -------
    dict
        ``returns`` (n_episodes,), ``plans`` (first plans, (n_episodes, H, C)),
        ``plan_time`` (seconds per planning call, one entry per call),
        ``infeasible`` (bool per first plan), ``bad_segments`` (fraction of each
        first plan's segments that cross a wall).
    """
    for name in ("spawn", "walls", "goal", "max_episode_steps"):
        if not hasattr(env, name):
            raise TypeError(f"env must be a PointMazeEnv-like environment (no {name!r}), got {type(env).__name__}")  # fmt: skip
    if not callable(getattr(planner, "plan", None)) or not hasattr(planner, "action_dim"):
        raise TypeError(f"planner must have plan(obs, goal, seed) and action_dim, got {type(planner).__name__}")  # fmt: skip
    n_episodes = check_int("n_episodes", n_episodes, 1)
    seed = check_int("seed", seed, 0)
    p_gain, d_gain = check_real("p_gain", p_gain), check_real("d_gain", d_gain)
    if replan_every is not None:
        replan_every = check_int("replan_every", replan_every, 1)
    envs = [env.spawn() for _ in range(n_episodes)]
    resets = [e.reset(seed=seed + k) for k, e in enumerate(envs)]
    obs = np.stack([o for o, _ in resets])
    goal = env.goal if env.goal is not None else resets[0][1]["goal"]
    adim = planner.action_dim
    times, first_plans = [], None
    returns = np.zeros(n_episodes)
    plans, t_plan = None, 0
    for t in range(env.max_episode_steps):
        if plans is None or (replan_every is not None and t - t_plan >= replan_every):
            t0 = time.perf_counter()
            plans = planner.plan(obs, goal, seed=seed + t)
            times.append(time.perf_counter() - t0)
            t_plan = t
            if first_plans is None:
                first_plans = plans
        k = min(t - t_plan + 1, plans.shape[1] - 1)
        wp = plans[:, k, adim : adim + 2]
        act = np.clip(p_gain * (wp - obs[:, :2]) + d_gain * obs[:, 2:4], -1, 1)
        for n, e in enumerate(envs):
            obs[n], r, _, _, _ = e.step(act[n])
            returns[n] += r
    pos = first_plans[..., adim : adim + 2]
    return {
        "returns": returns,
        "plans": first_plans,
        "bad_segments": segments_hit_walls(pos[:, :-1], pos[:, 1:], env.walls).mean(1),
        "plan_time": np.asarray(times),
        "infeasible": plan_is_infeasible(first_plans[..., adim : adim + 2], env.walls),
    }
