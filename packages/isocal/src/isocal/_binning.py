"""Quantile binning of probability values: the blocked formulation used at scale.

Both NA-FIR and SCIR fit a monotone function on the distinct input values. At
n = 1e5 - 1e6 rows there are millions of them; fitting one value each costs
memory and time while adding nothing a test set can tell apart. Above
``max_bins`` distinct values we therefore pool the values into weighted
quantile bins and fit one value per bin (identical inputs always share a bin,
so ties stay tied; integer weights bin exactly like repeated rows). With at
most ``max_bins`` distinct values each one is its own bin and the fit is exact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["quantile_bins"]


def _weighted_quantiles(sorted_values: np.ndarray, sorted_w: np.ndarray, q: np.ndarray):
    """Inverted-CDF quantiles of already sorted values."""
    cw = np.cumsum(sorted_w)
    idx = np.searchsorted(cw, q * cw[-1], side="left")
    return sorted_values[np.minimum(idx, sorted_values.size - 1)]


def quantile_bins(
    values: np.ndarray,
    max_bins: int | None,
    weights: np.ndarray | None = None,
    focus: np.ndarray | None = None,
    focus_weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Map values to at most ``max_bins`` ordered bins.

    Parameters
    ----------
    values : ndarray of shape (m,)
        Values to bin (any order).
    max_bins : int or None
        Bin budget; ``None``, or at most ``max_bins`` distinct values, keeps every
        distinct value (exact).
    weights : ndarray of shape (m,), optional
        Weights of the values (for the quantiles and each bin's representative).
    focus : ndarray, optional
        A second sample whose quantiles get half of the bin edges (NA-FIR passes
        the true-class probabilities, so the region where labels live keeps its
        resolution even when most entries are tiny off-class probabilities).
    focus_weights : ndarray, optional
        Weights of ``focus``.

    Returns
    -------
    knots : ndarray of shape (B,)
        Increasing representative value of each non-empty bin (its weighted
        mean value; the distinct value itself in the exact case).
    index : ndarray of shape (m,), int
        Bin of each value, in ``[0, B)``.
    """
    w = np.ones(values.size) if weights is None else weights
    order = np.argsort(values, kind="stable")  # one sort serves every step below
    sv = values[order]
    new = np.empty(sv.size, dtype=bool)
    new[0] = True
    np.not_equal(sv[1:], sv[:-1], out=new[1:])
    index = np.empty(values.size, dtype=np.int64)
    if max_bins is None or np.count_nonzero(new) <= max_bins:
        index[order] = np.cumsum(new) - 1
        return sv[new], index
    n_edges = max_bins if focus is None else max_bins // 2
    q = np.linspace(0.0, 1.0, n_edges + 1)[1:-1]
    edges = _weighted_quantiles(sv, w[order], q)
    if focus is not None:
        fw = np.ones(focus.size) if focus_weights is None else focus_weights
        f_order = np.argsort(focus, kind="stable")
        edges = np.concatenate([edges, _weighted_quantiles(focus[f_order], fw[f_order], q)])
    edges = np.unique(edges)
    raw = np.searchsorted(edges, sv, side="left")  # sorted input: cheap, and ties stay tied
    used = np.zeros(edges.size + 1, dtype=bool)
    used[raw] = True
    remap = np.cumsum(used) - 1
    index[order] = remap[raw]
    B = int(used.sum())
    mass = np.bincount(index, weights=w, minlength=B)
    total = np.bincount(index, weights=w * values, minlength=B)
    count = np.bincount(index, minlength=B)
    plain = np.bincount(index, weights=values, minlength=B)
    # weighted mean inside each bin; bins whose weights are all zero use the plain mean
    knots = np.where(mass > 0, total / np.where(mass > 0, mass, 1.0), plain / count)
    return knots, index
