import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from isocal import (
    DirichletCalibrator,
    FIRCalibrator,
    HistogramBinningCalibrator,
    MatrixScaling,
    OvRIsotonicCalibrator,
    TemperatureScaling,
    VectorScaling,
    log_loss,
    make_miscalibrated,
)


def test_temperature_recovers_known_sharpening():
    P, y, _ = make_miscalibrated(20000, 5, temperature=2.0, random_state=0)
    ts = TemperatureScaling().fit(P, y)
    assert ts.temperature_ == pytest.approx(2.0, rel=0.05)


def test_temperature_logits_equal_log_probs():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(200, 4)) * 3
    P = np.exp(Z - Z.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = rng.integers(0, 4, 200)
    a = TemperatureScaling(inputs="logits").fit(Z, y)
    b = TemperatureScaling().fit(P, y)
    assert a.temperature_ == pytest.approx(b.temperature_, rel=1e-5)
    np.testing.assert_allclose(a.predict_proba(Z), b.predict_proba(P), atol=1e-6)


@pytest.mark.parametrize("cls", [VectorScaling, MatrixScaling, DirichletCalibrator])
def test_linear_scalings_improve_training_loss(cls):
    P, y, _ = make_miscalibrated(2000, 4, temperature=2.5, random_state=1)
    cal = cls().fit(P, y)
    assert log_loss(y, cal.predict_proba(P)) < log_loss(y, P)


def test_dirichlet_heavy_regularization_stays_near_identity():
    P, y, _ = make_miscalibrated(50, 3, random_state=2)
    cal = DirichletCalibrator(reg_lambda=1e6, reg_mu=1e6).fit(P, y)
    off = cal.coef_ - np.diag(np.diag(cal.coef_))
    assert np.abs(off).max() < 1e-3
    assert np.abs(cal.intercept_).max() < 1e-3


def test_ovr_isotonic_matches_sklearn(small_problem):
    P, y = small_problem
    cal = OvRIsotonicCalibrator().fit(P, y)
    Q = np.column_stack(
        [
            IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
            .fit(P[:, k], y == k)
            .predict(P[:, k])
            for k in range(P.shape[1])
        ]
    )
    ref = Q / Q.sum(1, keepdims=True)
    np.testing.assert_allclose(cal.predict_proba(P), ref, atol=1e-12)


def test_fir_is_flattened_isotonic(small_problem):
    P, y = small_problem
    cal = FIRCalibrator().fit(P, y)
    target = np.eye(P.shape[1])[y]
    iso = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(P.ravel(), target.ravel())
    Q = iso.predict(P.ravel()).reshape(P.shape)
    np.testing.assert_allclose(cal.predict_proba(P), Q / Q.sum(1, keepdims=True), atol=1e-12)


def test_histogram_binning_hand_computed():
    P = np.array([[0.1, 0.9], [0.2, 0.8], [0.7, 0.3], [0.8, 0.2]])
    y = np.array([1, 0, 0, 1])
    cal = HistogramBinningCalibrator(n_bins=2).fit(P, y)
    # class 0 bins: [0, .5) -> rows 0,1 -> freq 1/2; [.5, 1] -> rows 2,3 -> 1/2
    np.testing.assert_allclose(cal.bin_values_, [[0.5, 0.5], [0.5, 0.5]])
    np.testing.assert_allclose(cal.predict_proba(P), 0.5)
    q = HistogramBinningCalibrator(n_bins=4, strategy="quantile").fit(P, y).predict_proba(P)
    np.testing.assert_allclose(q.sum(1), 1)
