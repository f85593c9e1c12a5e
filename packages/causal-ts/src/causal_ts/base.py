"""PyOD-style base class for window-based detectors on multivariate series."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from causal_ts._validation import check_fraction, check_int, check_series
from causal_ts.discovery import constant_columns

__all__ = ["BaseWindowDetector"]


class BaseWindowDetector(BaseEstimator):
    """Shared fit / score / threshold logic (PyOD conventions, windows of stride 1).

    Subclasses implement ``_fit(Xs)`` and ``_score(Xs) -> (T - W + 1,)`` on the series
    standardised with the training mean/std. Higher scores are more anomalous; window ``k``
    covers points ``k .. k+W-1`` and its score is aligned to its last point.

    Attributes
    ----------
    n_features_in_ : int
    mean_, scale_ : numpy.ndarray of shape (N,)
        Training statistics (constant columns get scale 1).
    decision_scores_ : numpy.ndarray of shape (T_train - W + 1,)
    threshold_ : float
        ``(1 - contamination)`` quantile of ``decision_scores_``.
    labels_ : numpy.ndarray of shape (T_train - W + 1,)
    """

    window: int
    contamination: float
    nan_policy: str

    # ------------------------------------------------------------------ hooks
    def _fit(self, Xs: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _score(self, Xs: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---------------------------------------------------------------- helpers
    def _check_common(self) -> int:
        window = check_int(self.window, "window", low=2)
        c = check_fraction(self.contamination, "contamination", low_open=True)
        if c > 0.5:
            raise ValueError(f"contamination must lie in (0, 0.5]; got {c}")
        if self.nan_policy not in ("raise", "ffill"):
            raise ValueError(f"nan_policy must be 'raise' or 'ffill'; got {self.nan_policy!r}")
        return window

    def _standardise(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean_) / self.scale_

    def _check_fitted(self) -> None:
        if not hasattr(self, "threshold_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(X) first")

    def _validated_test(self, X: Any) -> np.ndarray:
        self._check_fitted()
        X = check_series(X, "X", nan_policy=self.nan_policy)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input (variables / channels)"
            )
        if X.shape[0] < self.window:
            raise ValueError(
                f"X has {X.shape[0]} time steps; it must be at least window={self.window} long"
            )
        return X

    # ------------------------------------------------------------------- API
    def fit(self, X: Any, y: Any = None) -> BaseWindowDetector:
        """Fit on a normal training series.

        Parameters
        ----------
        X : array-like of shape (T, N)
            Normal data. NaN/inf raise ``ValueError`` unless ``nan_policy="ffill"``.
            Constant columns are kept (standardised to 0) with a warning.
        y : ignored

        Returns
        -------
        self
        """
        window = self._check_common()
        X = check_series(X, "X", nan_policy=self.nan_policy)
        if X.shape[0] < window:
            raise ValueError(
                f"X has {X.shape[0]} time steps (n_samples={X.shape[0]}); it must be at least "
                f"window={window} long"
            )
        self.n_features_in_ = X.shape[1]
        self.mean_ = X.mean(axis=0)
        std = X.std(axis=0)
        const = constant_columns(X)
        if const.any():
            warnings.warn(
                f"X has constant columns {np.flatnonzero(const).tolist()}; they are kept "
                "(standardised to 0) but carry no information",
                UserWarning,
                stacklevel=2,
            )
        self.scale_ = np.where(const | (std == 0), 1.0, std)
        Xs = self._standardise(X)
        self._fit(Xs)
        self.decision_scores_ = self._score(Xs)
        self.threshold_ = float(np.quantile(self.decision_scores_, 1.0 - self.contamination))
        self.labels_ = (self.decision_scores_ > self.threshold_).astype(int)
        return self

    def decision_function(self, X: Any, align: str = "window") -> np.ndarray:
        """Anomaly scores of a series (higher = more anomalous).

        Parameters
        ----------
        X : array-like of shape (T, N)
            Same variables as the training data; ``T >= window``.
        align : {"window", "point"}, default="window"
            ``"window"``: one score per window, shape (T - W + 1,), score ``k`` for the window
            ending at point ``k + W - 1``. ``"point"``: shape (T,), the same scores placed at
            each window's last point, the first ``W - 1`` entries NaN.

        Returns
        -------
        numpy.ndarray
        """
        if align not in ("window", "point"):
            raise ValueError(f"align must be 'window' or 'point'; got {align!r}")
        X = self._validated_test(X)
        scores = self._score(self._standardise(X))
        if align == "window":
            return scores
        out = np.full(X.shape[0], np.nan)
        out[self.window - 1 :] = scores
        return out

    def predict(self, X: Any, threshold: float | None = None) -> np.ndarray:
        """0/1 window labels: ``score > threshold``.

        Parameters
        ----------
        X : array-like of shape (T, N)
        threshold : float, optional
            Defaults to ``threshold_``, the ``(1 - contamination)`` quantile of the training
            scores (PyOD convention; *not* the paper's oracle best-F1 protocol).

        Returns
        -------
        numpy.ndarray of shape (T - W + 1,), int
        """
        self._check_fitted()
        thr = self.threshold_ if threshold is None else float(threshold)
        if not np.isfinite(thr):
            raise ValueError(f"threshold must be finite; got {threshold}")
        return (self.decision_function(X) > thr).astype(int)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Outlier probability by min-max scaling with the training scores (PyOD "linear").

        Returns
        -------
        numpy.ndarray of shape (T - W + 1, 2)
            Columns: P(normal), P(anomalous).
        """
        s = self.decision_function(X)
        lo, hi = self.decision_scores_.min(), self.decision_scores_.max()
        p = np.clip((s - lo) / max(hi - lo, 1e-12), 0.0, 1.0)
        return np.column_stack([1.0 - p, p])
