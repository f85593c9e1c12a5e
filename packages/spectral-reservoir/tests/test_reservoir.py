import numpy as np
import pytest
from sklearn.linear_model import Ridge

from spectral_reservoir import freqres_states, make_weights, model_space_features, states_batch


def test_weights_radius_density_and_seed():
    w = make_weights(3, [2, 5], n_reservoir=10, spectral_radius=(0.6, 0.9), rng=0)
    assert w.W_in.shape == (10, 3) and w.W_s.shape == (2, 10, 10) and w.W_c.shape == (2, 2, 10, 10)
    assert np.allclose(np.abs(np.linalg.eigvals(w.W_s[0])).max(), 0.6, atol=1e-8)
    assert np.allclose(np.abs(np.linalg.eigvals(w.W_c[1, 1])).max(), 0.9, atol=1e-8)
    assert np.count_nonzero(w.W_s[0]) == 100  # connectivity min(1, 10/H) = 1 -> dense
    w2 = make_weights(3, [2, 5], n_reservoir=10, spectral_radius=(0.6, 0.9), rng=0)
    assert np.array_equal(w.W_c, w2.W_c)
    sparse = make_weights(1, [3], n_reservoir=40, rng=0)
    assert 0.1 < np.count_nonzero(sparse.W_s[0]) / 1600 < 0.4


@pytest.mark.parametrize("leaky", [0.0, 0.3])
def test_vectorised_states_equal_the_reference_loop(leaky):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 2, 37))
    periods = np.array([1, 4, 9, 40])
    w = make_weights(2, periods, n_reservoir=6, rng=1)
    S = states_batch(X, w, leaky)
    assert S.shape == (3, 4, 37, 12)
    for b in range(3):
        for j, p in enumerate(periods):
            fwd = freqres_states(X[b], p, w.W_in, w.W_s[0], w.W_c[0, j], leaky)
            bwd = freqres_states(X[b][:, ::-1], p, w.W_in, w.W_s[1], w.W_c[1, j], leaky)[::-1]
            # the compiled kernel's rational tanh is within 3e-8 of np.tanh
            assert np.allclose(S[b, j], np.hstack([fwd, bwd]), atol=1e-6)


def test_compiled_kernel_equals_the_numpy_loop():
    from spectral_reservoir.reservoir import _numpy_run, _run

    rng = np.random.default_rng(3)
    w = make_weights(1, [2, 5, 11], n_reservoir=7, rng=0)
    U = rng.standard_normal((9, 40, 7))
    np.testing.assert_allclose(
        _run(U, w.W_s[0], w.W_c[0], w.periods, 0.2),
        _numpy_run(U, w.W_s[0], w.W_c[0], w.periods, 0.2), atol=1e-6, rtol=0,
    )  # fmt: skip


def test_limits_plain_esn_and_leak():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 20))
    w = make_weights(1, [3], n_reservoir=5, cyclic=False, rng=0)
    plain = freqres_states(x, 3, w.W_in, w.W_s[0], np.zeros((5, 5)))
    assert np.allclose(states_batch(x[None], w)[0, 0, :, :5], plain)
    assert np.abs(freqres_states(x, 3, w.W_in, w.W_s[0], w.W_c[0, 0], leaky=0.999999)).max() < 1e-5
    # leak by hand on 3 steps, H = 1
    Wi, Ws, Wc = np.array([[1.0]]), np.array([[0.5]]), np.array([[0.25]])
    h = freqres_states(np.array([[1.0, 2.0, -1.0]]), 2, Wi, Ws, Wc, leaky=0.5)
    h0 = 0.5 * np.tanh(1.0)
    h1 = 0.5 * np.tanh(2.0 + 0.5 * h0) + 0.5 * h0
    h2 = 0.5 * np.tanh(-1.0 + 0.5 * h1 + 0.25 * h0) + 0.5 * h1
    assert np.allclose(h[:, 0], [h0, h1, h2])


def test_readout_equals_sklearn_ridge():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((2, 3, 30))
    periods = np.array([1, 5])
    w = make_weights(3, periods, n_reservoir=4, rng=0)
    S = states_batch(X, w)
    F = model_space_features(X, S, periods, ridge=0.7)
    E = 8
    block = 2 * E * 3 + E
    assert F.shape == (2, 2 * block)
    for b in range(2):
        for j, p in enumerate(periods):
            Z = np.hstack([S[b, j, p - 1 : 29], S[b, j, 0 : 30 - p]])
            ref = Ridge(alpha=0.7, fit_intercept=False).fit(Z, X[b, :, p:].T).coef_.T
            got = F[b, j * block : j * block + 2 * E * 3].reshape(2 * E, 3)
            assert np.allclose(got, ref, atol=1e-8)
            assert np.allclose(F[b, j * block + 2 * E * 3 : (j + 1) * block], S[b, j].max(0))
