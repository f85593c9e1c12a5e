import numpy as np
import pytest

from epi_ode.data import (
    dtw_distances,
    dtw_graph,
    load_colagnn,
    make_windows,
    save_colagnn,
    simulate_metapopulation,
)


def test_stochastic_counts_conserve_population():
    sim = simulate_metapopulation(4, 30, seed=1, burn_in_weeks=0)
    total = sim.compartments.sum(axis=-1)
    np.testing.assert_array_equal(total, np.broadcast_to(sim.population, total.shape))
    assert np.all(sim.compartments == np.round(sim.compartments))
    assert sim.cases.shape == (30, 4) and np.all(sim.cases >= 0)
    assert np.allclose(sim.mobility.sum(axis=1), 1.0)
    assert np.array_equal(sim.adjacency, sim.adjacency.T) and np.all(np.diag(sim.adjacency) == 1)


def test_seeded_and_deterministic():
    a = simulate_metapopulation(3, 20, seed=5)
    b = simulate_metapopulation(3, 20, seed=5)
    np.testing.assert_array_equal(a.cases, b.cases)
    assert not np.array_equal(a.cases, simulate_metapopulation(3, 20, seed=6).cases)


def test_phi_zero_decouples_regions():
    kw = dict(n_regions=4, n_weeks=40, seed=2, phi=0.0, stochastic=False, dispersion=None,
              burn_in_weeks=0)  # fmt: skip
    a = simulate_metapopulation(**kw, initial_infected=[10, 10, 10, 10])
    b = simulate_metapopulation(**kw, initial_infected=[500, 10, 10, 10])
    assert not np.allclose(a.cases[:, 0], b.cases[:, 0])
    np.testing.assert_allclose(a.cases[:, 1:], b.cases[:, 1:], rtol=0, atol=0)
    c = simulate_metapopulation(**{**kw, "phi": 0.05}, initial_infected=[500, 10, 10, 10])
    assert not np.allclose(a.cases[:, 1:], c.cases[:, 1:])


def test_discrete_final_size_relation():
    r0, gamma = 1.5, 0.25
    sim = simulate_metapopulation(1, 400, seed=0, r0_range=(r0, r0), gamma=gamma, waning=0.0,
                                  seasonal_amplitude=0.0, importation=0.0, stochastic=False,
                                  dispersion=None, burn_in_weeks=0,
                                  initial_infected=[1e-3])  # fmt: skip
    P = sim.population[0]
    s_inf = sim.compartments[-1, 0, 0] / P
    r_eff = r0 * gamma / (1 - np.exp(-gamma))
    lo, hi = 1e-9, 1 - 1e-6  # bisection on s - exp(-R_eff (1 - s)) (negative below the root)
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid - np.exp(-r_eff * (1 - mid)) < 0 else (lo, mid)
    expected = (lo + hi) / 2
    assert expected == pytest.approx(0.3109, abs=1e-4)
    assert s_inf == pytest.approx(expected, abs=1e-3)
    assert abs(s_inf - 0.4172) > 0.05  # the continuous-time final size does not apply


def test_noise_free_reports_are_rho_times_infections():
    sim = simulate_metapopulation(3, 25, seed=3, dispersion=None, stochastic=False)
    np.testing.assert_allclose(sim.cases, sim.params["rho"] * sim.infections)


def test_missing_rate_and_validation():
    sim = simulate_metapopulation(3, 200, seed=0, missing_rate=0.3)
    assert 0.2 < np.isnan(sim.cases).mean() < 0.4
    with pytest.raises(ValueError, match="phi"):
        simulate_metapopulation(3, 10, phi=1.5)
    with pytest.raises(TypeError, match="n_regions"):
        simulate_metapopulation(2.5, 10)
    with pytest.raises(ValueError, match="initial_infected"):
        simulate_metapopulation(3, 10, initial_infected=[1, 2])


def test_windows_split_chronologically():
    Y = np.arange(100 * 2, dtype=float).reshape(100, 2)
    w = make_windows(Y, window=5, horizon=3)
    assert w.train_end == 50 and w.val_end == 80
    # target row t, inputs rows t-h-W+1 .. t-h
    t = w.t_test[0]
    np.testing.assert_array_equal(w.X_test[0], Y[t - 7 : t - 2])
    np.testing.assert_array_equal(w.y_test[0], Y[t])
    assert w.t_train.max() < 50 <= w.t_val.min() and w.t_val.max() < 80 <= w.t_test.min()
    with pytest.raises(ValueError, match="too short"):
        make_windows(Y[:12], window=5, horizon=3)
    with pytest.raises(ValueError, match="split"):
        make_windows(Y, split=(0.5, 0.5, 0.5))


def _dtw_bruteforce(a, b, r):
    T = len(a)
    D = np.full((T + 1, T + 1), np.inf)
    D[0, 0] = 0
    for i in range(1, T + 1):
        for j in range(1, T + 1):
            if abs(i - j) <= r:
                D[i, j] = abs(a[i - 1] - b[j - 1]) + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[T, T]


@pytest.mark.parametrize("radius", [0, 2, 6, 30])
def test_dtw_equals_bruteforce(radius):
    rng = np.random.default_rng(radius)
    Y = rng.normal(size=(25, 4))
    D = dtw_distances(Y, radius=radius)
    for u in range(4):
        for v in range(4):
            assert D[u, v] == pytest.approx(_dtw_bruteforce(Y[:, u], Y[:, v], radius), abs=1e-12)
    np.testing.assert_array_equal(D, D.T)
    assert np.all(np.diag(D) == 0)
    if radius == 0:
        np.testing.assert_allclose(D[0, 1], np.abs(Y[:, 0] - Y[:, 1]).sum())


def test_dtw_graph_keeps_nearest_or_farthest():
    t = np.linspace(0, 6, 60)
    Y = np.stack([np.sin(t), np.sin(t + 0.05), np.cos(3 * t), np.sin(t + 0.1)], axis=1)
    D = dtw_distances((Y - Y.min(0)) / (Y.max(0) - Y.min(0)))
    off = D + np.diag(np.full(4, np.inf))
    G = dtw_graph(Y, k=1)
    assert np.array_equal(G, G.T) and np.all(np.diag(G) == 0)
    assert all(G[v, np.argmin(off[v])] == 1 for v in range(4)) and G[0, 1] == 1
    assert G.sum() <= 2 * 4
    Gf = dtw_graph(Y, k=1, keep="farthest")
    off[np.isinf(off)] = -np.inf
    assert all(Gf[v, np.argmax(off[v])] == 1 for v in range(4)) and Gf[0, 1] == 0
    with pytest.raises(ValueError, match="keep"):
        dtw_graph(Y, k=1, keep="all")
    with pytest.raises(ValueError, match=r"missing|complete"):
        dtw_distances(np.where(Y > 0.9, np.nan, Y))


def test_loader_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    Y = rng.poisson(50, size=(30, 4)).astype(float)
    Y[3, 1] = np.nan
    A = (rng.uniform(size=(4, 4)) > 0.5).astype(float) + np.eye(4)
    save_colagnn(tmp_path / "x.txt", Y, tmp_path / "x-adj.txt", A)
    Y2, A2 = load_colagnn(tmp_path / "x.txt", tmp_path / "x-adj.txt")
    np.testing.assert_array_equal(np.isnan(Y2), np.isnan(Y))
    np.testing.assert_allclose(np.nan_to_num(Y2), np.nan_to_num(Y))
    np.testing.assert_allclose(A2, A)
    np.savetxt(tmp_path / "bad-adj.txt", np.eye(3), delimiter=",")
    with pytest.raises(ValueError, match="regions"):
        load_colagnn(tmp_path / "x.txt", tmp_path / "bad-adj.txt")
    with pytest.raises(FileNotFoundError):
        load_colagnn(tmp_path / "none.txt")
