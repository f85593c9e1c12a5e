import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from causal_ts import (
    CAROTS,
    GivenGraphDiscoverer,
    IsolationForestWindows,
    PCAReconstruction,
    PlainOneClassContrastive,
    VARResidual,
    evaluate,
    make_var,
    window_labels,
)

TINY = dict(window=6, encoder="mlp", hidden_dim=16, proj_dim=16, epochs=2, batch_size=32)


@pytest.fixture(scope="module")
def data():  # type: ignore[no-untyped-def]
    return make_var(n_vars=4, n_train=500, n_test=400, kind="spike", factor=6.0, ratio=0.02, seed=0)


@pytest.fixture(scope="module")
def fitted(data):  # type: ignore[no-untyped-def]
    return CAROTS(**TINY, random_state=0).fit(data.X_train)


def test_shapes_and_attributes(fitted, data) -> None:  # type: ignore[no-untyped-def]
    det = fitted
    T = data.X_test.shape[0]
    s = det.decision_function(data.X_test)
    assert s.shape == (T - 5,) and np.isfinite(s).all()
    sp = det.decision_function(data.X_test, align="point")
    assert sp.shape == (T,) and np.isnan(sp[:5]).all()
    np.testing.assert_array_equal(sp[5:], s)
    assert det.causal_graph_.shape == (4, 4) and det.causal_graph_.dtype == bool
    assert det.decision_scores_.shape == (500 - 5,)
    assert len(det.history_) == 2 and {"alpha", "train_loss", "val_loss"} <= set(det.history_[0])
    assert det.history_[0]["alpha"] == 0.5 and det.history_[1]["alpha"] == pytest.approx(0.9)
    pred = det.predict(data.X_test)
    assert set(np.unique(pred)) <= {0, 1}
    assert det.labels_.mean() <= 0.05
    proba = det.predict_proba(data.X_test)
    assert proba.shape == (T - 5, 2) and np.allclose(proba.sum(axis=1), 1)
    assert det.predict(data.X_test, threshold=1e9).sum() == 0


def test_detects_large_spikes(fitted, data) -> None:  # type: ignore[no-untyped-def]
    y = window_labels(data.y_test, 6)
    assert evaluate(fitted.decision_function(data.X_test), y)["AUROC"] > 0.5


def test_deterministic_with_seed(fitted, data) -> None:  # type: ignore[no-untyped-def]
    again = CAROTS(**TINY, random_state=0).fit(data.X_train)
    np.testing.assert_allclose(
        again.decision_function(data.X_test), fitted.decision_function(data.X_test)
    )


def test_input_not_mutated_and_clone(data) -> None:  # type: ignore[no-untyped-def]
    X = data.X_train.copy()
    det = CAROTS(**{**TINY, "epochs": 1}, score="cd", use_cpa=False)
    det.fit(X)
    np.testing.assert_array_equal(X, data.X_train)
    params = clone(det).get_params()
    assert params["window"] == 6 and params["score"] == "cd"


def test_lstm_oracle_graph_and_fixed_alpha(data) -> None:  # type: ignore[no-untyped-def]
    det = CAROTS(
        window=6, encoder="lstm", hidden_dim=8, proj_dim=8, epochs=1, batch_size=32,
        discoverer=GivenGraphDiscoverer(data.graph, lag=2), alpha=0.7, score_type="cos",
    ).fit(data.X_train)  # fmt: skip
    np.testing.assert_array_equal(det.causal_graph_, data.graph)
    assert np.isfinite(det.decision_function(data.X_test)).all()


def test_plain_contrastive_and_baselines(data) -> None:  # type: ignore[no-untyped-def]
    y = window_labels(data.y_test, 6)
    dets = [
        PlainOneClassContrastive(**TINY),
        VARResidual(window=6),
        IsolationForestWindows(window=6, n_estimators=20),
        PCAReconstruction(window=6),
    ]
    for det in dets:
        s = det.fit(data.X_train).decision_function(data.X_test)
        assert s.shape == (395,) and np.isfinite(s).all()
        assert evaluate(s, y)["AUROC"] > 0.5, type(det).__name__
    assert "discoverer" not in dets[0].get_params()


def test_nan_policy_ffill(data) -> None:  # type: ignore[no-untyped-def]
    X = data.X_train.copy()
    X[[0, 10, 11], 1] = np.nan
    X[20, 2] = np.inf
    det = VARResidual(window=6, nan_policy="ffill").fit(X)
    assert np.isfinite(det.decision_scores_).all()
    assert np.isnan(X[0, 1])  # caller's array untouched


def test_constant_channel_is_documented_handling(data) -> None:  # type: ignore[no-untyped-def]
    X = data.X_train.copy()
    X[:, 3] = 2.0
    with pytest.warns(UserWarning, match="constant"):
        det = CAROTS(**{**TINY, "epochs": 1}).fit(X)
    assert not det.causal_graph_[3].any()
    assert np.isfinite(det.decision_function(data.X_test)).all()


def test_bad_inputs(fitted, data) -> None:  # type: ignore[no-untyped-def]
    X = data.X_train
    bad = X.copy()
    bad[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        CAROTS(**TINY).fit(bad)
    bad[3, 0] = np.inf
    with pytest.raises(ValueError, match="NaN/inf"):
        fitted.decision_function(bad)
    with pytest.raises(ValueError, match="1-D"):
        CAROTS(**TINY).fit(X[:, 0])
    with pytest.raises(ValueError, match="window"):
        fitted.decision_function(data.X_test[:4])
    with pytest.raises(ValueError, match="channels"):
        fitted.decision_function(data.X_test[:, :3])
    with pytest.raises(ValueError, match="time steps"):
        CAROTS(**TINY).fit(X[:20])
    with pytest.raises(TypeError, match="X"):
        CAROTS(**TINY).fit(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="empty"):
        CAROTS(**TINY).fit(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="window"):
        CAROTS(window=1).fit(X)
    with pytest.raises(ValueError, match="window"):
        CAROTS(window=3, discoverer=GivenGraphDiscoverer(data.graph, lag=3)).fit(X)
    with pytest.raises(ValueError, match="contamination"):
        CAROTS(**TINY, contamination=0.7).fit(X)
    with pytest.raises(ValueError, match="alpha"):
        CAROTS(**TINY, alpha=2.0).fit(X)
    with pytest.raises(ValueError, match="encoder"):
        CAROTS(**{**TINY, "encoder": "cnn"}).fit(X)
    with pytest.raises(ValueError, match="score"):
        CAROTS(**TINY, score="max").fit(X)
    with pytest.raises(ValueError, match="epochs"):
        CAROTS(**{**TINY, "epochs": 0}).fit(X)
    with pytest.raises(ValueError, match="patience"):
        CAROTS(**TINY, patience=0).fit(X)
    with pytest.raises(ValueError, match="align"):
        fitted.decision_function(data.X_test, align="centre")
    with pytest.raises(NotFittedError, match="fit"):
        CAROTS().decision_function(X)
    with pytest.raises(ValueError, match="nan_policy"):
        VARResidual(nan_policy="drop").fit(X)


def test_patience_stops_after_the_best_epoch_and_keeps_its_weights(data) -> None:  # type: ignore[no-untyped-def]
    kw = {**TINY, "epochs": 8, "random_state": 0}
    full = CAROTS(**kw).fit(data.X_train)
    early = CAROTS(**kw, patience=1).fit(data.X_train)
    n = len(early.history_)
    assert n == early.best_epoch_ + 2 or n == 8
    # the same draws up to the stop: the epochs it trained are the full run's epochs
    for a, b in zip(early.history_, full.history_[:n], strict=True):
        assert a["val_loss"] == pytest.approx(b["val_loss"])
    losses = [h["val_loss"] for h in early.history_]
    assert early.best_epoch_ == int(np.argmin(losses))
    if early.best_epoch_ == full.best_epoch_:
        np.testing.assert_allclose(
            early.decision_function(data.X_test), full.decision_function(data.X_test), atol=1e-5
        )
    assert clone(early).get_params()["patience"] == 1
    assert PlainOneClassContrastive(**kw, patience=2).get_params()["patience"] == 2


def test_pickle_roundtrip(fitted, data) -> None:  # type: ignore[no-untyped-def]
    import pickle

    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(
        again.decision_function(data.X_test), fitted.decision_function(data.X_test)
    )


def test_plotting(fitted, data) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from causal_ts.plotting import plot_history, plot_scores

    assert plot_history(fitted.history_) is not None
    s = fitted.decision_function(data.X_test)
    assert plot_scores(s, window_labels(data.y_test, 6), fitted.threshold_) is not None
    with pytest.raises(ValueError, match="labels"):
        plot_scores(s, np.zeros(3))


def test_validated_combination(fitted, data) -> None:  # type: ignore[no-untyped-def]
    """combine='validated': same nets and halves as the paper's sum, held-out standardisation
    and a grid weight; the sum keeps weights (0.5, 0.5) and equals z_CL + z_CD."""
    det = CAROTS(**TINY, combine="validated", random_state=0).fit(data.X_train)
    assert fitted.combine_weights_ == (0.5, 0.5) and fitted.combine_auroc_ == {}
    assert sorted(det.combine_auroc_) == [round(0.1 * k, 1) for k in range(11)]
    w_cl, w_cd = det.combine_weights_
    assert w_cl in det.combine_auroc_ and w_cl + w_cd == pytest.approx(1.0)
    assert det.combine_auroc_[w_cl] == max(det.combine_auroc_.values())
    halves = {}
    for d in (fitted, det):
        for mode in ("cl", "cd"):
            d._score_mode = mode
            halves[id(d), mode] = d.decision_function(data.X_test)
        d._score_mode = "combined"
    # same training: each half differs only by its standardisation (an affine map)
    for mode in ("cl", "cd"):
        a, b = halves[id(fitted), mode], halves[id(det), mode]
        assert np.corrcoef(a, b)[0, 1] == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(
        det.decision_function(data.X_test),
        2 * (w_cl * halves[id(det), "cl"] + w_cd * halves[id(det), "cd"]),
    )
    np.testing.assert_allclose(
        fitted.decision_function(data.X_test), halves[id(fitted), "cl"] + halves[id(fitted), "cd"]
    )
    again = CAROTS(**TINY, combine="validated", random_state=0).fit(data.X_train)
    assert again.combine_weights_ == det.combine_weights_
    with pytest.raises(ValueError, match="combine"):
        CAROTS(**TINY, combine="max").fit(data.X_train)
    with pytest.warns(UserWarning, match="validation tail"):
        CAROTS(**{**TINY, "epochs": 1}, combine="validated", val_fraction=0.0).fit(data.X_train)
