import cvxpy as cp
import numpy as np
import pytest
from sklearn.isotonic import isotonic_regression

from isocal.isotonic2d import best_upper_set_rank2d, isotonic_regression_rank2d


def _cvxpy_rank2d(rank, value, y, w):
    n = len(y)
    g = cp.Variable(n)
    cons = [
        g[i] <= g[j]
        for i in range(n)
        for j in range(n)
        if i != j and rank[i] <= rank[j] and value[i] <= value[j]
    ]
    cp.Problem(cp.Minimize(cp.sum(cp.multiply(w, cp.square(g - y)))), cons).solve(
        solver="OSQP", eps_abs=1e-10, eps_rel=1e-10, polishing=True, max_iter=200000
    )
    return g.value


@pytest.mark.parametrize("seed", range(6))
def test_matches_cvxpy_on_tiny_inputs(seed):
    rng = np.random.default_rng(seed)
    n = 22
    rank = rng.integers(0, 3, n)
    value = np.round(rng.random(n), 1)  # rounding creates ties
    y = (rng.random(n) < (rank / 3 + value) / 2).astype(float)
    w = rng.integers(1, 4, n).astype(float)
    ours = isotonic_regression_rank2d(rank, value, y, w)
    ref = _cvxpy_rank2d(rank, value, y, w)
    np.testing.assert_allclose(ours, ref, atol=1e-6)


def test_single_rank_equals_pav():
    rng = np.random.default_rng(1)
    value = rng.random(200)
    y = rng.random(200) + value
    w = rng.random(200) + 0.5
    ours = isotonic_regression_rank2d(np.zeros(200, int), value, y, w)
    order = np.argsort(value)
    ref = np.empty(200)
    ref[order] = isotonic_regression(y[order], sample_weight=w[order])
    np.testing.assert_allclose(ours, ref, atol=1e-10)


def test_solution_is_monotone_and_preserves_mean():
    rng = np.random.default_rng(2)
    n = 3000
    rank = rng.integers(0, 5, n)
    value = rng.random(n)
    y = (rng.random(n) < (rank / 5 + value) / 2).astype(float)
    g = isotonic_regression_rank2d(rank, value, y)
    for r in range(5):
        m = rank == r
        o = np.argsort(value[m])
        assert np.all(np.diff(g[m][o]) >= -1e-12)
    # across ranks: every point is <= the point right above it in the next rank
    for r in range(4):
        lo, hi = rank == r, rank == r + 1
        vh, gh = value[hi], g[hi]
        o = np.argsort(vh)
        pos = np.searchsorted(vh[o], value[lo])
        ok = pos < o.size
        assert np.all(g[lo][ok] <= gh[o][pos[ok]] + 1e-12)
    assert abs(g.mean() - y.mean()) < 1e-10  # L2 isotonic regression preserves the mean


def test_best_upper_set_brute_force():
    rng = np.random.default_rng(3)
    rank = np.array([0, 0, 1, 1, 2, 2, 1])
    value = np.array([0.1, 0.5, 0.2, 0.6, 0.05, 0.9, 0.4])
    gain = rng.normal(size=7)
    best, member = best_upper_set_rank2d(rank, value, gain)
    brute = 0.0
    for mask in range(1 << 7):
        sel = np.array([(mask >> i) & 1 for i in range(7)], bool)
        upper = all(
            sel[j] or not sel[i]
            for i in range(7)
            for j in range(7)
            if rank[i] <= rank[j] and value[i] <= value[j]
        )
        if upper:
            brute = max(brute, gain[sel].sum())
    assert best == pytest.approx(brute)
    assert gain[member].sum() == pytest.approx(brute)


def test_rejects_bad_shapes():
    with pytest.raises(ValueError, match="rank, value"):
        isotonic_regression_rank2d(np.zeros(3), np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="y"):
        isotonic_regression_rank2d(np.zeros(0), np.zeros(0), np.zeros(0))
