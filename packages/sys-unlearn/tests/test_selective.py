import pickle

import numpy as np
import pytest
from sklearn.base import clone

from sys_unlearn import SelectiveSamplingClassifier, audit_unlearning, states_equal


def naive_selective(Z: np.ndarray, tau: float, reg: float) -> list[int]:
    """Algorithm 1's query rule with A^{-1} recomputed from scratch at every step."""
    A = reg * np.eye(Z.shape[1])
    picked = []
    for t, z in enumerate(Z):
        if z @ np.linalg.inv(A) @ z > tau:
            picked.append(t)
            A = A + np.outer(z, z)
    return picked


def fresh_on(model, X, y, ids):
    """The same learner run afresh on the points ``ids`` (row numbers) of the stream."""
    f = SelectiveSamplingClassifier(
        kappa=model.kappa, horizon=model.horizon_, reg=model.reg, fit_intercept=model.fit_intercept
    )
    return f.partial_fit(X[ids], y[ids], sample_ids=ids, classes=model.classes_)


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
    # a learner that only ever saw S' = Q \ U stores all of it and ends in the same state
    equal, diff = states_equal(model.stored_state(), fresh_on(model, X, y, core).stored_state())
    assert equal, diff
    report = audit_unlearning(model, X, y, gone)
    assert report.exact and report.deleted_still_stored == 0


def test_non_stored_deletions_equal_the_stream_without_them_field_by_field(stream):
    """Deleting points that were never stored leaves exactly the state of the learner run on
    the stream without them: the state holds no log, counter or trace of the request."""
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    others = np.setdiff1d(np.arange(len(X)), model.stored_ids_)[::3]
    model.unlearn(others)
    for i in others[:20]:
        model.unlearn(int(i))  # repeated and one-at-a-time requests: still nothing recorded
    keep = np.setdiff1d(np.arange(len(X)), others)
    fresh = SelectiveSamplingClassifier(kappa=0.5, horizon=len(X))
    fresh.fit(X[keep], y[keep], sample_ids=keep)
    equal, _ = states_equal(model.stored_state(), fresh.stored_state(), atol=0.0)
    assert equal
    # nothing else is kept on the object beyond parameters, derived fields and this state
    private = {k for k in vars(model) if k.startswith("_")}
    assert private == {"_ids", "_row", "_Z", "_Y", "_A_inv", "_B"}
    assert set(model._row) == set(model._ids.tolist())


@pytest.mark.parametrize("seed", range(6))
def test_exactness_over_random_scales_and_deletion_orders(seed):
    """Property test: points of wildly different norms, deletions in random order and batches."""
    rng = np.random.default_rng(seed)
    n, d = 400, 4
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-3, 6, (n, 1)))
    y = (X @ rng.standard_normal(d) > 0).astype(int)
    model = SelectiveSamplingClassifier(kappa=0.6).fit(X, y)
    gone = rng.permutation(model.stored_ids_)[: max(1, len(model.stored_ids_) // 2)]
    for batch in np.array_split(gone, rng.integers(1, 5)):
        model.unlearn(batch)
    core = model.stored_ids_
    fresh = fresh_on(model, X, y, core)
    np.testing.assert_array_equal(fresh.stored_ids_, core)
    A = model.reg * np.eye(d + 1) + model._Z.T @ model._Z
    rel = np.linalg.norm(model._A_inv @ A - np.eye(d + 1), 2)
    assert rel < 1e-8
    np.testing.assert_allclose(model.coef_, fresh.coef_, rtol=1e-8, atol=1e-12)


def test_deleting_a_huge_point_keeps_the_inverse_exact_and_the_stream_identical():
    """A stored point 1e6 times larger than the rest: a Woodbury downdate would lose the
    inverse; the rebuild keeps it exact and the continuing stream queries the same points."""
    rng = np.random.default_rng(0)
    d = 5
    X = rng.standard_normal((1000, d)) / np.sqrt(d)
    X[50] *= 1e6  # early, so it is queried
    y = (X @ rng.standard_normal(d) > 0).astype(int)
    model = SelectiveSamplingClassifier(kappa=0.5, horizon=2000)
    model.partial_fit(X[:100], y[:100], sample_ids=np.arange(100), classes=[0, 1])
    assert 50 in model.stored_ids_
    model.unlearn(50)
    A = model.reg * np.eye(d + 1) + model._Z.T @ model._Z
    assert np.linalg.norm(model._A_inv @ A - np.eye(d + 1), 2) < 1e-8
    keep = model.stored_ids_  # S' = Q \ U: the learner that never saw the huge point's query
    ref = SelectiveSamplingClassifier(kappa=0.5, horizon=2000)
    ref.partial_fit(X[keep], y[keep], sample_ids=keep, classes=[0, 1])
    assert states_equal(model.stored_state(), ref.stored_state(), atol=1e-9)[0]
    rest = np.arange(100, 1000)
    model.partial_fit(X[rest], y[rest], sample_ids=rest)
    ref.partial_fit(X[rest], y[rest], sample_ids=rest)
    np.testing.assert_array_equal(model.stored_ids_, ref.stored_ids_)
    assert np.sum(model.stored_ids_ >= 100) > 0


def test_deleted_data_is_erased_from_memory(stream):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    mem = model.memory_bytes()
    old_buffer = model._Z
    gone = model.stored_ids_[:3]
    rows = X[gone]
    model.unlearn(gone)
    assert model.memory_bytes() < mem
    for buf in (model._Z[:, :-1], old_buffer[:, :-1]):  # the released buffer was zeroed too
        assert not any(np.isclose(buf, r).all(axis=1).any() for r in rows)


def test_deleting_everything_returns_the_untrained_state(stream):
    X, y = stream
    model = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    model.unlearn(np.arange(len(X)))
    assert model.stored_ids_.size == 0
    np.testing.assert_allclose(model.coef_, 0, atol=1e-9)
    np.testing.assert_allclose(model._A_inv, np.eye(X.shape[1] + 1), atol=1e-12)
    assert audit_unlearning(model, X, y, np.arange(len(X))).exact


def test_partial_fit_in_batches_equals_fit(stream):
    X, y = stream
    whole = SelectiveSamplingClassifier(kappa=0.5).fit(X, y)
    parts = SelectiveSamplingClassifier(kappa=0.5, horizon=len(X))
    for chunk in np.array_split(np.arange(len(X)), 7):
        parts.partial_fit(X[chunk], y[chunk], sample_ids=chunk, classes=[0, 1])
    np.testing.assert_array_equal(whole.stored_ids_, parts.stored_ids_)
    np.testing.assert_allclose(whole.coef_, parts.coef_, atol=1e-10)


def test_custom_ids_name_the_points(stream):
    X, y = stream
    ids = 10_000 + np.arange(len(X))[::-1] * 3
    model = SelectiveSamplingClassifier(kappa=0.5).fit(X, y, sample_ids=ids)
    assert np.isin(model.stored_ids_, ids).all()
    target = int(model.stored_ids_[2])
    model.unlearn(target)
    assert target not in model.stored_ids_


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
