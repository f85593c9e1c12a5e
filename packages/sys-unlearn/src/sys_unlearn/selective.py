"""Algorithm 1: system-aware unlearning for linear classification by selective sampling.

The learner reads a stream once and asks for a label only when the point is poorly covered by
the points it already stored: with ``A = reg * I + sum_{s in Q} x_s x_s^T`` it queries ``x_t`` iff

    r_t = x_t^T A^{-1} x_t > tau,        tau = horizon ** (-kappa)

(a BBQ-style selective sampler, Cesa-Bianchi, Gentile & Orabona 2009). Only the queried points
``Q`` are stored; the model is regularized least squares on them, ``W = A^{-1} B`` with
``B = sum_{s in Q} x_s y_s^T`` (labels coded +-1, one column per class, or one column if binary).

Unlearning (Lu, Sekhari & Sridharan, ICML 2025, Sec. 4): the query rule depends on ``x`` only and
``r_t`` can only grow when points leave ``A``, so a learner run on ``Q \\ U`` would query every one
of its points again. Removing the deleted stored points from ``A`` and ``B`` therefore leaves
*exactly* the state of the learner trained on ``S' = Q \\ U`` -- the system-aware unlearning
guarantee -- and deleting a point that was never stored needs no work at all.
"""

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from sys_unlearn._validation import check_ids, check_X, check_X_y

__all__ = ["SelectiveSamplingClassifier"]

_CHUNK = 1024  # stream points scored per block; r is downdated in place after each query


class SelectiveSamplingClassifier(ClassifierMixin, BaseEstimator):
    """Selective-sampling linear classifier with exact system-aware unlearning.

    Parameters
    ----------
    kappa : float, default=0.5
        Query exponent in ``(0, 1]``: the threshold is ``tau = horizon ** -kappa``. Larger
        ``kappa`` means a lower threshold, more queries, more memory and better accuracy.
    horizon : int or None, default=None
        Stream length ``T`` used for the threshold. ``fit`` defaults it to ``n_samples``;
        ``partial_fit`` needs it set (the threshold must not drift, or unlearning stops being exact).
    reg : float, default=1.0
        Ridge regularization ``lambda > 0``: ``A`` starts at ``lambda * I``.
    fit_intercept : bool, default=True
        Append a constant feature 1 so that the separator need not pass through the origin.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) if binary else (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    stored_ids_ : ndarray of shape (n_stored,)
        Stream ids of the stored (queried, not deleted) points, in stream order.
    n_seen_ : int
        Number of stream points read so far (ids run from 0 to ``n_seen_ - 1``).
    horizon_ : int
        The stream length ``T`` the threshold was set with.
    threshold_ : float
        The query threshold ``tau = horizon_ ** -kappa``.
    """

    def __init__(
        self,
        kappa: float = 0.5,
        horizon: int | None = None,
        reg: float = 1.0,
        fit_intercept: bool = True,
    ) -> None:
        self.kappa = kappa
        self.horizon = horizon
        self.reg = reg
        self.fit_intercept = fit_intercept

    # ------------------------------------------------------------------ learning
    def fit(self, X: ArrayLike, y: ArrayLike) -> "SelectiveSamplingClassifier":
        """Read the stream ``(X, y)`` once, in order, storing only the queried points.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        X, y = check_X_y(X, y)
        self._check_params(len(X))
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"y: needs at least 2 classes, got {classes.tolist()}")
        self._reset(X.shape[1], classes, self.horizon or len(X))
        self._learn(X, y)
        return self

    def partial_fit(
        self, X: ArrayLike, y: ArrayLike, classes: ArrayLike | None = None
    ) -> "SelectiveSamplingClassifier":
        """Continue the stream with a batch ``(X, y)``; ids continue from ``n_seen_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), optional
            All class labels; required on the first call, as in scikit-learn.

        Returns
        -------
        self
        """
        first = not hasattr(self, "classes_")
        X, y = check_X_y(X, y, n_features=None if first else self.n_features_in_)
        if first:
            if classes is None:
                raise ValueError("classes: must be given on the first call to partial_fit")
            if self.horizon is None:
                raise ValueError(
                    "horizon: must be set for partial_fit (the query threshold is horizon**-kappa)"
                )
            classes = np.unique(np.asarray(classes))
            if classes.size < 2:
                raise ValueError(f"classes: needs at least 2 classes, got {classes.tolist()}")
            self._check_params(len(X))
        unseen = np.setdiff1d(np.unique(y), classes if first else self.classes_)
        if unseen.size:
            raise ValueError(f"y: labels {unseen.tolist()} are not in classes")
        if first:
            self._reset(X.shape[1], classes, self.horizon)
        self._learn(X, y)
        return self

    # ---------------------------------------------------------------- unlearning
    def unlearn(self, sample_ids: ArrayLike) -> "SelectiveSamplingClassifier":
        """Delete stream points by id, exactly, in ``O(k d^2 + k^3)`` for ``k`` stored deletions.

        Ids of points that were never stored are recorded as deleted and cost nothing. A call
        with an unknown, repeated or already-deleted id raises and leaves the model unchanged.

        Parameters
        ----------
        sample_ids : array-like of int
            Stream ids (0-based, in the order points were read by ``fit``/``partial_fit``).

        Returns
        -------
        self
        """
        check_is_fitted(self, "classes_")
        ids = check_ids(sample_ids, self.n_seen_, self._deleted)
        hit = np.flatnonzero(np.isin(self._ids, ids) & self._alive)
        if hit.size:
            Z, Yc = self._Z[hit], self._Y[hit]  # (k, d), (k, c)
            # Woodbury downdate of A^{-1} for A - Z^T Z; the inner matrix is positive definite
            # because every row of Z is part of A.
            AZ = self._A_inv @ Z.T  # (d, k)
            inner = np.eye(len(Z)) - Z @ AZ
            A_inv = self._A_inv + AZ @ np.linalg.solve(inner, AZ.T)
            self._A = self._A - Z.T @ Z
            self._A_inv = (A_inv + A_inv.T) / 2
            self._B = self._B - Z.T @ Yc
            # erase the deleted rows now; compact the buffers once half of them are dead
            self._Z[hit], self._Y[hit], self._alive[hit] = 0.0, 0.0, False
            if 2 * self._alive.sum() < len(self._alive):
                self._compact()
            self._refresh_coef()
        self._deleted.update(int(i) for i in ids)
        return self

    @property
    def stored_ids_(self) -> np.ndarray:
        """Stream ids of the stored (queried, not deleted) points, in stream order."""
        check_is_fitted(self, "classes_")
        return self._ids[self._alive]

    # ---------------------------------------------------------------- prediction
    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Linear scores ``X @ coef_.T + intercept_``.

        Returns
        -------
        ndarray of shape (n_samples,) if binary else (n_samples, n_classes)
        """
        check_is_fitted(self, "classes_")
        X = check_X(X, n_features=self.n_features_in_)
        scores = X @ self.coef_.T + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted class labels, shape (n_samples,)."""
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]

    def memory_bytes(self) -> int:
        """Bytes the system stores: the queried points and labels, ``A``, ``A^{-1}``, ``B``, ids."""
        check_is_fitted(self, "classes_")
        n = int(self._alive.sum())
        per_point = self._Z.itemsize * (self._Z.shape[1] + self._Y.shape[1]) + self._ids.itemsize
        return int(n * per_point + sum(a.nbytes for a in (self._A, self._A_inv, self._B)))

    # ------------------------------------------------------------------ internals
    def _check_params(self, n: int) -> None:
        if not (isinstance(self.kappa, int | float) and 0 < self.kappa <= 1):
            raise ValueError(f"kappa: must be in (0, 1], got {self.kappa!r}")
        if self.horizon is not None and not (
            isinstance(self.horizon, int | np.integer) and self.horizon >= 1
        ):
            raise ValueError(f"horizon: must be a positive int or None, got {self.horizon!r}")
        if not (isinstance(self.reg, int | float) and np.isfinite(self.reg) and self.reg > 0):
            raise ValueError(f"reg: must be a positive finite number, got {self.reg!r}")

    def _reset(self, n_features: int, classes: np.ndarray, horizon: int) -> None:
        d = n_features + int(self.fit_intercept)
        k = 1 if classes.size == 2 else classes.size
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.horizon_ = int(horizon)
        self.threshold_ = float(horizon) ** (-self.kappa)
        self.n_seen_ = 0
        self._ids = np.empty(0, dtype=np.int64)
        self._alive = np.empty(0, dtype=bool)
        self._Z = np.empty((0, d))
        self._Y = np.empty((0, k))
        self._A = self.reg * np.eye(d)
        self._A_inv = np.eye(d) / self.reg
        self._B = np.zeros((d, k))
        self._deleted: set[int] = set()
        self._refresh_coef()

    def _augment(self, X: np.ndarray) -> np.ndarray:
        return np.hstack([X, np.ones((len(X), 1))]) if self.fit_intercept else X

    def _code(self, y: np.ndarray) -> np.ndarray:
        """Labels as +-1 targets: one column if binary, one-vs-rest columns otherwise."""
        idx = np.searchsorted(self.classes_, y)
        if self.classes_.size == 2:
            return (2.0 * idx - 1.0)[:, None]
        Y = -np.ones((len(y), self.classes_.size))
        Y[np.arange(len(y)), idx] = 1.0
        return Y

    def _learn(self, X: np.ndarray, y: np.ndarray) -> None:
        Z, Y = self._augment(X), self._code(y)
        tau = self.threshold_
        A_inv = self._A_inv
        picked: list[int] = []
        for start in range(0, len(Z), _CHUNK):
            Zc = Z[start : start + _CHUNK]
            r = np.sum((Zc @ A_inv) * Zc, axis=1)  # leverage of each point in the block
            pos = 0
            while True:
                over = np.flatnonzero(r[pos:] > tau)
                if over.size == 0:
                    break
                j = pos + over[0]
                u = A_inv @ Zc[j]
                denom = 1.0 + Zc[j] @ u
                A_inv = A_inv - np.outer(u, u) / denom  # Sherman-Morrison for A + z z^T
                pos = j + 1
                r[pos:] -= (Zc[pos:] @ u) ** 2 / denom  # the same update applied to later scores
                picked.append(start + j)
        q = np.asarray(picked, dtype=np.int64)
        Zq, Yq = Z[q], Y[q]
        self._A = self._A + Zq.T @ Zq
        self._A_inv = (A_inv + A_inv.T) / 2
        self._B = self._B + Zq.T @ Yq
        self._ids = np.concatenate([self._ids, self.n_seen_ + q])
        self._alive = np.concatenate([self._alive, np.ones(len(q), dtype=bool)])
        self._Z = np.vstack([self._Z, Zq])
        self._Y = np.vstack([self._Y, Yq])
        self.n_seen_ += len(Z)
        self._refresh_coef()

    def _compact(self) -> None:
        keep = self._alive
        self._ids, self._Z, self._Y = self._ids[keep], self._Z[keep], self._Y[keep]
        self._alive = np.ones(len(self._ids), dtype=bool)

    def _refresh_coef(self) -> None:
        W = np.linalg.solve(self._A, self._B).T  # (k, d)
        if self.fit_intercept:
            self.coef_, self.intercept_ = W[:, :-1].copy(), W[:, -1].copy()
        else:
            self.coef_, self.intercept_ = W, np.zeros(W.shape[0])
