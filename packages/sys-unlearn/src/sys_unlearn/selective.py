"""Algorithm 1: system-aware unlearning for linear classification by selective sampling.

The learner reads a stream once and asks for a label only when the point is poorly covered by
the points it already stored: with ``A = reg * I + sum_{s in Q} x_s x_s^T`` it queries ``x_t`` iff

    r_t = x_t^T A^{-1} x_t > tau,        tau = horizon ** (-kappa)

(a BBQ-style selective sampler, Cesa-Bianchi, Gentile & Orabona 2009; Lu, Sekhari & Sridharan,
ICML 2025, Sec. 4, Algorithm 1). Only the queried points ``Q`` are stored; the model is
regularized least squares on them, ``W = A^{-1} B`` with ``B = sum_{s in Q} x_s y_s^T`` (labels
coded +-1, one column per class, or one column if binary).

Unlearning: the query rule depends on ``x`` only and ``r_t`` can only grow when points leave
``A``, so a learner run on ``Q \\ U`` queries every one of its points again. Removing the deleted
stored points therefore leaves exactly the state of the learner run on ``S' = Q \\ U``, and
deleting a point that was never stored needs no work at all.

Numerics. A Woodbury downdate of ``A^{-1}`` cancels catastrophically when the deleted point
dominates ``A`` (a point 1e5 times larger than the rest leaves an inverse 55% off). Deletions of
stored points therefore rebuild ``A^{-1}`` and ``B`` exactly from the stored rows (a Cholesky
solve, ``O(|Q| d^2 + d^3)``); the core set is small by design, so this costs milliseconds.

Ties. A point whose leverage is within a relative ``1e-9`` of ``tau`` is a tie: two runs whose
``A^{-1}`` differ only by rounding could decide it differently. Ties are queried (the rule is
``r_t > tau * (1 - 1e-9)``): storing a borderline point never weakens the model, and exactness
holds for every point outside the band (for continuous data, all but a ~1e-9 fraction).

Privacy of the stored state. The state holds the stored rows, their ids and labels, ``A^{-1}``
and ``B``, and the parameters -- nothing about deletions: no log of deleted ids and no counters.
After ``unlearn(U)`` it equals, field by field, the state of the learner run on the stream
without ``U`` (given the same ids and ``horizon``). Unknown ids are therefore indistinguishable
from never-stored ids and are accepted as no-ops.
"""

import warnings

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import cho_factor, cho_solve
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from sys_unlearn._validation import check_ids, check_sample_ids, check_X, check_X_y, is_int, is_real

__all__ = ["SelectiveSamplingClassifier"]

_CHUNK = 1024  # stream points scored per block; r is downdated in place after each query
_TIE = 1e-9  # relative band around the threshold resolved as "query"


class SelectiveSamplingClassifier(ClassifierMixin, BaseEstimator):
    """Selective-sampling linear classifier with exact system-aware unlearning.

    Parameters
    ----------
    kappa : float, default=0.2
        Query exponent in ``(0, 1]``: the threshold is ``tau = horizon ** -kappa``. Larger
        ``kappa`` means a lower threshold, more queries, more memory and better accuracy. At
        the paper's Margin setting (n = 200,000, d = 100) ``kappa = 0.2`` stores 0.6% of the
        stream, the fraction the paper reports.
    horizon : int or None, default=None
        Stream length ``T`` used for the threshold. ``fit`` defaults it to ``n_samples``;
        ``partial_fit`` needs it set (the threshold must not drift, or unlearning stops being
        exact).
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
        Ids of the stored (queried, not deleted) points, in stream order.
    horizon_ : int
        The stream length ``T`` the threshold was set with.
    threshold_ : float
        The query threshold ``tau = horizon_ ** -kappa``.
    """

    def __init__(
        self,
        kappa: float = 0.2,
        horizon: int | None = None,
        reg: float = 1.0,
        fit_intercept: bool = True,
    ) -> None:
        self.kappa = kappa
        self.horizon = horizon
        self.reg = reg
        self.fit_intercept = fit_intercept

    # ------------------------------------------------------------------ learning
    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_ids: ArrayLike | None = None
    ) -> "SelectiveSamplingClassifier":
        """Read the stream ``(X, y)`` once, in order, storing only the queried points.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_ids : array-like of int of shape (n_samples,), optional
            Distinct ids naming the points in deletion requests (default: row numbers).

        Returns
        -------
        self
        """
        X, y = check_X_y(X, y, owner=self)
        ids = check_sample_ids(sample_ids, len(X))
        self._check_params()
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"y: needs at least 2 classes, got {classes.size} class(es)")
        horizon = self.horizon or len(X)
        self._check_scale(X, float(horizon) ** (-self.kappa))
        self._reset(X.shape[1], classes, horizon)
        self._learn(X, y, ids)
        return self

    def partial_fit(
        self,
        X: ArrayLike,
        y: ArrayLike,
        sample_ids: ArrayLike | None = None,
        classes: ArrayLike | None = None,
    ) -> "SelectiveSamplingClassifier":
        """Continue the stream with a batch ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_ids : array-like of int of shape (n_samples,)
            Ids of the batch's points, distinct from every stored id. Required: the learner
            keeps no counter of the points it has read (that would reveal deletions), so it
            cannot number them itself.
        classes : array-like of shape (n_classes,), optional
            All class labels; required on the first call, as in scikit-learn.

        Returns
        -------
        self
        """
        first = not hasattr(self, "classes_")
        X, y = check_X_y(X, y, n_features=None if first else self.n_features_in_, owner=self)
        if sample_ids is None:
            raise ValueError("sample_ids: partial_fit needs the ids of the batch's points")
        ids = check_sample_ids(sample_ids, len(X))
        if not first and np.isin(ids, self._ids).any():
            raise ValueError("sample_ids: some ids are already stored")
        if first:
            if classes is None:
                raise ValueError("classes: must be given on the first call to partial_fit")
            if self.horizon is None:
                raise ValueError(
                    "horizon: must be set for partial_fit (the query threshold is horizon**-kappa)"
                )
            classes = np.unique(np.asarray(classes))
            if classes.size < 2:
                raise ValueError(f"classes: needs at least 2 classes, got {classes.size} class(es)")
            self._check_params()
        unseen = np.setdiff1d(np.unique(y), classes if first else self.classes_)
        if unseen.size:
            raise ValueError(f"y: labels {unseen.tolist()} are not in classes")
        self._check_scale(X, float(self.horizon if first else self.horizon_) ** (-self.kappa))
        if first:
            self._reset(X.shape[1], classes, self.horizon)
        self._learn(X, y, ids)
        return self

    # ---------------------------------------------------------------- unlearning
    def unlearn(self, sample_ids: ArrayLike) -> "SelectiveSamplingClassifier":
        """Delete points by id, exactly.

        Ids of points that were never stored (or never seen) cost a lookup and change
        nothing: the learner keeps no record of them either way. Deleting ``k`` stored points
        rebuilds ``A^{-1}`` and ``B`` from the remaining stored rows in ``O(|Q| d^2 + d^3)``.

        Parameters
        ----------
        sample_ids : int or array-like of int
            Ids to delete (repeats are ignored).

        Returns
        -------
        self
        """
        check_is_fitted(self, "classes_")
        if is_int(sample_ids):  # the per-request fast path
            row = self._row.get(int(sample_ids))
            if row is not None:
                self._delete_rows(np.array([row]))
            return self
        ids = check_ids(sample_ids)
        if ids.size:
            rows = np.flatnonzero(np.isin(self._ids, ids))
            if rows.size:
                self._delete_rows(rows)
        return self

    @property
    def stored_ids_(self) -> np.ndarray:
        """Ids of the stored (queried, not deleted) points, in stream order."""
        check_is_fitted(self, "classes_")
        return self._ids.copy()

    def stored_state(self) -> dict[str, np.ndarray | float | int]:
        """Everything the system stores, field by field (what a system-aware attacker sees).

        Returns
        -------
        dict
            ``ids``, ``X`` (stored rows, intercept column included), ``Y`` (coded labels),
            ``A_inv``, ``B``, ``classes``, ``horizon``, ``threshold``.
        """
        check_is_fitted(self, "classes_")
        return {
            "ids": self._ids.copy(),
            "X": self._Z.copy(),
            "Y": self._Y.copy(),
            "A_inv": self._A_inv.copy(),
            "B": self._B.copy(),
            "classes": self.classes_.copy(),
            "horizon": self.horizon_,
            "threshold": self.threshold_,
        }

    # ---------------------------------------------------------------- prediction
    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Linear scores ``X @ coef_.T + intercept_``.

        Returns
        -------
        ndarray of shape (n_samples,) if binary else (n_samples, n_classes)
        """
        check_is_fitted(self, "classes_")
        X = check_X(X, n_features=self.n_features_in_, owner=self)
        scores = X @ self.coef_.T + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted class labels, shape (n_samples,)."""
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]

    def memory_bytes(self) -> int:
        """Bytes the system stores: the queried points, labels and ids, ``A^{-1}`` and ``B``."""
        check_is_fitted(self, "classes_")
        return int(sum(a.nbytes for a in (self._Z, self._Y, self._ids, self._A_inv, self._B)))

    # ------------------------------------------------------------------ internals
    def _check_params(self) -> None:
        if not (is_real(self.kappa) and 0 < self.kappa <= 1):
            raise ValueError(f"kappa: must be in (0, 1], got {self.kappa!r}")
        if self.horizon is not None and not (is_int(self.horizon) and self.horizon >= 1):
            raise ValueError(f"horizon: must be a positive int or None, got {self.horizon!r}")
        if not (is_real(self.reg) and np.isfinite(self.reg) and self.reg > 0):
            raise ValueError(f"reg: must be a positive finite number, got {self.reg!r}")

    def _reset(self, n_features: int, classes: np.ndarray, horizon: int) -> None:
        d = n_features + int(self.fit_intercept)
        k = 1 if classes.size == 2 else classes.size
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.horizon_ = int(horizon)
        self.threshold_ = float(horizon) ** (-self.kappa)
        self._ids = np.empty(0, dtype=np.int64)
        self._row: dict[int, int] = {}
        self._Z = np.empty((0, d))
        self._Y = np.empty((0, k))
        self._A_inv = np.eye(d) / self.reg
        self._B = np.zeros((d, k))
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

    def _check_scale(self, X: np.ndarray, threshold: float) -> None:
        """The analysis assumes ``||x|| <= 1``: say so when the data are far from that scale."""
        if not len(X):
            return
        top = float(np.sqrt(np.max(np.einsum("ij,ij->i", X, X))))
        if top**2 / self.reg < threshold:
            raise ValueError(
                f"X: the largest row norm is {top:.3g}, so ||x||^2 / reg < threshold "
                f"({threshold:.3g}) and no feature can ever trigger a query (the learner "
                "would store almost nothing and predict a constant); Algorithm 1 assumes "
                "||x|| <= 1: rescale X so that its largest row norm is about 1"
            )
        if top > 1.0 + 1e-6:
            warnings.warn(
                f"X: rows have norm up to {top:.3g}; Algorithm 1's query rule and memory bound "
                f"assume ||x|| <= 1 (divide X by {top:.3g} for the paper's guarantees)",
                UserWarning,
                stacklevel=3,
            )

    def _learn(self, X: np.ndarray, y: np.ndarray, ids: np.ndarray) -> None:
        Z, Y = self._augment(X), self._code(y)
        tau = self.threshold_ * (1.0 - _TIE)
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
        self._ids = np.concatenate([self._ids, ids[q]])
        self._Z = np.vstack([self._Z, Z[q]])
        self._Y = np.vstack([self._Y, Y[q]])
        self._row = {int(i): r for r, i in enumerate(self._ids)}
        self._rebuild()  # exact state at the end of every batch: no drift carried forward

    def _delete_rows(self, rows: np.ndarray) -> None:
        keep = np.ones(len(self._ids), dtype=bool)
        keep[rows] = False
        # erase the deleted rows before the old buffers are released
        self._Z[rows], self._Y[rows], self._ids[rows] = 0.0, 0.0, -1
        self._ids, self._Z, self._Y = self._ids[keep], self._Z[keep], self._Y[keep]
        self._row = {int(i): r for r, i in enumerate(self._ids)}
        self._rebuild()

    def _rebuild(self) -> None:
        """``A^{-1}`` and ``B`` recomputed from the stored rows (Cholesky; exact to rounding)."""
        d = self._Z.shape[1]
        A = self.reg * np.eye(d) + self._Z.T @ self._Z
        self._A_inv = cho_solve(cho_factor(A, lower=True), np.eye(d))
        self._A_inv = (self._A_inv + self._A_inv.T) / 2
        self._B = self._Z.T @ self._Y
        self._refresh_coef()

    def _refresh_coef(self) -> None:
        W = (self._A_inv @ self._B).T  # (k, d)
        if self.fit_intercept:
            self.coef_, self.intercept_ = W[:, :-1].copy(), W[:, -1].copy()
        else:
            self.coef_, self.intercept_ = W, np.zeros(W.shape[0])
