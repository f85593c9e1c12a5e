"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Train a tiny EARTH on a simulated 5-region seasonal epidemic and compare to baselines.

    Returns
    -------
    str
        Test RMSE of EARTH, persistence and ridge AR, and EARTH's CPU seconds per epoch.
    """
    from epi_ode.baselines import ARRidge, Persistence
    from epi_ode.data import make_windows, simulate_metapopulation
    from epi_ode.forecaster import EARTHForecaster
    from epi_ode.metrics import evaluate

    sim = simulate_metapopulation(n_regions=5, n_weeks=208, seed=seed)
    w = make_windows(sim.cases, window=8, horizon=2)
    Ytr, Yva = sim.cases[: w.train_end], sim.cases[w.train_end : w.val_end]
    lines = [
        "epi-ode demo: 5-region seasonal SIRS (208 weeks), window 8, horizon 2, test RMSE",
        f"{'model':<12}{'RMSE':>9}{'PCC':>7}",
    ]
    earth = EARTHForecaster(window=8, horizon=2, hidden=8, epochs=3, batch_size=16,
                            random_state=seed, num_threads=1)  # fmt: skip
    for name, m in (("persistence", Persistence(8, 2)), ("ridge AR", ARRidge(8, 2)),
                    ("EARTH", earth)):  # fmt: skip
        m.fit(Ytr, sim.adjacency, Y_val=Yva)
        r = evaluate(w.y_test, m.predict(w.X_test))
        lines.append(f"{name:<12}{r['RMSE']:>9.1f}{r['PCC']:>7.3f}")
    h = earth.history_
    trace = earth.graph_trace(w.X_test[-1])
    lines += [
        f"EARTH: {len(h)} epochs (a demo budget; the benchmark trains 30), "
        f"{sum(e['seconds'] for e in h) / len(h):.2f} CPU s/epoch, "
        f"val L1 {h[0]['val_loss']:.3f} -> {min(e['val_loss'] for e in h):.3f}",
        f"continuous graph A_t: rows sum to {trace.sum(-1).mean():.3f}, "
        f"max |A_end - A_start| = {abs(trace[-1] - trace[0]).max():.3f}",
    ]
    return "\n".join(lines)
