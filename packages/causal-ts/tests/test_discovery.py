import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from causal_ts.data import simulate_var
from causal_ts.discovery import GivenGraphDiscoverer, VARGrangerDiscoverer


@pytest.fixture(scope="module")
def var_data() -> tuple[np.ndarray, np.ndarray]:
    return simulate_var(5, 1500, sparsity=0.5, seed=4)


def test_var_granger_recovers_graph(var_data) -> None:  # type: ignore[no-untyped-def]
    X, graph = var_data
    disc = VARGrangerDiscoverer(lag=3).fit(X)
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_array_equal(disc.graph_[off], graph[off])
    assert disc.graph_.diagonal().all()
    assert not np.array_equal(graph, graph.T)  # orientation check is meaningful
    assert disc.edge_scores_.shape == (5, 5) and disc.lag_ == 3


def test_forecast_matches_manual_formula(var_data) -> None:  # type: ignore[no-untyped-def]
    X, _ = var_data
    disc = VARGrangerDiscoverer(lag=2).fit(X)
    prefix = X[None, 10:14]
    manual = disc.intercept_ + X[13] @ disc.coef_[0] + X[12] @ disc.coef_[1]
    np.testing.assert_allclose(disc.predict_next(prefix)[0], manual)


def test_restricted_forecaster_uses_only_parents(var_data) -> None:  # type: ignore[no-untyped-def]
    X, graph = var_data
    disc = GivenGraphDiscoverer(graph, lag=3).fit(X)
    parents = graph | np.eye(5, dtype=bool)
    assert np.all(disc.coef_[:, ~parents] == 0)
    full = VARGrangerDiscoverer(lag=3, restricted=False).fit(X)
    assert np.count_nonzero(full.coef_) > np.count_nonzero(disc.coef_)


def test_unrestricted_equals_statsmodels_var(var_data) -> None:  # type: ignore[no-untyped-def]
    from statsmodels.tsa.api import VAR

    X, _ = var_data
    ours = VARGrangerDiscoverer(lag=2, restricted=False).fit(X)
    res = VAR(X).fit(maxlags=2, trend="c")
    np.testing.assert_allclose(ours.intercept_, res.params[0], atol=1e-8)
    np.testing.assert_allclose(ours.coef_[0], res.params[1:6], atol=1e-8)


def test_constant_column_warns_and_is_isolated(var_data) -> None:  # type: ignore[no-untyped-def]
    X, _ = var_data
    X = X.copy()
    X[:, 2] = 1.5
    with pytest.warns(UserWarning, match="constant"):
        disc = VARGrangerDiscoverer().fit(X)
    assert not disc.graph_[2].any() and not disc.graph_[:, 2].any()
    assert np.allclose(disc.predict_next(X[None, :5])[0, 2], 1.5)


def test_bonferroni_is_sparser(var_data) -> None:  # type: ignore[no-untyped-def]
    X, _ = var_data
    a = VARGrangerDiscoverer(alpha=0.2).fit(X).graph_.sum()
    b = VARGrangerDiscoverer(alpha=0.2, correction="bonferroni").fit(X).graph_.sum()
    assert b <= a


def test_bad_inputs(var_data) -> None:  # type: ignore[no-untyped-def]
    X, graph = var_data
    with pytest.raises(ValueError, match="time steps"):
        VARGrangerDiscoverer(lag=3).fit(X[:20])
    with pytest.raises(ValueError, match="alpha"):
        VARGrangerDiscoverer(alpha=0.0).fit(X)
    with pytest.raises(ValueError, match="correction"):
        VARGrangerDiscoverer(correction="holm").fit(X)
    with pytest.raises(ValueError, match="graph"):
        GivenGraphDiscoverer(np.eye(3)).fit(X)
    with pytest.raises(NotFittedError, match="fit"):
        VARGrangerDiscoverer().predict_next(X[None])
    disc = GivenGraphDiscoverer(graph, lag=3).fit(X)
    with pytest.raises(ValueError, match="lag"):
        disc.predict_next(X[None, :2])
    with pytest.raises(ValueError, match="variables"):
        disc.predict_next(X[None, :5, :3])
