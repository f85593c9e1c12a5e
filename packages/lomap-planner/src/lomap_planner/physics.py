"""Pure-numpy point-mass physics that stands in for D4RL's MuJoCo ``point.xml``.

The ball is a double integrator driven by a force in ``[-1, 1]^2`` (D4RL: motor
gear 100 on a ball of mass ~4.19, so an acceleration gain of ~25), with light
viscous damping.  Walls are unit cells; the ball (radius 0.1, treated as a square
for contact) slides along walls: the velocity component into a wall is zeroed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PhysicsParams", "in_wall", "point_mass_step"]


class PhysicsParams:
    """Constants of the point-mass model.

    Parameters
    ----------
    dt : float, default=0.01
        Integration step in seconds (MuJoCo timestep of D4RL Maze2D).
    gain : float, default=25.0
        Acceleration per unit of action.
    damping : float, default=0.25
        Viscous damping rate (1/s).
    radius : float, default=0.1
        Ball radius (D4RL: 0.1).
    max_speed : float, default=5.0
        Speed clip per axis, keeps long noisy rollouts bounded.
    """

    def __init__(
        self,
        dt: float = 0.01,
        gain: float = 25.0,
        damping: float = 0.25,
        radius: float = 0.1,
        max_speed: float = 5.0,
    ) -> None:
        for name, val in [("dt", dt), ("gain", gain), ("max_speed", max_speed)]:
            if not np.isfinite(val) or val <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {val}")
        if not np.isfinite(damping) or damping < 0:
            raise ValueError(f"damping must be >= 0, got {damping}")
        if not (0 <= radius < 0.5):
            raise ValueError(f"radius must be in [0, 0.5), got {radius}")
        self.dt, self.gain, self.damping = float(dt), float(gain), float(damping)
        self.radius, self.max_speed = float(radius), float(max_speed)

    def __repr__(self) -> str:
        return (
            f"PhysicsParams(dt={self.dt}, gain={self.gain}, damping={self.damping}, "
            f"radius={self.radius}, max_speed={self.max_speed})"
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
    """Advance a batch of balls by one physics step (semi-implicit Euler).

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
    p = params or PhysicsParams()
    a = np.clip(np.asarray(action, dtype=float), -1.0, 1.0)
    v = np.asarray(vel, dtype=float) + p.dt * (p.gain * a - p.damping * np.asarray(vel))
    v = np.clip(v, -p.max_speed, p.max_speed)
    x = np.array(pos, dtype=float, copy=True)
    # Move one axis at a time so the ball slides along walls instead of sticking.
    for axis in (0, 1):
        x[:, axis] += p.dt * v[:, axis]
        _resolve_axis(x, v, axis, walls, p.radius)
    return x, v
