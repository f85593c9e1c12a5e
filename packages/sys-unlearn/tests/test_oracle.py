import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge

from sys_unlearn import (
    OracleSelectiveSamplingClassifier,
    audit_unlearning,
    make_margin_stream,
    memory_bound,
)


def test_linear_oracle_width_is_the_leverage():
    """With a ridge oracle the perturbation width is exactly sqrt(beta * x^T A^{-1} x)."""
    X, y = make_margin_stream(300, 4, margin=0.1, random_state=0)
    model = OracleSelectiveSamplingClassifier(beta=2.0, weight=0.7).fit(X, y)
    XQ = X[model.stored_ids_]
    A = np.eye(4) + XQ.T @ XQ
    lev = np.einsum("ij,jk,ik->i", X[:20], np.linalg.inv(A), X[:20])
    np.testing.assert_allclose(model.width(X[:20]), np.sqrt(2.0 * lev), rtol=1e-6)
    # and f_hat is ridge regression of the +-1 labels on the stored points
    s = np.where(y[model.stored_ids_] == 1, 1.0, -1.0)
    w = np.linalg.solve(A, XQ.T @ s)
    np.testing.assert_allclose(model.decision_function(X[:20]), X[:20] @ w, atol=1e-10)


@pytest.mark.parametrize("kappa", [0.3, 0.5])
def test_memory_bound_holds_for_the_linear_oracle(kappa):
    X, y = make_margin_stream(20_000, 6, margin=0.05, label_noise=0.05, random_state=1)
    model = OracleSelectiveSamplingClassifier(kappa=kappa, beta=1.0).fit(X, y)
    bound = memory_bound(6, len(X), model.threshold_, 1.0, 1.0)
    assert 0 < len(model.stored_ids_) <= bound
    assert len(model.stored_ids_) < 0.2 * len(X)
    assert model.score(X, y) > 0.85


@pytest.mark.parametrize("oracle", [None, Ridge(alpha=1.0, fit_intercept=False)])
def test_disagreement_rule_brute_force(oracle):
    """Every stream point is stored iff |f_hat(x)| <= width(x) and width(x) > tau at its time;
    the closed-form default path and the generic oracle path agree with it."""
    X, y = make_margin_stream(150, 3, margin=0.05, label_noise=0.1, random_state=2)
    model = OracleSelectiveSamplingClassifier(oracle=oracle, kappa=0.5).fit(X, y)
    tau, stored = model.threshold_, []
    for t in range(len(X)):
        XQ = X[stored]
        s = np.where(y[stored] == 1, 1.0, -1.0)
        A = np.eye(3) + XQ.T @ XQ
        fx = 0.0 if not stored else X[t] @ np.linalg.solve(A, XQ.T @ s)
        width = np.sqrt(X[t] @ np.linalg.solve(A, X[t]))
        if abs(fx) <= width and width > tau:
            stored.append(t)
    np.testing.assert_array_equal(model.stored_ids_, stored)


@pytest.mark.parametrize("oracle", [None, KernelRidge(alpha=1.0, kernel="rbf", gamma=2.0)])
def test_unlearning_replays_to_the_state_of_a_run_on_the_survivors(oracle):
    X, y = make_margin_stream(250, 3, margin=0.05, label_noise=0.1, random_state=3)
    model = OracleSelectiveSamplingClassifier(oracle=oracle, kappa=0.5).fit(X, y)
    gone = model.stored_ids_[::3]
    model.unlearn(gone)
    assert not np.isin(gone, model.stored_ids_).any()
    report = audit_unlearning(model, X, y, gone)
    assert report.exact and report.deleted_still_stored == 0
    before = model.stored_state()
    model.unlearn(np.setdiff1d(np.arange(len(X)), model.stored_ids_)[:30])  # never stored
    after = model.stored_state()
    for key in before:
        np.testing.assert_array_equal(before[key], after[key])


def test_general_oracle_learns_a_nonlinear_boundary():
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (900, 2))
    y = (np.linalg.norm(X, axis=1) < 0.6).astype(int)
    linear = OracleSelectiveSamplingClassifier(kappa=0.5).fit(X[:400], y[:400])
    kernel = OracleSelectiveSamplingClassifier(
        oracle=KernelRidge(alpha=0.1, kernel="rbf", gamma=4.0), kappa=0.5
    ).fit(X[:400], y[:400])
    assert kernel.score(X[400:], y[400:]) > linear.score(X[400:], y[400:]) + 0.1
    assert len(kernel.stored_ids_) < 200


def test_bad_parameters():
    X, y = make_margin_stream(50, 3, random_state=0)
    for kwargs, name in [
        ({"kappa": 0}, "kappa"),
        ({"kappa": 2.0}, "kappa"),
        ({"beta": -1}, "beta"),
    ]:
        with pytest.raises(ValueError, match=name):
            OracleSelectiveSamplingClassifier(**kwargs).fit(X, y)
    with pytest.raises(ValueError, match="binary"):
        OracleSelectiveSamplingClassifier().fit(X, np.arange(50) % 3)
    model = OracleSelectiveSamplingClassifier(oracle=Ridge()).fit(X, y)
    with pytest.raises(TypeError, match="sample_ids"):
        model.unlearn([0.5])


@pytest.mark.parametrize("oracle", [None, Ridge(alpha=1.0, fit_intercept=False)])
def test_inputs_too_small_to_query_raise_and_leave_the_model_unchanged(oracle):
    # at input scale 1e-3 Algorithm 2 once stored 0 points and predicted a constant, silently
    X, y = make_margin_stream(400, 4, margin=0.1, random_state=0)
    model = OracleSelectiveSamplingClassifier(oracle=oracle).fit(X, y)
    state = model.stored_state()
    with pytest.raises(ValueError, match="X: no point's confidence width exceeds the floor"):
        model.fit(X * 1e-3, y)
    np.testing.assert_array_equal(model.stored_state()["ids"], state["ids"])
    assert model.score(X, y) > 0.8
    with pytest.raises(ValueError, match="rescale X"):
        OracleSelectiveSamplingClassifier(oracle=oracle).fit(X * 1e-3, y)
