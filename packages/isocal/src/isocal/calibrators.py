"""Isotonic multi-class calibrators: one-vs-rest, flattened (FIR), NA-FIR and SCIR.

All share the scikit-learn API ``fit(probs, y)`` / ``predict_proba(probs)``.
"""

from __future__ import annotations

import numpy as np
from sklearn.isotonic import IsotonicRegression

from isocal._base import BaseCalibrator, renormalize
from isocal._validation import check_nonnegative_float, check_positive_int
from isocal.isotonic2d import isotonic_regression_rank2d
from isocal.normalized_isotonic import normalized_isotonic_logloss

__all__ = [
    "FIRCalibrator",
    "NAFIRCalibrator",
    "OvRIsotonicCalibrator",
    "SCIRCalibrator",
    "sorted_cumulative",
]


class OvRIsotonicCalibrator(BaseCalibrator):
    """One-vs-rest isotonic regression followed by renormalization.

    One :class:`sklearn.isotonic.IsotonicRegression` per class is fitted on
    ``(p_k, 1[y == k])`` (Zadrozny & Elkan, 2002); outputs are divided by their
    row sum (rows that map to all zeros keep the input probabilities).

    Parameters
    ----------
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` of the input probabilities.
    min_prob : float, default=0.0
        Optional floor applied to the calibrated probabilities before the final
        renormalization (0 = the plain method, which can output exact zeros).
    """

    def __init__(self, sum_tol: float = 1e-5, min_prob: float = 0.0) -> None:
        self.sum_tol = sum_tol
        self.min_prob = min_prob

    def _fit(self, P: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        self.isotonic_ = [
            IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(
                P[:, k], (y == k).astype(float), sample_weight=w
            )
            for k in range(P.shape[1])
        ]

    def _predict(self, P: np.ndarray) -> np.ndarray:
        Q = np.column_stack([iso.predict(P[:, k]) for k, iso in enumerate(self.isotonic_)])
        return renormalize(Q, P)


class FIRCalibrator(BaseCalibrator):
    """Flattened isotonic regression (FIR): one isotonic map shared by all classes.

    All ``n * K`` pairs ``(p_ik, 1[y_i == k])`` are pooled into a single
    isotonic regression (so the map is class-agnostic and preserves the order of
    probabilities within and across samples); outputs are then renormalized.
    This is the normalization-*unaware* precursor of :class:`NAFIRCalibrator`.

    Parameters
    ----------
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` of the input probabilities.
    min_prob : float, default=0.0
        Optional floor applied to the calibrated probabilities before the final
        renormalization (0 = the plain method, which can output exact zeros).
    """

    def __init__(self, sum_tol: float = 1e-5, min_prob: float = 0.0) -> None:
        self.sum_tol = sum_tol
        self.min_prob = min_prob

    def _fit(self, P: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        n, K = P.shape
        target = np.zeros((n, K))
        target[np.arange(n), y] = 1.0
        self.isotonic_ = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(
            P.ravel(), target.ravel(), sample_weight=np.repeat(w, K)
        )

    def _predict(self, P: np.ndarray) -> np.ndarray:
        Q = self.isotonic_.predict(P.ravel()).reshape(P.shape)
        return renormalize(Q, P)


class NAFIRCalibrator(BaseCalibrator):
    """Normalization-aware flattened isotonic regression (NA-FIR).

    Learns one non-decreasing map ``f`` shared by all classes and minimizes the
    log loss of the *normalized* output ``q_ik = f(p_ik) / sum_j f(p_ij)``, so
    normalization is part of the optimization rather than a post-hoc step
    (see :func:`isocal.normalized_isotonic.normalized_isotonic_logloss`).
    Between fitted values ``log f`` is interpolated linearly; outside the
    training range it is clipped.

    Parameters
    ----------
    max_iter : int, default=500
        Iteration cap of the solver.
    tol : float, default=1e-8
        Solver tolerance on the predicted decrease of the mean log loss.
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` of the input probabilities.

    Attributes
    ----------
    thresholds_ : ndarray of shape (M,)
        Distinct calibration-set probabilities (knots of ``f``).
    log_map_ : ndarray of shape (M,)
        Non-decreasing ``log f`` at the knots, with ``max = 0``.
    objective_ : float
        Final weighted mean log loss on the calibration set.
    n_iter_ : int
        Solver iterations used.
    """

    def __init__(self, max_iter: int = 500, tol: float = 1e-8, sum_tol: float = 1e-5) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.sum_tol = sum_tol

    def _fit(self, P: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        max_iter = check_positive_int(self.max_iter, "max_iter")
        tol = check_nonnegative_float(self.tol, "tol", strict=True)
        th, phi, info = normalized_isotonic_logloss(P, y, w, max_iter=max_iter, tol=tol)
        # Keep only the knots where log f changes (plus both ends): same map, smaller model.
        keep = np.ones(th.size, dtype=bool)
        if th.size > 2:
            flat = (phi[1:-1] == phi[:-2]) & (phi[1:-1] == phi[2:])
            keep[1:-1] = ~flat
        self.thresholds_ = th[keep]
        self.log_map_ = phi[keep]
        self.objective_ = info["objective"]
        self.n_iter_ = info["n_iter"]

    def transform_scores(self, probs: np.ndarray) -> np.ndarray:
        """Unnormalized log-scores ``log f(p)``, shape (n_samples, n_classes)."""
        return np.interp(probs, self.thresholds_, self.log_map_)

    def _predict(self, P: np.ndarray) -> np.ndarray:
        S = self.transform_scores(P)
        S = S - S.max(axis=1, keepdims=True)
        E = np.exp(S)
        return E / E.sum(axis=1, keepdims=True)


def sorted_cumulative(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row in decreasing order and take cumulative sums.

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Probabilities.

    Returns
    -------
    order : ndarray of shape (n, K), int
        ``order[i, r]`` is the class at rank ``r`` (0 = most probable; ties keep
        column order).
    cumulative : ndarray of shape (n, K)
        ``cumulative[i, r] = sum of the r + 1 largest probabilities``; the last
        column is exactly 1.
    """
    order = np.argsort(-P, axis=1, kind="stable")
    cumulative = np.cumsum(np.take_along_axis(P, order, axis=1), axis=1)
    cumulative = np.minimum(cumulative, 1.0)
    cumulative[:, -1] = 1.0
    return order, cumulative


class SCIRCalibrator(BaseCalibrator):
    """Sorted cumulative isotonic regression (SCIR).

    Each row is sorted in decreasing order; for rank ``r`` the cumulative
    probability ``c_ir`` of the ``r + 1`` top classes is paired with the event
    "the label is among those classes". A single bivariate isotonic regression,
    non-decreasing in both the rank and the cumulative probability, is fitted
    to these events (exactly, :func:`isocal.isotonic2d.isotonic_regression_rank2d`).
    Calibrated probabilities are differences of consecutive calibrated
    cumulatives, so they are non-negative and sum to 1 by construction.

    Rank ``K - 1`` (cumulative 1, event always true) has fitted value 1 in the
    exact solution and is fixed to 1 rather than fitted.

    For new inputs the per-rank fitted curve is interpolated linearly in the
    cumulative probability (clipped outside the training range), then a running
    maximum over ranks keeps the calibrated cumulative non-decreasing.

    Parameters
    ----------
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` of the input probabilities.
    min_prob : float, default=0.0
        Optional floor applied to the calibrated probabilities before the final
        renormalization (0 = the plain method, which can output exact zeros).

    Attributes
    ----------
    knots_ : list of ndarray
        For each rank ``r < K - 1``, the sorted distinct cumulative probabilities.
    values_ : list of ndarray
        Fitted calibrated cumulative probability at ``knots_[r]``.
    n_levels_ : int
        Number of distinct fitted values (level sets of the solution).
    """

    def __init__(self, sum_tol: float = 1e-5, min_prob: float = 0.0) -> None:
        self.sum_tol = sum_tol
        self.min_prob = min_prob

    def _fit(self, P: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        n, K = P.shape
        order, cumulative = sorted_cumulative(P)
        label_rank = np.argmax(order == y[:, None], axis=1)
        ranks = np.arange(K - 1)
        event = (label_rank[:, None] <= ranks[None, :]).astype(float)  # (n, K-1)
        rank_col = np.broadcast_to(ranks, (n, K - 1)).ravel()
        fitted = isotonic_regression_rank2d(
            rank_col, cumulative[:, :-1].ravel(), event.ravel(), np.repeat(w, K - 1)
        ).reshape(n, K - 1)
        self.knots_, self.values_ = [], []
        for r in range(K - 1):
            # Points with equal cumulative share one fitted value (they are tied in the order).
            knots, first = np.unique(cumulative[:, r], return_index=True)
            self.knots_.append(knots)
            self.values_.append(np.clip(fitted[first, r], 0.0, 1.0))
        self.n_levels_ = int(np.unique(fitted).size)

    def calibrated_cumulative(self, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Calibrated cumulative probabilities by rank.

        Parameters
        ----------
        probs : ndarray of shape (n, K)
            Validated probabilities.

        Returns
        -------
        order : ndarray of shape (n, K)
            Class at each rank.
        G : ndarray of shape (n, K)
            Non-decreasing in the rank, ``G[:, -1] = 1``.
        """
        order, cumulative = sorted_cumulative(probs)
        n, K = probs.shape
        G = np.ones((n, K))
        for r in range(K - 1):
            G[:, r] = np.interp(cumulative[:, r], self.knots_[r], self.values_[r])
        return order, np.maximum.accumulate(np.clip(G, 0.0, 1.0), axis=1)

    def _predict(self, P: np.ndarray) -> np.ndarray:
        order, G = self.calibrated_cumulative(P)
        sorted_q = np.diff(G, axis=1, prepend=0.0)
        Q = np.empty_like(sorted_q)
        np.put_along_axis(Q, order, sorted_q, axis=1)
        return Q
