import numpy as np
import pytest

from lomap_planner.datasets import (
    REQUIRED_KEYS,
    collect_maze2d_dataset,
    episode_bounds,
    load_hdf5,
    make_windows,
    save_hdf5,
    validate_dataset,
)
from lomap_planner.geometry import segments_hit_walls
from lomap_planner.normalizers import LimitsNormalizer


def test_generator_d4rl_layout(tiny_env, tiny_data):
    d = tiny_data
    for k in (*REQUIRED_KEYS, "infos/goal", "infos/qpos", "infos/qvel"):
        assert len(d[k]) == 1200
    assert d["observations"].shape == (1200, 4) and d["actions"].shape == (1200, 2)
    assert d["observations"].dtype == np.float32
    assert not d["terminals"].any()
    assert np.abs(d["actions"]).max() <= 1.0
    # 12 streams of 100 steps; timeouts every 20 steps and at each stream end.
    assert d["timeouts"].sum() == 60
    bounds = episode_bounds(d)
    assert (bounds[:, 1] - bounds[:, 0] == 20).all()
    # Within an episode the logged positions follow feasible physics.
    for a, b in bounds[:5]:
        p = d["observations"][a:b, :2]
        assert not segments_hit_walls(p[:-1], p[1:], tiny_env.walls).any()
    # The controller reaches goals, so some reward is collected.
    assert d["rewards"].sum() > 0


def test_hdf5_roundtrip(tmp_path, tiny_data):
    path = tmp_path / "maze.hdf5"
    save_hdf5(tiny_data, path)
    back = load_hdf5(path)
    assert set(back) == set(tiny_data)
    for k in tiny_data:
        np.testing.assert_array_equal(back[k], tiny_data[k])


def test_load_hdf5_bad_files(tmp_path, tiny_data):
    import h5py

    with pytest.raises(ValueError, match="path"):
        load_hdf5(tmp_path / "missing.hdf5")
    path = tmp_path / "bad.hdf5"
    with h5py.File(path, "w") as f:
        for k in ("observations", "actions", "rewards", "terminals"):
            f.create_dataset(k, data=tiny_data[k])
    no_timeouts = load_hdf5(path, layout="tiny")  # accepted as d4rl does: no timeouts -> False
    assert not no_timeouts["timeouts"].any()
    with h5py.File(path, "a") as f:
        f.create_dataset("timeouts", data=tiny_data["timeouts"][:-3])
    with pytest.raises(ValueError, match="timeouts has length"):
        load_hdf5(path, layout="tiny")


def test_validate_dataset_errors(tiny_data):
    d = dict(tiny_data)
    obs = d["observations"].copy()
    obs[5, 1] = np.nan
    with pytest.raises(ValueError, match="observations contains NaN"):
        validate_dataset({**d, "observations": obs})
    with pytest.raises(ValueError, match="actions has length"):
        validate_dataset({**d, "actions": d["actions"][:10]})
    with pytest.raises(ValueError, match="missing"):
        validate_dataset({k: v for k, v in d.items() if k != "rewards"})
    with pytest.raises(ValueError, match="empty"):
        validate_dataset({k: v[:0] for k, v in d.items()})
    with pytest.raises(TypeError, match="data"):
        validate_dataset([1, 2])
    # The caller's arrays are not modified by validation.
    assert np.isfinite(tiny_data["observations"]).all()


def test_make_windows_respect_episodes(tiny_data):
    w = make_windows(tiny_data, 8)
    # 60 episodes of 20 steps -> 13 windows each.
    assert w.shape == (60 * 13, 8, 6)
    np.testing.assert_array_equal(w[0, :, 2:], tiny_data["observations"][:8])
    np.testing.assert_array_equal(w[13, 0, 2:], tiny_data["observations"][20])
    with pytest.raises(ValueError, match="horizon"):
        make_windows(tiny_data, 21)
    with pytest.raises(ValueError, match="horizon"):
        make_windows(tiny_data, 1)
    assert make_windows(tiny_data, 8, include_actions=False).shape[-1] == 4


def test_collect_bad_input(tiny_env):
    with pytest.raises(ValueError, match="n_steps"):
        collect_maze2d_dataset(tiny_env, 0)
    with pytest.raises(ValueError, match="action_noise"):
        collect_maze2d_dataset(tiny_env, 10, action_noise=-1.0)
    with pytest.raises(TypeError, match="env"):
        collect_maze2d_dataset("tiny", 10)


def test_limits_normalizer_roundtrip():
    x = np.random.default_rng(0).normal(size=(50, 3, 4))
    x[..., 3] = 2.0  # constant feature
    n = LimitsNormalizer(x)
    y = n.normalize(x)
    assert np.allclose(y[..., :3].min(axis=(0, 1)), -1) and np.allclose(
        y[..., :3].max(axis=(0, 1)), 1
    )
    np.testing.assert_allclose(n.unnormalize(y), x)
    with pytest.raises(ValueError, match="NaN"):
        LimitsNormalizer(np.array([[np.nan]]))


def _write_minari(path, episodes):
    import h5py

    with h5py.File(path, "w") as f:
        for i, (obs, goal, act, rew, term, trunc) in enumerate(episodes):
            g = f.create_group(f"episode_{i}")
            o = g.create_group("observations")
            o.create_dataset("observation", data=obs)
            o.create_dataset("desired_goal", data=goal)
            g.create_dataset("actions", data=act)
            g.create_dataset("rewards", data=rew)
            g.create_dataset("terminations", data=term)
            g.create_dataset("truncations", data=trunc)


def test_load_minari_round_trips_world_coordinates(tmp_path, tiny_data):
    """A Minari file in gymnasium-robotics world coordinates reads back in the package frame."""
    import json

    import h5py

    from lomap_planner import episode_bounds, get_layout, load_minari

    walls = get_layout("tiny")
    h, w = walls.shape
    obs, act = tiny_data["observations"][:40], tiny_data["actions"][:40]
    goal = tiny_data["infos/goal"][:40]

    def world(p):  # package (i, j) -> world (x, y): origin at the maze centre, y up
        return np.stack([p[:, 1] - (w / 2 - 0.5), (h / 2 - 0.5) - p[:, 0]], axis=1)

    w_obs = np.concatenate([world(obs[:, :2]), np.stack([obs[:, 3], -obs[:, 2]], 1)], 1)
    w_act = np.stack([act[:, 1], -act[:, 0]], 1)
    path = tmp_path / "data" / "main_data.hdf5"
    path.parent.mkdir()
    with h5py.File(path, "w") as f:
        spec = {"kwargs": {"maze_map": walls.astype(int).tolist()}}
        f.attrs["env_spec"] = json.dumps(spec)
        for e, (a, b) in enumerate([(0, 15), (15, 15), (15, 40)]):  # the middle one is empty
            g = f.create_group(f"episode_{e}")
            og = g.create_group("observations")
            extra = w_obs[b - 1 : b] if b > a else w_obs[a : a + 1]
            og.create_dataset("observation", data=np.concatenate([w_obs[a:b], extra]))
            og.create_dataset(
                "desired_goal", data=np.concatenate([world(goal[a:b]), world(goal[:1])])
            )
            g.create_dataset("actions", data=w_act[a:b])
            g.create_dataset("rewards", data=np.zeros(b - a))
            g.create_dataset("terminations", data=np.zeros(b - a, bool))
            g.create_dataset("truncations", data=np.zeros(b - a, bool))
    data = load_minari(tmp_path)
    np.testing.assert_allclose(data["observations"], obs, atol=1e-5)
    np.testing.assert_allclose(data["actions"], act, atol=1e-6)
    np.testing.assert_allclose(data["infos/goal"], goal, atol=1e-5)
    np.testing.assert_array_equal(episode_bounds(data), [[0, 15], [15, 40]])
    with pytest.raises(ValueError, match="Minari"):
        load_minari(tmp_path / "nothing")


def test_subsample_frames_keeps_episode_boundaries():
    from lomap_planner import subsample_frames

    n = 11  # episodes [0, 4) ended by timeout, [4, 9) by terminal, [9, 11) unfinished
    data = {
        "observations": np.arange(2 * n, dtype=float).reshape(n, 2),
        "actions": np.zeros((n, 2)),
        "rewards": np.arange(n, dtype=float),
        "terminals": np.zeros(n, bool),
        "timeouts": np.zeros(n, bool),
    }
    data["timeouts"][3] = True
    data["terminals"][8] = True
    before = {k: v.copy() for k, v in data.items()}
    out = subsample_frames(data, 2)
    np.testing.assert_array_equal(out["rewards"], [0, 2, 4, 6, 8, 9])
    np.testing.assert_array_equal(out["observations"][:, 0], [0, 4, 8, 12, 16, 18])
    np.testing.assert_array_equal(out["timeouts"], [0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(out["terminals"], [0, 0, 0, 0, 1, 0])
    for k, v in before.items():
        np.testing.assert_array_equal(data[k], v)  # caller's arrays untouched
    assert subsample_frames(data, 1)["rewards"].tolist() == data["rewards"].tolist()
    with pytest.raises(ValueError, match="every"):
        subsample_frames(data, 0)


def test_maze2d_set_terminals_cuts_where_the_ball_leaves_the_goal():
    from lomap_planner import maze2d_set_terminals

    x = np.array([3.0, 1.2, 1.1, 2.0, 1.0, 1.0, 3.0, 3.0])  # distance to goal (1, 0)
    n = len(x)
    data = {
        "observations": np.stack([x, np.zeros(n), np.zeros(n), np.zeros(n)], 1),
        "actions": np.zeros((n, 2)),
        "rewards": np.zeros(n),
        "terminals": np.ones(n, bool),
        "timeouts": np.zeros(n, bool),
    }
    out = maze2d_set_terminals(data, np.array([1.0, 0.0]))
    # at goal (< 0.5): steps 1, 2, 4, 5; leaving after 2 and after 5
    np.testing.assert_array_equal(np.flatnonzero(out["timeouts"]), [2, 5])
    assert not out["terminals"].any() and data["terminals"].all()  # copy, input untouched
    with pytest.raises(ValueError, match="goal"):
        maze2d_set_terminals(data, np.zeros(3))
    with pytest.raises(ValueError, match="threshold"):
        maze2d_set_terminals(data, np.zeros(2), threshold=0)
