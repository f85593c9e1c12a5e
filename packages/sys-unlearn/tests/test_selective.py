import pickle

import numpy as np
import pytest
from sklearn.base import clone

from sys_unlearn import SelectiveSamplingClassifier, audit_unlearning


def naive_selective(Z: np.ndarray, tau: float, reg: float) -> list[int]:
    """Algorithm 1's query rule with A^{-1} recomputed from scratch at every step."""
    A = reg * np.eye(Z.shape[1])
    picked = []
    for t, z in enumerate(Z):
        if z @ np.linalg.inv(A) @ z > tau:
            picked.append(t)
            A = A + np.outer(z, z)
    return picked


def state(model: SelectiveSamplingClassifier) -> dict[str, np.ndarray]:
    return {
        "ids": model.stored_ids_.copy(),
        "coef": model.coef_.copy(),
        "intercept": model.intercept_.copy(),
        "A": model._A.copy(),
        "B": model._B.copy(),
    }


def test_query_rule_matches_brute_force(stream):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.6, reg=0.5).fit(X, y)
    Z = np.hstack([X, np.ones((len(X), 1))])
    expected = naive_selective(Z, len(X) ** -0.6, 0.5)
    np.testing.assert_array_equal(model.stored_ids_, expected)
    assert 0 < len(expected) < len(X)


def test_model_is_ridge_on_stored_points(stream):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.5, reg=2.0, fit_intercept=False).fit(X, y)
    Q = model.stored_ids_
    s = np.where(y[Q] == 1, 1.0, -1.0)
    w = np.linalg.solve(2.0 * np.eye(X.shape[1]) + X[Q].T @ X[Q], X[Q].T @ s)
    np.testing.assert_allclose(model.coef_[0], w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_delete", [1, 7, 30])
def test_unlearning_stored_points_is_exact(stream, n_delete):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    rng = np.random.default_rng(n_delete)
    gone = rng.choice(model.stored_ids_, n_delete, replace=False)
    model.unlearn(gone)
    core = model.stored_ids_
    assert not np.isin(gone, core).any()
    # a learner that only ever saw S' = Q \ U queries all of it and ends in the same state
    fresh = SelectiveSamplingClassifier(kappa=0.5, horizon=len(X))
    fresh.partial_fit(X[core], y[core], classes=[0, 1])
    assert len(fresh.stored_ids_) == len(core)
    np.testing.assert_allclose(fresh.coef_, model.coef_, atol=1e-10)
    np.testing.assert_allclose(fresh._A, model._A, atol=1e-10)
    np.testing.assert_allclose(fresh._A_inv, model._A_inv, atol=1e-8)
    report = audit_unlearning(model, X, y, gone)
    assert report.exact and report.deleted_still_stored == 0


def test_unlearning_non_stored_points_changes_nothing(stream):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    before = state(model)
    others = np.setdiff1d(np.arange(len(X)), model.stored_ids_)[:50]
    model.unlearn(others)
    after = state(model)
    for key in before:
        np.testing.assert_array_equal(before[key], after[key])


def test_deleted_data_is_erased_from_memory(stream):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    mem = model.memory_bytes()
    gone = model.stored_ids_[:3]
    rows = X[gone]
    model.unlearn(gone)
    assert model.memory_bytes() < mem
    Z = model._Z[:, :-1]
    assert not any(np.isclose(Z, r).all(axis=1).any() for r in rows)


def test_deleting_everything_returns_the_untrained_state(stream):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    model.unlearn(np.arange(len(X)))
    assert model.stored_ids_.size == 0
    np.testing.assert_allclose(model.coef_, 0, atol=1e-9)
    np.testing.assert_allclose(model._A, np.eye(X.shape[1] + 1), atol=1e-9)
    assert audit_unlearning(model, X, y, np.arange(len(X))).exact


def test_partial_fit_in_batches_equals_fit(stream):
    X, y = stream
    whole = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    parts = SelectiveSamplingClassifier(kappa=0.5, horizon=len(X))
    for chunk in np.array_split(np.arange(len(X)), 7):
        parts.partial_fit(X[chunk], y[chunk], classes=[0, 1])
    np.testing.assert_array_equal(whole.stored_ids_, parts.stored_ids_)
    np.testing.assert_allclose(whole.coef_, parts.coef_, atol=1e-10)


def test_multiclass_shares_the_query_set():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0) / 3
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order]
    model = SelectiveSamplingClassifier(kappa=0.8).fit(X, y)
    assert model.coef_.shape == (3, 4)
    assert model.decision_function(X).shape == (150, 3)
    assert model.score(X, y) > 0.75
    gone = model.stored_ids_[:5]
    assert audit_unlearning(model.unlearn(gone), X, y, gone).exact


def test_larger_kappa_stores_more_and_learns_better():
    from sys_unlearn import make_margin_stream

    X, y = make_margin_stream(3000, 10, margin=0.1, random_state=0)
    small = SelectiveSamplingClassifier(kappa=0.2).fit(X[:2000], y[:2000])
    large = SelectiveSamplingClassifier(kappa=0.7).fit(X[:2000], y[:2000])
    assert len(small.stored_ids_) < len(large.stored_ids_)
    assert large.score(X[2000:], y[2000:]) >= small.score(X[2000:], y[2000:])


def test_sklearn_protocol_and_pickle(stream):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.4, reg=3.0)
    assert model.get_params() == {"kappa": 0.4, "horizon": None, "reg": 3.0, "fit_intercept": True}
    model.set_params(kappa=0.5).fit(X, y)
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.predict(X), model.predict(X))
    assert clone(model).get_params()["kappa"] == 0.5
    assert set(np.unique(model.predict(X))) <= {0, 1}
