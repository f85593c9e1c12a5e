"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from lomap_planner import (
    LoMAP,
    PointMazeEnv,
    collect_maze2d_dataset,
    cosine_beta_schedule,
    d4rl_goal,
    d4rl_sparse_rewards,
    episode_bounds,
    from_d4rl_frame,
    get_layout,
    infeasible_plan_fraction,
    load_hdf5,
    load_minari,
    make_windows,
    maze2d_set_terminals,
    normalized_score,
    parse_layout,
    plan_is_infeasible,
    point_mass_step,
    save_hdf5,
    segments_hit_walls,
    subsample_frames,
    to_d4rl_frame,
    wall_clearance,
    wall_fraction,
)
from lomap_planner.datasets import collect_d4rl_dataset, detect_frame


def entries() -> list[dict]:
    walls = get_layout("umaze")
    env = PointMazeEnv("umaze")
    data = collect_maze2d_dataset(env, 600, n_streams=2, seed=0)
    d4rl_stream = collect_d4rl_dataset("umaze", 4000, seed=1)  # package frame
    d4rl_file = to_d4rl_frame(d4rl_stream)
    windows = make_windows(data, 8, stride=4, include_actions=False).astype(np.float32)
    plans = windows[:6].astype(float)
    lomap = LoMAP(windows, n_neighbors=5, proj_range=(0.0, 1.0))
    rng = np.random.default_rng(0)
    x = torch.as_tensor(windows[:4] + 0.1 * rng.normal(size=windows[:4].shape), dtype=torch.float32)
    outside = plans.copy()
    outside[0, :, :2] += 40.0  # a plan entirely off the map

    def write_d4rl(folder):
        # a real D4RL file: D4RL's controller, qpos frame, infos/qpos, no attributes
        path = folder / "maze2d-umaze-v1.hdf5"
        save_hdf5(d4rl_file, path, frame=None)
        return path

    def write_minari(folder):
        import json

        import h5py

        h, w = walls.shape
        obs, act = data["observations"][:50], data["actions"][:50]
        world = np.stack([obs[:, 1] - (w / 2 - 0.5), (h / 2 - 0.5) - obs[:, 0]], 1)
        wobs = np.concatenate([world, np.stack([obs[:, 3], -obs[:, 2]], 1)], 1)
        path = folder / "main_data.hdf5"
        with h5py.File(path, "w") as f:
            f.attrs["env_spec"] = json.dumps({"kwargs": {"maze_map": walls.astype(int).tolist()}})
            g = f.create_group("episode_0")
            g.create_group("observations").create_dataset(
                "observation", data=np.concatenate([wobs, wobs[-1:]])
            )
            g.create_dataset("actions", data=np.stack([act[:, 1], -act[:, 0]], 1))
            g.create_dataset("rewards", data=np.zeros(50))
            g.create_dataset("terminations", data=np.zeros(50, bool))
            g.create_dataset("truncations", data=np.zeros(50, bool))
        return path

    def write_package(folder):
        path = folder / "umaze-package.hdf5"
        save_hdf5(data, path, layout="umaze", frame="package")  # attributes: read back as written
        return path

    def frame_round_trip(observations):
        d4rl = to_d4rl_frame({"observations": observations})
        return d4rl["observations"], from_d4rl_frame(d4rl)["observations"]

    def same_data(a, b):
        return all(np.allclose(a[k], b[k], atol=1e-5) for k in ("observations", "actions"))

    out = [
        {
            "name": "plan_is_infeasible",
            "call": plan_is_infeasible,
            "kwargs": {"plans": plans, "walls": walls},
            "arrays": {"plans": {"kind": "float", "ndim": 3}},
            "rows": [["plans"]],
            "order": "equivariant",
            "min_rows": 0,  # no plans, no verdicts: an empty array
            "params": {"margin": {"type": "float", "bad": [-0.1, float("nan")], "good": 0.0}},
            "known": [
                {
                    "kwargs": {"plans": outside},
                    "check": lambda out: bool(out[0]),
                    "why": "a plan outside the map is infeasible",
                },
            ],
        },
        {
            "name": "infeasible_plan_fraction",
            "call": infeasible_plan_fraction,
            "kwargs": {"plans": plans, "walls": walls},
            "arrays": {"plans": {"kind": "float", "ndim": 3}},
            "rows": [["plans"]],
            "order": "invariant",
        },
        {
            "name": "segments_hit_walls",
            "call": segments_hit_walls,
            "kwargs": {"starts": plans[:, 0, :2], "ends": plans[:, -1, :2], "walls": walls},
            "arrays": {
                "starts": {"kind": "float", "ndim": 2},
                "ends": {"kind": "float", "ndim": 2},
            },
            "rows": [["starts", "ends"]],
            "order": "equivariant",
            "min_rows": 0,
        },
        {
            "name": "d4rl_sparse_rewards",
            "call": d4rl_sparse_rewards,
            "kwargs": {"observations": data["observations"][:20], "goal": np.array([1.2, 1.2])},
            "arrays": {"observations": {"kind": "float", "ndim": 2}},
            "rows": [["observations"]],
            "order": "equivariant",
            "min_rows": 0,
        },
        {
            "name": "normalized_score",
            "call": normalized_score,
            "kwargs": {"layout": "umaze", "returns": np.array([10.0, 50.0])},
            "arrays": {"returns": {"kind": "float", "ndim": (0, 1, 2)}},  # elementwise
            "params": {"layout": {"type": "str", "bad": ["huge"]}},
        },
        {
            "name": "LoMAP",
            "call": LoMAP,
            "kwargs": {"windows": windows, "n_neighbors": 5, "tau": 0.99},
            "arrays": {"windows": {"kind": "float", "ndim": 3}},
            "rows": [["windows"]],
            "min_rows": 5,
            "deterministic": False,  # an index object, compared by identity
            "params": {
                "n_neighbors": {"type": "int", "bad": [1, 0, 10**6]},
                "tau": {"type": "float", "bad": [0.0, 1.5]},
                "metric": {"type": "str", "bad": ["manhattan"]},
            },
            "grid": {"metric": ["euclidean"], "backend": ["kdtree", "auto"], "batch_rank": [True]},
        },
        {
            "name": "LoMAP.project",
            "call": lambda x, x0_hat, alpha_bar: lomap.project(
                x, x0_hat, alpha_bar, generator=torch.Generator().manual_seed(0)
            ),
            "kwargs": {"x": x, "x0_hat": x.clone(), "alpha_bar": 0.5},
            "arrays": {"x": {"kind": "float", "ndim": 3}, "x0_hat": {"kind": "float", "ndim": 3}},
            "rows": [["x", "x0_hat"]],
            "params": {"alpha_bar": {"type": "float", "bad": [0.0, 1.5, float("nan")]}},
        },
        {
            "name": "load_hdf5",
            "kind": "loader",
            "write": write_d4rl,
            "read": load_hdf5,
            "check": lambda d: np.testing.assert_allclose(
                d["observations"], d4rl_stream["observations"], atol=1e-5
            ),
            "export": lambda d, folder: (
                (folder.mkdir(), save_hdf5(d, folder / "x.hdf5")) and folder / "x.hdf5"
            ),
            "same": same_data,
            "corrupt": [
                "truncate",
                "empty",
                ("wrong-frame", lambda p: _shift_file(p, 0.45)),
            ],
        },
        {
            "name": "save_hdf5",
            "kind": "loader",
            "write": write_package,
            "read": load_hdf5,
            "check": lambda d: np.testing.assert_allclose(
                d["observations"], data["observations"], atol=1e-5
            ),
            "corrupt": ["truncate", "empty", ("wrong-frame", lambda p: _shift_file(p, 0.45))],
        },
        {
            "name": "to_d4rl_frame",
            "call": frame_round_trip,
            "kwargs": {"observations": data["observations"][:20]},
            "arrays": {"observations": {"kind": "float", "ndim": 2}},
            "rows": [["observations"]],
            "order": "equivariant",
            "known": [
                {
                    "kwargs": {"observations": data["observations"][:20]},
                    "check": lambda out: (
                        np.allclose(out[0][:, :2], data["observations"][:20, :2] - 0.2)
                        and np.allclose(out[1], data["observations"][:20])
                    ),
                    "why": "D4RL qpos = package position - 0.2; from_d4rl_frame inverts it",
                }
            ],
        },
        {
            "name": "from_d4rl_frame",
            "call": lambda observations: from_d4rl_frame({"observations": observations})[
                "observations"
            ],
            "kwargs": {"observations": to_d4rl_frame(data)["observations"][:20]},
            "arrays": {"observations": {"kind": "float", "ndim": 2}},
            "rows": [["observations"]],
            "order": "equivariant",
        },
        {
            "name": "wall_fraction",
            "call": wall_fraction,
            "kwargs": {"positions": data["observations"][:50, :2], "walls": walls},
            "arrays": {"positions": {"kind": "float", "ndim": 2}},
            "rows": [["positions"]],
            "order": "invariant",
            "known": [
                {
                    "kwargs": {
                        "positions": np.array([[1.0, 1.0], [0.0, 0.0], [-40.0, 3.0]]),
                        "walls": walls,
                    },
                    "check": lambda f: abs(f - 2 / 3) < 1e-12,
                    "why": "a free cell, a wall cell and a point off the map",
                }
            ],
        },
        {
            "name": "wall_clearance",
            "call": wall_clearance,
            "kwargs": {"positions": data["observations"][:50, :2], "walls": walls},
            "arrays": {"positions": {"kind": "float", "ndim": 2}},
            "rows": [["positions"]],
            "order": "equivariant",
            "known": [
                {
                    "kwargs": {
                        "positions": np.array([[1.0, 1.0], [0.6, 1.0], [0.4, 1.0]]),
                        "walls": walls,
                    },
                    "check": lambda d: np.allclose(d, [0.5, 0.1, 0.0]),
                    "why": "a free cell's centre, 0.1 from the wall below, inside that wall",
                }
            ],
        },
        {
            "name": "detect_frame",
            "call": lambda observations, rewards: detect_frame(
                {"observations": observations, "rewards": rewards}, "umaze"
            ),
            "kwargs": {
                "observations": d4rl_file["observations"],
                "rewards": d4rl_file["rewards"],
            },
            "arrays": {"observations": {"kind": "float", "ndim": 2}, "rewards": "float"},
            "rows": [["observations", "rewards"]],
            "order": None,  # row-invariant, but 4000-row permutations are too large to draw
            "known": [
                {
                    "kwargs": {
                        "observations": d4rl_file["observations"],
                        "rewards": d4rl_file["rewards"],
                    },
                    "check": lambda out: out[:2] == ("umaze", "d4rl"),
                    "why": "D4RL's controller, D4RL's frame: the reward rule decides",
                },
                {
                    "kwargs": {
                        "observations": d4rl_file["observations"],
                        "rewards": np.zeros(len(d4rl_file["rewards"]), np.float32),
                    },
                    "raises": ["frame"],
                    "why": "no reward rule to read and too few wall contacts: refused",
                },
            ],
        },
        {
            "name": "point_mass_step",
            "call": lambda pos, vel, action: np.concatenate(
                point_mass_step(pos, vel, action, walls), 1
            ),
            "kwargs": {
                "pos": np.array([[1.0, 1.0], [3.0, 2.0]]),
                "vel": np.zeros((2, 2)),
                "action": np.array([[1.0, 0.0], [-0.5, 0.5]]),
            },
            "arrays": {k: {"kind": "float", "ndim": 2} for k in ("pos", "vel", "action")},
            "rows": [["pos", "vel", "action"]],
            "order": "equivariant",
            "known": [
                {
                    "kwargs": {
                        "pos": np.array([[1.0, 1.0]]),
                        "vel": np.zeros((1, 2)),
                        "action": np.zeros((1, 2)),
                    },
                    "check": lambda out: np.array_equal(out, [[1.0, 1.0, 0.0, 0.0]]),
                    "why": "no force, no velocity: the ball stays",
                },
                {
                    "kwargs": {
                        "pos": np.array([[0.62, 1.0]]),
                        "vel": np.array([[-5.0, 0.0]]),
                        "action": np.zeros((1, 2)),
                    },
                    "check": lambda out: abs(out[0, 0] - 0.6) < 1e-5 and out[0, 2] == 0.0,
                    "why": "driven into the wall below: stopped at the radius, velocity zeroed",
                },
            ],
        },
        {
            "name": "get_layout",
            "call": lambda name_or_spec="umaze": get_layout(name_or_spec).astype(float),
            "kwargs": {},
            "params": {"name_or_spec": {"type": "str", "bad": ["huge"]}},
            "grid": {"name_or_spec": ["medium", "large", "tiny"]},
            "known": [
                {
                    "kwargs": {"name_or_spec": "####\\#OO#\\####"},
                    "check": lambda w: w.shape == (3, 4) and w.sum() == 10,
                    "why": "a maze_spec string: 10 walls around two free cells",
                }
            ],
        },
        {
            "name": "subsample_frames",
            "call": lambda observations, every=2: subsample_frames(
                {**data, "observations": observations}, every
            )["observations"],
            "kwargs": {"observations": data["observations"]},
            "arrays": {"observations": {"kind": "float", "ndim": 2}},
            "rows": [["observations"]],
            "min_rows": len(data["observations"]),  # the other arrays keep their length
            "params": {"every": {"type": "int", "bad": [0, -1]}},
            "known": [
                {
                    "kwargs": {"observations": data["observations"], "every": 1},
                    "check": lambda o: np.array_equal(o, data["observations"]),
                    "why": "every = 1 keeps every row",
                }
            ],
        },
        {
            "name": "maze2d_set_terminals",
            "call": lambda observations, threshold=0.5: maze2d_set_terminals(
                {**data, "observations": observations}, np.array([1.0, 1.0]), threshold
            )["timeouts"].astype(float),
            "kwargs": {"observations": data["observations"]},
            "arrays": {"observations": {"kind": "float", "ndim": 2}},
            "rows": [["observations"]],
            "min_rows": len(data["observations"]),
            "params": {"threshold": {"type": "float", "bad": [0.0, -1.0, float("nan")]}},
        },
        {
            "name": "parse_layout",
            "call": parse_layout,
            "kwargs": {"spec": "####\\#OO#\\####"},
            "known": [
                {
                    "kwargs": {"spec": "###\\#O#\\###"},
                    "check": lambda w: w.tolist() == [[1, 1, 1], [1, 0, 1], [1, 1, 1]],
                    "why": "walls and one free cell",
                },
                {"kwargs": {"spec": "###\\#O\\###"}, "raises": ["spec"], "why": "a ragged row"},
            ],
        },
        {
            "name": "d4rl_goal",
            "call": d4rl_goal,
            "kwargs": {"layout": "umaze"},
            "params": {"layout": {"type": "str", "bad": ["huge"]}},
        },
        {
            "name": "episode_bounds",
            "call": lambda timeouts: episode_bounds(
                {
                    "observations": np.zeros((len(timeouts), 4)),
                    "timeouts": timeouts,
                    "terminals": np.zeros(len(timeouts), bool),
                    "actions": np.zeros((len(timeouts), 2)),
                    "rewards": np.zeros(len(timeouts)),
                }
            ),
            "kwargs": {"timeouts": np.array([0, 0, 1, 0, 0, 1], bool)},
            "known": [
                {
                    "kwargs": {"timeouts": np.array([0, 0, 1, 0, 0, 1], bool)},
                    "check": lambda b: np.asarray(b).tolist() == [[0, 3], [3, 6]],
                    "why": "two episodes ended by timeouts",
                },
            ],
        },
        {
            "name": "cosine_beta_schedule",
            "call": cosine_beta_schedule,
            "kwargs": {"n_timesteps": 20},
            "params": {
                "n_timesteps": {"type": "int", "bad": [0]},
                "s": {"type": "float", "bad": [-1.0, float("nan")]},
            },
            "known": [
                {
                    "kwargs": {"n_timesteps": 20},
                    "check": lambda b: bool(((b > 0) & (b < 1)).all()) and len(b) == 20,
                    "why": "20 betas in (0, 1)",
                }
            ],
        },
        {
            "name": "load_minari",
            "kind": "loader",
            "write": write_minari,
            "read": load_minari,
            "check": lambda d: np.testing.assert_allclose(
                d["observations"], data["observations"][:50], atol=1e-5
            ),
            "corrupt": ["truncate", "empty", ("off-map", lambda p: _shift_minari(p, 30.0))],
        },
    ]
    return [*out, *_more_entries(windows, x, data), *_window_entries(data, x), *_hook_entries(),
            *_planner_entries(windows), *_env_entries()]  # fmt: skip


def _shift_file(path, delta):
    import h5py

    with h5py.File(path, "a") as f:
        obs = f["observations"][()]
        obs[:, :2] += delta
        f["observations"][...] = obs


def _shift_minari(path, delta):
    import h5py

    with h5py.File(path, "a") as f:
        d = f["episode_0/observations/observation"]
        v = d[()]
        v[:, :2] += delta
        d[...] = v


@functools.cache
def _unet() -> torch.nn.Module:
    """A small eval-mode TemporalUnet (horizon 8, 4 features), built once."""
    from lomap_planner import TemporalUnet

    with torch.device("cpu"):
        torch.manual_seed(0)
        return TemporalUnet(8, 4, dim=8, dim_mults=(1, 2)).eval()


def _unet_forward(x, t):
    with torch.no_grad():
        return _unet()(x, t)


_LIMITS_FIT = np.array([[0.0, 10.0, 5.0], [2.0, 30.0, 5.0], [1.0, 20.0, 5.0]])


def _limits(x, inverse=False):
    """A LimitsNormalizer fitted on three rows (the last feature constant) applied to x."""
    from lomap_planner import LimitsNormalizer

    norm = LimitsNormalizer(_LIMITS_FIT)
    return norm.unnormalize(x) if inverse else norm.normalize(x)


def _more_entries(windows, x, data) -> list[dict]:
    """local_pca (both rank rules), the windows and the U-Net's forward pass."""
    from lomap_planner import local_pca

    g = torch.Generator().manual_seed(0)
    nbrs = torch.as_tensor(windows[:30].reshape(3, 10, -1), dtype=torch.float64)
    probe = np.array([[0.5, 15.0, 5.0], [1.5, 25.0, 6.0]])
    return [
        {"name": "LimitsNormalizer", "call": _limits, "kwargs": {"x": probe},
         "arrays": {"x": {"kind": "float", "ndim": (1, 2, 3)}}, "rows": [["x"]],
         "order": "equivariant", "grid": {"inverse": [True]},
         "known": [{"kwargs": {"x": _LIMITS_FIT},
                    "check": lambda z: np.allclose(z[:, :2], [[-1, -1], [1, 1], [0, 0]])
                    and np.allclose(z[:, 2], -1),
                    "why": "each feature's min and max map to -1 and 1; a constant feature to -1"},
                   {"kwargs": {"x": torch.tensor(probe)},
                    "check": lambda z: torch.allclose(_limits(z, inverse=True),
                                                      torch.tensor(probe)),
                    "why": "unnormalize inverts normalize, as a tensor of the input's dtype"},
                   {"kwargs": {"x": probe[:, :1]}, "raises": ["x"],
                    "why": "one feature would broadcast over three"}]},
        {"name": "local_pca", "call": lambda samples, tau=0.9, batch_rank=False: local_pca(
            samples, tau, batch_rank=batch_rank)[1],
         "kwargs": {"samples": nbrs}, "arrays": {"samples": {"kind": "float", "ndim": 3}},
         "params": {"tau": {"type": "float", "bad": [0.0, 1.5, float("nan")]}},
         "grid": {"batch_rank": [True]},
         "known": [{"kwargs": {"samples": nbrs, "tau": 0.9},
                    "check": lambda b: bool(torch.allclose(b.transpose(1, 2) @ b,
                                                           torch.eye(b.shape[-1], dtype=b.dtype)
                                                           .expand(b.shape[0], -1, -1) * (b.abs().sum(1, keepdim=True).transpose(1, 2) > 0),
                                                           atol=1e-8)),
                    "why": "the kept basis vectors are orthonormal (zero-padded past each rank)"}]},
        {"name": "make_windows", "call": lambda horizon=8, stride=4: make_windows(
            data, horizon, stride=stride, include_actions=False), "kwargs": {},
         "params": {"horizon": {"type": "int", "bad": [0]}, "stride": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {}, "check": lambda w: bool(np.array_equal(w, windows)),
                    "why": "the windows the LoMAP entries use"}]},
        {"name": "TemporalUnet.forward", "call": _unet_forward,
         "kwargs": {"x": torch.randn(2, 8, 4, generator=g),
                    "t": torch.tensor([0, 5])},
         "modules": lambda: [_unet()]},
    ]  # fmt: skip


def _with(data, **changes):
    out = {k: np.array(v) for k, v in data.items()}
    out.update(changes)
    return out


def _window_entries(data, x) -> list[dict]:
    """Hierarchical windows, dataset validation and Diffuser's goal conditions."""
    from lomap_planner import goal_conditions, make_hierarchical_windows, validate_dataset

    n = len(data["observations"])
    nan_obs = data["observations"].copy()
    nan_obs[3, 1] = np.nan
    return [
        {"name": "make_hierarchical_windows",
         "call": lambda n_subgoals=2, jump=3, include_actions=False: make_hierarchical_windows(
             data, n_subgoals, jump, include_actions),
         "kwargs": {},
         "params": {"n_subgoals": {"type": "int", "bad": [0]}, "jump": {"type": "int", "bad": [0]},
                    "include_actions": {"type": "bool", "bad": [1]}},
         "grid": {"include_actions": [True]},
         "known": [{"kwargs": {},
                    "check": lambda hl: np.array_equal(hl[0], make_windows(data, 7, include_actions=False)[:, ::3])
                    and np.array_equal(hl[1], make_windows(data, 4, include_actions=False)),
                    "why": "every 3rd state of the 7-step windows; the 4-step windows"},
                   {"kwargs": {"include_actions": True},
                    "check": lambda hl: hl[0].shape[1:] == (3, 6) and hl[1].shape[1:] == (4, 6),
                    "why": "[action; observation] rows: 2 + 4 features"}]},
        {"name": "validate_dataset", "call": lambda data=data: validate_dataset(data),
         "kwargs": {},
         "known": [{"kwargs": {}, "check": lambda d: d.keys() == data.keys()
                    and all(np.array_equal(d[k], data[k]) for k in data),
                    "why": "a valid dataset comes back as the same arrays"},
                   {"kwargs": {"data": {k: v for k, v in data.items() if k != "timeouts"}},
                    "check": lambda d: d["timeouts"].shape == (n,) and not d["timeouts"].any(),
                    "why": "timeouts are optional (all False)"},
                   {"kwargs": {"data": {k: v for k, v in data.items() if k != "rewards"}},
                    "raises": ["rewards"], "check": None, "why": "a missing required key"},
                   {"kwargs": {"data": _with(data, actions=data["actions"][:-1])},
                    "raises": ["actions"], "check": None, "why": "one action short"},
                   {"kwargs": {"data": _with(data, **{"infos/goal": data["infos/goal"][:-2]})},
                    "raises": ["infos/goal"], "check": None,
                    "why": "an infos/ array of another length"},
                   {"kwargs": {"data": _with(data, observations=nan_obs)},
                    "raises": ["observations"], "check": None, "why": "a NaN observation"},
                   {"kwargs": {"data": _with(data, terminals=np.full(n, 0.5))},
                    "raises": ["terminals"], "check": None, "why": "terminals that are not flags"},
                   {"kwargs": {"data": [1, 2]}, "raises": ["data"], "check": None,
                    "why": "not a dict"}]},
        {"name": "goal_conditions", "call": goal_conditions,
         "kwargs": {"x": x, "action_dim": 0},
         "params": {"action_dim": {"type": "int", "bad": [-1, 4]},
                    "goal_features": {"type": "int", "bad": [0, 5]}},
         "known": [{"kwargs": {"x": x, "action_dim": 0},
                    "check": lambda c: sorted(c) == [0, 7] and torch.equal(c[0], x[:, 0])
                    and torch.equal(c[7], x[:, -1, :2]),
                    "why": "the first full state and the last position"},
                   {"kwargs": {"x": x[:, :1], "action_dim": 0}, "raises": ["x"], "check": None,
                    "why": "a one-step window would put both conditions on step 0"}]},
    ]  # fmt: skip


def _physics(**kw):
    """Two balls one step from rest in the open middle of the U-maze, under ``PhysicsParams``."""
    from lomap_planner import PhysicsParams

    pos, vel = np.array([[1.0, 1.0], [3.0, 1.0]]), np.zeros((2, 2))
    act = np.array([[1.0, 0.0], [0.0, -1.0]])
    return np.concatenate(
        point_mass_step(pos, vel, act, get_layout("umaze"), PhysicsParams(**kw)), 1
    )


def _first_step_by_hand(dt=0.01, gain=2.0, damping=0.0):
    """From rest: v = gain a dt, then x += v dt (semi-implicit Euler)."""
    v = gain * np.array([[1.0, 0.0], [0.0, -1.0]]) * dt / (1 + damping * dt)
    return np.concatenate([np.array([[1.0, 1.0], [3.0, 1.0]]) + v * dt, v], 1)


def _nn(queries, k=2, metric="cosine", backend="torch", block_size=3, nprobe=16, data=None):
    from lomap_planner import NeighborIndex

    ref = _NN_DATA if data is None else data
    d, i = NeighborIndex(ref, metric, backend, block_size, nprobe).search(queries, k)
    return {"dist": d, "idx": i}


_NN_DATA = np.random.default_rng(3).normal(size=(7, 4))


def _nn_by_hand(queries, k, metric):
    q, x = np.asarray(queries), _NN_DATA
    if metric == "cosine":
        d = (
            1
            - (q / np.linalg.norm(q, axis=1, keepdims=True))
            @ (x / np.linalg.norm(x, axis=1, keepdims=True)).T
        )
    else:
        d = np.linalg.norm(q[:, None] - x[None], axis=-1)
    return np.argsort(d, 1, kind="stable")[:, :k], np.sort(d, 1)[:, :k]


def _agrees(r, queries, k, metric):
    idx, dist = _nn_by_hand(queries, k, metric)
    return np.array_equal(r["idx"].numpy(), idx) and np.allclose(r["dist"].numpy(), dist, atol=1e-5)


_PROJ: dict = {}


def _projected(x_t, alpha_bar=0.5, seed=0, condition=None):
    from lomap_planner import LoMAP, LoMAPProjector

    if "l" not in _PROJ:
        w = make_windows(collect_maze2d_dataset(PointMazeEnv("umaze"), 300, n_streams=1, seed=0),
                         4, stride=2, include_actions=False).astype(np.float32)  # fmt: skip
        _PROJ["l"] = LoMAP(w, n_neighbors=4, proj_range=(0.0, 1.0))
    proj = LoMAPProjector(_PROJ["l"], condition, seed)
    return proj(x_t, x_t.clone(), alpha_bar)


def _hook_entries() -> list[dict]:
    q = np.random.default_rng(4).normal(size=(3, 4))
    x_t = torch.as_tensor(np.random.default_rng(5).normal(size=(2, 4, 4)), dtype=torch.float32)
    pos = {"type": "float", "bad": [0.0, -1.0, float("inf"), "0.01"]}
    return [
        {"name": "PhysicsParams", "call": _physics, "kwargs": {},
         "params": {"dt": {**pos, "good": 0.01}, "gain": {**pos, "good": 2.0},
                    "max_speed": {**pos, "good": 5.0},
                    "damping": {"type": "float", "bad": [-0.1, float("nan"), "0"], "good": 0.0},
                    "radius": {"type": "float", "bad": [0.5, -0.1], "good": 0.1},
                    "implicit_damping": {"bad": ["no", 1]}},
         "known": [{"kwargs": {"dt": 0.01, "gain": 2.0, "damping": 0.0},
                    "check": lambda r: np.allclose(r, _first_step_by_hand(), atol=1e-12),
                    "why": "from rest, v = gain a dt and x += v dt (semi-implicit Euler)"},
                   {"kwargs": {"dt": 0.01, "gain": 2.0, "damping": 3.0},
                    "check": lambda r: np.allclose(r, _first_step_by_hand(damping=3.0), atol=1e-12),
                    "why": "implicit damping divides the velocity by 1 + damping dt (MuJoCo)"}]},
        {"name": "NeighborIndex", "call": _nn, "kwargs": {"queries": q},
         "arrays": {"queries": {"kind": "float", "ndim": 2}}, "rows": [["queries"]],
         "order": "equivariant", "min_rows": 0,  # neighbours per query: no queries, no rows
         "params": {"k": {"type": "int", "bad": [0, 8, 2.5], "good": 2},
                    "metric": {"type": "str", "bad": ["dot"]},
                    "backend": {"type": "str", "bad": ["annoy"]},
                    "block_size": {"type": "int", "bad": [0, 1.5], "good": 3},
                    "nprobe": {"type": "int", "bad": [0], "good": 16},
                    "data": {"bad": [np.zeros((0, 4)), np.full((3, 4), np.nan)]}},
         "grid": {"metric": ["euclidean"], "backend": ["kdtree"]},
         "known": [{"kwargs": {"queries": q, "k": 3},
                    "check": lambda r: _agrees(r, q, 3, "cosine"),
                    "why": "exact top-k cosine distances by brute force, across blocks of 3"},
                   {"kwargs": {"queries": q, "k": 3, "metric": "euclidean", "backend": "kdtree"},
                    "check": lambda r: _agrees(r, q, 3, "euclidean"),
                    "why": "the KD-tree's euclidean neighbours by brute force"}]},
        {"name": "LoMAPProjector", "call": _projected, "kwargs": {"x_t": x_t},
         "params": {"seed": {"type": "int", "bad": [-1, 1.5], "good": 0},
                    "alpha_bar": {"type": "float", "bad": [0.0, 1.5, float("nan"), "0.5"],
                                  "good": 0.5},
                    "condition": {"bad": ["inpaint"]}},
         "known": [{"kwargs": {"x_t": x_t, "seed": 3},
                    "check": lambda y: torch.equal(y, _projected(x_t, seed=3)),
                    "why": "a seeded projector projects reproducibly"}]},
    ]  # fmt: skip


# ---------------------------------------------------------------- diffusion, planners, training
_GD: dict = {}


def _gd(predict_epsilon=False, clip_denoised=True, n_timesteps=4):
    """A GaussianDiffusion over the cached U-Net (horizon 8, 4 features, no actions), by option."""
    from lomap_planner import GaussianDiffusion

    key = tuple(map(repr, (predict_epsilon, clip_denoised, n_timesteps)))  # 1 == True as keys
    if key not in _GD:
        _GD[key] = GaussianDiffusion(_unet(), 8, 4, 0, n_timesteps, predict_epsilon,
                                     clip_denoised).eval()  # fmt: skip
    return _GD[key]


def _gd_variants():
    return [_gd(), _gd(True), _gd(clip_denoised=False)]


def _conds(b=2):
    g = torch.Generator().manual_seed(1)
    return {0: torch.rand(b, 4, generator=g) * 2 - 1, 7: torch.rand(b, 2, generator=g) * 2 - 1}


def _sample(conditions, n_timesteps=4, predict_epsilon=False, clip_denoised=True,
            guide_scale=0.0, return_chain=False, build=None):  # fmt: skip
    """GaussianDiffusion.sample from a seeded generator (``build``: constructor keywords)."""
    from lomap_planner import GaussianDiffusion

    if build is not None:
        GaussianDiffusion(**{"model": _unet(), "horizon": 8, "transition_dim": 4,
                             "action_dim": 0, **build})  # fmt: skip
    gd = _gd(predict_epsilon, clip_denoised, n_timesteps)
    gen = torch.Generator().manual_seed(0)
    guide = (lambda x: -(x**2).sum((1, 2))) if guide_scale else None
    return gd.sample(conditions, guide=guide, guide_scale=guide_scale, generator=gen,
                     return_chain=return_chain)  # fmt: skip


def _last_step_is_x0(r):
    # DDPM's last reverse step has coefficients (1, 0): its mean is the model's x0 estimate
    x, chain = r
    cond = _conds()
    x0 = _gd().predict_x0(chain[-2], 0)
    x0[:, 0], x0[:, 7, :2] = cond[0], cond[7]
    return torch.allclose(x, x0, atol=1e-6)


def _inpainted(r):
    c = _conds()
    return torch.equal(r[:, 0], c[0]) and torch.equal(r[:, 7, :2], c[7])


@functools.cache
def _normalizer():
    from lomap_planner import LimitsNormalizer

    lo, hi = np.array([0.5, 0.5, -2.0, -2.0]), np.array([3.5, 3.5, 2.0, 2.0])
    return LimitsNormalizer(np.stack([lo, hi]))


@functools.cache
def _planner():
    from lomap_planner import DiffuserPlanner

    return DiffuserPlanner(_gd(), _normalizer())


def _plan(obs, goal, seed=0, guide_scale=0.0):
    from lomap_planner import DiffuserPlanner

    planner = _planner() if not guide_scale else DiffuserPlanner(
        _gd(), _normalizer(), guide=lambda x: -(x**2).sum((1, 2)), guide_scale=guide_scale)  # fmt: skip
    return planner.plan(obs, goal, seed=seed)


@functools.cache
def _hierarchical():
    """High level: 4 subgoal states (K = 3); low level: 4-step segments (jump = 3)."""
    from lomap_planner import DiffuserPlanner, GaussianDiffusion, HierarchicalPlanner, TemporalUnet

    torch.manual_seed(0)
    levels = [GaussianDiffusion(TemporalUnet(4, 4, dim=8, dim_mults=(1, 2)), 4, 4, 0, 3).eval()
              for _ in range(2)]  # fmt: skip
    return HierarchicalPlanner(*(DiffuserPlanner(d, _normalizer()) for d in levels))


def _hplan(obs, goal, seed=0):
    return _hierarchical().plan(obs, goal, seed=seed)


def _starts_and_ends(plans, obs, goal, n_steps):
    return (plans.shape[1] == n_steps and np.allclose(plans[:, 0], obs, atol=1e-5)
            and np.allclose(plans[:, -1, :2], goal, atol=1e-5))  # fmt: skip


def _fresh_diffusion(seed=0):
    from lomap_planner import GaussianDiffusion, TemporalUnet

    with torch.device("cpu"):
        torch.manual_seed(seed)
        return GaussianDiffusion(TemporalUnet(8, 4, dim=8, dim_mults=(1, 2)), 8, 4, 0, 4)


def _trainer_run(windows, batch_size=4, lr=1e-3, ema_decay=0.5, seed=0, goal_features=2,
                 until=1, resume_at=None):  # fmt: skip
    """DiffusionTrainer from fresh weights: losses and the EMA weights (resumed at a step)."""
    from lomap_planner import DiffusionTrainer

    def trainer():
        return DiffusionTrainer(_fresh_diffusion(), windows, batch_size, lr, ema_decay, seed,
                                goal_features)  # fmt: skip

    tr = trainer()
    losses = []
    if resume_at is not None:
        losses += tr.fit(resume_at)
        state = tr.state_dict()
        tr = trainer()
        tr.load_state_dict(state)
    losses += tr.fit(until)
    return {"losses": np.array(losses),
            "ema": torch.cat([p.flatten() for p in tr.ema.parameters()]).detach()}  # fmt: skip


def _train(windows, n_steps=2, batch_size=4, lr=1e-3, ema_decay=0.5, seed=0, checkpoints=()):
    from lomap_planner import train_diffusion

    marks = []
    d = _fresh_diffusion()
    losses = train_diffusion(d, windows, n_steps, batch_size, lr, ema_decay, seed,
                             checkpoints=checkpoints,
                             on_checkpoint=lambda s, m: marks.append(s) if checkpoints else None)  # fmt: skip
    return {"losses": np.array(losses), "marks": np.array(marks, dtype=float),
            "weights": torch.cat([p.flatten() for p in d.model.parameters()]).detach()}  # fmt: skip


def _planner_entries(windows) -> list[dict]:
    w = np.clip(windows[:16] / 4.0, -1, 1).astype(np.float32)  # normalised-looking windows
    bad_b = {0: torch.zeros(2, 4), 7: torch.zeros(3, 2)}
    obs = np.array([[1.0, 3.0, 0.0, 0.0], [3.0, 3.0, 0.1, -0.1]])
    goal = np.array([1.0, 1.0])
    return [
        {"name": "GaussianDiffusion", "call": _sample, "kwargs": {"conditions": _conds()},
         "modules": _gd_variants,
         "params": {"conditions": {"bad": [{}, {8: torch.zeros(2, 4)}, bad_b, {0: torch.zeros(4)},
                                           {0: torch.full((2, 4), float("nan"))},
                                           {"0": torch.zeros(2, 4)}, {0: torch.zeros(2, 5)}]},
                    "n_timesteps": {"type": "int", "bad": [1, 2.5], "good": 4},
                    "predict_epsilon": {"bad": ["no"]}, "clip_denoised": {"bad": [1]},
                    "guide_scale": {"type": "float", "bad": [-1.0, float("nan"), "1"], "good": 0.0},
                    "return_chain": {"bad": ["yes"]}},
         "grid": {"predict_epsilon": [True], "clip_denoised": [False], "guide_scale": [0.5],
                  "return_chain": [True]},
         "known": [{"kwargs": {"conditions": _conds()}, "check": _inpainted,
                    "why": "the start state and the goal position are inpainted exactly"},
                   {"kwargs": {"conditions": _conds(), "return_chain": True},
                    "check": _last_step_is_x0,
                    "why": "the last reverse step's mean is the model's x0 estimate (coefficients 1, 0)"},
                   {"kwargs": {"conditions": _conds(), "build": {"horizon": 1}}, "raises": ["horizon"],
                    "why": "a plan needs a start and a goal step"},
                   {"kwargs": {"conditions": _conds(), "build": {"action_dim": 4}},
                    "raises": ["action_dim"], "why": "no observation features left"},
                   {"kwargs": {"conditions": _conds(), "build": {"model": "unet"}},
                    "raises": ["model"], "why": "the denoiser must be a module"}]},
        {"name": "DiffuserPlanner", "call": _plan, "kwargs": {"obs": obs, "goal": goal},
         "arrays": {"obs": {"kind": "float", "ndim": (1, 2)}, "goal": {"kind": "float", "ndim": (1, 2)}},
         "params": {"seed": {"type": "int", "bad": [-1, 0.5], "good": 0},
                    "guide_scale": {"type": "float", "bad": [-0.5, "1"], "good": 0.0}},
         "grid": {"guide_scale": [0.5]},
         "known": [{"kwargs": {"obs": obs, "goal": goal},
                    "check": lambda r: _starts_and_ends(r, obs, goal, 8),
                    "why": "plans start at obs and end at the goal position (unnormalised)"},
                   {"kwargs": {"obs": obs, "goal": np.ones((3, 2))}, "raises": ["goal"],
                    "why": "three goals for two starts"}]},
        {"name": "HierarchicalPlanner", "call": _hplan, "kwargs": {"obs": obs, "goal": goal},
         "arrays": {"obs": {"kind": "float", "ndim": (1, 2)}, "goal": {"kind": "float", "ndim": (1, 2)}},
         "params": {"seed": {"type": "int", "bad": [-1, 0.5], "good": 0}},
         "known": [{"kwargs": {"obs": obs, "goal": goal},
                    "check": lambda r: _starts_and_ends(r, obs, goal, 10),
                    "why": "K * jump + 1 = 10 steps from obs exactly to the goal position"}]},
        {"name": "DiffusionTrainer", "call": _trainer_run, "kwargs": {"windows": w},
         "arrays": {"windows": {"kind": "float", "ndim": 3}},
         "params": {"batch_size": {"type": "int", "bad": [0, 2.5], "good": 4},
                    "lr": {"type": "float", "bad": [0.0, -1e-3, "1e-3"], "good": 1e-3},
                    "ema_decay": {"type": "float", "bad": [1.0, float("nan")], "good": 0.5},
                    "seed": {"type": "int", "bad": [-1, 0.5], "good": 0},
                    "goal_features": {"type": "int", "bad": [0, 5, True], "good": 2},
                    "until": {"type": "int", "bad": [-1, 1.5], "good": 1}},
         "known": [{"kwargs": {"windows": w, "until": 2, "resume_at": 1},
                    "check": lambda r: torch.equal(r["ema"], _trainer_run(w, until=2)["ema"])
                    and np.array_equal(r["losses"], _trainer_run(w, until=2)["losses"]),
                    "why": "stopped at step 1 and resumed from state_dict: the same run"}]},
        {"name": "train_diffusion", "call": _train, "kwargs": {"windows": w},
         "arrays": {"windows": {"kind": "float", "ndim": 3}},
         "params": {"n_steps": {"type": "int", "bad": [0, 2.5], "good": 2},
                    "batch_size": {"type": "int", "bad": [0], "good": 4},
                    "lr": {"type": "float", "bad": [float("inf")], "good": 1e-3},
                    "checkpoints": {"bad": [(3,), "1", (1.5,)]}},
         "known": [{"kwargs": {"windows": w, "checkpoints": (1,)},
                    "check": lambda r: np.array_equal(r["marks"], [1.0])
                    and np.array_equal(r["losses"], _trainer_run(w, until=2)["losses"]),
                    "why": "DiffusionTrainer's run, one callback at each checkpoint"}]},
    ]  # fmt: skip


# ---------------------------------------------------------------- environment, controllers, data
def _env_run(layout="umaze", frame_skip=1, max_episode_steps=None, reset_noise=0.1, goal=None,
             start=None, physics=None, steps=3):  # fmt: skip
    from gymnasium.utils.env_checker import check_env

    env = PointMazeEnv(layout, frame_skip, max_episode_steps, physics, goal, reset_noise)
    check_env(env, skip_render_check=True)  # gymnasium's own API checks
    obs, _ = env.reset(seed=0, options={"start": start} if start is not None else None)
    out, rewards, truncated = [obs], [], []
    for k in range(steps):
        obs, r, _, trunc, _ = env.step(np.array([0.0, 0.0]) if start is not None
                                       else np.array([0.3, -0.2 * k]))  # fmt: skip
        out.append(obs), rewards.append(r), truncated.append(trunc)
    return {"obs": np.array(out), "rewards": np.array(rewards),
            "truncated": np.array(truncated, dtype=float)}  # fmt: skip


def _register(frame_skip=1):
    import gymnasium as gym

    from lomap_planner import register_envs

    ids = register_envs(frame_skip)
    return {"ids": ids, "frame_skip": gym.make(ids[0]).unwrapped.frame_skip}


def _waypoint(state, goal=(1.0, 1.0), p_gain=10.0, d_gain=-1.0, reach_radius=0.2, walls=None):
    from lomap_planner import WaypointController

    ctrl = WaypointController(get_layout("umaze") if walls is None else walls, p_gain, d_gain,
                              reach_radius)  # fmt: skip
    action, done = ctrl(state, np.asarray(goal))
    return {"action": action, "done": np.asarray(done, dtype=float)}


def _d4rl_ctrl(location, velocity=(0.0, 0.0), target=(1.0, 1.0), p_gain=10.0, d_gain=-1.0,
               solve_thresh=0.1, vel_thresh=0.1, seed=0, walls=None):  # fmt: skip
    from lomap_planner import D4RLWaypointController

    ctrl = D4RLWaypointController(get_layout("umaze") if walls is None else walls, p_gain, d_gain,
                                  solve_thresh, vel_thresh, np.random.default_rng(seed))  # fmt: skip
    action, done = ctrl(location, np.asarray(velocity), np.asarray(target))
    return {"action": action, "done": float(done), "waypoints": ctrl._waypoints.copy()}


class _GoalPlanner:
    """A stub planner whose plan is the start repeated, then the goal: exercises the loop only."""

    action_dim = 0

    def __init__(self):
        self.calls = 0

    def plan(self, obs, goal, seed=None):
        self.calls += 1
        plans = np.repeat(obs[:, None], 4, 1)
        plans[:, 1:, :2] = goal
        return plans


def _rollout(n_episodes=2, seed=0, p_gain=10.0, d_gain=-1.0, replan_every=None, steps=5):
    from lomap_planner import rollout_planner

    env = PointMazeEnv("umaze", max_episode_steps=steps)
    out = rollout_planner(env, _GoalPlanner(), n_episodes, seed, p_gain, d_gain, replan_every)
    return {k: np.asarray(v, dtype=float) for k, v in out.items() if k != "plan_time"} | {
        "n_calls": float(len(out["plan_time"]))}  # fmt: skip


def _collect(n_steps=40, action_noise=0.5, n_streams=2, seed=0, reward="d4rl", goal_jitter=0.1,
             verbose=False):  # fmt: skip
    return collect_maze2d_dataset(PointMazeEnv("umaze"), n_steps, action_noise, n_streams, seed,
                                  verbose, reward, goal_jitter)  # fmt: skip


def _collect_d4rl(layout="umaze", n_steps=40, noisy=True, seed=0, verbose=False):
    return collect_d4rl_dataset(layout, n_steps, noisy, seed, verbose)


def _valid_maze2d(d, n):
    from lomap_planner import validate_dataset

    validate_dataset(d)
    return len(d["observations"]) == n and bool(d["timeouts"][-1])


def _env_entries() -> list[dict]:
    states = np.array([[1.0, 3.0, 0.0, 0.0], [3.0, 3.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    return [
        {"name": "PointMazeEnv", "call": _env_run, "kwargs": {},
         "params": {"frame_skip": {"type": "int", "bad": [0, 1.5, True], "good": 1},
                    "reset_noise": {"type": "float", "bad": [0.5, -0.1, "0.1"], "good": 0.1},
                    "max_episode_steps": {"type": "int", "bad": [0, 2.5], "good": 600},
                    "layout": {"bad": [3, "nowhere"]},
                    "goal": {"bad": [(0.0, 0.0), (np.nan, 1.0), (1.0, 2.0, 3.0)]},
                    "physics": {"bad": [{"dt": 0.01}]}},
         "grid": {"frame_skip": [2], "layout": ["medium"]},
         "known": [{"kwargs": {"start": (1.0, 1.0), "frame_skip": 3},
                    "check": lambda r: np.array_equal(r["rewards"], [3.0, 3.0, 3.0]),
                    "why": "at rest on the goal: reward 1 per physics step, 3 per frame-skip-3 step"},
                   {"kwargs": {"max_episode_steps": 2},
                    "check": lambda r: np.array_equal(r["truncated"], [0.0, 1.0, 1.0]),
                    "why": "truncated from step 2 on (Maze2D never terminates)"}]},
        {"name": "register_envs", "call": _register, "kwargs": {},
         "params": {"frame_skip": {"type": "int", "bad": [0, 2.5], "good": 1}},
         "known": [{"kwargs": {"frame_skip": 4}, "check": lambda r: r["frame_skip"] == 4,
                    "why": "registered again with the new frame skip (it kept the first one)"},
                   {"kwargs": {}, "check": lambda r: r["frame_skip"] == 1 and len(r["ids"]) == 3,
                    "why": "umaze, medium and large, frame skip 1"}]},
        {"name": "WaypointController", "call": _waypoint, "kwargs": {"state": states},
         "arrays": {"state": {"kind": "float", "ndim": (1, 2)}}, "rows": [["state"]],
         "order": "equivariant",
         "params": {"p_gain": {"type": "float", "bad": [np.nan, "10"], "good": 10.0},
                    "d_gain": {"type": "float", "bad": [np.inf], "good": -1.0},
                    "reach_radius": {"type": "float", "bad": [0.0, np.nan], "good": 0.2},
                    "goal": {"bad": [(np.nan, 1.0), (1.0,)]},
                    "walls": {"bad": [np.ones((5, 5), bool), np.zeros(5, bool), np.full((5, 5), 0.5)]}},
         "known": [{"kwargs": {"state": states},
                    "check": lambda r: np.array_equal(r["action"], [[0, -1], [-1, 0], [0, 0]])
                    and np.array_equal(r["done"], [0, 0, 1]),
                    "why": "umaze by hand: next cells (1, 2) and (2, 3), full force; at the goal, done"}]},
        {"name": "D4RLWaypointController", "call": _d4rl_ctrl, "kwargs": {"location": (1.0, 3.0)},
         "arrays": {"location": {"kind": "float", "ndim": 1}},
         "params": {"p_gain": {"type": "float", "bad": [np.nan], "good": 10.0},
                    "d_gain": {"type": "float", "bad": ["-1"], "good": -1.0},
                    "solve_thresh": {"type": "float", "bad": [0.0, np.inf], "good": 0.1},
                    "vel_thresh": {"type": "float", "bad": [-0.1], "good": 0.1},
                    "target": {"bad": [(np.nan, 1.0), (1.0, 1.0, 1.0)]},
                    "velocity": {"bad": [(np.nan, 0.0)]},
                    "walls": {"bad": [np.ones((5, 5), bool)]}},
         "known": [{"kwargs": {"location": (1.0, 3.0)},
                    "check": lambda r: r["action"][1] == -1.0 and len(r["waypoints"]) == 2
                    and np.array_equal(r["waypoints"][-1], [1.0, 1.0]) and r["done"] == 0.0,
                    "why": "path (1,3) -> (1,2) -> (1,1): a jittered (1,2), then the target cell"},
                   {"kwargs": {"location": (1.0, 1.0)},
                    "check": lambda r: np.array_equal(r["action"], [0.0, 0.0]) and r["done"] == 1.0,
                    "why": "at rest on the target cell: solved, no force"}]},
        {"name": "rollout_planner", "call": _rollout, "kwargs": {},
         "params": {"n_episodes": {"type": "int", "bad": [0, 1.5], "good": 2},
                    "seed": {"type": "int", "bad": [-1], "good": 0},
                    "p_gain": {"type": "float", "bad": [np.nan], "good": 10.0},
                    "d_gain": {"type": "float", "bad": ["-1"], "good": -1.0},
                    "replan_every": {"type": "int", "bad": [0, 1.5], "good": 2}},
         "grid": {"replan_every": [2]},
         "known": [{"kwargs": {"replan_every": 2}, "check": lambda r: r["n_calls"] == 3.0,
                    "why": "5 steps, a new plan at steps 0, 2 and 4"},
                   {"kwargs": {}, "check": lambda r: r["n_calls"] == 1.0
                    and r["returns"].shape == (2,) and ((r["returns"] >= 0) & (r["returns"] <= 5)).all(),
                    "why": "one plan per episode batch; sparse returns within [0, steps]"}]},
        {"name": "collect_maze2d_dataset", "call": _collect, "kwargs": {},
         "params": {"n_steps": {"type": "int", "bad": [0, True, 2.5], "good": 40},
                    "action_noise": {"type": "float", "bad": [-0.1, "0.5"], "good": 0.5},
                    "n_streams": {"type": "int", "bad": [0], "good": 2},
                    "seed": {"type": "int", "bad": [-1, 0.5], "good": 0},
                    "reward": {"bad": ["dense", None]},
                    "goal_jitter": {"type": "float", "bad": [0.5, np.nan], "good": 0.1},
                    "verbose": {"bad": ["no"]}},
         "grid": {"reward": ["goal"]},
         "known": [{"kwargs": {}, "check": lambda d: _valid_maze2d(d, 40) and np.array_equal(
                        d["rewards"], d4rl_sparse_rewards(d["observations"], d4rl_goal("umaze"))),
                    "why": "a valid D4RL-layout file whose rewards are D4RL's relabelled ones"}]},
        {"name": "collect_d4rl_dataset", "call": _collect_d4rl, "kwargs": {},
         "params": {"n_steps": {"type": "int", "bad": [0, True], "good": 40},
                    "layout": {"bad": ["tiny", 1]}, "noisy": {"bad": ["yes"]},
                    "seed": {"type": "int", "bad": [-1], "good": 0}, "verbose": {"bad": [0]}},
         "grid": {"noisy": [False], "layout": ["medium"]},
         "known": [{"kwargs": {}, "check": lambda d: _valid_maze2d(d, 40),
                    "why": "a valid D4RL-layout dataset, last step a timeout"}]},
    ]  # fmt: skip
