import cvxpy as cp
import numpy as np
import pytest

from isocal import NAFIRCalibrator, log_loss
from isocal.normalized_isotonic import normalized_isotonic_logloss, normalized_isotonic_objective


def _cvxpy_nafir(P, y, prior):
    n, K = P.shape
    th, inv = np.unique(P, return_inverse=True)
    idx = inv.reshape(n, K)
    lam = prior / (n + prior)
    phi = cp.Variable(th.size)
    obj = (
        sum(
            cp.log_sum_exp(phi[idx[i]])
            - (1 - lam) * phi[idx[i, y[i]]]
            - lam / K * cp.sum(phi[idx[i]])
            for i in range(n)
        )
        / n
    )
    # bounds only keep the exp-cone problem bounded; they are inactive at our tolerance
    prob = cp.Problem(cp.Minimize(obj), [cp.diff(phi) >= 0, phi <= 0, phi >= -40])
    prob.solve(solver="CLARABEL")
    return prob.value


@pytest.mark.parametrize("prior", [0.0, 1.0, 5.0])
@pytest.mark.parametrize("seed", range(3))
def test_objective_matches_exp_cone_solver(seed, prior):
    rng = np.random.default_rng(seed)
    n, K = 25, 3
    P = rng.dirichlet(np.full(K, 0.7), n)
    y = np.array([rng.choice(K, p=np.sqrt(p) / np.sqrt(p).sum()) for p in P])
    _, phi, info = normalized_isotonic_logloss(P, y, tol=1e-13, prior_count=prior)
    ref = _cvxpy_nafir(P, y, prior)
    assert info["objective"] == pytest.approx(ref, abs=1e-6)
    assert info["objective"] <= ref + 1e-7
    assert np.all(np.diff(phi) >= 0)
    _, inv = np.unique(P, return_inverse=True)
    obj = normalized_isotonic_objective(phi, inv.reshape(P.shape), y, np.ones(n), prior)
    assert obj == pytest.approx(info["objective"], abs=1e-12)


def test_never_worse_than_identity_on_calibration_set(small_problem):
    P, y = small_problem
    cal = NAFIRCalibrator(prior_count=0).fit(P, y)
    assert log_loss(y, cal.predict_proba(P)) <= log_loss(y, P) + 1e-9
    assert cal.objective_ == pytest.approx(log_loss(y, cal.predict_proba(P)), abs=1e-9)


def test_shared_monotone_map_preserves_order_within_rows(small_problem):
    P, y = small_problem
    cal = NAFIRCalibrator().fit(P, y)
    rng = np.random.default_rng(5)
    T = rng.dirichlet(np.ones(P.shape[1]), 300)
    Q = cal.predict_proba(T)
    # for every pair of classes in a row, p_a < p_b implies q_a <= q_b
    a = T[:, :, None] < T[:, None, :]
    assert np.all((Q[:, :, None] <= Q[:, None, :] + 1e-12)[a])
    assert np.all(np.diff(cal.log_map_) >= 0)


def test_binary_and_zeros():
    rng = np.random.default_rng(0)
    p = rng.random(100)
    P = np.column_stack([p, 1 - p])
    P[:5] = [1.0, 0.0]
    y = (rng.random(100) < p).astype(int)
    y[:2] = [0, 1]
    Q = NAFIRCalibrator().fit(P, y).predict_proba(P)
    assert np.all((Q >= 0) & (Q <= 1))
    np.testing.assert_allclose(Q.sum(axis=1), 1.0)


def test_prior_makes_the_fit_independent_of_max_iter():
    """Unsupported low values drift to -inf without the prior; with it the optimum is
    finite and reached early, so test log loss does not depend on when the solver stops."""
    rng = np.random.default_rng(7)
    n, K = 400, 10
    logits = rng.normal(size=(n, K)) * 4
    P = np.exp(logits - logits.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = P.argmax(1)  # labels only ever on the top class
    T = P[::-1].copy()
    y_t = rng.integers(0, K, n)  # test labels anywhere
    losses = [
        log_loss(y_t, NAFIRCalibrator(max_iter=it, tol=1e-300).fit(P, y).predict_proba(T))
        for it in (60, 600, 6000)
    ]
    assert max(losses) - min(losses) < 2e-3
    drift = [
        NAFIRCalibrator(prior_count=0, max_iter=it, tol=1e-300).fit(P, y).log_map_.min()
        for it in (20, 200)
    ]
    assert drift[1] < drift[0] - 1  # the unregularized map keeps sliding down


def test_binned_fit_matches_exact_fit():
    rng = np.random.default_rng(8)
    n, K = 4000, 6
    P = rng.dirichlet(np.full(K, 0.4), n)
    y = np.array([rng.choice(K, p=np.sqrt(p) / np.sqrt(p).sum()) for p in P])
    exact = NAFIRCalibrator(max_bins=None).fit(P, y)
    binned = NAFIRCalibrator(max_bins=512).fit(P, y)
    assert binned.thresholds_.size <= 512
    assert binned.objective_ == pytest.approx(exact.objective_, abs=2e-3)
    T = rng.dirichlet(np.full(K, 0.4), 1000)
    y_t = np.array([rng.choice(K, p=np.sqrt(p) / np.sqrt(p).sum()) for p in T])
    gap = log_loss(y_t, binned.predict_proba(T)) - log_loss(y_t, exact.predict_proba(T))
    assert abs(gap) < 3e-3
    assert np.abs(binned.predict_proba(T) - exact.predict_proba(T)).mean() < 2e-3
