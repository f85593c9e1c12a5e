import numpy as np
import pytest

from lomap_planner.controller import WaypointController
from lomap_planner.env import PointMazeEnv
from lomap_planner.geometry import plan_is_infeasible, segments_hit_walls
from lomap_planner.layouts import get_layout
from lomap_planner.metrics import infeasible_plan_fraction


def _brute_force_hits(p0, p1, walls, n=4001):
    s = np.linspace(0, 1, n)[:, None]
    pts = p0 + s * (p1 - p0)
    ij = np.floor(pts + 0.5).astype(int)
    # Points exactly on a cell face are ambiguous; the brute force only sees interiors.
    interior = (np.abs(pts - np.round(pts + 0.5) + 0.5) > 1e-9).all(1)
    return bool((walls[ij[:, 0], ij[:, 1]] & interior).any())


def test_segments_against_brute_force():
    walls = get_layout("medium")
    rng = np.random.default_rng(0)
    p0 = rng.uniform(0.6, 6.4, (300, 2))
    p1 = np.clip(p0 + rng.normal(0, 1.0, (300, 2)), 0.6, 6.4)
    exact = segments_hit_walls(p0, p1, walls)
    brute = np.array([_brute_force_hits(a, b, walls) for a, b in zip(p0, p1, strict=True)])
    # Sampling can only miss grazing hits, never invent one.
    assert (brute <= exact).all()
    assert (exact == brute).mean() > 0.97


def test_segment_special_cases():
    walls = get_layout("umaze")
    # Straight through the inner wall (cells (2,1), (2,2)).
    assert segments_hit_walls(np.array([1.0, 1.0]), np.array([3.0, 1.0]), walls)
    # Along the free corridor.
    assert not segments_hit_walls(np.array([1.0, 1.0]), np.array([1.0, 3.0]), walls)
    # Degenerate (zero-length) segment inside a wall / in free space.
    assert segments_hit_walls(np.array([2.0, 2.0]), np.array([2.0, 2.0]), walls)
    assert not segments_hit_walls(np.array([1.0, 2.0]), np.array([1.0, 2.0]), walls)


def test_plan_infeasible_and_fraction():
    walls = get_layout("umaze")
    good = np.array([[1, 1], [1, 2], [1, 3], [2, 3], [3, 3], [3, 2], [3, 1]], float)
    bad = np.array([[1, 1], [2, 1], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1]], float)
    plans = np.stack([good, bad, good, good])
    np.testing.assert_array_equal(plan_is_infeasible(plans, walls), [False, True, False, False])
    assert infeasible_plan_fraction(plans, walls) == 0.25
    with pytest.raises(ValueError, match="plans"):
        plan_is_infeasible(np.zeros((2, 1, 2)), walls)
    with pytest.raises(ValueError, match="plans"):
        infeasible_plan_fraction(np.zeros((0, 3, 2)), walls)


def test_waypoint_controller_reaches_goal_in_large_maze():
    env = PointMazeEnv("large", frame_skip=10)
    ctrl = WaypointController(env.walls)
    obs, _ = env.reset(options={"start": [1.0, 1.0]})
    assert ctrl.path_length(obs[:2], env.goal) > 10
    for _ in range(env.max_episode_steps):
        act, done = ctrl(obs, env.goal)
        if done:
            break
        obs, *_ = env.step(act)
    assert done
    # Batched call agrees with the single-state call.
    states = np.array([[1.0, 1.0, 0, 0], [3.0, 6.0, 0.5, 0]])
    batch, _ = ctrl(states, env.goal)
    np.testing.assert_allclose(batch[1], ctrl(states[1], env.goal)[0])
