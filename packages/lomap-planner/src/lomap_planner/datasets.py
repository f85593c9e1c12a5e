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
:func:`load_hdf5`, which detects the frame) shift positions, goals and ``qpos`` by that 0.2.
D4RL's rewards (``scripts/generation/relabel_maze2d_rewards.py``) are
``‖obs_t[:2] − goal‖ ≤ 0.5`` on the *current* observation with the environment's fixed goal
``(g_i, g_j)`` in D4RL's frame, i.e. ``(g_i + 0.2, g_j + 0.2)`` here (:func:`d4rl_goal`,
:func:`d4rl_sparse_rewards`).
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from lomap_planner._checks import check_bool, check_int, check_real
from lomap_planner.controller import D4RLWaypointController, WaypointController
from lomap_planner.env import D4RL_MAX_EPISODE_STEPS, PointMazeEnv
from lomap_planner.layouts import DEFAULT_GOALS, free_cells, get_layout
from lomap_planner.physics import PhysicsParams, _step, in_wall

__all__ = [
    "D4RL_FRAME_OFFSET",
    "REQUIRED_KEYS",
    "centre_offset",
    "collect_d4rl_dataset",
    "collect_maze2d_dataset",
    "d4rl_goal",
    "d4rl_sparse_rewards",
    "detect_frame",
    "episode_bounds",
    "from_d4rl_frame",
    "load_hdf5",
    "load_minari",
    "make_windows",
    "save_hdf5",
    "to_d4rl_frame",
    "validate_dataset",
    "wall_clearance",
    "wall_fraction",
]

REQUIRED_KEYS = ("observations", "actions", "rewards", "terminals", "timeouts")
D4RL_FRAME_OFFSET = 0.2  # package position = D4RL qpos + 0.2
_POSITION_KEYS = ("infos/goal", "infos/qpos")


def _shift(data: dict[str, Any], delta: float) -> dict[str, np.ndarray]:
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict of arrays, got {type(data).__name__}")
    out = {k: np.array(v, copy=True) for k, v in data.items()}
    for k in ("observations", *_POSITION_KEYS):
        if k not in out:
            continue
        v = out[k]
        if v.dtype.kind not in "iuf":  # bool, object, strings: not positions
            raise TypeError(f"{k} must hold numbers, got dtype {v.dtype}")
        if v.ndim != 2 or v.shape[0] == 0 or v.shape[1] < 2:
            raise ValueError(f"{k} must be a non-empty (n, >= 2) array, got shape {v.shape}")
        if not np.isfinite(v).all():
            raise ValueError(f"{k} contains NaN or inf")
        v = v.astype(
            np.result_type(v.dtype, np.float32), copy=False
        )  # integer grids: a float shift
        v[:, :2] += delta
        out[k] = v
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
    if not np.isfinite(obs).all():
        raise ValueError("observations contains NaN or inf")
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
    n_steps = check_int("n_steps", n_steps, 1)
    n_streams = check_int("n_streams", n_streams, 1)
    action_noise = check_real("action_noise", action_noise, 0.0)
    if not isinstance(reward, str) or reward not in ("d4rl", "goal"):
        raise ValueError(f"reward must be 'd4rl' or 'goal', got {reward!r}")
    if check_real("goal_jitter", goal_jitter, 0.0) >= 0.5:
        raise ValueError(f"goal_jitter must lie in [0, 0.5), got {goal_jitter}")
    seed = check_int("seed", seed, 0)
    check_bool("verbose", verbose)
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
            pos, vel = _step(pos, vel, action, env.walls, env.physics)
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
    if not isinstance(layout, str) or layout not in ("umaze", "medium", "large"):
        raise ValueError(f"layout must be 'umaze', 'medium' or 'large', got {layout!r}")
    n_steps = check_int("n_steps", n_steps, 1)
    check_bool("noisy", noisy)
    seed = check_int("seed", seed, 0)
    check_bool("verbose", verbose)
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
        pos, vel = _step((qpos + off)[None], qvel[None], act[None], walls, params)
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
        On missing keys, mismatched lengths (``infos/*`` included), wrong ranks, empty data,
        NaN/inf, or ``terminals``/``timeouts`` that are not 0/1 flags.
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
    per_step = [*REQUIRED_KEYS, *(k for k in arrs if k.startswith("infos/"))]
    for k in per_step:
        if arrs[k].ndim == 0 or len(arrs[k]) != n:
            raise ValueError(f"{k} has length {len(arrs[k]) if arrs[k].ndim else 0}, but "
                             f"observations has length {n}")  # fmt: skip
    for k in ("observations", "actions", "rewards", *(k for k in per_step if k[:6] == "infos/")):
        if arrs[k].dtype.kind not in "biuf" or not np.isfinite(arrs[k]).all():
            raise ValueError(f"{k} contains NaN, inf or non-numbers")
    for k in ("terminals", "timeouts"):
        if arrs[k].dtype.kind not in "biuf" or not np.isin(arrs[k], (0, 1)).all():
            raise ValueError(f"{k} must hold 0/1 flags, got values {np.unique(arrs[k])[:5]}")
    return arrs


def save_hdf5(
    data: dict[str, np.ndarray],
    path: str | os.PathLike,
    layout: str | None = None,
    frame: str | None = "package",
) -> None:
    """Write a dataset to HDF5 with D4RL keys (``infos/goal`` becomes a group).

    The file records the data's ``frame`` (``"package"``, ``"d4rl"``; ``None`` writes no
    attribute, like a real D4RL file) and, if given, its ``layout``, so :func:`load_hdf5`
    reads it back without guessing.
    """
    if frame not in ("package", "d4rl", None):
        raise ValueError(f"frame must be 'package', 'd4rl' or None, got {frame!r}")
    import h5py

    arrs = validate_dataset(data)
    with h5py.File(path, "w") as f:
        for k, v in arrs.items():
            f.create_dataset(k, data=v, compression="gzip")
        if frame is not None:
            f.attrs["lomap_frame"] = frame
        if layout is not None:
            get_layout(layout)  # validates the name or spec
            f.attrs["layout"] = layout


WALL_TOLERANCE = 0.01  # at most 1% of rows may sit in wall cells (or off the map)


def wall_fraction(positions: np.ndarray, walls: np.ndarray) -> float:
    """Fraction of ``(x, y)`` positions inside a wall cell or off the map (package frame)."""
    p = np.asarray(positions, dtype=float)
    if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] < 2:
        raise ValueError(f"positions must be a non-empty (n, >= 2) array, got shape {p.shape}")
    if not np.isfinite(p).all():  # NaN compares False: it would count as a free cell
        raise ValueError("positions contains NaN or inf")
    walls = np.asarray(walls)
    if walls.ndim != 2 or walls.size == 0:
        raise ValueError(f"walls must be a non-empty 2-D grid, got shape {walls.shape}")
    p = p[:, :2]
    n_rows, n_cols = walls.shape
    off = (
        (p[:, 0] < -0.5) | (p[:, 1] < -0.5) | (p[:, 0] >= n_rows - 0.5) | (p[:, 1] >= n_cols - 0.5)
    )
    return float(np.mean(off | in_wall(p, walls)))


def centre_offset(positions: np.ndarray) -> float:
    """Mean signed offset of ``(x, y)`` positions from their cell centres (package frame).

    Data in the package frame scatter around the centres (offset near 0); D4RL ``qpos`` read
    as if it were the package frame sits 0.2 below them (offset near -0.2).
    """
    p = np.asarray(positions, dtype=float)[:, :2]
    return float(np.mean(p - np.floor(p + 0.5)))


BALL_RADIUS = 0.1  # D4RL's point_maze sphere
CONTACT_TOLERANCE = 0.03  # MuJoCo's soft contacts let the ball sink this far into a wall


def wall_clearance(positions: np.ndarray, walls: np.ndarray) -> np.ndarray:
    """Distance from each ``(x, y)`` position to the nearest wall cell (package frame).

    0 inside a wall cell or off the map. The ball's centre keeps ``BALL_RADIUS`` from every wall
    in the frame the data were simulated in (less ``CONTACT_TOLERANCE`` for MuJoCo's soft
    contacts); read in a frame 0.2 off, contacts on one side of the cells land inside walls.

    Parameters
    ----------
    positions : ndarray, shape (n, >= 2)
    walls : ndarray of bool, shape (n_rows, n_cols)

    Returns
    -------
    ndarray of float, shape (n,)
    """
    p = np.asarray(positions, dtype=float)
    if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] < 2:
        raise ValueError(f"positions must be a non-empty (n, >= 2) array, got shape {p.shape}")
    if not np.isfinite(p).all():
        raise ValueError("positions contains NaN or inf")
    walls = np.asarray(walls)
    if walls.ndim != 2 or walls.size == 0 or walls.dtype.kind not in "bui":
        raise ValueError(f"walls must be a non-empty 2-D grid of booleans, got {walls.shape}")
    walls = walls.astype(bool)
    p = p[:, :2]
    n_rows, n_cols = walls.shape
    cell = np.floor(p + 0.5).astype(np.int64)
    best = np.full(len(p), np.inf)
    for di in (-1, 0, 1):  # a wall further than the 3x3 neighbourhood is > 0.5 away
        for dj in (-1, 0, 1):
            c = cell + np.array([di, dj])
            outside = (c[:, 0] < 0) | (c[:, 1] < 0) | (c[:, 0] >= n_rows) | (c[:, 1] >= n_cols)
            hit = outside.copy()
            inside = ~outside
            hit[inside] = walls[c[inside, 0], c[inside, 1]]
            gap = np.maximum(np.abs(p - c) - 0.5, 0.0)  # point-to-box distance per axis
            d = np.hypot(gap[:, 0], gap[:, 1])
            best = np.where(hit, np.minimum(best, d), best)
    return np.minimum(best, 0.5)


def _reward_rules(obs: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dist = np.linalg.norm(obs[:, :2] - goal, axis=1)
    return (dist <= 0.5).astype(float), np.exp(-dist)  # sparse, dense (D4RL's two variants)


def _frame_evidence(obs, rewards, layout) -> dict[str, dict]:
    """Evidence for the file being in the package frame vs D4RL's, for one layout.

    Per frame: ``wall_fraction`` (rows whose centre is in a wall or off the map),
    ``overlap_rows`` (rows whose ball sinks more than ``CONTACT_TOLERANCE`` into a wall) and
    ``reward_match`` (share of the rows where the two frames' D4RL rewards differ that this
    frame's rule reproduces, sparse or dense, 0 if the rule misses more than 1% of all rows;
    None without rewards, a D4RL goal, or such rows with rewards of both kinds).
    """
    walls = get_layout(layout)
    pos = {"package": obs[:, :2], "d4rl": obs[:, :2] + D4RL_FRAME_OFFSET}
    out = {}
    for frame, p in pos.items():
        clear = wall_clearance(p, walls)
        out[frame] = {
            "wall_fraction": wall_fraction(p, walls),
            "overlap_rows": int(np.sum(clear < BALL_RADIUS - CONTACT_TOLERANCE)),
            "reward_match": None,
        }
    if rewards is not None and layout in DEFAULT_GOALS:
        # the rule in the file's own coordinates: D4RL's goal is the integer cell in its frame
        goal = np.asarray(DEFAULT_GOALS[layout], dtype=float)
        rules = {"d4rl": _reward_rules(obs, goal),
                 "package": _reward_rules(obs, goal + D4RL_FRAME_OFFSET)}  # fmt: skip
        r = np.asarray(rewards, dtype=float).ravel()
        for k in (0, 1):  # sparse, dense
            a, b = rules["d4rl"][k], rules["package"][k]
            differ = np.abs(a - b) > 1e-3
            if differ.sum() < 5:
                continue
            match = {}
            for frame, pred in (("d4rl", a), ("package", b)):
                ok = np.abs(pred - r) <= 1e-3
                # the rule must fire where the file has rewards (constant rewards, all 0 say,
                # would otherwise fit whichever rule predicts "no" on the rows that differ)
                if k == 0:
                    fired = np.sum(ok & (pred > 0.5)) >= 5
                else:
                    fired = ok.any() and np.ptp(r[ok]) > 0.01
                match[frame] = float(np.mean(ok[differ])) if np.mean(ok) >= 0.99 and fired else 0.0
            if max(match.values()) == 0.0:  # not the file's rule in either frame
                continue
            for frame, m in match.items():
                prev = out[frame]["reward_match"]
                out[frame]["reward_match"] = m if prev is None else max(prev, m)
    return out


def _decide(ev: dict[str, dict], n: int) -> tuple[str | None, str]:
    """The frame the evidence singles out (or None), and the reason."""
    rm = {f: e["reward_match"] for f, e in ev.items()}
    if all(v is not None for v in rm.values()):
        good = [f for f, v in rm.items() if v >= 0.99]
        if len(good) == 1 and min(rm.values()) <= 0.5:
            return good[0], f"D4RL's reward rule reproduces the rewards ({rm})"
    ov = {f: e["overlap_rows"] for f, e in ev.items()}
    lo, hi = sorted(ov, key=ov.get)
    if ov[lo] <= 2e-4 * n and ov[hi] >= max(10, 20 * ov[lo]):
        return lo, f"rows whose ball sinks into a wall: {ov}"
    return None, f"reward rule matches {rm}; rows whose ball sinks into a wall {ov}"


def detect_frame(
    data: dict[str, Any], layout: str | None = None, source: str = "data"
) -> tuple[str, str, float]:
    """Which frame (and layout) a Maze2D dataset is in.

    Candidates are the package frame and D4RL's (MuJoCo ``qpos``, 0.2 off), for ``layout`` or,
    if it is None, every named layout; those with more than 1% of the rows in a wall are out.
    Two tests then tell the frames apart, each only where it is decisive:

    1. **Reward rule.** D4RL relabels rewards as ``‖obs[:2] − goal‖ ≤ 0.5`` (sparse) or
       ``exp(−‖obs[:2] − goal‖)`` (dense) with the layout's integer goal cell in its frame. On
       the rows where the two frames' rules disagree, the true frame reproduces the file's
       rewards (≥ 99%) and the other does not (≤ 50%).
    2. **Contacts.** The ball's centre stays ``BALL_RADIUS`` from every wall in its own frame
       (within MuJoCo's contact tolerance); in a frame 0.2 off, the contacts on one side of the
       cells sink into walls. The frame with (almost) no such rows wins if the other has many.

    A mean offset from the cell centres is *not* evidence: D4RL's controller steers to targets
    0.2 off the physical cell centres, so its data sit off-centre in their true frame.

    Returns
    -------
    layout, frame, wall_fraction : str, {"package", "d4rl"}, float

    Raises
    ------
    ValueError
        When every candidate puts more than 1% of the rows in walls (another maze, or another
        frame), or when neither test tells the frames apart (pass ``frame=``).
    """
    if not isinstance(data, dict) or "observations" not in data:
        raise TypeError("data must be a dict of arrays with an 'observations' key")
    obs = np.asarray(data["observations"])
    if obs.dtype.kind not in "iuf" or obs.ndim != 2 or obs.shape[0] == 0 or obs.shape[1] < 2:
        raise ValueError(
            f"observations must be a non-empty numeric (n, >= 2) array, got {obs.dtype} {obs.shape}"
        )
    obs = obs.astype(float)
    if not np.isfinite(obs).all():
        raise ValueError("observations contains NaN or inf")
    rewards = data.get("rewards")
    if rewards is not None:
        rewards = np.asarray(rewards)
        if rewards.dtype.kind not in "iufb" or rewards.shape != (len(obs),):
            raise ValueError(
                f"rewards must be a numeric array of shape ({len(obs)},), got {rewards.dtype} "
                f"{rewards.shape}"
            )
        if not np.isfinite(rewards).all():
            raise ValueError("rewards contains NaN or inf")
    if layout is not None:
        get_layout(layout)  # validates the name
    names = [layout] if layout is not None else [n for n in DEFAULT_GOALS if n != "tiny"]
    evidence = {name: _frame_evidence(obs, rewards, name) for name in names}
    scores = {(n, f): e["wall_fraction"] for n, ev in evidence.items() for f, e in ev.items()}
    best = min(scores.values())
    if best > WALL_TOLERANCE:
        table = ", ".join(f"{n}/{f}: {100 * v:.1f}%" for (n, f), v in scores.items())
        raise ValueError(
            f"{source}: no frame puts <= {100 * WALL_TOLERANCE:.0f}% of the rows in free cells "
            f"(rows in walls or off the map per layout/frame: {table}); pass layout= and "
            "frame= if this is another maze"
        )
    # the layout: fewest rows in walls in either frame
    name = min(names, key=lambda n: min(scores[(n, f)] for f in ("package", "d4rl")))
    ev = evidence[name]
    fits = [f for f in ("package", "d4rl") if scores[(name, f)] <= WALL_TOLERANCE]
    if len(fits) == 1:
        return name, fits[0], scores[(name, fits[0])]
    frame, why = _decide(ev, len(obs))
    if frame is None:
        raise ValueError(
            f"{source}: cannot tell from its observations and rewards whether it is in D4RL's "
            f"frame or the package's ({why}); "
            "pass frame='d4rl' for a file written by D4RL's scripts or frame='package' for one "
            "in the package frame"
        )
    return name, frame, scores[(name, frame)]


def _to_package_frame(data, frame, layout, source):
    if frame not in ("auto", "package", "d4rl"):
        raise ValueError(f"frame must be 'auto', 'package' or 'd4rl', got {frame!r}")
    if frame == "auto":
        layout, frame, _ = detect_frame(data, layout, source)
    elif layout is not None:  # a forced frame: say so when the evidence points the other way
        ev = _frame_evidence(np.asarray(data["observations"], float), data.get("rewards"), layout)
        other, why = _decide(ev, len(data["observations"]))
        if other is not None and other != frame:
            warnings.warn(
                f"{source}: read in the {frame} frame as asked, but the data look like the "
                f"{other} frame ({why}); use frame='auto' or '{other}'",
                UserWarning,
                stacklevel=3,
            )
    out = from_d4rl_frame(data) if frame == "d4rl" else data
    if layout is not None:
        frac = wall_fraction(out["observations"], get_layout(layout))
        if frac > WALL_TOLERANCE:
            raise ValueError(
                f"{source}: {100 * frac:.1f}% of the rows lie in walls of layout {layout!r} in "
                f"the {frame} frame (> {100 * WALL_TOLERANCE:.0f}%): wrong frame or layout"
            )
    return out


def load_hdf5(
    path: str | os.PathLike, frame: str = "auto", layout: str | None = None
) -> dict[str, np.ndarray]:
    """Read a D4RL-layout HDF5 file (e.g. a real ``maze2d-large-v1.hdf5``) in the package frame.

    Parameters
    ----------
    path : str or PathLike
    frame : {"auto", "d4rl", "package"}, default="auto"
        The file's frame. ``"auto"`` detects it (:func:`detect_frame`): real D4RL files are in
        D4RL's ``qpos`` frame and are moved to the package frame; files this package wrote are
        in the package frame already.
    layout : str, optional
        The maze; default: ``maze2d-<layout>`` in the file name, else detected.

    Returns
    -------
    dict
        Every dataset in the file keyed by its full path (``infos/goal``...), validated; files
        without ``timeouts`` are accepted (as d4rl does).

    Raises
    ------
    ValueError
        Missing keys, bad shapes, NaN; or more than 1% of the rows in walls in every frame.
    """
    import h5py

    if not os.path.exists(path):
        raise ValueError(f"path {os.fspath(path)!r} does not exist")
    name = os.path.basename(os.fspath(path))
    if layout is None:
        m = re.search(r"maze2d-(umaze|medium|large)", name)
        layout = m.group(1) if m else None
    data: dict[str, np.ndarray] = {}
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise OSError(f"{name}: not a readable HDF5 file ({exc})") from exc
    with f:

        def visit(key: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset):
                data[key] = obj[()]

        f.visititems(visit)
        written = f.attrs.get("lomap_frame")  # a file this package wrote says its frame
        if layout is None and "layout" in f.attrs:
            layout = str(f.attrs["layout"])
    data = validate_dataset(data)
    if frame == "auto" and written is not None:
        frame = str(written)
    return _to_package_frame(data, frame, layout, name)


def _minari_maze(f) -> np.ndarray | None:
    """The maze map stored with a Minari dataset (its ``env_spec`` kwargs), if any."""
    import json

    for holder in (f.attrs, f.get("metadata", {}).attrs if "metadata" in f else {}):
        spec = holder.get("env_spec") if hasattr(holder, "get") else None
        if spec is None:
            continue
        try:
            spec = json.loads(spec if isinstance(spec, str) else spec.decode())
        except (ValueError, AttributeError):
            continue
        maze = (spec.get("kwargs") or {}).get("maze_map")
        if maze is not None:
            return np.array([[c == 1 or c == "1" for c in row] for row in maze], dtype=bool)
    return None


def load_minari(path: str | os.PathLike, layout: str | None = None) -> dict[str, np.ndarray]:
    """Read a Minari PointMaze dataset (``main_data.hdf5``) as D4RL arrays in the package frame.

    gymnasium-robotics puts the maze's centre at the origin with ``y`` up; the package (like
    D4RL) puts cell ``(i, j)`` at ``(i, j)``. Positions, velocities, actions and goals are
    converted with the dataset's own maze map (its ``env_spec``), else ``layout``, else the
    named layout that puts the fewest rows in walls; more than 1% of the rows in walls raises.

    Parameters
    ----------
    path : str or PathLike
        The ``main_data.hdf5`` file, or the dataset directory holding ``data/main_data.hdf5``.
    layout : str, optional
        The maze, when the file carries no maze map.

    Returns
    -------
    dict
        ``observations`` (x, y, vx, vy), ``actions``, ``rewards``, ``terminals`` (Minari
        ``terminations``), ``timeouts`` (``truncations``, and the last step of every episode),
        ``infos/goal`` from ``desired_goal`` when present. Minari stores ``T + 1`` observations
        per episode; the last (post-terminal) one is dropped. Empty episodes are skipped.
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
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise OSError(f"{os.path.basename(path)}: not a readable HDF5 file ({exc})") from exc
    with f:
        maze = _minari_maze(f)
        names = sorted((k for k in f if k.startswith("episode_")), key=lambda k: int(k[8:]))
        if not names:
            raise ValueError(f"{path!r} holds no episode_* groups")
        for name in names:
            ep = f[name]
            t = len(ep["actions"])
            if t == 0:  # an empty episode: one reset observation, no transition
                continue
            obs = ep["observations"]
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
    if not cols["actions"]:
        raise ValueError(f"{path!r}: every episode is empty")
    out = validate_dataset({k: np.concatenate(v) for k, v in cols.items() if v})
    walls = maze if maze is not None else (get_layout(layout) if layout is not None else None)
    if walls is None:  # pick the named layout whose world frame fits the data
        scores = {n: wall_fraction(_world_to_package(out, get_layout(n))["observations"],
                                   get_layout(n)) for n in DEFAULT_GOALS if n != "tiny"}  # fmt: skip
        best = min(scores, key=scores.get)
        walls = get_layout(best)
    converted = _world_to_package(out, walls)
    frac = wall_fraction(converted["observations"], walls)
    if frac > WALL_TOLERANCE:
        raise ValueError(
            f"{os.path.basename(path)}: {100 * frac:.1f}% of the rows lie in walls after the "
            "world-to-maze conversion (> 1%); pass the dataset's layout="
        )
    return converted


def _world_to_package(data: dict[str, np.ndarray], walls: np.ndarray) -> dict[str, np.ndarray]:
    """gymnasium-robotics world coordinates (origin at the maze centre, y up) to cells (i, j)."""
    h, w = walls.shape
    out = {k: np.array(v, copy=True) for k, v in data.items()}

    def pos(xy):
        return np.stack([h / 2 - 0.5 - xy[:, 1], xy[:, 0] + w / 2 - 0.5], axis=1)

    obs = out["observations"].astype(float)
    obs[:, :2] = pos(obs[:, :2])
    if obs.shape[1] >= 4:
        obs[:, 2:4] = np.stack([-data["observations"][:, 3], data["observations"][:, 2]], 1)
    out["observations"] = obs.astype(np.float32)
    a = np.asarray(data["actions"], dtype=float)
    out["actions"] = np.stack([-a[:, 1], a[:, 0]], axis=1).astype(np.float32)
    if "infos/goal" in out:
        out["infos/goal"] = pos(np.asarray(data["infos/goal"], float)).astype(np.float32)
    return out


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
    if isinstance(every, bool | np.bool_) or not isinstance(every, int | np.integer) or every < 1:
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
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 2:
        raise ValueError(f"horizon must be an int >= 2, got {horizon!r}")
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
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
