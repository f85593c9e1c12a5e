"""Audit: does a model after ``unlearn`` hold exactly the state of a learner that never saw ``U``?"""

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, clone

from sys_unlearn._validation import check_ids, check_sample_ids, check_X_y

__all__ = ["AuditReport", "audit_unlearning", "states_equal"]


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
        The stored state equals, field by field, that of a fresh learner run on ``S'`` alone
        (ids, points and labels identical; ``A^{-1}``, ``B`` within ``atol``): the
        system-aware unlearning guarantee.
    max_state_diff : float
        Largest difference over the floating-point fields of the two states.
    retrain_agreement : float
        Fraction of audit points on which the model agrees with the same learner run on the
        whole remaining stream ``S \\ U`` (the classical gold standard; need not be 1).
    """

    n_stored: int
    deleted_still_stored: int
    exact: bool
    max_state_diff: float
    retrain_agreement: float


def states_equal(a: dict, b: dict, atol: float = 1e-8) -> tuple[bool, float]:
    """Compare two ``stored_state()`` dicts field by field.

    Integer and label fields must match exactly; float arrays within ``atol``.

    Returns
    -------
    equal : bool
    max_diff : float
        Largest absolute difference over float fields (inf on a shape mismatch).
    """
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise TypeError("a, b: expected two stored_state() dicts")
    if (
        isinstance(atol, bool)
        or not isinstance(atol, numbers.Real)
        or not (np.isfinite(atol) and atol >= 0)
    ):
        raise ValueError(f"atol must be a finite number >= 0, got {atol!r}")
    if a.keys() != b.keys():
        return False, float("inf")
    worst, equal = 0.0, True
    for key in a:
        va, vb = np.asarray(a[key]), np.asarray(b[key])
        if va.shape != vb.shape:
            return False, float("inf")
        if va.dtype.kind == "f" and key not in ("X", "Y", "y"):
            if not (np.isfinite(va).all() and np.isfinite(vb).all()):
                raise ValueError(f"a, b: field {key!r} holds NaN or inf (a diverged model?)")
            diff = float(np.max(np.abs(va - vb))) if va.size else 0.0
            worst = max(worst, diff)
            equal &= diff <= atol
        else:
            equal &= bool(np.array_equal(va, vb))
    return bool(equal), worst


def audit_unlearning(
    model: BaseEstimator,
    X: ArrayLike,
    y: ArrayLike,
    deleted_ids: ArrayLike,
    *,
    sample_ids: ArrayLike | None = None,
    X_eval: ArrayLike | None = None,
    atol: float = 1e-8,
) -> AuditReport:
    """Compare an unlearned selective-sampling model with learners that never saw the deletions.

    Parameters
    ----------
    model : SelectiveSamplingClassifier or OracleSelectiveSamplingClassifier
        Fitted on the stream ``(X, y)`` and then unlearned.
    X : array-like of shape (n_samples, n_features)
        The original stream, in order.
    y : array-like of shape (n_samples,)
    deleted_ids : array-like of int
        All ids deleted so far.
    sample_ids : array-like of int, optional
        The ids the stream was fitted with (default: row numbers).
    X_eval : array-like of shape (m, n_features), optional
        Points on which predictions are compared (default: ``X``).
    atol : float, default=1e-8

    Returns
    -------
    AuditReport
    """
    X, y = check_X_y(X, y)
    ids = check_sample_ids(sample_ids, len(X))
    if not hasattr(model, "stored_state"):
        raise TypeError("model: must be a fitted selective-sampling classifier (stored_state)")
    deleted = check_ids(deleted_ids)
    X_eval = X if X_eval is None else check_X_y(X_eval, np.zeros(len(X_eval)))[0]
    core = model.stored_ids_
    missing = np.setdiff1d(core, ids)
    if missing.size:
        raise ValueError(
            f"X, sample_ids: the model stores ids {missing[:5].tolist()} that this stream does not "
            "hold: pass the stream the model was fitted on"
        )
    rows = np.searchsorted(ids, core, sorter=np.argsort(ids))
    rows = np.argsort(ids)[rows]
    state = model.stored_state()
    stored_X = np.asarray(state.get("X", np.empty((0, 0))))
    if core.size and stored_X.shape[0] == core.size:
        seen = stored_X[:, : X.shape[1]]  # an intercept column, if any, comes last
        if seen.shape != X[rows].shape or not np.allclose(seen, X[rows], rtol=1e-12, atol=1e-12):
            raise ValueError(
                "X: the rows of the stored ids differ from the points the model stored: pass "
                "the stream the model was fitted on, in its order"
            )
    if core.size:
        fresh = _refit(model, X[rows], y[rows], core)
        exact, diff = states_equal(state, fresh.stored_state(), atol)
    else:  # everything stored was deleted: the state must be the untrained one
        diff = float(np.abs(state.get("B", np.zeros(1))).max())
        exact = diff <= atol
    remaining = ~np.isin(ids, deleted)
    agreement = float("nan")
    if np.unique(y[remaining]).size >= 2:
        retrained = _refit(model, X[remaining], y[remaining], ids[remaining])
        agreement = float(np.mean(retrained.predict(X_eval) == model.predict(X_eval)))
    return AuditReport(
        n_stored=int(core.size),
        deleted_still_stored=int(np.isin(core, deleted).sum()),
        exact=bool(exact),
        max_state_diff=diff,
        retrain_agreement=agreement,
    )


def _refit(model: BaseEstimator, X: np.ndarray, y: np.ndarray, ids: np.ndarray) -> BaseEstimator:
    """The same learner (same horizon, same classes) run afresh on ``(X, y)`` with ``ids``."""
    fresh = clone(model).set_params(horizon=model.horizon_)
    if hasattr(fresh, "partial_fit"):  # keeps the label set even if one class remains
        return fresh.partial_fit(X, y, sample_ids=ids, classes=model.classes_)
    return fresh.fit(X, y, sample_ids=ids)
