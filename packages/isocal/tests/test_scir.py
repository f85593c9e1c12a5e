import cvxpy as cp
import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from isocal import SCIRCalibrator, log_loss, sorted_cumulative, tie_groups


def test_sorted_cumulative():
    P = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0]])
    order, c = sorted_cumulative(P)
    np.testing.assert_array_equal(order, [[1, 2, 0], [2, 0, 1]])
    np.testing.assert_allclose(c, [[0.5, 0.8, 1.0], [1.0, 1.0, 1.0]])


@pytest.mark.parametrize("seed", range(3))
def test_fit_matches_bivariate_isotonic_qp(seed):
    """SCIR's fit is the L2 isotonic regression of the event 1[label in top r + 1] on
    (rank, cumulative); a label tied with others counts fractionally (random tie order)."""
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
    sp = np.take_along_axis(P, order, axis=1)
    tied = np.isclose(sp, sp[np.arange(n), lr][:, None], rtol=0, atol=0)
    a = np.argmax(tied, axis=1)
    b = K - 1 - np.argmax(tied[:, ::-1], axis=1)
    z = np.clip((np.arange(K)[None] - a[:, None] + 1) / (b - a + 1)[:, None], 0, 1).ravel()
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
    Q = SCIRCalibrator(prior_count=0, max_bins=None).fit(P, y).predict_proba(P)
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
    Q = SCIRCalibrator(prior_count=0).fit(P, y).predict_proba(P)
    np.testing.assert_allclose(Q, np.eye(3)[y], atol=1e-12)
    # with the default prior the lower ranks keep about 1 / (n K) instead of exactly 0
    Q = SCIRCalibrator().fit(P, y).predict_proba(P)
    assert np.all(Q > 0) and np.all(Q[np.arange(50), y] > 0.98)


def test_binned_fit_is_close_to_exact_and_bounded():
    rng = np.random.default_rng(3)
    n, K = 3000, 5
    P = rng.dirichlet(np.full(K, 0.5), n)
    y = np.array([rng.choice(K, p=p) for p in P])
    exact = SCIRCalibrator(max_bins=None).fit(P, y)
    binned = SCIRCalibrator(max_bins=256).fit(P, y)
    assert max(k.size for k in binned.knots_) <= 256
    T = rng.dirichlet(np.full(K, 0.5), 2000)
    y_t = np.array([rng.choice(K, p=p) for p in T])
    gap = log_loss(y_t, binned.predict_proba(T)) - log_loss(y_t, exact.predict_proba(T))
    assert abs(gap) < 3e-3
    assert np.abs(binned.predict_proba(T) - exact.predict_proba(T)).mean() < 5e-3


def test_tie_groups_and_tied_classes_share_mass():
    sp = np.array([[0.5, 0.2, 0.2, 0.1, 0.0, 0.0], [0.4, 0.3, 0.3, 0.0, 0.0, 0.0]])
    first, last = tie_groups(sp)
    np.testing.assert_array_equal(first, [[0, 1, 1, 3, 4, 4], [0, 1, 1, 3, 3, 3]])
    np.testing.assert_array_equal(last, [[0, 2, 2, 3, 5, 5], [0, 2, 2, 5, 5, 5]])
    rng = np.random.default_rng(4)
    P = np.round(rng.dirichlet(np.full(6, 0.3), 400), 1)
    P[:, 0] += 1 - P.sum(1)
    P = np.clip(P, 0, 1)
    P /= P.sum(1, keepdims=True)
    y = np.array([rng.choice(6, p=p) for p in P])
    cal = SCIRCalibrator().fit(P, y)
    Q = cal.predict_proba(P)
    same = P[:, :, None] == P[:, None, :]
    Qa = np.broadcast_to(Q[:, :, None], same.shape)
    Qb = np.broadcast_to(Q[:, None, :], same.shape)
    np.testing.assert_allclose(Qa[same], Qb[same], atol=1e-12)
    # permuting the columns permutes the output (no dependence on column order)
    perm = rng.permutation(6)
    inv = np.argsort(perm)
    y_perm = inv[y]
    Q2 = SCIRCalibrator().fit(P[:, perm], y_perm).predict_proba(P[:, perm])
    np.testing.assert_allclose(Q2, Q[:, perm], atol=1e-12)
