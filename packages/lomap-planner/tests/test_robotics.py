import numpy as np
import pytest

pytest.importorskip("gymnasium_robotics")

from lomap_planner.layouts import free_cells, get_layout
from lomap_planner.robotics import RoboticsPointMazeEnv


def test_frames_agree_with_the_d4rl_layout():
    env = RoboticsPointMazeEnv("umaze", max_episode_steps=50)
    obs, info = env.reset(seed=0)
    assert obs.shape == (4,) and info["goal"].shape == (2,)
    free = {tuple(c) for c in free_cells(get_layout("umaze")).tolist()}
    assert tuple(np.rint(obs[:2]).astype(int)) in free
    assert tuple(np.rint(info["goal"]).astype(int)) in free
    # pushing along +x (rows) in the D4RL frame moves x up and leaves y about unchanged
    start = obs.copy()
    for _ in range(5):
        obs, *_ = env.step(np.array([1.0, 0.0]))
    assert obs[0] > start[0] and obs[2] > 0
    assert abs(obs[1] - start[1]) < 0.05
    with pytest.raises(ValueError, match="action"):
        env.step(np.array([np.nan, 0.0]))
    env.close()


def test_rollout_planner_runs_on_the_robotics_adapter():
    import torch

    from lomap_planner import (
        DiffuserPlanner,
        GaussianDiffusion,
        LimitsNormalizer,
        TemporalUnet,
        rollout_planner,
    )

    env = RoboticsPointMazeEnv("umaze", max_episode_steps=6)
    assert env.goal is not None
    _, info = env.reset(seed=0)
    np.testing.assert_allclose(np.rint(info["goal"]), env.goal)  # D4RL's fixed goal cell
    rng = np.random.default_rng(0)
    windows = rng.uniform(0.5, 3.5, size=(64, 8, 4)).astype(np.float32)
    norm = LimitsNormalizer(windows)
    torch.manual_seed(0)
    diff = GaussianDiffusion(TemporalUnet(8, 4, dim=8, dim_mults=(1, 2)), 8, 4, 0, n_timesteps=4)
    res = rollout_planner(env, DiffuserPlanner(diff, norm), n_episodes=2, seed=0)
    assert res["returns"].shape == (2,) and res["plans"].shape == (2, 8, 4)
    env.close()
