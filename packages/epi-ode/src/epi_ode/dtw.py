"""Dynamic time warping with a Sakoe-Chiba band and the EARTH semantic (DTW-kNN) graph."""

from __future__ import annotations

import numpy as np

from epi_ode.validation import check_int, check_series

__all__ = ["dtw_distances", "dtw_graph"]


def dtw_distances(Y, radius: int = 6) -> np.ndarray:
    """Pairwise DTW distances between the columns of ``Y`` (T, N), cost ``|x_i - y_j|``.

    The dynamic programme runs over the band ``|i - j| <= radius`` cell by cell, vectorised over
    all N(N-1)/2 pairs at once (the recurrence is sequential inside a pair, not across pairs).

    Returns
    -------
    ndarray (N, N)
        Symmetric, zero diagonal.
    """
    Y = check_series(Y, "Y")
    radius = check_int(radius, "radius", 0)
    if np.isnan(Y).any():
        raise ValueError("Y must be complete for DTW (fill or drop missing values first)")
    T, N = Y.shape
    iu, ju = np.triu_indices(N, k=1)
    a, b = Y[:, iu], Y[:, ju]  # (T, P)
    prev = np.full((T + 1, len(iu)), np.inf)  # two rows of the DP table: O(T * pairs) memory
    prev[0] = 0.0
    for i in range(1, T + 1):
        cur = np.full_like(prev, np.inf)
        for j in range(max(1, i - radius), min(T, i + radius) + 1):
            best = np.minimum(np.minimum(prev[j], cur[j - 1]), prev[j - 1])
            cur[j] = np.abs(a[i - 1] - b[j - 1]) + best
        prev = cur
    out = np.zeros((N, N))
    out[iu, ju] = out[ju, iu] = prev[T]
    return out


def dtw_graph(Y, k: int = 5, radius: int = 6, keep: str = "nearest") -> np.ndarray:
    """EARTH's semantic graph: each region linked to ``k`` regions by DTW, then symmetrised.

    Parameters
    ----------
    Y : array (T, N)
        Training series only (the reference used the whole series, leaking the test period).
        Each region is min-max scaled first so that regions of different size compare by shape.
    keep : {"nearest", "farthest"}
        ``"nearest"`` keeps the k smallest distances (the paper's intent); ``"farthest"``
        reproduces the reference code, which keeps the k largest.

    Returns
    -------
    ndarray (N, N) of {0, 1}
        Symmetric, zero diagonal.
    """
    Y = check_series(Y, "Y")
    N = Y.shape[1]
    k = check_int(k, "k", 0, max(N - 1, 0))
    if keep not in ("nearest", "farthest"):
        raise ValueError(f"keep must be 'nearest' or 'farthest', got {keep!r}")
    low, high = Y.min(axis=0), Y.max(axis=0)
    Z = (Y - low) / np.where(high > low, high - low, 1.0)
    D = dtw_distances(Z, radius)
    key = D.copy()
    if keep == "farthest":
        key = -key
    np.fill_diagonal(key, np.inf)
    G = np.zeros((N, N))
    if k:
        nbr = np.argsort(key, axis=1, kind="stable")[:, :k]
        G[np.repeat(np.arange(N), k), nbr.ravel()] = 1.0
    return np.maximum(G, G.T)
