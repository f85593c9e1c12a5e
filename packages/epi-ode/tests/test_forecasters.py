import numpy as np
import pytest

from epi_ode import EARTHForecaster, NeuralCDEForecaster, demo
from epi_ode.baselines import (
    ARRidge,
    ColaGNNLite,
    GRUForecaster,
    NetworkSIRFit,
    Persistence,
    RegionSIRFit,
)
from epi_ode.data import make_windows, simulate_metapopulation
from epi_ode.metrics import evaluate, peak_mae


@pytest.fixture(scope="module")
def small():
    sim = simulate_metapopulation(n_regions=5, n_weeks=156, seed=0)
    w = make_windows(sim.cases, window=8, horizon=2)
    return sim, w, sim.cases[: w.train_end], sim.cases[w.train_end : w.val_end]


def _earth(**kw):
    return EARTHForecaster(window=8, horizon=2, hidden=8, heads=2, epochs=3, batch_size=16,
                           num_threads=1, **kw)  # fmt: skip


def test_earth_fits_predicts_and_is_deterministic(small):
    sim, w, Ytr, Yva = small
    before = Ytr.copy()
    a = _earth(random_state=3).fit(Ytr, sim.adjacency, Y_val=Yva)
    np.testing.assert_array_equal(Ytr, before)  # input untouched
    p = a.predict(w.X_test)
    assert p.shape == w.y_test.shape and np.isfinite(p).all()
    assert a.predict(w.X_test[0]).shape == (5,)
    b = _earth(random_state=3).fit(Ytr, sim.adjacency, Y_val=Yva)
    np.testing.assert_allclose(b.predict(w.X_test), p, rtol=1e-6)
    h = a.history_
    assert len(h) == 3 and all(np.isfinite([e["train_loss"], e["val_loss"]]).all() for e in h)
    assert a.semantic_graph_.shape == (5, 5)
    tr = a.graph_trace(w.X_test[0])
    assert tr.shape == (8, 5, 5) and np.allclose(tr.sum(-1), 1, atol=1e-5)


def test_training_lowers_validation_loss(small):
    sim, _, Ytr, Yva = small
    m = _earth(random_state=0).set_params(epochs=6).fit(Ytr, sim.adjacency, Y_val=Yva)
    assert min(e["val_loss"] for e in m.history_[1:]) < m.history_[0]["val_loss"]


def test_missing_inputs_and_params(small):
    sim, w, Ytr, _ = small
    Y = Ytr.copy()
    Y[np.random.default_rng(0).uniform(size=Y.shape) < 0.1] = np.nan
    m = _earth().fit(Y, sim.adjacency)  # default validation: last 20 % of Y_train
    X = w.X_test.copy()
    X[:, 2, 1] = np.nan
    assert np.isfinite(m.predict(X)).all()
    assert m.get_params()["hidden"] == 8 and "EARTHForecaster(" in repr(m)
    with pytest.raises(ValueError, match="unknown parameter"):
        m.set_params(depth=3)
    assert NeuralCDEForecaster(window=8).get_params()["window"] == 8


def test_forecaster_bad_inputs(small):
    sim, w, Ytr, Yva = small
    m = _earth()
    with pytest.raises(ValueError, match="Y_train"):
        m.fit(Ytr[:, :, None], sim.adjacency)
    with pytest.raises(ValueError, match="adjacency"):
        m.fit(Ytr, np.eye(4))
    with pytest.raises(ValueError, match="Y_val"):
        m.fit(Ytr, sim.adjacency, Y_val=Yva[:, :3])
    with pytest.raises(ValueError, match="window \\+ horizon"):
        m.fit(Ytr[:10], sim.adjacency)
    with pytest.raises(ValueError, match="inf"):
        m.fit(np.where(Ytr > 100, np.inf, Ytr), sim.adjacency)
    with pytest.raises(TypeError, match="Y_train"):
        m.fit(np.full(Ytr.shape, "a"), sim.adjacency)
    with pytest.raises(ValueError, match="window"):
        EARTHForecaster(window=3).fit(Ytr, sim.adjacency)
    with pytest.raises(ValueError, match="lr"):
        _earth(lr=-1.0).fit(Ytr, sim.adjacency)
    with pytest.raises(RuntimeError, match="not fitted"):
        m.predict(w.X_test)
    m.fit(Ytr, sim.adjacency, Y_val=Yva)
    with pytest.raises(ValueError, match="regions"):
        m.predict(w.X_test[..., :3])
    with pytest.raises(ValueError, match="at least 8"):
        m.predict(w.X_test[:, :5])
    with pytest.warns(UserWarning, match="constant"):
        Y = Ytr.copy()
        Y[:, 0] = 3.0
        Persistence(8, 2).fit(Y, sim.adjacency)


def test_persistence_and_ar_closed_forms():
    rng = np.random.default_rng(0)
    T, N = 300, 3
    Y = np.zeros((T, N))
    Y[:2] = rng.normal(size=(2, N))
    for t in range(2, T):  # AR(2), noise-free: ridge with alpha=0 must recover it exactly
        Y[t] = 1.2 * Y[t - 1] - 0.5 * Y[t - 2] + 0.1
    Y += 5.0  # counts are non-negative (the forecasters reject negative ones); AR stays exact
    w = make_windows(Y, window=6, horizon=1)
    ar = ARRidge(6, 1, alpha=0.0).fit(Y[: w.train_end], np.eye(N), Y_val=Y[w.train_end : w.val_end])
    np.testing.assert_allclose(ar.predict(w.X_test), w.y_test, atol=1e-6)
    pers = Persistence(6, 1).fit(Y[: w.train_end], np.eye(N))
    Xm = w.X_test.copy()
    Xm[:, -1] = np.nan
    np.testing.assert_allclose(pers.predict(Xm), w.X_test[:, -2])


def test_network_sir_fit_recovers_noise_free_sir():
    sim = simulate_metapopulation(3, 60, seed=1, seasonal_amplitude=0.0, waning=0.0,
                                  importation=0.0, stochastic=False, dispersion=None,
                                  burn_in_weeks=0, initial_infected=[200, 5, 5])  # fmt: skip
    w = make_windows(sim.cases, window=12, horizon=2, split=(0.6, 0.2, 0.2))
    sir = NetworkSIRFit(12, 2, mobility=sim.mobility, max_iter=300)
    sir.fit(sim.cases[: w.train_end], sim.adjacency, Y_val=sim.cases[w.train_end : w.val_end])
    t = np.array([16, 20, 24])  # during the epidemic's growth and peak
    X = np.stack([sim.cases[k - 13 : k - 1] for k in t])
    y = sim.cases[t]
    p = sir.predict(X)
    pers = X[:, -1]
    assert np.abs(p - y).mean() < 0.5 * np.abs(pers - y).mean()
    assert (
        RegionSIRFit(12, 2).fit(sim.cases[:30], sim.adjacency).mobility_.tolist()
        == np.eye(3).tolist()
    )


@pytest.mark.parametrize("cls", [GRUForecaster, ColaGNNLite])
def test_recurrent_baselines(small, cls):
    sim, w, Ytr, Yva = small
    m = cls(window=8, horizon=2, hidden=8, epochs=3, random_state=1).fit(
        Ytr, sim.adjacency, Y_val=Yva
    )
    p = m.predict(w.X_test)
    assert p.shape == w.y_test.shape and np.isfinite(p).all() and len(m.history_) == 3


def test_metrics_by_hand():
    t = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 0.0]])
    p = np.array([[2.0, 10.0], [3.0, 18.0], [5.0, 4.0]])
    r = evaluate(t, p, peak_threshold=[2.0, 5.0])
    assert r["RMSE"] == pytest.approx(np.sqrt((1 + 4 + 16) / 6))
    assert r["MAE"] == pytest.approx(7 / 6)
    assert r["PCC"] == pytest.approx(np.corrcoef(t.ravel(), p.ravel())[0, 1])
    # peak: region 0 keeps rows 1, 2 (truth >= 2): errors 0, 0, and row 0 zeroed -> 0;
    # region 1 keeps rows 0, 1: errors 0, 2; row 2 (truth 0 < 5) zeroed both -> 0
    assert peak_mae(t, p, [2.0, 5.0]) == pytest.approx((0 + 2 / 3) / 2)
    assert r["peak_MAE"] == pytest.approx(1 / 3)
    t2 = t.copy()
    t2[0, 0] = np.nan
    assert evaluate(t2, p)["MAE"] == pytest.approx(6 / 5)
    with pytest.raises(ValueError, match="y_pred"):
        evaluate(t, p[:2])
    with pytest.raises(ValueError, match="NaN"):
        evaluate(t, np.full_like(p, np.nan))


def test_demo_and_plots(tmp_path, small):
    out = demo(0)
    assert "EARTH" in out and "persistence" in out
    pytest.importorskip("matplotlib")
    from epi_ode.plotting import plot_forecasts, plot_graph_trace

    _, w, _, _ = small
    plot_forecasts(w.y_test, {"persistence": w.X_test[:, -1]}, path=tmp_path / "f.png")
    plot_graph_trace(np.ones((4, 5, 5)) / 5, path=tmp_path / "g.png")
    assert (tmp_path / "f.png").exists() and (tmp_path / "g.png").exists()
    with pytest.raises(ValueError, match="trace"):
        plot_graph_trace(np.ones((4, 5)))


def _sine_counts(T=160, N=3, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(T)[:, None]
    return 50 + 30 * np.sin(2 * np.pi * t / 26 + np.arange(N)) + rng.normal(0, 1, (T, N))


def test_trajectory_output_and_rollout():
    Y = _sine_counts()
    A = np.ones((3, 3))
    traj = ARRidge(12, 3, alpha=0.1, output="trajectory").fit(Y[:120], A)
    ctx = Y[100:112]
    path = traj.predict(ctx, horizon=3)
    assert path.shape == (3, 3)
    # the direct forecast of a trajectory model is its last step
    np.testing.assert_allclose(traj.predict(ctx), path[-1])
    # beyond h the model rolls forward in blocks of h: the first h steps do not change
    long = traj.predict(np.stack([ctx, Y[90:102]]), horizon=7)
    assert long.shape == (2, 7, 3)
    np.testing.assert_allclose(long[0, :3], path)
    # a one-step direct model rolls out recursively: step 2 = the forecast from the extended context
    one = ARRidge(12, 1, alpha=0.1).fit(Y[:120], A)
    two = one.predict(ctx, horizon=2)
    np.testing.assert_allclose(two[1], one.predict(np.vstack([ctx, two[:1]])))


def test_direct_multi_step_model_refuses_a_trajectory():
    Y = _sine_counts()
    m = ARRidge(12, 4).fit(Y[:120], np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"horizon: .*output='trajectory'"):
        m.predict(Y[100:112], horizon=4)


def test_negative_counts_rejected_and_forecasts_non_negative():
    Y = _sine_counts()
    bad = Y.copy()
    bad[5, 1] = -3
    with pytest.raises(ValueError, match="negative counts"):
        ARRidge(12, 1).fit(bad[:120], np.ones((3, 3)))
    m = ARRidge(12, 1).fit(Y[:120], np.ones((3, 3)))
    with pytest.raises(ValueError, match="negative"):
        m.predict(-Y[100:112])
    falling = np.linspace(40, 0.5, 12)[:, None] * np.ones((1, 3))
    assert (m.predict(falling, horizon=1) >= 0).all()


def test_earth_trajectory_fits_and_is_deterministic():
    Y = _sine_counts(T=90)
    A = np.ones((3, 3))
    fc = EARTHForecaster(window=8, horizon=3, epochs=2, batch_size=16, output="trajectory",
                         dtw_neighbors=1)  # fmt: skip
    fc.fit(Y[:70], A)
    out = fc.predict(Y[60:68], horizon=5)
    assert out.shape == (5, 3) and np.isfinite(out).all()
    np.testing.assert_array_equal(out, fc.predict(Y[60:68], horizon=5))


def test_dopri5_fit_finishes():
    Y = _sine_counts(T=60)
    fc = EARTHForecaster(window=6, horizon=1, epochs=1, batch_size=32, solver="dopri5",
                         dtw_neighbors=0)  # fmt: skip
    fc.fit(Y[:48], np.ones((3, 3)))
    assert np.isfinite(fc.predict(Y[40:46])).all()


def test_lstm_and_seir_baselines_fit_and_forecast():
    from epi_ode.baselines import LSTMForecaster, RegionSEIRFit

    Y = _sine_counts(T=80)
    A = np.ones((3, 3))
    for m in (LSTMForecaster(8, 2, hidden=4, epochs=3), RegionSEIRFit(8, 2, max_iter=20)):
        out = m.fit(Y[:60], A).predict(np.stack([Y[50:58], Y[40:48]]))
        assert out.shape == (2, 3) and np.isfinite(out).all() and (out >= 0).all()
    traj = RegionSEIRFit(8, 3, max_iter=20, output="trajectory").fit(Y[:60], A)
    assert traj.predict(Y[50:58], horizon=3).shape == (3, 3)


def test_adaptive_solver_steps_are_not_destroyed_by_dropout():
    """Dropout masks are locked per solve under dopri5: a deterministic right-hand side."""
    import torch

    from epi_ode import EARTH

    rng = np.random.default_rng(0)
    Z = torch.as_tensor(rng.uniform(0, 1, (4, 12, 3)), dtype=torch.float32)
    counts = {}
    for solver in ("rk4", "dopri5"):
        m = EARTH(3, np.ones((3, 3)), hidden=8, heads=2, solver=solver)  # training mode
        n = [0]
        f = m.field.forward

        def counted(t, y, f=f, n=n):
            n[0] += 1
            return f(t, y)

        m.field.forward = counted
        m(Z).sum().backward()
        counts[solver] = n[0]
    assert counts["dopri5"] <= 4 * counts["rk4"], counts
