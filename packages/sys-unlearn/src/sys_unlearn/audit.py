"""Audit: does a model after ``unlearn`` hold exactly the state of a learner that never saw ``U``?"""

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, clone

from sys_unlearn._validation import check_X_y

__all__ = ["AuditReport", "audit_unlearning"]


@dataclass(frozen=True)
class AuditReport:
    """Result of :func:`audit_unlearning`.

    Attributes
    ----------
    n_stored : int
        Size of the stored core set ``S'`` after unlearning.
    deleted_still_stored : int
        Deleted ids found among the stored ids (must be 0).
    exact : bool
        The model equals a fresh learner trained on ``S'`` alone (same stored points, and the
        same scores on the audit points up to ``atol``): the system-aware unlearning guarantee.
    max_score_diff : float
        Largest score difference between the model and that fresh learner.
    retrain_agreement : float
        Fraction of audit points on which the model agrees with a learner retrained on the
        whole remaining stream ``S \\ U`` (the classical gold standard; need not be 1);
        NaN when fewer than two classes remain.
    """

    n_stored: int
    deleted_still_stored: int
    exact: bool
    max_score_diff: float
    retrain_agreement: float


def audit_unlearning(
    model: BaseEstimator,
    X: ArrayLike,
    y: ArrayLike,
    deleted_ids: ArrayLike,
    *,
    X_eval: ArrayLike | None = None,
    atol: float = 1e-8,
) -> AuditReport:
    """Compare an unlearned selective-sampling model with learners that never saw the deletions.

    Parameters
    ----------
    model : SelectiveSamplingClassifier or DisagreementSamplingClassifier
        Fitted on the stream ``(X, y)`` (ids are row numbers) and then unlearned.
    X : array-like of shape (n_samples, n_features)
        The original stream, in order.
    y : array-like of shape (n_samples,)
    deleted_ids : array-like of int
        All ids deleted so far.
    X_eval : array-like of shape (m, n_features), optional
        Points on which scores and predictions are compared (default: ``X``).
    atol : float, default=1e-8

    Returns
    -------
    AuditReport
    """
    X, y = check_X_y(X, y)
    if not hasattr(model, "stored_ids_"):
        raise TypeError("model: must be a fitted selective-sampling classifier with stored_ids_")
    if model.n_seen_ != len(X):
        raise ValueError(f"X: has {len(X)} rows but the model read a stream of {model.n_seen_}")
    deleted = np.unique(np.asarray(deleted_ids, dtype=np.int64))
    if deleted.size and (deleted.min() < 0 or deleted.max() >= len(X)):
        raise ValueError("deleted_ids: ids out of range of the stream")
    X_eval = X if X_eval is None else check_X_y(X_eval, np.zeros(len(X_eval)))[0]
    core = np.asarray(model.stored_ids_)

    if core.size:
        fresh = _refit(model, X[core], y[core])
        diff = float(np.max(np.abs(_scores(fresh, X_eval) - _scores(model, X_eval))))
        exact = len(fresh.stored_ids_) == core.size and diff <= atol
    else:  # everything stored was deleted: the state must be the untrained one
        diff = float(np.max(np.abs(_scores(model, X_eval))) if hasattr(model, "coef_") else 0.0)
        exact = diff <= atol and not np.any(getattr(model, "mistakes_", 0))
    remaining = np.setdiff1d(np.arange(len(X)), deleted)
    agreement = float("nan")
    if np.unique(y[remaining]).size >= 2:
        retrained = _refit(model, X[remaining], y[remaining])
        agreement = float(np.mean(retrained.predict(X_eval) == model.predict(X_eval)))
    return AuditReport(
        n_stored=int(core.size),
        deleted_still_stored=int(np.isin(core, deleted).sum()),
        exact=bool(exact),
        max_score_diff=diff,
        retrain_agreement=agreement,
    )


def _refit(model: BaseEstimator, X: np.ndarray, y: np.ndarray) -> BaseEstimator:
    fresh = clone(model)
    if hasattr(model, "horizon_"):  # keep the original query threshold and label set
        return fresh.set_params(horizon=model.horizon_).partial_fit(X, y, classes=model.classes_)
    return fresh.fit(X, y)


def _scores(model: BaseEstimator, X: np.ndarray) -> np.ndarray:
    return (
        model.decision_function(X)
        if hasattr(model, "decision_function")
        else model.predict_proba(X)
    )
