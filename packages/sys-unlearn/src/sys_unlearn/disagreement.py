"""Algorithm 2: system-aware unlearning for a general hypothesis class by selective sampling.

A disagreement-based selective sampler (CAL-style; Lu, Sekhari & Sridharan, ICML 2025, Sec. 5):
the version space ``V(Q) = {h in H : h errs on at most m stored points}`` shrinks as labels are
queried, and a stream point is queried iff the hypotheses still in ``V(Q)`` disagree on it.

Removing stored points can only *enlarge* ``V`` (fewer constraints), so a learner run on
``Q \\ U`` would again disagree on -- and query -- every one of its points. Subtracting the
deleted points' mistake counts therefore gives exactly the state of the learner trained on
``S' = Q \\ U``; deleting a point that was never queried changes nothing.

The class is finite and given as predictions: a callable ``X -> (n_samples, n_hypotheses)``
label matrix, so any model family (trees, networks, kernels) can be plugged in by listing its
members; :func:`linear_hypotheses` builds random halfspaces.
"""

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from sys_unlearn._validation import check_ids, check_X, check_X_y

__all__ = ["DisagreementSamplingClassifier", "linear_hypotheses"]

_CHUNK = 4096

Hypotheses = Callable[[np.ndarray], np.ndarray]


def linear_hypotheses(
    n_features: int,
    n_hypotheses: int = 512,
    *,
    bias_scale: float = 0.5,
    random_state: int | None = 0,
) -> Hypotheses:
    """Random halfspaces ``sign(x @ w + b)`` with labels in {0, 1}, as a prediction callable.

    Parameters
    ----------
    n_features : int
        Input dimension ``d``.
    n_hypotheses : int, default=512
        Number ``H`` of halfspaces (directions uniform on the sphere, offsets ``N(0, bias_scale^2)``).
    bias_scale : float, default=0.5
        Standard deviation of the offsets.
    random_state : int or None, default=0

    Returns
    -------
    callable
        Maps ``X`` of shape (n, d) to a label matrix of shape (n, H) with entries in {0, 1}.
    """
    if not (isinstance(n_features, int) and n_features >= 1):
        raise ValueError(f"n_features: must be a positive int, got {n_features!r}")
    if not (isinstance(n_hypotheses, int) and n_hypotheses >= 1):
        raise ValueError(f"n_hypotheses: must be a positive int, got {n_hypotheses!r}")
    rng = np.random.default_rng(random_state)
    W = rng.standard_normal((n_features, n_hypotheses))
    W /= np.linalg.norm(W, axis=0, keepdims=True)
    b = bias_scale * rng.standard_normal(n_hypotheses)

    def predict(X: np.ndarray) -> np.ndarray:
        return (X @ W + b > 0).astype(np.int64)

    return predict


class DisagreementSamplingClassifier(ClassifierMixin, BaseEstimator):
    """Disagreement-based selective sampler over a finite class, with exact unlearning.

    Parameters
    ----------
    hypotheses : callable
        ``hypotheses(X) -> P`` with ``X`` of shape (n, d) and ``P`` of shape (n, H): the label
        each of the ``H`` hypotheses assigns to each point (labels from ``classes_``).
    max_mistakes : int, default=0
        ``m``: a hypothesis stays in the version space while it errs on at most ``m`` stored
        points (0 is the realizable CAL rule; larger values tolerate label noise).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    stored_ids_ : ndarray of shape (n_stored,)
        Stream ids of the queried (stored) points.
    mistakes_ : ndarray of shape (H,)
        Mistakes of every hypothesis on the stored points.
    n_seen_ : int
    """

    def __init__(self, hypotheses: Hypotheses | None = None, max_mistakes: int = 0) -> None:
        self.hypotheses = hypotheses
        self.max_mistakes = max_mistakes

    def fit(self, X: ArrayLike, y: ArrayLike) -> "DisagreementSamplingClassifier":
        """Read the stream ``(X, y)`` once, querying labels only where ``V`` disagrees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        X, y = check_X_y(X, y)
        if not callable(self.hypotheses):
            raise TypeError("hypotheses: must be a callable X -> (n_samples, n_hypotheses) labels")
        if not (isinstance(self.max_mistakes, int | np.integer) and self.max_mistakes >= 0):
            raise ValueError(f"max_mistakes: must be a non-negative int, got {self.max_mistakes!r}")
        P = self._predict_all(X)
        self.classes_ = np.unique(y)
        self.n_features_in_ = X.shape[1]
        self.mistakes_ = np.zeros(P.shape[1], dtype=np.int64)
        self._deleted: set[int] = set()
        q = self._learn(P, y)
        self.stored_ids_ = q
        self._stored_X, self._stored_y = X[q], y[q]
        self.n_seen_ = len(X)
        return self

    def unlearn(self, sample_ids: ArrayLike) -> "DisagreementSamplingClassifier":
        """Delete stream points by id, exactly; non-stored ids cost nothing.

        Parameters
        ----------
        sample_ids : array-like of int

        Returns
        -------
        self
        """
        check_is_fitted(self, "classes_")
        ids = check_ids(sample_ids, self.n_seen_, self._deleted)
        hit = np.isin(self.stored_ids_, ids)
        if hit.any():
            wrong = self._predict_all(self._stored_X[hit]) != self._stored_y[hit][:, None]
            self.mistakes_ = self.mistakes_ - wrong.sum(axis=0)
            keep = ~hit
            self.stored_ids_ = self.stored_ids_[keep]
            self._stored_X, self._stored_y = self._stored_X[keep], self._stored_y[keep]
        self._deleted.update(int(i) for i in ids)
        return self

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Majority vote of the version space (of the fewest-mistake hypotheses if it is empty).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        votes = self.predict_proba(X)
        return self.classes_[votes.argmax(axis=1)]

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Fraction of version-space hypotheses voting for each class, shape (n_samples, n_classes)."""
        check_is_fitted(self, "classes_")
        X = check_X(X, n_features=self.n_features_in_)
        P = self._predict_all(X)[:, self._version_space()]
        votes = (P[:, :, None] == self.classes_[None, None, :]).mean(axis=1)
        return votes

    def memory_bytes(self) -> int:
        """Bytes the system stores: queried points, labels, mistake counts and ids."""
        check_is_fitted(self, "classes_")
        arrays = (self._stored_X, self._stored_y, self.mistakes_, self.stored_ids_)
        return int(sum(a.nbytes for a in arrays))

    def _version_space(self) -> np.ndarray:
        alive = self.mistakes_ <= self.max_mistakes
        return alive if alive.any() else self.mistakes_ == self.mistakes_.min()

    def _predict_all(self, X: np.ndarray) -> np.ndarray:
        P = np.asarray(self.hypotheses(X))
        if P.ndim != 2 or P.shape[0] != len(X):
            raise ValueError(
                f"hypotheses: must return shape (n_samples, n_hypotheses), got {P.shape}"
            )
        return P

    def _learn(self, P: np.ndarray, y: np.ndarray) -> np.ndarray:
        picked: list[int] = []
        alive = self.mistakes_ <= self.max_mistakes
        for start in range(0, len(P), _CHUNK):
            Pc, yc = P[start : start + _CHUNK], y[start : start + _CHUNK]
            pos = 0
            while alive.any():
                Pv = Pc[pos:, alive]
                split = np.flatnonzero((Pv != Pv[:, :1]).any(axis=1))
                if split.size == 0:
                    break
                j = pos + split[0]
                self.mistakes_ += Pc[j] != yc[j]
                alive = self.mistakes_ <= self.max_mistakes
                picked.append(start + j)
                pos = j + 1
        return np.asarray(picked, dtype=np.int64)
