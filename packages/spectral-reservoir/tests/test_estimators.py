import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from spectral_reservoir import (
    BiESNModelSpace,
    SARCClassifier,
    SARCClassifierCV,
    SARCTransformer,
    make_lag_sign,
    make_periodic_motifs,
)


@pytest.fixture(scope="module")
def lag():
    X, y = make_lag_sign(120, L=160, period=40, seed=0)
    return X[:60], y[:60], X[60:], y[60:]


def test_sarc_learns_the_lag_task_and_the_plain_esn_does_not(lag):
    Xtr, ytr, Xte, yte = lag
    sarc = SARCClassifier(periods=[40]).fit(Xtr, ytr)
    assert sarc.score(Xte, yte) > 0.8
    assert sarc.n_features_out_ == 1 * (4 * 10 * 1 + 20)
    auto = SARCClassifier().fit(Xtr, ytr)
    assert auto.score(Xte, yte) > 0.8
    assert BiESNModelSpace().fit(Xtr, ytr).score(Xte, yte) < 0.75


def test_features_independent_of_batch_and_chunking(lag):
    Xtr = lag[0]
    t = SARCTransformer(periods=[3, 40], batch_size=7).fit(Xtr)
    full = t.transform(Xtr)
    assert full.shape == (60, t.n_features_out_)
    assert np.allclose(t.transform(Xtr[5:6]), full[5:6])
    t2 = clone(t).set_params(batch_size=256).fit(Xtr)
    assert np.allclose(t2.transform(Xtr), full)
    t32 = clone(t).set_params(dtype=np.float32).fit(Xtr)
    assert np.allclose(t32.transform(Xtr[:4]), full[:4], rtol=1e-3, atol=1e-3)


def test_padded_equals_unpadded_and_multivariate():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 50)), rng.standard_normal((2, 35))
    t = SARCTransformer(periods=[2, 7, 40]).fit([a, b])
    ragged = t.transform([a, b])
    assert np.allclose(ragged[1], t.transform([b])[0])
    nanpad = np.full((2, 2, 50), np.nan)
    nanpad[0], nanpad[1, :, :35] = a, b
    assert np.allclose(t.transform(nanpad), ragged)
    # period 40 >= 35: a zero readout block for the short series
    assert t.n_features_out_ == 3 * (4 * 10 * 2 + 20)


def test_determinism_proba_and_params(lag):
    Xtr, ytr, Xte, _ = lag
    p1 = SARCClassifier(random_state=3).fit(Xtr, ytr).decision_function(Xte)
    p2 = SARCClassifier(random_state=3).fit(Xtr, ytr).decision_function(Xte)
    assert np.array_equal(p1, p2)
    assert not hasattr(SARCClassifier(), "predict_proba")
    pr = (
        SARCClassifier(classifier=LogisticRegression(max_iter=500)).fit(Xtr, ytr).predict_proba(Xte)
    )
    assert pr.shape == (60, 2) and np.allclose(pr.sum(1), 1)
    assert SARCClassifier(ridge=0.5).get_params()["ridge"] == 0.5


def test_cv_picks_from_the_grid():
    X, y = make_periodic_motifs(40, L=60, seed=0)
    cv = SARCClassifierCV(param_grid={"leaky": [0.0, 0.5]}, cv=2, periods=[24, 36]).fit(X, y)
    assert cv.best_params_["leaky"] in (0.0, 0.5) and cv.predict(X).shape == (40,)
    assert cv.get_params()["periods"] == [24, 36]


def test_shared_cv_equals_grid_search_when_the_unsupervised_statistics_agree():
    X, y = make_periodic_motifs(40, L=60, seed=1)
    grid = {"input_scaling": [0.5, 2.0], "ridge": [0.5, 1.0], "leaky": [0.0, 0.4]}
    kw = dict(param_grid=grid, cv=3, random_state=2, periods=[24, 36], normalize=False)
    fast = SARCClassifierCV(**kw).fit(X, y)
    slow = SARCClassifierCV(**kw, per_fold_transform=True).fit(X, y)
    assert fast.cv_results_["params"] == list(slow.cv_results_["params"])
    for key in ("mean_test_score", "std_test_score", "rank_test_score", "split2_test_score"):
        np.testing.assert_allclose(fast.cv_results_[key], slow.cv_results_[key], atol=1e-12)
    assert fast.best_params_ == slow.best_params_
    np.testing.assert_array_equal(fast.decision_function(X), slow.decision_function(X))
    assert clone(fast).get_params()["per_fold_transform"] is False
    # default statistics (periods from the data, dataset normalisation): a valid choice too
    auto = SARCClassifierCV(param_grid={"ridge": [0.5, 1.0]}, cv=2).fit(X, y)
    assert auto.best_params_["ridge"] in (0.5, 1.0) and auto.predict(X).shape == (40,)
    with pytest.raises(TypeError, match="per_fold_transform"):
        SARCClassifierCV(param_grid=grid, per_fold_transform="yes").fit(X, y)
    with pytest.raises(ValueError, match="y must be"):
        SARCClassifierCV(param_grid=grid).fit(X, y[:-1])


def test_bad_inputs_and_no_mutation(lag):
    Xtr, ytr, _, _ = lag
    keep = Xtr.copy()
    SARCClassifier(periods=[4]).fit(Xtr, ytr)
    assert np.array_equal(Xtr, keep)
    cases = [
        (dict(n_reservoir=0), "n_reservoir"),
        (dict(spectral_radius=(0.8, 0)), "spectral_radius"),
        (dict(leaky=1.0), "leaky"),
        (dict(ridge=0), "ridge"),
        (dict(input_scaling=-1), "input_scaling"),
        (dict(period_mode="extended-1"), "period_mode"),
        (dict(periods=[0, 3]), "periods"),
        (dict(period_source="median"), "period_source"),
    ]
    for kw, msg in cases:
        with pytest.raises(ValueError, match=msg):
            SARCClassifier(**kw).fit(Xtr, ytr)
    bad = Xtr.copy()
    bad[0, 0, 10] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SARCClassifier().fit(bad, ytr)
    with pytest.raises(ValueError, match="y must"):
        SARCClassifier().fit(Xtr, ytr[:-1])
    with pytest.raises(ValueError, match="two classes"):
        SARCClassifier().fit(Xtr, np.zeros(60))
    with pytest.raises(ValueError, match="length"):
        SARCClassifier().fit(Xtr[:, :, :2], ytr)
    with pytest.raises(TypeError, match="complex"):
        SARCTransformer().fit(Xtr.astype(complex))
    with pytest.raises(ValueError, match="empty"):
        SARCTransformer().fit(np.zeros((0, 1, 10)))
    with pytest.raises(ValueError, match="channels"):
        SARCTransformer(periods=[2]).fit(Xtr).transform(np.repeat(Xtr, 2, axis=1))
    with pytest.raises(ValueError, match="shape"):
        SARCTransformer().fit(np.zeros((2, 2, 2, 5)))


def test_dataset_normalisation_removes_a_shared_offset_and_keeps_levels() -> None:
    from spectral_reservoir import SARCClassifier
    from spectral_reservoir.data import make_lag_sign

    X, y = make_lag_sign(40, L=60, period=6, seed=0)
    Xt, _ = make_lag_sign(12, L=60, period=6, seed=1)
    kw = {"n_reservoir": 4, "period_mode": "base"}
    base = SARCClassifier(**kw).fit(X, y).predict(Xt)
    shifted = SARCClassifier(**kw).fit(X * 3 + 1e6, y).predict(Xt * 3 + 1e6)
    np.testing.assert_array_equal(base, shifted)
    # a level that differs between series survives "dataset" but not "series"
    lv = np.concatenate([np.zeros((20, 30)), np.ones((20, 30))]) + 0.01 * np.sin(np.arange(30))
    yl = np.r_[np.zeros(20), np.ones(20)]
    assert SARCClassifier(**kw).fit(lv, yl).score(lv, yl) == 1.0
    with pytest.raises(ValueError, match="normalize"):
        SARCClassifier(normalize="channel").fit(X, y)


def test_offset_normalisation_is_invariant_to_per_series_offsets():
    # training-set standardisation fell to chance on a test set shifted by 1e6, silently
    from spectral_reservoir import SARCClassifier, load_bundled

    Xtr, ytr = load_bundled("GunPoint", "train")
    Xte, _yte = load_bundled("GunPoint", "test")
    rng = np.random.default_rng(0)
    shift = Xte + rng.uniform(-1e3, 1e3, (len(Xte), Xte.shape[1], 1))
    off = SARCClassifier(normalize="offset", n_reservoir=6).fit(Xtr, ytr)
    np.testing.assert_array_equal(off.predict(shift), off.predict(Xte))
    moved = SARCClassifier(normalize="offset", n_reservoir=6).fit(Xtr + 1e6, ytr)
    np.testing.assert_array_equal(moved.predict(Xte), off.predict(Xte))
    default = SARCClassifier(n_reservoir=6).fit(Xtr, ytr)
    with pytest.warns(UserWarning, match="normalize='offset'"):
        default.predict(Xte + 1e6)
    with pytest.raises(ValueError, match="normalize"):
        SARCClassifier(normalize="per-series").fit(Xtr, ytr)
