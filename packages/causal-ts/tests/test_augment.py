import numpy as np
import pytest

from causal_ts.augment import (
    CausalityDisturbingAugmentor,
    CausalityPreservingAugmentor,
    dfs_subgraph,
)
from causal_ts.data import simulate_var, sliding_windows
from causal_ts.discovery import GivenGraphDiscoverer

# 0 -> 1 -> 2, 0 -> 3; 4 isolated (row = cause)
GRAPH = np.eye(5, dtype=bool)
GRAPH[0, 1] = GRAPH[1, 2] = GRAPH[0, 3] = True


@pytest.fixture(scope="module")
def fitted() -> tuple[GivenGraphDiscoverer, np.ndarray]:
    X, _ = simulate_var(5, 400, seed=0)
    disc = GivenGraphDiscoverer(GRAPH, lag=2).fit(X)
    return disc, sliding_windows(X, 6)[:16]


def test_cpa_changes_only_cause_and_effects(fitted) -> None:  # type: ignore[no-untyped-def]
    disc, x = fitted
    x0 = x.copy()
    out = CausalityPreservingAugmentor(disc, noise_level=0.5, rng=0)(x, start=0)
    np.testing.assert_array_equal(x, x0)
    diff = out != x
    allowed = np.zeros(diff.shape[1:], dtype=bool)
    allowed[4, 0] = True  # noise at t_n = W - 2 on the cause
    allowed[5, [1, 3]] = True  # effects at the last step
    assert not diff[:, ~allowed].any()
    assert diff[:, 4, 0].all()


def test_cpa_effects_equal_forecast_of_perturbed_prefix(fitted) -> None:  # type: ignore[no-untyped-def]
    disc, x = fitted
    out = CausalityPreservingAugmentor(disc, noise_level=0.3, rng=1)(x, start=0)
    expected = disc.predict_next(out[:, :-1])
    np.testing.assert_allclose(out[:, -1, [1, 3]], expected[:, [1, 3]])


def test_cpa_zero_noise_gives_clean_forecast(fitted) -> None:  # type: ignore[no-untyped-def]
    disc, x = fitted
    out = CausalityPreservingAugmentor(disc, noise_level=0.0, rng=1)(x, start=0)
    np.testing.assert_allclose(out[:, -1, [1, 3]], disc.predict_next(x[:, :-1])[:, [1, 3]])
    np.testing.assert_array_equal(out[:, :-1], x[:, :-1])


def test_cpa_no_effects_only_noise(fitted) -> None:  # type: ignore[no-untyped-def]
    disc, x = fitted
    out = CausalityPreservingAugmentor(disc, noise_level=0.5, noise_step="last", rng=2)(x, start=4)
    diff = out != x
    assert diff[:, -1, 4].all() and diff.sum() == x.shape[0]


def test_cpa_per_sample_starts(fitted) -> None:  # type: ignore[no-untyped-def]
    disc, x = fitted
    starts = np.arange(x.shape[0]) % 5
    out = CausalityPreservingAugmentor(disc, noise_level=0.5, rng=3)(x, start=starts)
    diff = out != x
    assert diff[np.arange(x.shape[0]), 4, starts].all()


def test_dfs_cutoff_extremes() -> None:
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(dfs_subgraph(GRAPH, 0, 0.0, rng), [0, 1, 2, 3])
    np.testing.assert_array_equal(dfs_subgraph(GRAPH, 1, 0.0, rng), [1, 2])
    np.testing.assert_array_equal(dfs_subgraph(GRAPH, 0, 1.0, rng), [0])
    # follows outgoing edges only (a transposed graph would reach 0 from 1)
    assert 0 not in dfs_subgraph(GRAPH, 1, 0.0, rng)


def test_cda_changes_within_subgraph_and_steps() -> None:
    x = np.random.default_rng(0).normal(size=(8, 10, 5))
    cands = (0.1, 0.2, 0.3, 0.4, 0.5)
    cda = CausalityDisturbingAugmentor(GRAPH, cutoff_prob=0.0, bias_candidates=cands, rng=1)
    out, info = cda(x, start=0)
    np.testing.assert_array_equal(info.subgraph, [0, 1, 2, 3])
    assert info.steps.size == 5 and np.unique(info.steps).size == 5
    delta = out - x
    mask = np.zeros((10, 5), dtype=bool)
    mask[np.ix_(info.steps, info.subgraph)] = True
    assert np.all(delta[:, ~mask] == 0)
    vals = np.round(np.abs(delta[:, mask]), 12)
    assert set(np.unique(vals)) <= set(cands)
    assert (delta[:, mask] != 0).all()


def test_cda_modes() -> None:
    x = np.zeros((2, 4, 5))
    _out, info = CausalityDisturbingAugmentor(GRAPH, subgraph="all", rng=0)(x)
    np.testing.assert_array_equal(info.subgraph, np.arange(5))
    _out, info = CausalityDisturbingAugmentor(GRAPH, cutoff_prob=1.0, rng=0)(x, start=2)
    np.testing.assert_array_equal(info.subgraph, [2])


def test_bad_inputs(fitted) -> None:  # type: ignore[no-untyped-def]
    disc, x = fitted
    with pytest.raises(ValueError, match="noise_step"):
        CausalityPreservingAugmentor(disc, noise_step="first")
    with pytest.raises(ValueError, match="noise_level"):
        CausalityPreservingAugmentor(disc, noise_level=-1.0)
    with pytest.raises(ValueError, match="x"):
        CausalityPreservingAugmentor(disc)(x[0])
    with pytest.raises(ValueError, match="variables"):
        CausalityPreservingAugmentor(disc)(x[:, :, :3])
    with pytest.raises(ValueError, match="bias_candidates"):
        CausalityDisturbingAugmentor(GRAPH, bias_candidates=(-0.1,))
    with pytest.raises(ValueError, match="cutoff_prob"):
        CausalityDisturbingAugmentor(GRAPH, cutoff_prob=1.5)
    with pytest.raises(ValueError, match="graph"):
        CausalityDisturbingAugmentor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        CausalityDisturbingAugmentor(GRAPH)(np.full((1, 3, 5), np.nan))
