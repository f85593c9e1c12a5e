"""Baseline: SISA sharded training (Bourtoule et al., 2021).

The data is split at random into ``n_shards`` disjoint shards with one model each; predictions
are the shards' majority vote, and a deletion retrains only the shards that held the deleted
points. Slicing (checkpoints inside a shard) pays off only for incremental learners, so shards
here are retrained whole.
"""

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import RidgeClassifier
from sklearn.utils.validation import check_is_fitted

from sys_unlearn._validation import check_known_ids, check_X, check_X_y, is_int

__all__ = ["SISAClassifier"]


class SISAClassifier(ClassifierMixin, BaseEstimator):
    """Sharded, isolated, aggregated training with per-shard retraining on deletion.

    Parameters
    ----------
    estimator : sklearn classifier or None, default=None
        Shard model; ``None`` means ``RidgeClassifier(alpha=1.0)``.
    n_shards : int, default=5
    random_state : int or None, default=0
        Seed of the shard assignment.

    Attributes
    ----------
    shard_of_ : ndarray of shape (n_samples,)
        Shard index of every stream id.
    estimators_ : list
        Per shard: a fitted model, or the single label of a one-class shard, or ``None`` if empty.
    """

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        n_shards: int = 5,
        random_state: int | None = 0,
    ) -> None:
        self.estimator = estimator
        self.n_shards = n_shards
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> "SISAClassifier":
        """Split ``(X, y)`` into shards and train one model per shard."""
        X, y = check_X_y(X, y, owner=self)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"y: needs at least 2 classes, got {classes.size} class(es)")
        if not (is_int(self.n_shards) and 1 <= self.n_shards <= len(X)):
            raise ValueError(
                f"n_shards: must be an int in [1, n_samples={len(X)}], got {self.n_shards!r}"
            )
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        rng = np.random.default_rng(self.random_state)
        self.shard_of_ = rng.permutation(len(X)) % self.n_shards
        self._X, self._y = X.copy(), y.copy()
        self._alive = np.ones(len(X), dtype=bool)
        self.estimators_ = [self._fit_shard(s) for s in range(self.n_shards)]
        return self

    def unlearn(self, sample_ids: ArrayLike) -> "SISAClassifier":
        """Mark the points deleted and retrain only the shards that held them."""
        check_is_fitted(self, "estimators_")
        ids = check_known_ids(sample_ids, self._alive)
        self._alive[ids] = False
        self._X[ids] = 0.0  # erase the deleted rows
        for s in np.unique(self.shard_of_[ids]):
            self.estimators_[s] = self._fit_shard(s)
        return self

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Majority vote over the shards' predictions, shape (n_samples,)."""
        check_is_fitted(self, "estimators_")
        X = check_X(X, n_features=self.n_features_in_, owner=self)
        votes = np.zeros((len(X), self.classes_.size))
        for est in self.estimators_:
            if est is None:
                continue
            labels = est.predict(X) if hasattr(est, "predict") else np.full(len(X), est)
            votes[np.arange(len(X)), np.searchsorted(self.classes_, labels)] += 1
        return self.classes_[votes.argmax(axis=1)]

    @property
    def stored_ids_(self) -> np.ndarray:
        """Ids of all points not yet deleted (SISA stores the whole data set)."""
        return np.flatnonzero(self._alive)

    def memory_bytes(self) -> int:
        """Bytes stored: the remaining data and the shard map."""
        check_is_fitted(self, "estimators_")
        n = int(self._alive.sum())
        return int(
            n * (self._X.itemsize * self._X.shape[1] + self._y.itemsize) + self.shard_of_.nbytes
        )

    def _fit_shard(self, s: int) -> object:
        rows = (self.shard_of_ == s) & self._alive
        y = self._y[rows]
        labels = np.unique(y)
        if labels.size == 0:
            return None
        if labels.size == 1:
            return labels[0]
        base = RidgeClassifier(alpha=1.0) if self.estimator is None else self.estimator
        return clone(base).fit(self._X[rows], y)
