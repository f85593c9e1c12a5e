"""Histogram binning (Zadrozny & Elkan, 2001), one-vs-rest with renormalization."""

from __future__ import annotations

import numpy as np

from isocal._base import BaseCalibrator, renormalize
from isocal._validation import check_positive_int

__all__ = ["HistogramBinningCalibrator"]


class HistogramBinningCalibrator(BaseCalibrator):
    """Per-class histogram binning followed by renormalization.

    For each class the score range [0, 1] is cut into ``n_bins`` bins; a
    probability is replaced by the (weighted) frequency of that class among the
    calibration samples in its bin. Empty bins keep the bin midpoint, and a
    class absent from the calibration labels keeps every midpoint (about the
    identity map) rather than the empirical frequency 0.

    Parameters
    ----------
    n_bins : int, default=15
        Number of bins per class.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins, or equal-mass bins from the calibration scores.
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` of the input probabilities.
    min_prob : float, default=0.0
        Optional floor applied to the calibrated probabilities before the final
        renormalization (0 = the plain method, which can output exact zeros).

    Attributes
    ----------
    bin_edges_ : ndarray of shape (K, n_bins + 1)
    bin_values_ : ndarray of shape (K, n_bins)
    """

    def __init__(
        self,
        n_bins: int = 15,
        strategy: str = "uniform",
        sum_tol: float = 1e-5,
        min_prob: float = 0.0,
    ) -> None:
        self.n_bins = n_bins
        self.strategy = strategy
        self.sum_tol = sum_tol
        self.min_prob = min_prob

    _requires_all_classes = False

    def _fit(self, P: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        n_bins = check_positive_int(self.n_bins, "n_bins")
        if self.strategy not in ("uniform", "quantile"):
            raise ValueError(f"strategy: must be 'uniform' or 'quantile', got {self.strategy!r}")
        K = P.shape[1]
        edges = np.empty((K, n_bins + 1))
        values = np.empty((K, n_bins))
        for k in range(K):
            if self.strategy == "uniform":
                e = np.linspace(0.0, 1.0, n_bins + 1)
            else:
                e = np.quantile(P[:, k], np.linspace(0.0, 1.0, n_bins + 1))
                e[0], e[-1] = 0.0, 1.0
                e = np.maximum.accumulate(e)
            b = np.clip(np.searchsorted(e, P[:, k], side="right") - 1, 0, n_bins - 1)
            mass = np.bincount(b, weights=w, minlength=n_bins)
            hits = np.bincount(b, weights=w * (y == k), minlength=n_bins)
            mid = 0.5 * (e[:-1] + e[1:])
            if not np.any(y == k):
                mass = np.zeros(n_bins)  # absent class: keep the midpoints (identity)
            values[k] = np.divide(hits, mass, out=mid.copy(), where=mass > 0)
            edges[k] = e
        self.bin_edges_, self.bin_values_ = edges, values

    def _predict(self, P: np.ndarray) -> np.ndarray:
        n_bins = self.bin_values_.shape[1]
        Q = np.empty_like(P)
        for k in range(P.shape[1]):
            b = np.searchsorted(self.bin_edges_[k], P[:, k], side="right") - 1
            Q[:, k] = self.bin_values_[k, np.clip(b, 0, n_bins - 1)]
        return renormalize(Q, P)
