"""Exact feasibility checks: do plan segments cross maze walls?"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["plan_is_infeasible", "segments_hit_walls", "wall_boxes"]


def _check_margin(margin: float) -> None:
    if (
        isinstance(margin, bool)
        or not isinstance(margin, numbers.Real)
        or not (np.isfinite(margin) and 0 <= margin < 0.5)
    ):
        raise ValueError(f"margin must be a number in [0, 0.5), got {margin!r}")


def wall_boxes(walls: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """Axis-aligned boxes of the wall cells, grown by ``margin``.

    Returns
    -------
    ndarray, shape (n_walls, 2, 2)
        ``boxes[w, 0]`` is the lower corner, ``boxes[w, 1]`` the upper corner.
    """
    ij = np.argwhere(np.asarray(walls, dtype=bool)).astype(float)
    half = 0.5 + margin
    return np.stack([ij - half, ij + half], axis=1)


def segments_hit_walls(
    starts: np.ndarray, ends: np.ndarray, walls: np.ndarray, margin: float = 0.0
) -> np.ndarray:
    """Whether each segment ``starts[m] -> ends[m]`` intersects a wall cell.

    Slab test of every segment against every wall box (vectorised, exact).

    Parameters
    ----------
    starts, ends : ndarray, shape (..., 2)
    walls : ndarray of bool, shape (n_rows, n_cols)
    margin : float, default=0.0
        Grow walls by this much (e.g. the ball radius 0.1).

    Returns
    -------
    ndarray of bool, shape (...)
    """
    p0 = np.asarray(starts, dtype=float)
    p1 = np.asarray(ends, dtype=float)
    if p0.shape != p1.shape or p0.ndim == 0 or p0.shape[-1] != 2:
        raise ValueError(
            f"starts and ends must have the same shape (..., 2), got {p0.shape} and {p1.shape}"
        )
    for name, arr in (("starts", p0), ("ends", p1)):
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} contains NaN or inf")
    _check_margin(margin)
    batch = p0.shape[:-1]
    p0, d = p0.reshape(-1, 1, 2), (p1 - p0).reshape(-1, 1, 2)
    boxes = wall_boxes(walls, margin)
    lo, hi = boxes[None, :, 0], boxes[None, :, 1]  # (1, W, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        t1, t2 = (lo - p0) * inv, (hi - p0) * inv
    # Axis with zero direction: inside the slab -> [-inf, inf], outside -> empty.
    flat = d == 0
    inside = (p0 > lo) & (p0 < hi)
    t_near = np.where(flat, np.where(inside, -np.inf, np.inf), np.minimum(t1, t2))
    t_far = np.where(flat, np.where(inside, np.inf, -np.inf), np.maximum(t1, t2))
    enter = np.maximum(t_near.max(-1), 0.0)
    leave = np.minimum(t_far.min(-1), 1.0)
    # Strict inequality: grazing a wall face or corner is not a crossing.
    return (enter < leave).any(-1).reshape(batch)


def plan_is_infeasible(plans: np.ndarray, walls: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """Whether each planned path has a segment that crosses a wall or leaves the map.

    A plan with any point outside the maze's grid is infeasible (the map ends there; a plan in
    the wrong frame often lies outside it entirely).

    Parameters
    ----------
    plans : ndarray, shape (n_plans, horizon, >=2)
        Planned states; the first two columns are the ``(x, y)`` positions.
    walls : ndarray of bool, shape (n_rows, n_cols)
    margin : float, default=0.0

    Returns
    -------
    ndarray of bool, shape (n_plans,)
    """
    x = np.asarray(plans, dtype=float)
    if x.ndim != 3 or x.shape[-1] < 2 or x.shape[1] < 2:
        raise ValueError(f"plans must have shape (n_plans, horizon>=2, >=2), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("plans contain NaN or inf")
    _check_margin(margin)
    pos = x[..., :2]
    n_rows, n_cols = np.asarray(walls).shape
    off = ((pos < -0.5) | (pos > np.array([n_rows - 0.5, n_cols - 0.5]))).any(-1).any(-1)
    return off | segments_hit_walls(pos[:, :-1], pos[:, 1:], walls, margin).any(-1)
