"""Shared scikit-learn plumbing for all calibrators."""

from __future__ import annotations

import copy

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from isocal._validation import (
    check_labels,
    check_nonnegative_float,
    check_probs,
    check_sample_weight,
    check_scores,
)

__all__ = ["BaseCalibrator", "renormalize"]


def renormalize(q: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Divide rows by their sums; rows summing to 0 take ``fallback``'s row.

    Parameters
    ----------
    q : ndarray of shape (n, K)
        Non-negative scores.
    fallback : ndarray of shape (n, K)
        Valid distributions used where a row of ``q`` is all zero.

    Returns
    -------
    ndarray of shape (n, K)
    """
    q = np.clip(q, 0.0, None)
    s = q.sum(axis=1, keepdims=True)
    zero = s[:, 0] <= 0
    out = np.divide(q, s, out=np.zeros_like(q), where=s > 0)
    out[zero] = fallback[zero]
    return out


class BaseCalibrator(BaseEstimator):
    """Common ``fit`` / ``predict_proba`` / ``predict`` validation.

    Subclasses implement ``_fit(P, y, w)`` and ``_predict(P)`` on validated
    float64 inputs; ``P`` is a probability matrix unless the subclass sets
    ``inputs="logits"``.
    """

    _accepts_logits = False
    # Per-class parametric maps are unidentifiable for a class with no calibration
    # labels (its bias runs to -inf); class-agnostic and pass-through methods set False.
    _requires_all_classes = True

    def _check_input(self, X: object, n_classes: int | None, min_samples: int) -> np.ndarray:
        sum_tol = check_nonnegative_float(self.sum_tol, "sum_tol")
        inputs = getattr(self, "inputs", "probs")
        if self._accepts_logits and inputs not in ("probs", "logits"):
            raise ValueError(f"inputs: must be 'probs' or 'logits', got {inputs!r}")
        if self._accepts_logits and inputs == "logits":
            return check_scores(X, "logits", n_classes=n_classes, min_samples=min_samples)
        return check_probs(
            X, "probs", sum_tol=sum_tol, n_classes=n_classes, min_samples=min_samples
        )

    def fit(self, probs: object, y: object, sample_weight: object = None) -> BaseCalibrator:
        """Fit the calibration map.

        Parameters
        ----------
        probs : array-like of shape (n_samples, n_classes)
            Uncalibrated probabilities (rows sum to 1), or logits for the
            scaling calibrators with ``inputs="logits"``. ``n_samples >= 2``.
        y : array-like of shape (n_samples,)
            Integer labels in ``[0, n_classes)``. Class-agnostic methods (NA-FIR,
            FIR, SCIR, temperature scaling) and the per-class isotonic / binning
            methods accept classes absent from ``y``; vector, matrix and Dirichlet
            scaling need every class.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative sample weights.

        Returns
        -------
        self
        """
        P = self._check_input(probs, None, min_samples=2)
        labels = check_labels(y, P.shape[0], P.shape[1], "y", self._requires_all_classes)
        w = check_sample_weight(sample_weight, P.shape[0])
        if hasattr(self, "min_prob"):
            min_prob = check_nonnegative_float(self.min_prob, "min_prob")
            if min_prob >= 1.0 / P.shape[1]:
                raise ValueError(f"min_prob: must be < 1 / n_classes, got {min_prob}")
        # Fit a shallow copy and adopt its state only on success: a rejected fit
        # (bad hyper-parameter found inside _fit) leaves a fitted model unchanged.
        fitted = copy.copy(self)
        fitted.n_classes_ = P.shape[1]
        fitted._fit(P, labels, w)
        self.__dict__.update(fitted.__dict__)
        return self

    def predict_proba(self, probs: object) -> np.ndarray:
        """Calibrated probabilities.

        Parameters
        ----------
        probs : array-like of shape (n_samples, n_classes)
            Uncalibrated probabilities (or logits, see ``fit``).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Rows are in [0, 1] and sum to 1.
        """
        check_is_fitted(self, "n_classes_")
        P = self._check_input(probs, self.n_classes_, min_samples=1)
        Q = np.clip(self._predict(P), 0.0, 1.0)
        min_prob = getattr(self, "min_prob", 0.0)
        if min_prob > 0:
            # Optional floor: isotonic fits can output exact zeros (infinite log loss).
            Q = np.maximum(Q, min_prob)
        return Q / Q.sum(axis=1, keepdims=True)

    def predict(self, probs: object) -> np.ndarray:
        """Most probable class after calibration, shape (n_samples,)."""
        return np.argmax(self.predict_proba(probs), axis=1)

    def _fit(self, P: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError

    def _predict(self, P: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError
