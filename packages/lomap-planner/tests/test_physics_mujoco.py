"""The numpy point mass against MuJoCo 4.0 running D4RL's maze model (recorded values).

Reference numbers come from ``tools/bench/lomap_mujoco_check.py`` (``mujoco`` is not a
dependency); the live comparison runs when ``mujoco`` is importable.
"""

import numpy as np
import pytest

from lomap_planner import PhysicsParams, get_layout
from lomap_planner.physics import D4RL_DAMPING, D4RL_GAIN, point_mass_step

# qpos, qvel after steps 1, 10 and 50 of np.random.default_rng(0).uniform(-1, 1, (50, 2)) actions
MUJOCO_FREE = np.array(
    [
        [6.5238642866855059e-04, -1.0965696069963159e-03, 6.5238642866855059e-02, -1.0965696069963159e-01],
        [2.3618465153601637e-02, -2.1061840469115866e-02, 5.7079061814746734e-01, -4.5344931804578792e-01],
        [2.5938009903158232e-01, -4.3392261836166943e-02, 6.5875959375712867e-01, 1.5954016835777951e00],
    ]
)  # fmt: skip
# medium maze, ball at cell (1, 1), full force -x for 100 steps: MuJoCo rests at x = 0.60337
MUJOCO_WALL_REST_X = 0.6033721268519465


def _free_rollout() -> np.ndarray:
    acts = np.random.default_rng(0).uniform(-1, 1, (50, 2))
    pos, vel, rows = np.zeros((1, 2)), np.zeros((1, 2)), []
    for a in acts:
        pos, vel = point_mass_step(pos, vel, a[None], np.zeros((3, 3), bool), PhysicsParams())
        rows.append(np.r_[pos[0], vel[0]])
    return np.array(rows)


def test_constants_follow_d4rl_mjcf():
    mass = 1000 * 4 / 3 * np.pi * 0.1**3
    assert D4RL_GAIN == pytest.approx(100 / mass) and D4RL_DAMPING == pytest.approx(1 / mass)
    p = PhysicsParams()
    assert (p.dt, p.gain, p.damping, p.radius, p.max_speed) == (
        0.01,
        D4RL_GAIN,
        D4RL_DAMPING,
        0.1,
        5.0,
    )


def test_free_space_matches_recorded_mujoco():
    np.testing.assert_allclose(_free_rollout()[[0, 9, 49]], MUJOCO_FREE, rtol=0, atol=1e-12)


def test_explicit_damping_differs():
    p = PhysicsParams(implicit_damping=False)
    pos, vel = np.zeros((1, 2)), np.zeros((1, 2))
    for a in np.random.default_rng(0).uniform(-1, 1, (50, 2)):
        pos, vel = point_mass_step(pos, vel, a[None], np.zeros((3, 3), bool), p)
    assert np.abs(np.r_[pos[0], vel[0]] - MUJOCO_FREE[2]).max() > 1e-4


def test_wall_rest_within_0p02_of_mujoco():
    walls = get_layout("medium")
    pos, vel = np.array([[1.0, 1.0]]), np.zeros((1, 2))
    for _ in range(100):
        pos, vel = point_mass_step(pos, vel, np.array([[-1.0, 0.0]]), walls, PhysicsParams())
    assert abs(pos[0, 0] - MUJOCO_WALL_REST_X) < 0.02
    assert pos[0, 1] == pytest.approx(1.0)


def test_velocity_is_clipped_before_the_step():
    p = PhysicsParams()
    _, v = point_mass_step(
        np.zeros((1, 2)), np.array([[9.0, -9.0]]), np.zeros((1, 2)), np.zeros((3, 3), bool), p
    )
    np.testing.assert_allclose(v[0], np.array([5.0, -5.0]) / (1 + p.dt * p.damping))


def test_live_mujoco_if_installed():
    mujoco = pytest.importorskip("mujoco")
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[3] / "tools" / "bench" / "lomap_mujoco_check.py"
    spec = importlib.util.spec_from_file_location("lomap_mujoco_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mujoco.__version__ and mod.free_space(0) < 1e-10
