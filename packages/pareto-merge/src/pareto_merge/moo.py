"""Multi-objective helpers (minimization): Pareto dominance and exact hypervolume."""

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["dominates", "hypervolume", "pareto_mask"]


def _points(points: ArrayLike, name: str = "points") -> np.ndarray:
    P = np.asarray(points, dtype=float)
    if P.ndim != 2 or P.shape[0] == 0 or P.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty array of shape (n_points, n_objectives)")
    if not np.isfinite(P).all():
        raise ValueError(f"{name}: contains NaN or inf")
    return P


def dominates(a: ArrayLike, b: ArrayLike) -> bool:
    """``a`` Pareto-dominates ``b`` (minimization): no worse everywhere, better somewhere."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"a, b: expected two vectors of the same length, got {a.shape} and {b.shape}"
        )
    if np.isnan(a).any() or np.isnan(b).any():  # NaN compares False: it would never dominate
        raise ValueError("a, b: NaN objective values cannot be compared")
    return bool((a <= b).all() and (a < b).any())


def pareto_mask(points: ArrayLike) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``points`` (n, m), minimization."""
    P = _points(points)
    le = (P[:, None, :] <= P[None, :, :]).all(-1)  # le[i, j]: i no worse than j
    lt = (P[:, None, :] < P[None, :, :]).any(-1)
    dominated = (le & lt).any(axis=0)
    return ~dominated


def hypervolume(points: ArrayLike, ref: ArrayLike) -> float:
    """Exact hypervolume dominated by ``points`` and bounded by ``ref`` (minimization).

    Sweeps the last objective and recurses on the rest (exact, fine for the few-objective,
    few-hundred-point fronts of model merging).

    Parameters
    ----------
    points : array-like of shape (n, m)
    ref : array-like of shape (m,)
        Reference point; points not strictly better than it in every objective add nothing.

    Returns
    -------
    float
    """
    P = _points(points)
    r = np.asarray(ref, dtype=float)
    if r.shape != (P.shape[1],) or not np.isfinite(r).all():
        raise ValueError(f"ref: expected a finite vector of length {P.shape[1]}")
    P = P[(P < r).all(axis=1)]
    return _hv(P, r) if len(P) else 0.0


def _hv(P: np.ndarray, r: np.ndarray) -> float:
    if P.shape[1] == 1:
        return float(r[0] - P[:, 0].min())
    P = P[pareto_mask(P)]
    if P.shape[1] == 2:
        P = P[np.argsort(P[:, 0])]
        ys = np.concatenate([[r[1]], P[:-1, 1]])
        return float(((r[0] - P[:, 0]) * (ys - P[:, 1])).sum())
    order = np.argsort(P[:, -1])
    P = P[order]
    total = 0.0
    for i in range(len(P)):
        upper = P[i + 1, -1] if i + 1 < len(P) else r[-1]
        total += (upper - P[i, -1]) * _hv(P[: i + 1, :-1], r[:-1])
    return total
