"""Baseline: full retraining on the remaining data after every deletion (the gold standard)."""

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import RidgeClassifier
from sklearn.utils.validation import check_is_fitted

from sys_unlearn._validation import check_known_ids, check_X, check_X_y

__all__ = ["RetrainingClassifier"]


class RetrainingClassifier(ClassifierMixin, BaseEstimator):
    """Store every point; ``unlearn`` refits ``estimator`` from scratch on what remains.

    Exact under the classical definition, at the price of keeping all of ``S`` and a full
    retraining per deletion request.

    Parameters
    ----------
    estimator : sklearn classifier or None, default=None
        Model to retrain; ``None`` means ``RidgeClassifier(alpha=1.0)``, the full-data
        counterpart of the selective sampler's least-squares model.

    Attributes
    ----------
    estimator_ : the fitted clone
    """

    def __init__(self, estimator: BaseEstimator | None = None) -> None:
        self.estimator = estimator

    def fit(self, X: ArrayLike, y: ArrayLike) -> "RetrainingClassifier":
        """Store ``(X, y)`` and fit the estimator on all of it."""
        X, y = check_X_y(X, y, owner=self)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(f"y: needs at least 2 classes, got {self.classes_.size} class(es)")
        self.n_features_in_ = X.shape[1]
        self._X, self._y = X.copy(), y.copy()
        self._alive = np.ones(len(X), dtype=bool)
        self.estimator_ = self._fit(X, y)
        return self

    def unlearn(self, sample_ids: ArrayLike) -> "RetrainingClassifier":
        """Drop the points and retrain from scratch on the rest (fails if one class would remain)."""
        check_is_fitted(self, "estimator_")
        ids = check_known_ids(sample_ids, self._alive)
        alive = self._alive.copy()
        alive[ids] = False
        if np.unique(self._y[alive]).size < 2:
            raise ValueError("sample_ids: deleting them leaves fewer than 2 classes to retrain on")
        self.estimator_ = self._fit(self._X[alive], self._y[alive])
        self._X[ids] = 0.0  # erase the deleted rows
        self._alive = alive
        return self

    @property
    def stored_ids_(self) -> np.ndarray:
        """Ids of all points not yet deleted (retraining stores the whole data set)."""
        return np.flatnonzero(self._alive)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels, shape (n_samples,)."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(check_X(X, n_features=self.n_features_in_, owner=self))

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """The retrained estimator's decision function."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.decision_function(
            check_X(X, n_features=self.n_features_in_, owner=self)
        )

    def memory_bytes(self) -> int:
        """Bytes stored: the whole remaining data set (the model itself is not counted)."""
        check_is_fitted(self, "estimator_")
        n = int(self._alive.sum())
        return int(n * (self._X.itemsize * self._X.shape[1] + self._y.itemsize))

    def _fit(self, X: np.ndarray, y: np.ndarray) -> BaseEstimator:
        base = RidgeClassifier(alpha=1.0) if self.estimator is None else self.estimator
        return clone(base).fit(X, y)
