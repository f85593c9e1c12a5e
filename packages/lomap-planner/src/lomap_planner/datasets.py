"""D4RL-style Maze2D datasets: generation, HDF5 I/O, validation, episode windows.

The generator mirrors how D4RL collected Maze2D: one long stream in which a
waypoint controller (plus Gaussian action noise) drives the ball to a random goal
cell; when the goal is reached a new one is drawn.  ``timeouts`` mark every
``max_episode_steps`` steps; ``terminals`` are all ``False`` (D4RL Maze2D never
terminates).  Keys follow the D4RL layout.

**Frames.** The package puts cell ``(i, j)`` at centre ``(i, j)``.  D4RL's observations are
MuJoCo ``qpos`` of a ball whose body sits at ``(1.2, 1.2)`` while wall ``(i, j)`` sits at
``(i + 1, j + 1)``, so in a real ``maze2d-*.hdf5`` file cell ``(i, j)`` is centred at
``(i - 0.2, j - 0.2)``; :func:`from_d4rl_frame` / :func:`to_d4rl_frame` (and
``load_hdf5(..., d4rl_frame=True)``) shift positions, goals and ``qpos`` by that 0.2.
D4RL's rewards (``scripts/generation/relabel_maze2d_rewards.py``) are
``‖obs_t[:2] − goal‖ ≤ 0.5`` on the *current* observation with the environment's fixed goal
``(g_i, g_j)`` in D4RL's frame, i.e. ``(g_i + 0.2, g_j + 0.2)`` here (:func:`d4rl_goal`,
:func:`d4rl_sparse_rewards`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from lomap_planner.controller import D4RLWaypointController, WaypointController
from lomap_planner.env import D4RL_MAX_EPISODE_STEPS, PointMazeEnv
from lomap_planner.layouts import DEFAULT_GOALS, free_cells, get_layout
from lomap_planner.physics import PhysicsParams, point_mass_step

__all__ = [
    "D4RL_FRAME_OFFSET",
    "REQUIRED_KEYS",
    "collect_d4rl_dataset",
    "collect_maze2d_dataset",
    "d4rl_goal",
    "d4rl_sparse_rewards",
    "episode_bounds",
    "from_d4rl_frame",
    "load_hdf5",
    "load_minari",
    "make_windows",
    "save_hdf5",
    "to_d4rl_frame",
    "validate_dataset",
]

REQUIRED_KEYS = ("observations", "actions", "rewards", "terminals", "timeouts")
D4RL_FRAME_OFFSET = 0.2  # package position = D4RL qpos + 0.2
_POSITION_KEYS = ("infos/goal", "infos/qpos")


def _shift(data: dict[str, Any], delta: float) -> dict[str, np.ndarray]:
    out = {k: np.array(v, copy=True) for k, v in data.items()}
    if "observations" in out:
        out["observations"][:, :2] += delta
    for k in _POSITION_KEYS:
        if k in out:
            out[k][:, :2] += delta
    return out


def from_d4rl_frame(data: dict[str, Any]) -> dict[str, np.ndarray]:
    """Copy of a dataset in D4RL's frame (real ``maze2d`` files) moved to the package frame.

    Adds 0.2 to ``observations[:, :2]``, ``infos/goal`` and ``infos/qpos``; the input is untouched.
    """
    return _shift(data, D4RL_FRAME_OFFSET)


def to_d4rl_frame(data: dict[str, Any]) -> dict[str, np.ndarray]:
    """Inverse of :func:`from_d4rl_frame`."""
    return _shift(data, -D4RL_FRAME_OFFSET)


def d4rl_goal(layout: str) -> np.ndarray:
    """The fixed goal of ``maze2d-<layout>-v1`` in the package frame, shape (2,)."""
    if layout not in DEFAULT_GOALS:
        raise ValueError(f"layout must be one of {sorted(DEFAULT_GOALS)}, got {layout!r}")
    return np.asarray(DEFAULT_GOALS[layout], dtype=float) + D4RL_FRAME_OFFSET


def d4rl_sparse_rewards(observations: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """D4RL's Maze2D sparse reward ``‖obs[:2] − goal‖ ≤ 0.5`` per row (current observation).

    Parameters
    ----------
    observations : ndarray, shape (n, >= 2)
    goal : ndarray, shape (2,)
        Fixed goal in the same frame (:func:`d4rl_goal` for the package frame).

    Returns
    -------
    ndarray of float32, shape (n,)
    """
    obs = np.asarray(observations, dtype=float)
    g = np.asarray(goal, dtype=float)
    if obs.ndim != 2 or obs.shape[1] < 2:
        raise ValueError(f"observations must have shape (n, >=2), got {obs.shape}")
    if g.shape != (2,) or not np.all(np.isfinite(g)):
        raise ValueError(f"goal must be a finite array of shape (2,), got {g.shape}")
    return (np.linalg.norm(obs[:, :2] - g, axis=1) <= 0.5).astype(np.float32)


# d4rl's own loader accepts files without ``timeouts`` (older datasets); they are then all False
OPTIONAL_KEYS = ("timeouts",)


def collect_maze2d_dataset(
    env: PointMazeEnv,
    n_steps: int,
    action_noise: float = 0.5,
    n_streams: int = 16,
    seed: int = 0,
    verbose: bool = False,
    reward: str = "d4rl",
    goal_jitter: float = 0.1,
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
    reward : {"d4rl", "goal"}, default="d4rl"
        ``"d4rl"``: D4RL's relabelled sparse reward on the current observation with the
        layout's fixed goal (:func:`d4rl_sparse_rewards`; layouts without a D4RL goal use
        ``env.goal``); ``"goal"``: reaching the controller's current (moving) goal, summed over
        the physics steps of a frame skip (earlier versions).
    goal_jitter : float, default=0.1
        Collection goals are cell centres plus ``U(-goal_jitter, goal_jitter)`` per axis
        (D4RL's ``set_target``: 0.1).

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
    if reward not in ("d4rl", "goal"):
        raise ValueError(f"reward must be 'd4rl' or 'goal', got {reward!r}")
    if not (np.isfinite(goal_jitter) and 0 <= goal_jitter < 0.5):
        raise ValueError(f"goal_jitter must lie in [0, 0.5), got {goal_jitter}")
    rng = np.random.default_rng(seed)
    ctrl = WaypointController(env.walls)
    cells = env.free.astype(float)
    m = n_streams
    length = -(-n_steps // m)

    def new_goals(k: int) -> np.ndarray:
        return cells[rng.integers(len(cells), size=k)] + rng.uniform(
            -goal_jitter, goal_jitter, (k, 2)
        )

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
    if reward == "d4rl":
        name = env.layout_name
        fixed = d4rl_goal(name) if name in DEFAULT_GOALS else np.asarray(env.goal, dtype=float)
        rewards = d4rl_sparse_rewards(observations, fixed)
    else:
        rewards = flat(rews)
    out = {
        "observations": observations,
        "actions": flat(acts),
        "rewards": rewards,
        "terminals": np.zeros(min(n_steps, m * length), dtype=bool),
        "timeouts": flat(timeouts, bool),
        "infos/goal": flat(goals),
        "infos/qpos": observations[:, :2].copy(),
        "infos/qvel": observations[:, 2:].copy(),
    }
    out["timeouts"][-1] = True
    return out


def collect_d4rl_dataset(
    layout: str,
    n_steps: int,
    noisy: bool = True,
    seed: int = 0,
    verbose: bool = False,
) -> dict[str, np.ndarray]:
    """Collect Maze2D data the way ``scripts/generation/generate_maze2d_datasets.py`` does.

    One stream at ``frame_skip`` 1 in D4RL's frame: the ball starts in a random free cell
    ``+ U(±0.1)`` with velocity ``N(0, 0.1²)``; targets are random free cells ``+ U(±0.1)``;
    :class:`D4RLWaypointController` acts, plus ``N(0, 0.5²)`` noise when ``noisy``; an episode
    ends when the controller is done or after ``max_episode_steps`` (300 / 600 / 800), and a new
    target is drawn without resetting the ball. As in the script, the observation recorded right
    after an episode ends is the stale pre-step one (the script keeps ``s`` when ``done``), and
    ``terminals`` holds ``done``. Rewards are D4RL's relabelled sparse rewards.

    Parameters
    ----------
    layout : {"umaze", "medium", "large"}
    n_steps : int
        Number of transitions.
    noisy : bool, default=True
        ``maze2d-*-v1`` were collected with noise.
    seed : int, default=0
    verbose : bool, default=False

    Returns
    -------
    dict of ndarray
        D4RL keys in the **package** frame (``to_d4rl_frame`` gives the file frame), plus
        ``timeouts`` marking the episodes that ended by time.
    """
    if layout not in D4RL_MAX_EPISODE_STEPS or layout not in DEFAULT_GOALS or layout == "tiny":
        raise ValueError(f"layout must be 'umaze', 'medium' or 'large', got {layout!r}")
    if not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive int, got {n_steps!r}")
    rng = np.random.default_rng(seed)
    walls = get_layout(layout)
    cells = free_cells(walls).astype(float)  # D4RL: empty and goal locations, in its frame
    ctrl = D4RLWaypointController(walls, rng=rng)
    params = PhysicsParams()
    off = D4RL_FRAME_OFFSET
    max_steps = D4RL_MAX_EPISODE_STEPS[layout]

    def new_target() -> np.ndarray:
        return cells[rng.integers(len(cells))] + rng.uniform(-0.1, 0.1, 2)

    target = new_target()
    qpos = cells[rng.integers(len(cells))] + rng.uniform(-0.1, 0.1, 2)
    qvel = rng.standard_normal(2) * 0.1
    s = np.r_[qpos, qvel]
    obs = np.zeros((n_steps, 4))
    acts = np.zeros((n_steps, 2))
    goals = np.zeros((n_steps, 2))
    dones = np.zeros(n_steps, dtype=bool)
    timeouts = np.zeros(n_steps, dtype=bool)
    ts = 0
    for t in tqdm(range(n_steps), disable=not verbose, desc="collect"):
        act, done = ctrl(s[:2], s[2:], target)
        if noisy:
            act = act + rng.standard_normal(2) * 0.5
        act = np.clip(act, -1.0, 1.0)
        if ts >= max_steps:
            done, timeouts[t] = True, True
        obs[t], acts[t], goals[t], dones[t] = s, act, target, done
        # physics in the package frame (walls at integer cell centres)
        pos, vel = point_mass_step((qpos + off)[None], qvel[None], act[None], walls, params)
        qpos, qvel = pos[0] - off, vel[0]
        ts += 1
        if done:
            target, ts = new_target(), 0  # s is kept: the script's stale observation
        else:
            s = np.r_[qpos, qvel]
    timeouts[-1] = True
    data = {
        "observations": obs.astype(np.float32),
        "actions": acts.astype(np.float32),
        "rewards": d4rl_sparse_rewards(obs, np.asarray(DEFAULT_GOALS[layout], float)),
        "terminals": dones,
        "timeouts": timeouts,
        "infos/goal": goals.astype(np.float32),
        "infos/qpos": obs[:, :2].astype(np.float32),
        "infos/qvel": obs[:, 2:].astype(np.float32),
    }
    return from_d4rl_frame(data)


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


def load_hdf5(path: str | os.PathLike, d4rl_frame: bool = False) -> dict[str, np.ndarray]:
    """Read any D4RL-layout HDF5 file (e.g. a real ``maze2d-large-v1.hdf5``).

    Returns every dataset in the file keyed by its full path (``infos/goal``...),
    after :func:`validate_dataset`; files without ``timeouts`` are accepted (as d4rl does).
    ``d4rl_frame=True`` declares the file to be in D4RL's frame (real D4RL files) and moves it
    to the package frame (:func:`from_d4rl_frame`), where the layouts' walls are.
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
    data = validate_dataset(data)
    return from_d4rl_frame(data) if d4rl_frame else data


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


def maze2d_set_terminals(
    data: dict[str, np.ndarray], goal: np.ndarray, threshold: float = 0.5
) -> dict[str, np.ndarray]:
    """Diffuser's Maze2D segmentation: one path ends where the ball leaves the goal.

    Diffuser (``datasets/preprocessing.py``, ``maze2d_set_terminals``) ignores the
    collector's per-target episode ends and cuts the stream only at steps ``t`` with
    ``‖xy_t − goal‖ < threshold`` and ``‖xy_{t+1} − goal‖ ≥ threshold`` (``goal``: the
    environment's fixed evaluation goal), which gives the long paths its 128–384-step windows
    need. Returns a copy with ``timeouts`` set by that rule and ``terminals`` cleared.

    Parameters
    ----------
    data : dict
        D4RL-layout dataset (positions in the frame of ``goal``).
    goal : ndarray, shape (2,)
    threshold : float, default=0.5
    """
    g = np.asarray(goal, dtype=float)
    if g.shape != (2,) or not np.isfinite(g).all():
        raise ValueError(f"goal must be 2 finite numbers, got shape {g.shape}")
    if not (np.isfinite(threshold) and threshold > 0):
        raise ValueError(f"threshold must be > 0, got {threshold}")
    arrs = validate_dataset(data)
    at_goal = np.linalg.norm(arrs["observations"][:, :2] - g, axis=1) < threshold
    out = {k: np.array(v) for k, v in arrs.items()}
    out["timeouts"] = np.zeros(len(at_goal), dtype=bool)
    out["timeouts"][:-1] = at_goal[:-1] & ~at_goal[1:]
    out["terminals"] = np.zeros(len(at_goal), dtype=arrs["terminals"].dtype)
    return out


def subsample_frames(data: dict[str, np.ndarray], every: int) -> dict[str, np.ndarray]:
    """Keep every ``every``-th transition of each episode (a coarser control rate).

    Turns D4RL's frame-skip-1 data into windows of an environment stepped every ``every``
    physics steps: within each episode rows ``start, start + every, ...`` are kept; per-row
    arrays (``infos/*`` included) are subsampled alike, and the last kept row of an episode
    inherits its ``terminals``/``timeouts`` flag so episode boundaries survive. Actions are
    the first physics step's, so use the result for state-only windows.

    Parameters
    ----------
    data : dict
        D4RL-layout dataset.
    every : int

    Returns
    -------
    dict of ndarray (new arrays; the input is not modified)
    """
    if not isinstance(every, (int, np.integer)) or every < 1:
        raise ValueError(f"every must be a positive int, got {every!r}")
    arrs = validate_dataset(data)
    bounds = episode_bounds(arrs)
    idx = np.concatenate([np.arange(a, b, every) for a, b in bounds])
    last = (-(-(bounds[:, 1] - bounds[:, 0]) // every)).cumsum() - 1  # last kept row per episode
    n = len(arrs["observations"])
    out = {k: np.array(v[idx]) for k, v in arrs.items() if v.ndim >= 1 and len(v) == n}
    for k in ("terminals", "timeouts"):
        ended = np.zeros(len(idx), dtype=bool)
        ended[last] = arrs[k].astype(bool)[bounds[:, 1] - 1]
        out[k] = ended.astype(arrs[k].dtype)
    return out


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
