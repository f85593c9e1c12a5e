"""scikit-learn's own CalibratedClassifierCV tests, run against isocal's CalibratedClassifier.

``sklearn/tests/test_calibration.py`` ships in the scikit-learn wheel. Its tests are imported
here and run with ``CalibratedClassifierCV`` replaced, in that module, by an adapter with
scikit-learn's signature around :class:`isocal.CalibratedClassifier`: ``method="sigmoid"`` maps
to isocal's vector scaling (Platt's sigmoid per class has no isocal counterpart; for two
classes vector scaling is a Platt sigmoid of the margin), ``"isotonic"`` and ``"temperature"``
to isocal's, ``cv=None`` to 5 folds, ``ensemble="auto"`` to True except for a
``FrozenEstimator`` (as scikit-learn), ``n_jobs`` is accepted and ignored (isocal fits folds
sequentially). ``NOT_APPLICABLE`` lists the tests that are not run, each with its reason; every
other test of the module runs as written.
"""

from __future__ import annotations

import pytest

T = pytest.importorskip("sklearn.tests.test_calibration")

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402

from isocal import CalibratedClassifier  # noqa: E402

_METHOD = {"sigmoid": "vector", "isotonic": "isotonic", "temperature": "temperature"}


class SklearnSignature(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """``CalibratedClassifierCV``'s constructor around isocal's ``CalibratedClassifier``."""

    def __init__(self, estimator=None, *, method="sigmoid", cv=None, n_jobs=None,
                 ensemble="auto"):  # fmt: skip
        self.estimator, self.method, self.cv = estimator, method, cv
        self.n_jobs, self.ensemble = n_jobs, ensemble

    def fit(self, X, y, sample_weight=None, **fit_params):
        ensemble = self.ensemble
        if ensemble == "auto":
            ensemble = not isinstance(self.estimator, FrozenEstimator)
        self.inner_ = CalibratedClassifier(
            self.estimator, method=_METHOD.get(self.method, self.method),
            cv=5 if self.cv is None else self.cv, ensemble=ensemble,
        )  # fmt: skip
        self.inner_.fit(X, y, sample_weight=sample_weight, **fit_params)
        self.classes_ = self.inner_.classes_
        self.calibrated_classifiers_ = self.inner_.calibrated_classifiers_
        if hasattr(self.inner_, "n_features_in_"):
            self.n_features_in_ = self.inner_.n_features_in_
        return self

    def predict_proba(self, X):
        return self.inner_.predict_proba(X)

    def predict(self, X):
        return self.inner_.predict(X)


# test name -> why it does not apply to isocal's CalibratedClassifier
NOT_APPLICABLE = {
    "test_calibration_default_estimator": "asserts scikit-learn's default LinearSVC; isocal's "
    "documented default is LogisticRegression",
    "test_calibration_zero_probability": "tests scikit-learn's private _CalibratedClassifier",
    "test_calibration_ensemble_false": "compares with scikit-learn's private _SigmoidCalibration "
    "/ _TemperatureScaling outputs to the digit (isocal's calibrators are its own)",
    "test_sigmoid_calibration": "scikit-learn's private _sigmoid_calibration (no estimator)",
    "test_temperature_scaling": "scikit-learn's temperature optimiser's exact values and its "
    "calibrators_ internals",
    "test_temperature_scaling_input_validation": "scikit-learn's private _TemperatureScaling",
    "test_calibration_curve": "calibration_curve, a function, not the estimator",
    "test_calibration_less_classes": "calls predict_proba on scikit-learn's per-fold "
    "_CalibratedClassifier objects (isocal keeps (estimator, calibrator) pairs)",
    "test_calibration_display_compute": "CalibrationDisplay (plotting), not the estimator",
    "test_plot_calibration_curve_pipeline": "CalibrationDisplay (plotting)",
    "test_calibration_display_default_labels": "CalibrationDisplay (plotting)",
    "test_calibration_display_label_class_plot": "CalibrationDisplay (plotting)",
    "test_calibration_display_name_multiple_calls": "CalibrationDisplay (plotting)",
    "test_calibration_display_ref_line": "CalibrationDisplay (plotting)",
    "test_calibration_curve_pos_label_error_str": "calibration_curve, not the estimator",
    "test_calibration_curve_pos_label": "calibration_curve, not the estimator",
    "test_calibration_display_kwargs": "CalibrationDisplay (plotting)",
    "test_calibration_display_pos_label": "CalibrationDisplay (plotting)",
    "test_sigmoid_calibration_max_abs_prediction_threshold": "scikit-learn's private "
    "_sigmoid_calibration",
    "test_temperature_scaling_array_api_compliance": "array API namespaces (isocal is NumPy)",
    "test_temperature_scaling_array_api_with_str_y_estimator_not_prefit": "array API "
    "namespaces (isocal is NumPy)",
}


# parametrized cases that do not apply, with the reason
NOT_APPLICABLE_CASES = {
    "test_calibration_prob_sum[True-sigmoid]": "a calibration fold holds one class; isocal's "
    "stand-in for sigmoid (vector scaling) fits a bias per class, unidentifiable without that "
    "class, and raises a ValueError saying so (Platt's one-vs-rest sigmoids do not need it); "
    "the ensemble=False case, which pools the folds, runs",
}
# scikit-learn < 1.8 parametrizes this test by ensemble only (method is sigmoid there)
NOT_APPLICABLE_CASES["test_calibration_prob_sum[True]"] = NOT_APPLICABLE_CASES[
    "test_calibration_prob_sum[True-sigmoid]"
]


@pytest.fixture(autouse=True)
def _isocal_in_place_of_sklearn(monkeypatch, request):
    if request.node.name in NOT_APPLICABLE_CASES:
        pytest.skip(NOT_APPLICABLE_CASES[request.node.name])
    monkeypatch.setattr(T, "CalibratedClassifierCV", SklearnSignature)


@pytest.fixture
def global_random_seed():
    return 42  # scikit-learn's conftest fixture, at its default


# the module's fixtures, then every test it has that applies
data = T.data
dict_data = T.dict_data
dict_data_pipeline = T.dict_data_pipeline
if hasattr(T, "iris_data"):
    iris_data, iris_data_binary = T.iris_data, T.iris_data_binary

_TESTS = sorted(n for n in dir(T) if n.startswith("test_"))
for _name in _TESTS:
    if _name not in NOT_APPLICABLE:
        globals()[_name] = getattr(T, _name)


def test_every_sklearn_test_is_run_or_listed_with_a_reason():
    listed = set(NOT_APPLICABLE)
    # stale entries fail; older scikit-learn (down to isocal's floor) lacks the temperature
    # scaling tests, which came with method="temperature"
    if tuple(int(x) for x in sklearn.__version__.split(".")[:2]) < (1, 8):
        listed -= {n for n in listed if n.startswith("test_temperature_scaling")}
    assert listed <= set(_TESTS), sorted(listed - set(_TESTS))
    run = [n for n in _TESTS if n not in NOT_APPLICABLE]
    assert len(run) >= 15, run
    assert np.all([isinstance(v, str) and v for v in NOT_APPLICABLE.values()])
