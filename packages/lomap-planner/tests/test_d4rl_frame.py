"""D4RL's coordinate frame, reward rule and goal jitter."""

import numpy as np
import pytest

from lomap_planner import (
    D4RL_FRAME_OFFSET,
    PointMazeEnv,
    collect_maze2d_dataset,
    d4rl_goal,
    d4rl_sparse_rewards,
    from_d4rl_frame,
    load_hdf5,
    make_windows,
    plan_is_infeasible,
    save_hdf5,
    to_d4rl_frame,
)


@pytest.fixture(scope="module")
def medium():
    env = PointMazeEnv("medium")
    return env, collect_maze2d_dataset(env, 6000, n_streams=4, seed=0)


def test_rewards_agree_with_d4rl_relabel_rule(medium):
    _, d = medium
    # relabel_maze2d_rewards.py: norm(obs[:, :2] - target) <= 0.5, target = goal cell in D4RL's
    # frame; evaluated on the D4RL-frame copy of the data with the integer goal cell
    d4 = to_d4rl_frame(d)
    want = np.linalg.norm(d4["observations"][:, :2] - np.array([6.0, 6.0]), axis=1) <= 0.5
    np.testing.assert_array_equal(d["rewards"], want.astype(np.float32))
    assert 0 < d["rewards"].mean() < 1
    np.testing.assert_allclose(d4rl_goal("medium"), [6.2, 6.2])


def test_goal_jitter_is_d4rl(medium):
    _, d = medium
    goals = d["infos/goal"]
    off = goals - np.round(goals)
    assert np.abs(off).max() <= 0.1 + 1e-6 and np.abs(off).max() > 0.05


def test_frames_round_trip_and_do_not_mutate(medium):
    _, d = medium
    before = d["observations"].copy()
    d4 = to_d4rl_frame(d)
    np.testing.assert_array_equal(d["observations"], before)
    np.testing.assert_allclose(
        d4["observations"][:, :2], before[:, :2] - D4RL_FRAME_OFFSET, atol=1e-6
    )
    np.testing.assert_array_equal(d4["observations"][:, 2:], before[:, 2:])  # velocities unchanged
    back = from_d4rl_frame(d4)
    np.testing.assert_allclose(back["observations"], before, atol=1e-6)


def test_d4rl_format_file_has_no_wall_crossing_windows(medium, tmp_path):
    env, d = medium
    path = tmp_path / "maze2d-medium-like.hdf5"
    save_hdf5(to_d4rl_frame(d), path)  # a file in D4RL's frame, like the real ones
    good = load_hdf5(path, d4rl_frame=True)
    raw = load_hdf5(path)  # the same file read as if it were in the package frame
    np.testing.assert_allclose(
        good["observations"][:, :2] - raw["observations"][:, :2], D4RL_FRAME_OFFSET, atol=1e-6
    )
    windows = make_windows(good, 32, stride=4, include_actions=False)
    assert not plan_is_infeasible(windows, env.walls).any()


def test_bad_inputs():
    with pytest.raises(ValueError, match="layout"):
        d4rl_goal("open")
    with pytest.raises(ValueError, match="observations"):
        d4rl_sparse_rewards(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="goal"):
        d4rl_sparse_rewards(np.zeros((3, 4)), np.array([np.nan, 0.0]))
    env = PointMazeEnv("tiny")
    with pytest.raises(ValueError, match="reward"):
        collect_maze2d_dataset(env, 10, reward="dense")
    with pytest.raises(ValueError, match="goal_jitter"):
        collect_maze2d_dataset(env, 10, goal_jitter=0.5)
