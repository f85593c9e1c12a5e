"""Check lomap-planner's numpy point mass against MuJoCo running D4RL's maze model.

Builds D4RL's ``point_maze`` MJCF (sphere of radius 0.1 and density 1000 on two slide joints
with damping 1, motors of gear 100, Euler integrator at dt 0.01, wall boxes of half-size 0.5 at
``(i + 1, j + 1)``, the ball's body at ``(1.2, 1.2)``) from the layout strings, and compares:

* free space: 50 random actions, position and velocity error (expected ~1e-15);
* in the maze: closed-loop rollouts of the package's waypoint controller from the same start to
  the same goal in both simulators, with the same Gaussian action noise (D4RL's noisy datasets
  use std 0.5), so the ball hits walls; the distance between the two simulators' positions after
  300 steps ("stop positions"; MuJoCo's qpos is shifted by D4RL's 0.2 frame offset);
* resting against a wall: full force into each wall from every free cell for 100 steps, the gap
  between MuJoCo's soft contact (penetration plus the 0.002 margin) and the hard slide.

``mujoco`` is not a dependency of the package; run with an overlay:

    uv run --with mujoco python tools/bench/lomap_mujoco_check.py
"""

from __future__ import annotations

import argparse

import numpy as np

from lomap_planner import PhysicsParams, WaypointController, get_layout
from lomap_planner.physics import point_mass_step

D4RL_OFFSET = 0.2  # qpos = world position - 1.2; walls sit at world (i + 1, j + 1)


def mjcf(walls: np.ndarray | None) -> str:
    boxes = ""
    if walls is not None:
        for i, j in zip(*np.nonzero(walls), strict=True):
            boxes += (
                f'<geom type="box" pos="{i + 1.0} {j + 1.0} 0" size="0.5 0.5 0.2" conaffinity="1"/>'
            )
    return f"""<mujoco><compiler inertiafromgeom="true" angle="radian" coordinate="local"/>
<option timestep="0.01" gravity="0 0 0" iterations="20" integrator="Euler"/>
<default><joint damping="1" limited="false"/>
<geom friction=".5 .1 .1" density="1000" margin="0.002" condim="1" contype="2" conaffinity="1"/></default>
<worldbody><geom name="ground" size="40 40 0.25" pos="0 0 -0.1" type="plane" contype="1" conaffinity="0"/>
<body name="particle" pos="1.2 1.2 0"><geom type="sphere" size="0.1" contype="1"/>
<joint name="ball_x" type="slide" pos="0 0 0" axis="1 0 0"/>
<joint name="ball_y" type="slide" pos="0 0 0" axis="0 1 0"/></body>{boxes}</worldbody>
<actuator><motor joint="ball_x" ctrlrange="-1 1" ctrllimited="true" gear="100"/>
<motor joint="ball_y" ctrlrange="-1 1" ctrllimited="true" gear="100"/></actuator></mujoco>"""


def free_space(seed: int) -> float:
    import mujoco

    m = mujoco.MjModel.from_xml_string(mjcf(None))
    d = mujoco.MjData(m)
    acts = np.random.default_rng(seed).uniform(-1, 1, (50, 2))
    pos, vel = np.zeros((1, 2)), np.zeros((1, 2))
    err = 0.0
    for a in acts:
        d.ctrl[:] = a
        d.qvel[:] = np.clip(d.qvel, -5.0, 5.0)
        mujoco.mj_step(m, d)
        pos, vel = point_mass_step(pos, vel, a[None], np.zeros((3, 3), bool), PhysicsParams())
        err = max(err, np.abs(pos[0] - d.qpos).max(), np.abs(vel[0] - d.qvel).max())
    return err


def maze_rollouts(layout: str, n: int, steps: int, seed: int, noise: float) -> np.ndarray:
    import mujoco

    walls = get_layout(layout)
    m = mujoco.MjModel.from_xml_string(mjcf(walls))
    ctrl = WaypointController(walls)
    rng = np.random.default_rng(seed)
    free = np.argwhere(~walls).astype(float)
    out = []
    for _ in range(n):
        start, goal = free[rng.integers(len(free), size=2)]
        d = mujoco.MjData(m)
        d.qpos[:] = start - D4RL_OFFSET  # D4RL frame: the cell centre sits at index - 0.2
        pos, vel = start[None].copy(), np.zeros((1, 2))  # package frame: cell centre at index
        for _ in range(steps):
            eps = noise * rng.standard_normal(2)  # the same noise in both simulators
            a_mj, _ = ctrl(np.r_[d.qpos + D4RL_OFFSET, d.qvel], goal)
            d.ctrl[:] = np.clip(a_mj + eps, -1, 1)
            d.qvel[:] = np.clip(d.qvel, -5.0, 5.0)
            mujoco.mj_step(m, d)
            a_np, _ = ctrl(np.r_[pos[0], vel[0]], goal)
            a_np = np.clip(a_np + eps, -1, 1)
            pos, vel = point_mass_step(pos, vel, a_np[None], walls, PhysicsParams())
        out.append(np.linalg.norm(pos[0] - (d.qpos + D4RL_OFFSET)))
    return np.array(out)


def wall_rest(layout: str, steps: int = 100) -> float:
    """Largest position gap after pushing into a wall (full force) from every free cell."""
    import mujoco

    walls = get_layout(layout)
    m = mujoco.MjModel.from_xml_string(mjcf(walls))
    worst = 0.0
    for cell in np.argwhere(~walls).astype(float):
        for a in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            d = mujoco.MjData(m)
            d.qpos[:] = cell - D4RL_OFFSET
            pos, vel = cell[None].copy(), np.zeros((1, 2))
            for _ in range(steps):
                d.ctrl[:] = a
                d.qvel[:] = np.clip(d.qvel, -5.0, 5.0)
                mujoco.mj_step(m, d)
                pos, vel = point_mass_step(pos, vel, np.array([a], float), walls, PhysicsParams())
            worst = max(worst, float(np.linalg.norm(pos[0] - (d.qpos + D4RL_OFFSET))))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rollouts", type=int, default=30)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--noise", type=float, default=0.5, help="action noise std (D4RL: 0.5)")
    args = ap.parse_args()
    import mujoco

    print(f"mujoco {mujoco.__version__}")
    print(
        f"free space, 3 x 50 random steps: max |error| = {max(free_space(s) for s in range(3)):.1e}"
    )
    print(f"closed-loop waypoint controller, action noise {args.noise}, {args.steps} steps")
    print(
        f"{'layout':<8} {'stop distance median':>21} {'90th pct':>9} {'max':>7} {'<= 0.02':>8} "
        f"{'resting on a wall, max':>23}"
    )
    for layout in ("umaze", "medium", "large"):
        d = maze_rollouts(layout, args.rollouts, args.steps, seed=0, noise=args.noise)
        print(
            f"{layout:<8} {np.median(d):>21.4f} {np.quantile(d, 0.9):>9.4f} {d.max():>7.4f} "
            f"{np.mean(d <= 0.02):>8.2f} {wall_rest(layout):>23.4f}"
        )


if __name__ == "__main__":
    main()
