import pickle

import numpy as np
import pytest
from sklearn.base import clone

import isocal
from isocal import (
    DirichletCalibrator,
    FIRCalibrator,
    HistogramBinningCalibrator,
    MatrixScaling,
    NAFIRCalibrator,
    OvRIsotonicCalibrator,
    SCIRCalibrator,
    TemperatureScaling,
    VectorScaling,
)

ALL = [
    NAFIRCalibrator,
    SCIRCalibrator,
    FIRCalibrator,
    OvRIsotonicCalibrator,
    TemperatureScaling,
    VectorScaling,
    MatrixScaling,
    DirichletCalibrator,
    HistogramBinningCalibrator,
]


@pytest.fixture(params=ALL, ids=lambda c: c.__name__)
def cls(request):
    return request.param


def test_fit_predict_valid_rows_pickle_clone(cls, small_problem):
    P, y = small_problem
    P_in = P.copy()
    cal = cls().fit(P, y)
    np.testing.assert_array_equal(P, P_in)  # inputs never mutated
    Q = cal.predict_proba(P)
    assert Q.shape == P.shape
    assert np.all((Q >= 0) & (Q <= 1))
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    assert cal.predict(P).shape == (P.shape[0],)
    again = pickle.loads(pickle.dumps(cal))
    np.testing.assert_allclose(again.predict_proba(P), Q)
    params = cal.get_params()
    assert clone(cal).get_params() == params
    cal.set_params(sum_tol=1e-3)
    assert cal.get_params()["sum_tol"] == 1e-3


def test_zeros_and_one_hot_inputs(cls, small_problem):
    P, y = small_problem
    P = P.copy()
    P[:10] = np.eye(P.shape[1])[y[:10]]
    P[10:15] = np.eye(P.shape[1])[(y[10:15] + 1) % P.shape[1]]
    Q = cls().fit(P, y).predict_proba(np.vstack([P, np.eye(P.shape[1])]))
    assert np.all(np.isfinite(Q)) and np.all((Q >= 0) & (Q <= 1))
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)


def test_binary_k2(cls):
    rng = np.random.default_rng(0)
    p = rng.random(80)
    P = np.column_stack([p, 1 - p])
    y = (rng.random(80) > p).astype(int)
    Q = cls().fit(P, y).predict_proba(P)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)


def test_bad_inputs(cls, small_problem):
    P, y = small_problem
    cal = cls()
    with pytest.raises(ValueError, match="probs"):
        cal.fit(P * 1.1, y)  # rows do not sum to 1
    bad = P.copy()
    bad[0, 0] = -0.1
    bad[0, 1] += 0.1
    with pytest.raises(ValueError, match="probs"):
        cal.fit(bad, y)  # negative entry
    for val in (np.nan, np.inf):
        bad = P.copy()
        bad[3, 1] = val
        with pytest.raises(ValueError, match="probs"):
            cal.fit(bad, y)
    with pytest.raises(ValueError, match="y"):
        cal.fit(P, y[:-1])  # mismatched lengths
    if cls._requires_all_classes:
        with pytest.raises(ValueError, match="y"):
            cal.fit(P, np.where(y == 3, 0, y))  # class 3 absent
    with pytest.raises(ValueError, match="y"):
        cal.fit(P, np.where(y == 3, 4, y))  # label out of range
    with pytest.raises(ValueError, match="y"):
        cal.fit(P, y - 0.5)  # not whole numbers
    with pytest.raises(ValueError, match="probs"):
        cal.fit(P[:1], y[:1])  # one sample
    with pytest.raises(ValueError, match="probs"):
        cal.fit(P[:0], y[:0])  # empty
    with pytest.raises(ValueError, match="probs"):
        cal.fit(np.ones((5, 1)), np.zeros(5, int))  # K = 1
    with pytest.raises(ValueError, match="probs"):
        cal.fit(P[:, 0], y)  # 1-D
    with pytest.raises(TypeError, match="probs"):
        cal.fit("abc", y)
    with pytest.raises(TypeError, match="y"):
        cal.fit(P, y.astype(str))
    with pytest.raises(ValueError, match="sum_tol"):
        cls(sum_tol=-1).fit(P, y)
    with pytest.raises(ValueError, match="sample_weight"):
        cal.fit(P, y, sample_weight=np.ones(3))
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        cls().predict_proba(P)
    cal.fit(P, y)
    with pytest.raises(ValueError, match="probs"):
        cal.predict_proba(P[:, :3] / P[:, :3].sum(1, keepdims=True))  # wrong K


def test_sum_tol_is_a_parameter(small_problem):
    P, y = small_problem
    off = P * (1 + 1e-3)
    with pytest.raises(ValueError, match="sum_tol"):
        NAFIRCalibrator().fit(off, y)
    NAFIRCalibrator(sum_tol=1e-2).fit(off, y)


def test_hyperparameter_validation(small_problem):
    P, y = small_problem
    with pytest.raises(ValueError, match="max_iter"):
        NAFIRCalibrator(max_iter=0).fit(P, y)
    with pytest.raises(ValueError, match="tol"):
        NAFIRCalibrator(tol=0.0).fit(P, y)
    with pytest.raises(ValueError, match="n_bins"):
        HistogramBinningCalibrator(n_bins=0).fit(P, y)
    with pytest.raises(ValueError, match="strategy"):
        HistogramBinningCalibrator(strategy="x").fit(P, y)
    with pytest.raises(ValueError, match="inputs"):
        TemperatureScaling(inputs="scores").fit(P, y)
    with pytest.raises(ValueError, match="reg_lambda"):
        DirichletCalibrator(reg_lambda=-1.0).fit(P, y)
    with pytest.raises(ValueError, match="l2"):
        MatrixScaling(l2=np.nan).fit(P, y)


def test_logits_input_accepts_unnormalized_scores():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 3)) * 4
    y = rng.integers(0, 3, 40)
    y[:3] = [0, 1, 2]
    for cls in (TemperatureScaling, VectorScaling, MatrixScaling):
        Q = cls(inputs="logits").fit(Z, y).predict_proba(Z)
        np.testing.assert_allclose(Q.sum(1), 1.0)
    with pytest.raises(ValueError, match="logits"):
        TemperatureScaling(inputs="logits").fit(np.full((4, 3), np.nan), [0, 1, 2, 0])


def test_public_api_exports():
    for name in isocal.__all__:
        assert hasattr(isocal, name)
    assert isocal.__version__ == "0.1.0"


def test_reliability_diagram():
    import matplotlib

    matplotlib.use("Agg")
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), 100)
    y = rng.integers(0, 3, 100)
    ax = isocal.reliability_diagram(y, P, n_bins=10, label="raw")
    assert ax.get_xlabel() == "confidence"
    with pytest.raises(ValueError, match="n_bins"):
        isocal.reliability_diagram(y, P, n_bins=0)


def test_make_miscalibrated_validation():
    P, y, T = isocal.make_miscalibrated(100, 4, random_state=0)
    assert P.shape == T.shape == (100, 4) and y.shape == (100,)
    with pytest.raises(ValueError, match="n_classes"):
        isocal.make_miscalibrated(10, 1)
    with pytest.raises(ValueError, match="temperature"):
        isocal.make_miscalibrated(10, 3, temperature=0.0)


@pytest.mark.parametrize(
    "cls", [SCIRCalibrator, OvRIsotonicCalibrator, FIRCalibrator, HistogramBinningCalibrator]
)
def test_min_prob_floor(cls, small_problem):
    P, y = small_problem
    Q = cls(min_prob=1e-3).fit(P, y).predict_proba(np.eye(P.shape[1]))
    assert Q.min() >= 1e-3 / (1 + P.shape[1] * 1e-3) - 1e-15
    np.testing.assert_allclose(Q.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="min_prob"):
        cls(min_prob=0.5).fit(P, y)
    with pytest.raises(ValueError, match="min_prob"):
        cls(min_prob=-1e-3).fit(P, y)


@pytest.mark.parametrize("cls", [NAFIRCalibrator, SCIRCalibrator, FIRCalibrator])
def test_class_agnostic_permutation_equivariance(cls, small_problem):
    """Shared-map methods do not care about class identities: permuting classes permutes outputs."""
    P, y = small_problem
    perm = np.array([2, 0, 3, 1])
    inv = np.argsort(perm)
    T = np.random.default_rng(3).dirichlet(np.ones(4), 50)
    Q = cls().fit(P, y).predict_proba(T)
    Qp = cls().fit(P[:, perm], inv[y]).predict_proba(T[:, perm])
    np.testing.assert_allclose(Qp, Q[:, perm], atol=1e-7)


@pytest.mark.parametrize("cls", [NAFIRCalibrator, SCIRCalibrator, OvRIsotonicCalibrator])
def test_integer_weights_equal_repeated_rows(cls, small_problem):
    P, y = small_problem
    w = np.random.default_rng(4).integers(1, 4, len(y))
    T = np.random.default_rng(5).dirichlet(np.ones(4), 50)
    a = cls().fit(P, y, sample_weight=w).predict_proba(T)
    b = cls().fit(np.repeat(P, w, axis=0), np.repeat(y, w)).predict_proba(T)
    np.testing.assert_allclose(a, b, atol=1e-6)


AGNOSTIC = [NAFIRCalibrator, SCIRCalibrator, FIRCalibrator, TemperatureScaling]
PASS_THROUGH = [OvRIsotonicCalibrator, HistogramBinningCalibrator]


@pytest.mark.parametrize("cls", AGNOSTIC + PASS_THROUGH, ids=lambda c: c.__name__)
def test_classes_absent_from_labels_fit_and_predict_all_k(cls, small_problem):
    P, y = small_problem
    y = np.where(y == 3, 0, y)  # class 3 never occurs
    Q = cls().fit(P, y).predict_proba(P)
    assert Q.shape == P.shape and np.all(np.isfinite(Q))
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    assert Q[:, 3].max() > 0  # the absent class still gets probability


def test_absent_class_passes_through_ovr(small_problem):
    """OvR's documented rule: an absent class keeps its input column (identity map)."""
    P, y = small_problem
    y = np.where(y == 3, 0, y)
    cal = OvRIsotonicCalibrator().fit(P, y)
    assert cal.isotonic_[3] is None
    raw = np.column_stack(
        [P[:, k] if iso is None else iso.predict(P[:, k]) for k, iso in enumerate(cal.isotonic_)]
    )
    ok = raw.sum(1) > 0
    np.testing.assert_allclose(cal._predict(P)[ok], (raw / raw.sum(1, keepdims=True))[ok])


@pytest.mark.parametrize("cls", [VectorScaling, MatrixScaling, DirichletCalibrator])
def test_per_class_parametric_maps_explain_absent_classes(cls, small_problem):
    P, y = small_problem
    with pytest.raises(ValueError, match="unidentifiable"):
        cls().fit(P, np.where(y == 3, 0, y))


@pytest.mark.parametrize("cls", [NAFIRCalibrator, SCIRCalibrator])
def test_rejected_fit_leaves_a_fitted_model_unchanged(cls, small_problem):
    P, y = small_problem
    cal = cls().fit(P, y)
    before = cal.predict_proba(P)
    cal.set_params(prior_count=-1.0)
    with pytest.raises(ValueError, match="prior_count"):
        cal.fit(P[::-1], y[::-1])
    np.testing.assert_array_equal(cal.predict_proba(P), before)
    cal.set_params(prior_count=1.0, max_bins=1)
    with pytest.raises(ValueError, match="max_bins"):
        cal.fit(P, y)


def test_calibrated_classifier_passes_x_through_like_sklearn():
    # each of these crashed where sklearn's CalibratedClassifierCV works (X was validated as a
    # numeric array, fit params were not sliced per fold, a Pipeline got sample_weight)
    import warnings

    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression as LR
    from sklearn.pipeline import make_pipeline

    from isocal import CalibratedClassifier

    rng = np.random.default_rng(0)
    words = np.array(["good", "bad", "fine", "awful", "great", "poor"])
    y = rng.integers(0, 2, 120)
    text = [" ".join(rng.choice(words[y_i::2], 3)) for y_i in y]
    pipe = make_pipeline(CountVectorizer(), LR())
    ours = CalibratedClassifier(pipe, method="temperature", cv=3).fit(text, y)
    assert ours.predict_proba(text[:5]).shape == (5, 2)
    assert (ours.predict(text) == y).mean() > 0.9
    # a Pipeline with sample_weight: warned, used by the calibrator only (as sklearn)
    w = rng.uniform(0.5, 2.0, 120)
    with pytest.warns(UserWarning, match="sample_weight"):
        CalibratedClassifier(pipe, method="temperature", cv=3).fit(text, y, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CalibratedClassifierCV(pipe, cv=3).fit(text, y, sample_weight=w)  # sklearn: the same
    # per-sample fit params are sliced per fold; others pass through
    X = rng.normal(size=(120, 3))
    seen = []

    class Spy(LR):
        def fit(self, X, y, sample_weight=None, tag=None, per_row=None):
            seen.append((len(X), None if per_row is None else len(per_row), tag))
            return super().fit(X, y, sample_weight=sample_weight)

    CalibratedClassifier(Spy(), method="nafir", cv=3).fit(X, y, per_row=np.arange(120), tag="t")
    assert seen == [(80, 80, "t")] * 3


def test_calibrated_classifier_takes_a_categorical_dataframe_with_nan():
    from sklearn.ensemble import HistGradientBoostingClassifier

    from isocal import CalibratedClassifier

    rng = np.random.default_rng(1)
    # a DataFrame with a categorical column and NaN, for an estimator that handles both
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        {"c": pd.Categorical(rng.choice(["a", "b", "c"], 120)), "x": rng.normal(size=120)}
    )
    df.loc[::7, "x"] = np.nan
    yy = ((df["c"] == "a") | (df["x"].fillna(0) > 1)).astype(int).to_numpy()
    hgb = HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=20)
    ours = CalibratedClassifier(hgb, method="nafir", cv=3).fit(df, yy)
    assert list(ours.feature_names_in_) == ["c", "x"] and ours.predict_proba(df).shape == (120, 2)
