"""Pure-numpy point-mass physics that stands in for D4RL's MuJoCo maze model.

D4RL's ``maze_model.point_maze`` is a sphere (radius 0.1, density 1000, so mass
m = 4000π/3 · 0.1³ ≈ 4.18879) on two slide joints with damping 1, driven by motors
of gear 100, integrated by MuJoCo's Euler integrator at dt = 0.01; ``MazeEnv.step``
clips the velocity to ±5 *before* simulating.  MuJoCo's Euler integrator treats joint
damping implicitly, so in free space one step is exactly

    v' = (v + dt · (100/m) · a) / (1 + dt · 1/m),    x' = x + dt · v'

(checked against ``mujoco`` 4.0: 3e-15 over 50 random steps, see the tests and
``tools/bench/lomap_mujoco_check.py``).  Walls are unit cells; MuJoCo's soft contacts
are replaced by a hard slide: the velocity component into a wall is zeroed.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["D4RL_DAMPING", "D4RL_GAIN", "PhysicsParams", "in_wall", "point_mass_step"]

_BALL_MASS = 1000.0 * 4.0 / 3.0 * np.pi * 0.1**3  # MuJoCo: density 1000, sphere radius 0.1
D4RL_GAIN = 100.0 / _BALL_MASS  # motor gear 100
D4RL_DAMPING = 1.0 / _BALL_MASS  # joint damping 1


class PhysicsParams:
    """Constants of the point-mass model.

    Parameters
    ----------
    dt : float, default=0.01
        Integration step in seconds (MuJoCo timestep of D4RL Maze2D).
    gain : float, default=100 / (4000π/3 · 0.1³) ≈ 23.873
        Acceleration per unit of action (D4RL: gear 100 over the ball's mass).
    damping : float, default=1 / (4000π/3 · 0.1³) ≈ 0.23873
        Viscous damping rate (1/s) (D4RL: joint damping 1 over the mass).
    radius : float, default=0.1
        Ball radius (D4RL: 0.1).
    max_speed : float, default=5.0
        Speed clip per axis, applied to the velocity before each step (D4RL's
        ``clip_velocity``).
    implicit_damping : bool, default=True
        Integrate damping implicitly, as MuJoCo's Euler integrator does (``False``: explicit).
    """

    def __init__(
        self,
        dt: float = 0.01,
        gain: float = D4RL_GAIN,
        damping: float = D4RL_DAMPING,
        radius: float = 0.1,
        max_speed: float = 5.0,
        implicit_damping: bool = True,
    ) -> None:
        for name, val in [("dt", dt), ("gain", gain), ("max_speed", max_speed),
                          ("damping", damping), ("radius", radius)]:  # fmt: skip
            if isinstance(val, bool) or not isinstance(val, numbers.Real):
                raise TypeError(f"{name} must be a number, got {type(val).__name__}")
        for name, val in [("dt", dt), ("gain", gain), ("max_speed", max_speed)]:
            if not np.isfinite(val) or val <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {val}")
        if not np.isfinite(damping) or damping < 0:
            raise ValueError(f"damping must be >= 0, got {damping}")
        if not (0 <= radius < 0.5):
            raise ValueError(f"radius must be in [0, 0.5), got {radius}")
        if not isinstance(implicit_damping, bool | np.bool_):  # bool("no") is True
            raise TypeError(
                f"implicit_damping must be a bool, got {type(implicit_damping).__name__}"
            )
        self.dt, self.gain, self.damping = float(dt), float(gain), float(damping)
        self.radius, self.max_speed = float(radius), float(max_speed)
        self.implicit_damping = bool(implicit_damping)

    def __repr__(self) -> str:
        return (
            f"PhysicsParams(dt={self.dt}, gain={self.gain}, damping={self.damping}, "
            f"radius={self.radius}, max_speed={self.max_speed}, "
            f"implicit_damping={self.implicit_damping})"
        )


def _cell(v: np.ndarray) -> np.ndarray:
    # Cell c spans [c - 0.5, c + 0.5).
    return np.floor(v + 0.5).astype(np.int64)


def in_wall(points: np.ndarray, walls: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """Whether each point (grown to a square of half-size ``margin``) touches a wall.

    Parameters
    ----------
    points : ndarray, shape (..., 2)
    walls : ndarray of bool, shape (n_rows, n_cols)
    margin : float, default=0.0

    Returns
    -------
    ndarray of bool, shape (...)
    """
    p = np.asarray(points, dtype=float)
    n_rows, n_cols = walls.shape
    hit = np.zeros(p.shape[:-1], dtype=bool)
    for dx in (-margin, margin):
        for dy in (-margin, margin):
            i = np.clip(_cell(p[..., 0] + dx), 0, n_rows - 1)
            j = np.clip(_cell(p[..., 1] + dy), 0, n_cols - 1)
            hit |= walls[i, j]
    return hit


def _resolve_axis(pos: np.ndarray, vel: np.ndarray, axis: int, walls: np.ndarray, r: float) -> None:
    """Push the ball out of walls along ``axis`` in place.

    The centre is never inside a wall and moves < 0.5 per step, so a collision
    means the leading edge has entered the neighbouring cell along ``axis``.
    """
    other = 1 - axis
    q = pos[:, other]
    lo, hi = _cell(q - r + 1e-9), _cell(q + r - 1e-9)
    centre = _cell(pos[:, axis])
    for sign in (1, -1):
        c = _cell(pos[:, axis] + sign * r)
        ij_lo = (c, lo) if axis == 0 else (lo, c)
        ij_hi = (c, hi) if axis == 0 else (hi, c)
        hit = (c != centre) & (walls[ij_lo] | walls[ij_hi])
        if hit.any():
            pos[hit, axis] = c[hit] - sign * (0.5 + r + 1e-6)
            vel[hit, axis] = 0.0


def point_mass_step(
    pos: np.ndarray,
    vel: np.ndarray,
    action: np.ndarray,
    walls: np.ndarray,
    params: PhysicsParams | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Advance a batch of balls by one physics step (semi-implicit Euler, MuJoCo's rule).

    Parameters
    ----------
    pos, vel : ndarray, shape (n, 2)
        Positions and velocities; not modified.
    action : ndarray, shape (n, 2)
        Forces, clipped to ``[-1, 1]``.
    walls : ndarray of bool, shape (n_rows, n_cols)
    params : PhysicsParams, optional

    Returns
    -------
    new_pos, new_vel : ndarray, shape (n, 2)
    """
    arrays = []
    for name, x in (("pos", pos), ("vel", vel), ("action", action)):
        a = np.asarray(x)
        if a.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
        if a.ndim != 2 or a.shape[1] != 2 or a.shape[0] == 0:
            raise ValueError(f"{name} must have shape (n, 2) with n >= 1, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"{name} contains NaN or inf")
        arrays.append(a)
    if not (arrays[0].shape == arrays[1].shape == arrays[2].shape):
        raise ValueError(
            f"pos, vel and action must have the same shape, got {[a.shape for a in arrays]}"
        )
    w = np.asarray(walls)
    if w.ndim != 2 or w.size == 0 or w.dtype.kind not in "bui":
        raise ValueError(f"walls must be a non-empty 2-D boolean grid, got {w.dtype} {w.shape}")
    if params is not None and not isinstance(params, PhysicsParams):
        raise TypeError(f"params must be a PhysicsParams, got {type(params).__name__}")
    return _step(*arrays, w.astype(bool), params or PhysicsParams())


def _step(pos, vel, action, walls, p: PhysicsParams) -> tuple[np.ndarray, np.ndarray]:
    """:func:`point_mass_step` on checked inputs (the collectors' inner loop)."""
    a = np.clip(np.asarray(action, dtype=float), -1.0, 1.0)
    v0 = np.clip(np.asarray(vel, dtype=float), -p.max_speed, p.max_speed)  # D4RL clips first
    if p.implicit_damping:  # MuJoCo Euler: (1 + dt c) v' = v + dt g a
        v = (v0 + p.dt * p.gain * a) / (1.0 + p.dt * p.damping)
    else:
        v = v0 + p.dt * (p.gain * a - p.damping * v0)
    x = np.array(pos, dtype=float, copy=True)
    # Move one axis at a time so the ball slides along walls instead of sticking.
    for axis in (0, 1):
        x[:, axis] += p.dt * v[:, axis]
        _resolve_axis(x, v, axis, walls, p.radius)
    return x, v
