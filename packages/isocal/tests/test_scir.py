import cvxpy as cp
import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from isocal import SCIRCalibrator, sorted_cumulative


def test_sorted_cumulative():
    P = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0]])
    order, c = sorted_cumulative(P)
    np.testing.assert_array_equal(order, [[1, 2, 0], [2, 0, 1]])
    np.testing.assert_allclose(c, [[0.5, 0.8, 1.0], [1.0, 1.0, 1.0]])


@pytest.mark.parametrize("seed", range(3))
def test_fit_matches_bivariate_isotonic_qp(seed):
    """SCIR's fit is the L2 isotonic regression of 1[label in top r] on (rank, cumulative)."""
    rng = np.random.default_rng(seed)
    n, K = 12, 3
    P = np.round(rng.dirichlet(np.full(K, 0.8), n), 2)
    P[:, -1] = 1 - P[:, :-1].sum(axis=1)
    P = np.clip(P, 0, 1)
    P /= P.sum(1, keepdims=True)
    y = rng.integers(0, K, n)
    y[:K] = np.arange(K)
    cal = SCIRCalibrator().fit(P, y)
    order, c = sorted_cumulative(P)
    lr = np.argmax(order == y[:, None], axis=1)
    # full problem including the last rank, with all pairwise dominance constraints
    r = np.repeat(np.arange(K)[None], n, 0).ravel()
    v = c.ravel()
    z = (lr[:, None] <= np.arange(K)[None]).astype(float).ravel()
    g = cp.Variable(n * K)
    cons = [
        g[a] <= g[b]
        for a in range(n * K)
        for b in range(n * K)
        if a != b and r[a] <= r[b] and v[a] <= v[b]
    ]
    cp.Problem(cp.Minimize(cp.sum_squares(g - z)), cons).solve(
        solver="OSQP", eps_abs=1e-10, eps_rel=1e-10, polishing=True, max_iter=200000
    )
    ref = g.value.reshape(n, K)
    np.testing.assert_allclose(ref[:, -1], 1.0, atol=1e-6)  # last rank is exactly 1
    _, G = cal.calibrated_cumulative(P)
    np.testing.assert_allclose(G, np.maximum.accumulate(ref, axis=1), atol=1e-6)
    np.testing.assert_allclose(G, ref, atol=1e-6)  # the exact fit is already monotone in rank


def test_binary_case_is_isotonic_on_top_probability():
    rng = np.random.default_rng(0)
    p = rng.random(300)
    P = np.column_stack([p, 1 - p])
    y = (rng.random(300) > p).astype(int)
    Q = SCIRCalibrator().fit(P, y).predict_proba(P)
    top = P.max(axis=1)
    top_cls = P.argmax(axis=1)
    iso = IsotonicRegression(out_of_bounds="clip").fit(top, (y == top_cls).astype(float))
    np.testing.assert_allclose(Q[np.arange(300), top_cls], iso.predict(top), atol=1e-10)


def test_outputs_are_distributions_and_cumulative_monotone(small_problem):
    P, y = small_problem
    cal = SCIRCalibrator().fit(P, y)
    rng = np.random.default_rng(1)
    T = rng.dirichlet(np.full(P.shape[1], 0.3), 500)
    T[:20, 1:] = 0
    T[:20, 0] = 1  # one-hot rows (zeros in input)
    Q = cal.predict_proba(T)
    assert np.all((Q >= 0) & (Q <= 1))
    np.testing.assert_allclose(Q.sum(axis=1), 1.0)
    _, G = cal.calibrated_cumulative(T)
    assert np.all(np.diff(G, axis=1) >= -1e-12)
    for vals in cal.values_:
        assert np.all(np.diff(vals) >= -1e-12)


def test_perfectly_separated_identity():
    # Label is always the top class: calibrated top-1 cumulative is 1, so q = one-hot of argmax.
    rng = np.random.default_rng(2)
    P = rng.dirichlet(np.ones(3), 50)
    y = P.argmax(axis=1)
    assert set(y) == {0, 1, 2}
    Q = SCIRCalibrator().fit(P, y).predict_proba(P)
    np.testing.assert_allclose(Q, np.eye(3)[y], atol=1e-12)
