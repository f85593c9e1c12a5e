"""Exact least-squares isotonic regression on (rank, value) points.

SCIR needs a bivariate isotonic regression: fitted values must be non-decreasing
in a discrete coordinate (the rank ``r``) *and* in a continuous one (the
cumulative probability ``c``), i.e. monotone for the dominance order
``(r, c) <= (r', c')  iff  r <= r' and c <= c'``.

We solve it exactly with the partitioning algorithm for L2 isotonic regression
(Spouge, Wan & Wilbur 2003; Hochbaum & Queyranne 2003; Luss & Rosset 2014): a
block with weighted mean ``m`` is split into the upper set ``U`` maximizing
``sum_{i in U} w_i (y_i - m)``; the exact solution is ``>= m`` on ``U`` and
``<= m`` off it, so both halves are solved independently until no upper set has
positive gain, at which point the block's value is its mean.

With few distinct ranks an upper set is a staircase: one threshold per rank,
non-increasing in the rank. The best staircase is a dynamic program over the
ranks with a running suffix maximum, so each split costs
``O(n_ranks * n_points)`` vectorized NumPy work instead of a max-flow.
"""

from __future__ import annotations

import numpy as np

__all__ = ["best_upper_set_rank2d", "isotonic_regression_rank2d"]


def best_upper_set_rank2d(
    rank: np.ndarray, value: np.ndarray, gain: np.ndarray
) -> tuple[float, np.ndarray]:
    """Upper set of maximal total gain for the (rank, value) dominance order.

    Parameters
    ----------
    rank : ndarray of shape (n,), int
        Discrete first coordinate.
    value : ndarray of shape (n,), float
        Continuous second coordinate.
    gain : ndarray of shape (n,), float
        Gain of including each point.

    Returns
    -------
    best : float
        Maximal total gain (>= 0; the empty set has gain 0).
    member : ndarray of shape (n,), bool
        Membership of one maximizing upper set.
    """
    rows, row_idx = np.unique(rank, return_inverse=True)
    uniq, col_idx = np.unique(value, return_inverse=True)
    n_rows, n_cols = rows.size, uniq.size
    # table[r, j] = total gain of row r at the j-th smallest value; column n_cols is "empty".
    table = np.bincount(
        row_idx * (n_cols + 1) + col_idx, weights=gain, minlength=n_rows * (n_cols + 1)
    ).reshape(n_rows, n_cols + 1)
    # In place (one n_rows x (n_cols + 1) array; it dominates the memory use):
    # 1) table[r, j] <- gain of taking row r's points with value >= uniq[j] (suffix sums);
    # 2) table[r, j] <- best gain of rows 0..r with row r's threshold at j. Thresholds
    #    satisfy j_0 >= j_1 >= ... because higher ranks include more points.
    score = table
    for r in range(n_rows):
        row = score[r, ::-1]
        np.cumsum(row, out=row)
        if r > 0:
            best_above = np.maximum.accumulate(score[r - 1, ::-1])[::-1]
            score[r] += best_above
    thresholds = np.empty(n_rows, dtype=np.int64)
    j = int(np.argmax(score[-1]))
    best = float(score[-1, j])
    thresholds[-1] = j
    for r in range(n_rows - 2, -1, -1):
        j = j + int(np.argmax(score[r, j:]))
        thresholds[r] = j
    member = col_idx >= thresholds[row_idx]
    return best, member


def isotonic_regression_rank2d(
    rank: np.ndarray,
    value: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray | None = None,
    rtol: float = 1e-12,
) -> np.ndarray:
    """Exact weighted L2 isotonic regression for the (rank, value) dominance order.

    Solves ``min_g sum_i w_i (g_i - y_i)^2`` subject to ``g_i <= g_j`` whenever
    ``rank_i <= rank_j`` and ``value_i <= value_j``.

    Parameters
    ----------
    rank : array-like of shape (n,)
        Integer first coordinate (few distinct values expected).
    value : array-like of shape (n,)
        Float second coordinate.
    y : array-like of shape (n,)
        Targets.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights (default ones). Zero-weight points get the value
        of their block.
    rtol : float, default=1e-12
        A split is made only if its gain exceeds ``rtol * sum(w * |y - m|)``.

    Returns
    -------
    ndarray of shape (n,)
        Fitted values, monotone in both coordinates.
    """
    rank = np.asarray(rank)
    value = np.asarray(value, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"y: expected a 1-D array, got shape {y.shape}")
    n = y.shape[0]
    if rank.dtype.kind == "f":  # integer ranks stored as floats: whole numbers only
        if not np.all(np.isfinite(rank)) or np.any(rank != np.round(rank)):
            raise ValueError("rank: must hold integers (whole, finite numbers)")
    elif rank.dtype.kind not in "iub":
        raise TypeError(f"rank: expected integers, got dtype {rank.dtype}")
    if rank.shape != (n,) or value.shape != (n,):
        raise ValueError("rank, value: must have the same length as y")
    if n == 0:
        raise ValueError("y: empty input")
    if not (np.all(np.isfinite(value)) and np.all(np.isfinite(y))):
        raise ValueError("value, y: must be finite")
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("sample_weight: must be finite, non-negative, shape (n,)")
    rank = rank.astype(np.int64)
    fitted = np.empty(n)
    stack = [np.arange(n)]
    while stack:
        idx = stack.pop()
        yb, wb = y[idx], w[idx]
        wsum = wb.sum()
        mean = float(wb @ yb / wsum) if wsum > 0 else float(yb.mean())
        if wsum <= 0 or np.ptp(yb) == 0:
            fitted[idx] = mean
            continue
        gain = wb * (yb - mean)
        best, member = best_upper_set_rank2d(rank[idx], value[idx], gain)
        if best <= rtol * np.abs(gain).sum() or member.all() or not member.any():
            fitted[idx] = mean
            continue
        stack.append(idx[member])
        stack.append(idx[~member])
    return fitted
