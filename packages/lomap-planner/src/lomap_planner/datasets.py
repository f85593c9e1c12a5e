"""D4RL-style Maze2D datasets: generation, HDF5 I/O, validation, episode windows.

The generator mirrors how D4RL collected Maze2D: one long stream in which a
waypoint controller (plus Gaussian action noise) drives the ball to a random goal
cell; when the goal is reached a new one is drawn.  ``timeouts`` mark every
``max_episode_steps`` steps; ``terminals`` are all ``False`` (D4RL Maze2D never
terminates).  Keys follow the D4RL layout.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from lomap_planner.controller import WaypointController
from lomap_planner.env import PointMazeEnv
from lomap_planner.physics import point_mass_step

__all__ = [
    "REQUIRED_KEYS",
    "collect_maze2d_dataset",
    "episode_bounds",
    "load_hdf5",
    "load_minari",
    "make_windows",
    "save_hdf5",
    "validate_dataset",
]

REQUIRED_KEYS = ("observations", "actions", "rewards", "terminals", "timeouts")
# d4rl's own loader accepts files without ``timeouts`` (older datasets); they are then all False
OPTIONAL_KEYS = ("timeouts",)


def collect_maze2d_dataset(
    env: PointMazeEnv,
    n_steps: int,
    action_noise: float = 0.5,
    n_streams: int = 16,
    seed: int = 0,
    verbose: bool = False,
) -> dict[str, np.ndarray]:
    """Collect a D4RL Maze2D-style dataset with the waypoint controller.

    ``n_streams`` independent streams are simulated in lock-step (batched physics)
    and concatenated; each stream's last step is flagged as a timeout so no
    window spans two streams.

    Parameters
    ----------
    env : PointMazeEnv
        Supplies the layout, physics and frame skip (it is not stepped).
    n_steps : int
        Total number of transitions (rounded up to a multiple of ``n_streams``).
    action_noise : float, default=0.5
        Std of Gaussian noise added to the controller's action before clipping.
    n_streams : int, default=16
    seed : int, default=0
    verbose : bool, default=False
        Show a progress bar.

    Returns
    -------
    dict of ndarray
        ``observations`` (n, 4), ``actions`` (n, 2), ``rewards`` (n,), ``terminals``
        (n,), ``timeouts`` (n,), plus ``infos/goal`` (n, 2), ``infos/qpos`` (n, 2)
        and ``infos/qvel`` (n, 2).
    """
    if not isinstance(env, PointMazeEnv):
        raise TypeError(f"env must be a PointMazeEnv, got {type(env).__name__}")
    if not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive int, got {n_steps!r}")
    if not isinstance(n_streams, (int, np.integer)) or n_streams < 1:
        raise ValueError(f"n_streams must be a positive int, got {n_streams!r}")
    if not np.isfinite(action_noise) or action_noise < 0:
        raise ValueError(f"action_noise must be >= 0, got {action_noise}")
    rng = np.random.default_rng(seed)
    ctrl = WaypointController(env.walls)
    cells = env.free.astype(float)
    m = n_streams
    length = -(-n_steps // m)

    def new_goals(k: int) -> np.ndarray:
        return cells[rng.integers(len(cells), size=k)] + rng.uniform(-0.25, 0.25, (k, 2))

    goal = new_goals(m)
    pos = cells[rng.integers(len(cells), size=m)] + rng.uniform(-0.1, 0.1, (m, 2))
    vel = np.zeros((m, 2))
    obs = np.zeros((length, m, 4))
    acts = np.zeros((length, m, 2))
    rews = np.zeros((length, m))
    goals = np.zeros((length, m, 2))
    for t in tqdm(range(length), disable=not verbose, desc="collect"):
        state = np.concatenate([pos, vel], 1)
        _, reached = ctrl(state, goal)
        if reached.any():
            goal[reached] = new_goals(int(reached.sum()))
        action, _ = ctrl(state, goal)
        action = np.clip(action + action_noise * rng.standard_normal((m, 2)), -1.0, 1.0)
        obs[t], acts[t], goals[t] = state, action, goal
        for _ in range(env.frame_skip):
            pos, vel = point_mass_step(pos, vel, action, env.walls, env.physics)
            rews[t] += np.linalg.norm(pos - goal, axis=1) <= 0.5
    timeouts = np.zeros((length, m), dtype=bool)
    timeouts[env.max_episode_steps - 1 :: env.max_episode_steps] = True
    timeouts[-1] = True

    def flat(a: np.ndarray, dtype: type = np.float32) -> np.ndarray:
        # Stream-major order: stream 0's steps, then stream 1's, ...
        return np.swapaxes(a, 0, 1).reshape(m * length, *a.shape[2:])[:n_steps].astype(dtype)

    observations = flat(obs)
    out = {
        "observations": observations,
        "actions": flat(acts),
        "rewards": flat(rews),
        "terminals": np.zeros(min(n_steps, m * length), dtype=bool),
        "timeouts": flat(timeouts, bool),
        "infos/goal": flat(goals),
        "infos/qpos": observations[:, :2].copy(),
        "infos/qvel": observations[:, 2:].copy(),
    }
    out["timeouts"][-1] = True
    return out


def validate_dataset(data: dict[str, Any]) -> dict[str, np.ndarray]:
    """Check a D4RL-layout dataset and return it as arrays (no copy of the caller's).

    Raises
    ------
    ValueError
        On missing keys, mismatched lengths, wrong ranks, empty data or NaN/inf.
    """
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict, got {type(data).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in data and k not in OPTIONAL_KEYS]
    if missing:
        raise ValueError(f"dataset is missing required keys {missing}")
    arrs = {k: np.asarray(v) for k, v in data.items()}
    n = len(arrs["observations"])
    if "timeouts" not in arrs:
        arrs["timeouts"] = np.zeros(n, dtype=bool)
    if n == 0:
        raise ValueError("observations is empty")
    if arrs["observations"].ndim != 2 or arrs["actions"].ndim != 2:
        raise ValueError("observations and actions must be 2-D arrays (n, dim)")
    for k in REQUIRED_KEYS:
        if len(arrs[k]) != n:
            raise ValueError(f"{k} has length {len(arrs[k])}, but observations has length {n}")
    for k in ("observations", "actions", "rewards"):
        if not np.isfinite(arrs[k]).all():
            raise ValueError(f"{k} contains NaN or inf")
    return arrs


def save_hdf5(data: dict[str, np.ndarray], path: str | os.PathLike) -> None:
    """Write a dataset to HDF5 with D4RL keys (``infos/goal`` becomes a group)."""
    import h5py

    arrs = validate_dataset(data)
    with h5py.File(path, "w") as f:
        for k, v in arrs.items():
            f.create_dataset(k, data=v, compression="gzip")


def load_hdf5(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read any D4RL-layout HDF5 file (e.g. a real ``maze2d-large-v1.hdf5``).

    Returns every dataset in the file keyed by its full path (``infos/goal``...),
    after :func:`validate_dataset`; files without ``timeouts`` are accepted (as d4rl does).
    """
    import h5py

    if not os.path.exists(path):
        raise ValueError(f"path {os.fspath(path)!r} does not exist")
    data: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset):
                data[name] = obj[()]

        f.visititems(visit)
    return validate_dataset(data)


def load_minari(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a Minari dataset (``main_data.hdf5`` with one group per episode) as D4RL arrays.

    Parameters
    ----------
    path : str or PathLike
        The ``main_data.hdf5`` file, or the dataset directory holding ``data/main_data.hdf5``.

    Returns
    -------
    dict
        ``observations`` (the ``observation`` entry of dict observations, e.g. PointMaze's
        (x, y, vx, vy)), ``actions``, ``rewards``, ``terminals`` (Minari ``terminations``),
        ``timeouts`` (``truncations``, and the last step of every episode), and
        ``infos/goal`` from ``desired_goal`` when present. Minari stores ``T + 1``
        observations per episode; the last (post-terminal) one is dropped.
    """
    import h5py

    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "data", "main_data.hdf5")
    if not os.path.isfile(path):
        raise ValueError(f"path {path!r} is not a Minari main_data.hdf5 file")
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("observations", "actions", "rewards", "terminals", "timeouts", "infos/goal")
    }
    with h5py.File(path, "r") as f:
        names = sorted((k for k in f if k.startswith("episode_")), key=lambda k: int(k[8:]))
        if not names:
            raise ValueError(f"{path!r} holds no episode_* groups")
        for name in names:
            ep = f[name]
            obs = ep["observations"]
            t = len(ep["actions"])
            if isinstance(obs, h5py.Group):
                cols["observations"].append(obs["observation"][:t])
                if "desired_goal" in obs:
                    cols["infos/goal"].append(obs["desired_goal"][:t])
            else:
                cols["observations"].append(obs[:t])
            cols["actions"].append(ep["actions"][()])
            cols["rewards"].append(ep["rewards"][()])
            cols["terminals"].append(ep["terminations"][()].astype(bool))
            trunc = ep["truncations"][()].astype(bool).copy()
            trunc[-1] = True  # episode boundary
            cols["timeouts"].append(trunc)
    out = {k: np.concatenate(v) for k, v in cols.items() if v}
    return validate_dataset(out)


def episode_bounds(data: dict[str, np.ndarray]) -> np.ndarray:
    """``(start, stop)`` index pairs of the episodes split at timeouts/terminals.

    Returns
    -------
    ndarray of int, shape (n_episodes, 2)
    """
    arrs = validate_dataset(data)
    ends = np.flatnonzero(arrs["timeouts"].astype(bool) | arrs["terminals"].astype(bool)) + 1
    n = len(arrs["observations"])
    stops = np.unique(np.concatenate([ends, [n]]))
    starts = np.concatenate([[0], stops[:-1]])
    return np.stack([starts, stops], axis=1)


def make_windows(
    data: dict[str, np.ndarray], horizon: int, stride: int = 1, include_actions: bool = True
) -> np.ndarray:
    """All length-``horizon`` windows that stay inside one episode.

    Parameters
    ----------
    data : dict
        D4RL-layout dataset.
    horizon : int
    stride : int, default=1
        Step between window starts.
    include_actions : bool, default=True
        Diffuser's layout: each step is ``[action, observation]``.

    Returns
    -------
    ndarray of float32, shape (n_windows, horizon, act_dim + obs_dim)
    """
    if not isinstance(horizon, (int, np.integer)) or horizon < 2:
        raise ValueError(f"horizon must be an int >= 2, got {horizon!r}")
    if not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError(f"stride must be a positive int, got {stride!r}")
    arrs = validate_dataset(data)
    obs = arrs["observations"].astype(np.float32)
    x = np.concatenate([arrs["actions"].astype(np.float32), obs], 1) if include_actions else obs
    starts = [np.arange(a, b - horizon + 1, stride) for a, b in episode_bounds(arrs)]
    starts = np.concatenate(starts) if starts else np.zeros(0, dtype=int)
    if len(starts) == 0:
        raise ValueError(f"no episode is at least horizon={horizon} steps long")
    idx = starts[:, None] + np.arange(horizon)[None]
    return x[idx]
