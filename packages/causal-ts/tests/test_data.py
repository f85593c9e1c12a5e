import numpy as np
import pytest

from causal_ts.data import (
    ANOMALY_KINDS,
    _companion_radius,
    inject_anomalies,
    inject_causal_break,
    lorenz96_derivative,
    make_lorenz96,
    make_var,
    simulate_lorenz96,
    simulate_var,
    sliding_windows,
    var_coefficients,
)


def test_var_coefficients_stable_and_oriented() -> None:
    coefs, graph = var_coefficients(8, lag=3, sparsity=0.5, seed=0)
    assert _companion_radius(coefs) < 1.0
    np.testing.assert_array_equal(coefs[0] != 0, graph)  # coefs[l, c, e]: row = cause
    assert graph.diagonal().all()
    assert (graph.sum(axis=0) == 4).all()  # floor(0.5*8) - 1 = 3 parents + self per effect


def test_simulate_var_shapes_and_determinism() -> None:
    X1, g1 = simulate_var(5, 300, seed=3)
    X2, g2 = simulate_var(5, 300, seed=3)
    assert X1.shape == (300, 5) and np.isfinite(X1).all()
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(g1, g2)


def test_lorenz96_derivative_matches_finite_differences() -> None:
    dt = 0.01
    X, graph = simulate_lorenz96(6, 400, dt=dt, sd=0.0, burn_in=100, seed=0)
    central = (X[2:] - X[:-2]) / (2 * dt)
    np.testing.assert_allclose(
        central, lorenz96_derivative(X[1:-1]), atol=0.05 * np.abs(central).max()
    )
    # parents of i are i-2, i-1, i+1 (row = cause): asymmetric, so a transposed graph fails
    assert graph[4, 0] and graph[5, 0] and graph[1, 0] and not graph[2, 0]
    assert not np.array_equal(graph, graph.T)


def test_lorenz96_derivative_closed_form() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    # i=0: (x1 - x2) * x3 - x0 + F
    assert lorenz96_derivative(x, F=8.0)[0] == pytest.approx((2 - 3) * 4 - 1 + 8)


@pytest.mark.parametrize("kind", ANOMALY_KINDS)
def test_labels_cover_exactly_the_modified_points(kind: str) -> None:
    X, _ = simulate_var(6, 500, seed=1)
    X_before = X.copy()
    out, y, info = inject_anomalies(X, kind, n_vars=2, ratio=0.02, factor=3.0, seed=2)
    np.testing.assert_array_equal(X, X_before)  # input untouched
    changed = (out != X).any(axis=1)
    assert changed.sum() > 0
    np.testing.assert_array_equal(changed[~y.astype(bool)], False)
    # every labelled step changed (a ramp starts at 0, so its first step is unchanged)
    missed = y.astype(bool) & ~changed
    assert missed.sum() <= (info.centres.size if kind == "collective_trend" else 0)
    cols = np.flatnonzero((out != X).any(axis=0))
    assert set(cols) <= set(info.variables)


def test_causal_break_changes_only_effects() -> None:
    d = make_var(n_vars=6, n_train=100, n_test=400, kind="causal_break", n_breaks=4, seed=0)
    assert d.y_test.sum() == 4 * 20
    info = d.anomalies[0]
    off = d.graph & ~np.eye(6, dtype=bool)
    assert all(off[:, v].any() for v in info.variables)


def test_inject_causal_break_direct() -> None:
    X = np.zeros((100, 3))
    alt = np.ones((100, 3))
    graph = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=bool)  # only 0 -> 1
    out, y, info = inject_causal_break(X, graph, alt, n_segments=2, length=10, seed=0)
    assert set(info.variables) == {1}
    np.testing.assert_array_equal(out[:, 1], y)
    assert out[:, [0, 2]].sum() == 0


@pytest.mark.parametrize("maker", [make_var, make_lorenz96])
def test_makers_mixed(maker) -> None:  # type: ignore[no-untyped-def]
    d = maker(n_vars=5, n_train=200, n_test=300, seed=0)
    assert d.X_train.shape == (200, 5) and d.X_test.shape == (300, 5)
    assert d.y_test.shape == (300,) and 0 < d.y_test.mean() < 0.5
    assert d.graph.shape == (5, 5)


def test_sliding_windows() -> None:
    X = np.arange(12.0).reshape(6, 2)
    w = sliding_windows(X, 3)
    assert w.shape == (4, 3, 2)
    np.testing.assert_array_equal(w[1], X[1:4])
    assert sliding_windows(X, 3, stride=2).shape == (2, 3, 2)


def test_bad_inputs() -> None:
    X = np.zeros((50, 3))
    with pytest.raises(ValueError, match="kind"):
        inject_anomalies(X, "bogus")
    with pytest.raises(ValueError, match="n_vars"):
        inject_anomalies(X, "spike", n_vars=4)
    with pytest.raises(ValueError, match="ratio"):
        inject_anomalies(X, "spike", ratio=0.0)
    with pytest.raises(ValueError, match="window"):
        sliding_windows(X, 51)
    with pytest.raises(ValueError, match="X_independent"):
        inject_causal_break(X, np.eye(3), np.zeros((40, 3)))
    with pytest.raises(ValueError, match="parent"):
        inject_causal_break(X, np.eye(3), X, n_segments=2, length=5)
    with pytest.raises(ValueError, match="kind"):
        make_var(kind="nope")


def test_make_var_interventions_move_effects_not_labels() -> None:
    base = make_var(n_vars=5, n_train=300, n_test=400, kind="causal_break", seed=0)
    d = make_var(
        n_vars=5, n_train=300, n_test=400, kind="causal_break", n_interventions=2,
        intervention_shift=5.0, seed=0,
    )  # fmt: skip
    assert d.intervention.sum() == 40 and base.intervention.sum() == 0
    np.testing.assert_array_equal(d.y_test, base.y_test)  # interventions stay label 0
    np.testing.assert_array_equal(d.X_train, base.X_train)
    diff = np.abs(d.X_test - base.X_test).max(axis=0)
    assert (diff > 1e-9).sum() >= 2  # the cause and at least one effect respond


def test_dag_var_coefficients_carry_the_signal() -> None:
    from scipy.linalg import solve_discrete_lyapunov

    from causal_ts.data import dag_var_coefficients, make_var

    coefs, graph = dag_var_coefficients(12, n_parents=2, signal=9.0, root_ar=0.9, seed=1)
    A = coefs[0].T  # row = effect
    assert coefs.shape == (1, 12, 12) and graph.dtype == bool
    assert np.max(np.abs(np.linalg.eigvals(A))) == pytest.approx(0.9)  # triangular: stable
    roots = np.flatnonzero(np.diag(graph))
    effects = np.setdiff1d(np.arange(12), roots)
    assert len(roots) == 2 and (graph[:, effects].sum(axis=0) == 2).all()
    # acyclic apart from the roots' self loops: nilpotent off-diagonal part
    off = (graph & ~np.eye(12, dtype=bool)).astype(float)
    assert not np.linalg.matrix_power(off, 12).any()
    cov = solve_discrete_lyapunov(A, 0.01 * np.eye(12))
    signal = np.diag(A @ cov @ A.T)[effects]  # the parents' part of each effect's variance
    np.testing.assert_allclose(signal, 9.0 * 0.01, rtol=1e-8)
    d = make_var(n_vars=8, n_train=300, n_test=300, kind="causal_break", design="dag", seed=0)
    assert d.graph.shape == (8, 8) and d.y_test.sum() > 0
    with pytest.raises(ValueError, match="design"):
        make_var(n_vars=8, design="chain")
    with pytest.raises(ValueError, match="n_parents"):
        dag_var_coefficients(3, n_parents=3)
    with pytest.raises(ValueError, match="root_ar"):
        dag_var_coefficients(5, root_ar=1.0)


def test_tods_raw_unit_recipes_by_hand() -> None:
    from causal_ts.data import TODS_FACTORS, inject_anomalies

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) * np.array([1.0, 5.0, 0.2]) + np.array([0.0, 10.0, -1.0])
    before = X.copy()
    for kind, factor in TODS_FACTORS.items():
        out, y, info = inject_anomalies(X, kind, n_vars=1, ratio=0.05, factor=factor, radius=5,
                                        seed=1, recipe="tods")  # fmt: skip
        np.testing.assert_array_equal(X, before)  # the caller's array is untouched
        j, c = int(info.variables[0]), info.centres
        others = [k for k in range(3) if k != j]
        np.testing.assert_array_equal(out[:, others], X[:, others])
        if kind == "point_global":
            for t in c:  # x * factor * local std, pushed to the series' extreme
                want = X[t, j] * factor * X[t - 5 : t + 5, j].std()
                hi, lo = X[:, j].max(), X[:, j].min()
                want = hi if 0 <= want < hi else lo if lo < want < 0 else want
                assert out[t, j] == want
            assert y.sum() == len(c)
        elif kind == "point_contextual":  # stays inside the series' range
            assert (out[c, j] <= X[:, j].max()).all() and (out[c, j] >= X[:, j].min()).all()
        elif kind == "collective_global":  # raw-unit square wave, whatever the series' scale
            t = c[0]
            assert np.abs(out[t - 5 : t + 5, j]).max() <= 1.5 * 2 and y[t - 5 : t + 5].all()
        else:  # a ramp of ±factor per step, the offset kept afterwards
            t = c[-1]
            step = out[t - 5 : t + 5, j] - X[t - 5 : t + 5, j]
            d = np.diff(step)
            assert np.allclose(np.abs(d), factor)
            np.testing.assert_allclose(out[t + 5 :, j] - X[t + 5 :, j], step[-1])
            assert y[t - 5 : t + 5].all() and not y[t + 5 :].any()
    with pytest.raises(ValueError, match="recipe"):
        inject_anomalies(X, "spike", recipe="tods")
    with pytest.raises(ValueError, match="recipe"):
        inject_anomalies(X, "point_global", recipe="raw")


def test_make_var_passes_the_recipe() -> None:
    std = make_var(n_vars=4, n_train=200, n_test=200, kind="collective_trend", seed=0)
    tods = make_var(n_vars=4, n_train=200, n_test=200, kind="collective_trend", seed=0,
                    recipe="tods", factor=0.5)  # fmt: skip
    np.testing.assert_array_equal(std.X_train, tods.X_train)
    assert not np.allclose(std.X_test, tods.X_test)
