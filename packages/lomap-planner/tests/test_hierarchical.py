"""Two-level (HD-style) planner: windows of both levels, stitching, inpainting, LoMAP on both."""

import numpy as np
import pytest
import torch

from lomap_planner import (
    DiffuserPlanner,
    GaussianDiffusion,
    HierarchicalPlanner,
    LimitsNormalizer,
    LoMAP,
    TemporalUnet,
    make_hierarchical_windows,
    make_windows,
    rollout_planner,
    train_diffusion,
)

K, J = 3, 3  # high level: 4 states, every 3rd step; low level: 4-step segments


def _level(windows: np.ndarray, goal_features: int, lomap: bool, seed: int = 0):
    norm = LimitsNormalizer(windows)
    wn = norm.normalize(windows).astype(np.float32)
    torch.manual_seed(seed)
    h, c = wn.shape[1:]
    diff = GaussianDiffusion(TemporalUnet(h, c, dim=8, dim_mults=(1, 2)), h, c, 0, n_timesteps=8)
    train_diffusion(diff, wn, n_steps=30, batch_size=16, lr=2e-3, goal_features=goal_features)
    lm = LoMAP(wn, n_neighbors=5, proj_range=(0.2, 0.9)) if lomap else None
    return DiffuserPlanner(diff, norm, lomap=lm)


@pytest.fixture(scope="module")
def levels(tiny_data):
    high, low = make_hierarchical_windows(tiny_data, K, J)
    return high, low


def test_hierarchical_windows_subsample_long_windows(tiny_data, levels) -> None:
    high, low = levels
    full = make_windows(tiny_data, K * J + 1, include_actions=False)
    assert high.shape == (len(full), K + 1, 4) and high.flags.c_contiguous
    np.testing.assert_array_equal(high, full[:, ::J])
    np.testing.assert_array_equal(low, make_windows(tiny_data, J + 1, include_actions=False))
    with pytest.raises(ValueError, match="jump"):
        make_hierarchical_windows(tiny_data, K, 0)
    with pytest.raises(ValueError, match="n_subgoals"):
        make_hierarchical_windows(tiny_data, 0, J)


@pytest.mark.parametrize("lomap", [False, True])
def test_plan_passes_through_start_subgoals_and_goal(levels, lomap: bool) -> None:
    high_w, low_w = levels
    high = _level(high_w, 2, lomap)
    low = _level(low_w, 4, lomap)
    hp = HierarchicalPlanner(high, low)
    assert hp.jump == J and hp.horizon == K * J + 1 and hp.action_dim == 0
    obs = high_w[:5, 0].astype(float)
    goal = np.array([1.0, 1.0])
    plans = hp.plan(obs, goal, seed=3)
    assert plans.shape == (5, K * J + 1, 4) and np.isfinite(plans).all()
    np.testing.assert_allclose(plans[:, 0], obs, atol=1e-5)
    np.testing.assert_allclose(plans[:, -1, :2], np.broadcast_to(goal, (5, 2)), atol=1e-5)
    # the subgoals of the same high-level sample sit at every jump-th step
    sub = high.plan(obs, goal, seed=3)
    np.testing.assert_allclose(plans[:, J::J, :2], sub[:, 1:, :2], atol=1e-4)
    np.testing.assert_array_equal(plans, hp.plan(obs, goal, seed=3))  # deterministic
    assert hp.last_plan_time > 0


def test_hierarchical_planner_closed_loop_and_bad_input(tiny_env, levels) -> None:
    high_w, low_w = levels
    high, low = _level(high_w, 2, False), _level(low_w, 4, False)
    res = rollout_planner(tiny_env, HierarchicalPlanner(high, low), n_episodes=3, seed=0)
    assert res["plans"].shape == (3, K * J + 1, 4) and res["returns"].shape == (3,)
    with pytest.raises(TypeError, match="DiffuserPlanner"):
        HierarchicalPlanner(high, "low")
    other = _level(make_windows({**_data_of(tiny_env)}, 4), 2, False)  # [action, obs] features
    with pytest.raises(ValueError, match="transition"):
        HierarchicalPlanner(high, other)
    with pytest.raises(ValueError, match="obs"):
        HierarchicalPlanner(high, low).plan(np.zeros(3), np.zeros(2))
    diff = low.diffusion
    with pytest.raises(ValueError, match="goal_features"):
        train_diffusion(
            diff, low.normalizer.normalize(low_w).astype(np.float32), 1, goal_features=5
        )


def _data_of(env):
    from lomap_planner import collect_maze2d_dataset

    return collect_maze2d_dataset(env, 200, n_streams=4, seed=1)
