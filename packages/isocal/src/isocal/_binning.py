"""Quantile binning of probability values: the blocked formulation used at scale.

Both NA-FIR and SCIR fit a monotone function on the distinct input values. At
n = 1e5 - 1e6 rows there are millions of them; fitting one value each costs
memory and time while adding nothing a test set can tell apart. Above
``max_bins`` values we therefore pool the values into quantile bins and fit one
value per bin (identical inputs always share a bin, so ties stay tied). Below
the threshold the distinct values themselves are the bins and the fit is exact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["quantile_bins"]


def quantile_bins(
    values: np.ndarray,
    max_bins: int | None,
    focus: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Map values to at most ``max_bins`` ordered bins.

    Parameters
    ----------
    values : ndarray of shape (m,)
        Values to bin (any order).
    max_bins : int or None
        Bin budget; ``None`` or ``values.size <= max_bins`` keeps every distinct
        value (exact).
    focus : ndarray, optional
        A second sample whose quantiles get half of the bin edges (NA-FIR passes
        the true-class probabilities, so the region where labels live keeps its
        resolution even when most entries are tiny off-class probabilities).
    weights : ndarray of shape (m,), optional
        Weights for the bin's representative value.

    Returns
    -------
    knots : ndarray of shape (B,)
        Increasing representative value of each non-empty bin (its weighted
        mean value; the distinct value itself in the exact case).
    index : ndarray of shape (m,), int
        Bin of each value, in ``[0, B)``.
    """
    if max_bins is None or values.size <= max_bins:
        knots, index = np.unique(values, return_inverse=True)
        return knots, index.ravel()
    n_edges = max_bins if focus is None else max_bins // 2
    q = np.linspace(0.0, 1.0, n_edges + 1)[1:-1]
    edges = np.quantile(values, q)
    if focus is not None:
        edges = np.concatenate([edges, np.quantile(focus, q)])
    edges = np.unique(edges)
    raw = np.searchsorted(edges, values, side="left")
    w = np.ones(values.size) if weights is None else weights
    mass = np.bincount(raw, weights=w, minlength=edges.size + 1)
    total = np.bincount(raw, weights=w * values, minlength=edges.size + 1)
    count = np.bincount(raw, minlength=edges.size + 1)
    used = count > 0
    remap = np.cumsum(used) - 1
    # weighted mean inside each bin; bins whose weights are all zero use the plain mean
    plain = np.bincount(raw, weights=values, minlength=edges.size + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        knots = np.where(
            mass > 0, total / np.where(mass > 0, mass, 1), plain / np.maximum(count, 1)
        )
    return knots[used], remap[raw]
