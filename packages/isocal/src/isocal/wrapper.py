"""``CalibratedClassifier``: any classifier, cross-fitted and calibrated by any isocal method.

The semantics are those of :class:`sklearn.calibration.CalibratedClassifierCV`: with an integer
``cv`` the data are split into stratified folds; for each fold a clone of the estimator is fitted
on the other folds and the calibrator on the held-out fold's predicted probabilities. With
``ensemble=True`` prediction averages the ``cv`` (estimator, calibrator) pairs; with
``ensemble=False`` one calibrator is fitted on the out-of-fold probabilities of every sample and
the estimator is refitted on all data. ``cv="prefit"`` calibrates an already fitted estimator on
the data passed to ``fit``.
"""

from __future__ import annotations

import numbers
import warnings
from inspect import signature
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import LeaveOneOut, StratifiedKFold, check_cv
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import _safe_indexing, indexable
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_method_params,
    _num_samples,
    check_is_fitted,
    column_or_1d,
)

from isocal._base import BaseCalibrator
from isocal.binning import HistogramBinningCalibrator
from isocal.calibrators import (
    FIRCalibrator,
    NAFIRCalibrator,
    OvRIsotonicCalibrator,
    SCIRCalibrator,
)
from isocal.scaling import DirichletCalibrator, MatrixScaling, TemperatureScaling, VectorScaling

__all__ = ["METHODS", "CalibratedClassifier"]

METHODS = {
    "nafir": NAFIRCalibrator,
    "scir": SCIRCalibrator,
    "fir": FIRCalibrator,
    "isotonic": OvRIsotonicCalibrator,
    "temperature": TemperatureScaling,
    "vector": VectorScaling,
    "matrix": MatrixScaling,
    "dirichlet": DirichletCalibrator,
    "histogram": HistogramBinningCalibrator,
}


class CalibratedPair(NamedTuple):
    """One fitted ``(estimator, calibrator)`` pair (attributes as scikit-learn's)."""

    estimator: object
    calibrator: object


def _full_proba(est, X, n_classes: int) -> np.ndarray:
    """The estimator's probabilities with one column per class of the whole problem.

    A fold can miss a rare class; its column is zero there (as scikit-learn does) and the rows
    still sum to one. Estimators without ``predict_proba`` are mapped through a softmax of
    ``decision_function``.
    """
    if hasattr(est, "predict_proba"):
        P = np.asarray(est.predict_proba(X), dtype=np.float64)
    else:
        d = np.asarray(est.decision_function(X), dtype=np.float64)
        d = np.column_stack([-d / 2, d / 2]) if d.ndim == 1 else d
        d = d - d.max(axis=1, keepdims=True)
        P = np.exp(d)
        P /= P.sum(axis=1, keepdims=True)
    cols = np.asarray(est.classes_, dtype=np.int64)
    out = np.zeros((P.shape[0], n_classes))
    out[:, cols] = P
    out /= np.sort(out, axis=1).sum(axis=1, keepdims=True)
    return out


class CalibratedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """A classifier whose probabilities are calibrated by NA-FIR, SCIR or any isocal method.

    Parameters
    ----------
    estimator : classifier, default=None
        Any scikit-learn classifier (pipelines included) with ``predict_proba`` or
        ``decision_function``; ``None`` means ``LogisticRegression()``. With ``cv="prefit"``
        it must already be fitted.
    method : str or calibrator, default="nafir"
        One of ``"nafir"``, ``"scir"``, ``"fir"``, ``"isotonic"`` (one-vs-rest),
        ``"temperature"``, ``"vector"``, ``"matrix"``, ``"dirichlet"``, ``"histogram"``, or an
        unfitted isocal calibrator instance (cloned per fold).
    cv : int, cross-validation splitter or "prefit", default=5
        Folds for cross-fitting (stratified when an int).
    ensemble : bool, default=True
        Average the per-fold (estimator, calibrator) pairs at prediction time; otherwise one
        calibrator on out-of-fold probabilities and one estimator refitted on all data.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels (any labels ``LabelEncoder`` accepts).
    calibrated_classifiers_ : list of CalibratedPair
        The fitted ``(estimator, calibrator)`` pairs, also as ``.estimator`` and
        ``.calibrator`` (one when ``ensemble=False`` or ``cv="prefit"``).
    n_features_in_ : int
    """

    def __init__(self, estimator=None, method="nafir", cv=5, ensemble: bool = True) -> None:
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.ensemble = ensemble

    def _calibrator(self) -> BaseCalibrator:
        if isinstance(self.method, BaseCalibrator):
            return clone(self.method)
        if isinstance(self.method, str) and self.method in METHODS:
            return METHODS[self.method]()
        raise ValueError(
            f"method: expected one of {sorted(METHODS)} or an isocal calibrator, "
            f"got {self.method!r}"
        )

    def fit(self, X, y, sample_weight=None, **fit_params) -> CalibratedClassifier:
        """Cross-fit the estimator and fit the calibrator(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, ...)
            Training data, handed to the estimator untouched (whatever it accepts: raw
            strings for a text pipeline, a DataFrame with categorical columns, NaN for an
            estimator that handles them), indexed per fold as scikit-learn does.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), optional
            Passed to the calibrator, and to the estimator's ``fit`` when its signature takes
            one (otherwise a warning, as :class:`~sklearn.calibration.CalibratedClassifierCV`).
        **fit_params
            Passed to the estimator's ``fit``; per-sample ones are sliced per fold.

        Returns
        -------
        self
        """
        if not isinstance(self.ensemble, bool | np.bool_):
            raise TypeError(f"ensemble: expected a bool, got {type(self.ensemble).__name__}")
        self._calibrator()  # validates method before any work
        y = _named("y", column_or_1d, y, warn=True)
        X, y = _named("X", indexable, X, y)
        n = _named("X", _num_samples, X)
        if n == 0:
            raise ValueError("X: 0 samples")
        if len(y) != n:
            raise ValueError(f"y: {len(y)} labels for {n} rows of X")
        _named("y", check_classification_targets, y)
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            raise ValueError("y: contains NaN or infinite labels")
        enc = LabelEncoder().fit(y)
        classes = enc.classes_
        if classes.size < 2:
            raise ValueError(f"y: needs at least 2 classes, got {classes.size} class(es)")
        yi = enc.transform(y)
        K = classes.size
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (len(yi),):
                raise ValueError(
                    f"sample_weight: expected shape ({len(yi)},), got {sample_weight.shape}"
                )
            if not np.isfinite(sample_weight).all() or (sample_weight < 0).any():
                raise ValueError("sample_weight: must be finite and non-negative")
        base = LogisticRegression() if self.estimator is None else self.estimator
        fit_params = dict(fit_params)
        if sample_weight is not None:
            if "sample_weight" in signature(base.fit).parameters:
                fit_params["sample_weight"] = sample_weight
            else:
                warnings.warn(
                    f"{type(base).__name__}.fit does not take sample_weight: the weights are "
                    "used by the calibrator only (as CalibratedClassifierCV does)",
                    UserWarning,
                    stacklevel=2,
                )
        pairs = []
        if isinstance(self.cv, str):
            if self.cv != "prefit":
                raise ValueError(f"cv: expected an int, a splitter or 'prefit', got {self.cv!r}")
            check_is_fitted(base)
            est = base
            if not np.array_equal(np.asarray(est.classes_), classes):
                raise ValueError(
                    "estimator: a prefit estimator must have been fitted on the same classes "
                    f"({np.asarray(est.classes_).tolist()} vs {classes.tolist()})"
                )
            est_enc = _Relabel(est, np.arange(K))
            P = _named("X", _full_proba, est_enc, X, K)
            cal = self._calibrator().fit(P, yi, sample_weight)
            pairs.append(CalibratedPair(est_enc, cal))
        else:
            if isinstance(self.cv, bool):
                raise TypeError("cv: expected an int, a splitter or 'prefit', got a bool")
            if isinstance(self.cv, numbers.Integral):
                if self.cv < 2:
                    raise ValueError(f"cv: needs at least 2 folds, got {self.cv}")
                n_folds = int(self.cv)
                splitter = StratifiedKFold(n_splits=n_folds)
            else:
                n_folds = getattr(self.cv, "n_splits", None)
                n_folds = n_folds if isinstance(n_folds, numbers.Integral) else None
                if isinstance(self.cv, LeaveOneOut):
                    raise ValueError(
                        "cv: LeaveOneOut cross-validation does not allow all classes to be "
                        "present in test splits; use a splitter whose test folds hold every class"
                    )
                splitter = check_cv(self.cv, yi, classifier=True)
            counts = np.bincount(yi, minlength=K)
            if n_folds is not None and counts.min() < n_folds:
                # as CalibratedClassifierCV: some fold would miss a class entirely
                raise ValueError(
                    f"y: Requesting {n_folds}-fold cross-validation but the smallest class has "
                    f"{counts.min()} samples, fewer than {n_folds}"
                )
            oof = np.zeros((len(yi), K))
            for train, test in splitter.split(np.zeros((n, 1)), yi):
                params = _check_method_params(X, params=fit_params, indices=train)
                est = _named("X", clone(base).fit, _safe_indexing(X, train), yi[train], **params)
                P = _named("X", _full_proba, est, _safe_indexing(X, test), K)
                if self.ensemble:
                    w = None if sample_weight is None else sample_weight[test]
                    pairs.append(CalibratedPair(est, self._calibrator().fit(P, yi[test], w)))
                else:
                    oof[test] = P
            if not self.ensemble:
                est = _named("X", clone(base).fit, X, yi, **fit_params)
                pairs.append(CalibratedPair(est, self._calibrator().fit(oof, yi, sample_weight)))
        self.classes_ = classes
        self.calibrated_classifiers_ = pairs
        first = pairs[0][0].est if isinstance(pairs[0][0], _Relabel) else pairs[0][0]
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(first, attr):
                setattr(self, attr, getattr(first, attr))
            elif attr in self.__dict__:
                delattr(self, attr)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Calibrated class probabilities, shape (n_samples, n_classes), rows summing to one.

        ``X`` goes to the estimator untouched, as in :meth:`fit`.
        """
        check_is_fitted(self, "calibrated_classifiers_")
        n = _named("X", _num_samples, X)
        K = self.classes_.size
        Q = np.zeros((n, K))
        for est, cal in self.calibrated_classifiers_:
            Q += cal.predict_proba(_named("X", _full_proba, est, X, K))
        return Q / len(self.calibrated_classifiers_)

    def predict(self, X) -> np.ndarray:
        """The class with the highest calibrated probability, shape (n_samples,)."""
        check_is_fitted(self, "calibrated_classifiers_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _named(name: str, fn, *args, **kwargs):
    """Run a scikit-learn validator; its errors name the argument (``X: ...``)."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        if str(exc).startswith(f"{name}:"):
            raise
        raise type(exc)(f"{name}: {exc}") from exc


class _Relabel:
    """A prefit estimator seen with classes 0..K-1 (its own labels may be strings)."""

    def __init__(self, est, classes: np.ndarray) -> None:
        self.est = est
        self.classes_ = classes

    def __getattr__(self, name):
        if name in ("predict_proba", "decision_function"):
            return getattr(self.est, name)
        raise AttributeError(name)
