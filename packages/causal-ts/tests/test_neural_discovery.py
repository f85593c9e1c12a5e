import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.metrics import roc_auc_score

from causal_ts import CAROTS, make_var
from causal_ts.data import simulate_var
from causal_ts.neural_discovery import NeuralGrangerDiscoverer


def test_recovers_var_edges_and_forecasts() -> None:
    X, graph = simulate_var(4, 800, sparsity=0.5, seed=1)
    X = (X - X.mean(0)) / X.std(0)
    disc = NeuralGrangerDiscoverer(lag=2, epochs=200).fit(X)
    off = ~np.eye(4, dtype=bool)
    assert roc_auc_score(graph[off], disc.edge_scores_[off]) > 0.8
    pred = disc.predict_next(X[None, :10])
    assert pred.shape == (1, 4) and np.isfinite(pred).all()
    assert disc.loss_curve_[-1] < disc.loss_curve_[0]


def test_as_carots_discoverer() -> None:
    d = make_var(n_vars=4, n_train=400, n_test=200, seed=0)
    det = CAROTS(
        window=6, encoder="mlp", hidden_dim=8, proj_dim=8, epochs=1, batch_size=32,
        discoverer=NeuralGrangerDiscoverer(lag=2, epochs=30),
    ).fit(d.X_train)  # fmt: skip
    assert np.isfinite(det.decision_function(d.X_test)).all()
    with pytest.raises(ValueError, match="discoverer"):
        CAROTS(window=6, discoverer="cuts").fit(d.X_train)


def test_bad_inputs() -> None:
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="threshold"):
        NeuralGrangerDiscoverer(threshold=1.0).fit(X)
    with pytest.raises(ValueError, match="time steps"):
        NeuralGrangerDiscoverer(lag=3).fit(X[:4])
    with pytest.raises(NotFittedError, match="fit"):
        NeuralGrangerDiscoverer().predict_next(X[None])
    disc = NeuralGrangerDiscoverer(lag=2, epochs=2).fit(X)
    with pytest.raises(ValueError, match="prefix"):
        disc.predict_next(X[None, :, :2])
