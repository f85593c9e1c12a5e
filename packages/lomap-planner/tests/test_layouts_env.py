import gymnasium as gym
import numpy as np
import pytest

from lomap_planner.env import PointMazeEnv, register_envs
from lomap_planner.layouts import LAYOUTS, free_cells, get_layout, parse_layout
from lomap_planner.physics import PhysicsParams, in_wall, point_mass_step


def test_d4rl_layout_shapes_and_free_cells():
    assert get_layout("umaze").shape == (5, 5)
    assert get_layout("medium").shape == (8, 8)
    assert get_layout("large").shape == (9, 12)
    # U-maze: free cells form the U of D4RL's maze_spec.
    assert {tuple(c) for c in free_cells(get_layout("umaze"))} == {
        (1, 1),
        (1, 2),
        (1, 3),
        (2, 3),
        (3, 1),
        (3, 2),
        (3, 3),
    }
    for name in LAYOUTS:
        w = get_layout(name)
        assert w[0].all() and w[-1].all() and w[:, 0].all() and w[:, -1].all()


@pytest.mark.parametrize(
    "spec,match",
    [
        ("", "empty"),
        ("###\\#O\\###", "same length"),
        ("###\\#X#\\###", "unknown"),
        ("###\\OO#\\###", "enclosed"),
        ("###\\###", "no free"),
    ],
)
def test_parse_layout_errors(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_layout(spec)


def test_physics_free_motion_closed_form():
    walls = get_layout("medium")
    p = PhysicsParams(dt=0.01, gain=25.0, damping=0.0, radius=0.1)
    pos, vel = np.array([[2.0, 3.0]]), np.zeros((1, 2))
    for _ in range(5):
        pos, vel = point_mass_step(pos, vel, np.array([[1.0, 0.0]]), walls, p)
    # Semi-implicit Euler from rest: v_n = n a dt, x_n = a dt^2 n(n+1)/2.
    np.testing.assert_allclose(vel[0], [5 * 0.25, 0.0])
    np.testing.assert_allclose(pos[0], [2.0 + 0.25 * 0.01 * 15, 3.0])


def test_physics_never_enters_walls_and_slides():
    walls = get_layout("large")
    rng = np.random.default_rng(0)
    cells = free_cells(walls).astype(float)
    pos = cells[rng.integers(len(cells), size=64)]
    vel = np.zeros_like(pos)
    for _ in range(400):
        pos, vel = point_mass_step(pos, vel, rng.uniform(-1, 1, pos.shape), walls)
        assert not in_wall(pos, walls, margin=0.099).any()
    # Pushing into the U-maze's top wall stops at radius from the wall face.
    env = PointMazeEnv("umaze", frame_skip=10)
    env.reset(options={"start": [3.0, 1.0]})
    for _ in range(30):
        obs, *_ = env.step(np.array([0.0, 1.0]))
    np.testing.assert_allclose(obs[:2], [3.0, 3.4], atol=1e-4)


def test_env_api_reward_and_truncation():
    env = PointMazeEnv("umaze", frame_skip=5)
    assert env.max_episode_steps == 60
    obs, info = env.reset(seed=0, options={"start": [1.0, 1.0]})
    assert obs.shape == (4,) and env.observation_space.contains(obs)
    np.testing.assert_allclose(info["goal"], [1.0, 1.0])
    total, trunc = 0.0, False
    while not trunc:
        obs, r, term, trunc, _ = env.step(np.zeros(2))
        assert not term
        total += r
    # Sitting on the goal earns 1 per physics step: the D4RL scale.
    assert total == 300.0


def test_env_bad_input():
    with pytest.raises(ValueError, match="frame_skip"):
        PointMazeEnv("umaze", frame_skip=0)
    with pytest.raises(ValueError, match="goal"):
        PointMazeEnv("umaze", goal=[2.0, 1.0])  # a wall cell
    env = PointMazeEnv("umaze")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match="action"):
        env.step(np.zeros(3))
    with pytest.raises(ValueError, match="start"):
        env.reset(options={"start": [0.0, 0.0]})
    with pytest.raises(ValueError, match="layout"):
        PointMazeEnv("nope")


def test_register_envs():
    ids = register_envs(frame_skip=10)
    env = gym.make(ids[0])
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,)
