import copy

import numpy as np
import pytest

from sys_unlearn import (
    NewtonRemovalLogisticRegression,
    OracleSelectiveSamplingClassifier,
    RetrainingClassifier,
    SelectiveSamplingClassifier,
    SISAClassifier,
    make_margin_stream,
)

MODELS = [
    lambda: SelectiveSamplingClassifier(kappa=0.5),
    lambda: OracleSelectiveSamplingClassifier(kappa=0.5),
    lambda: RetrainingClassifier(),
    lambda: SISAClassifier(n_shards=3),
    lambda: NewtonRemovalLogisticRegression(),
]


@pytest.mark.parametrize("make", MODELS)
def test_bad_fit_input(make, stream):
    X, y = stream
    with pytest.raises(ValueError, match="X"):
        make().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="X"):
        make().fit(np.empty((0, 5)), np.empty(0))
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        make().fit(bad, y)
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match="X"):
        make().fit(bad, y)
    with pytest.raises(ValueError, match="y"):
        make().fit(X, y[:-1])
    # scikit-learn's convention (its estimator checks match on it): non-numeric strings raise
    # ValueError "could not convert string to float"
    with pytest.raises(ValueError, match="X"):
        make().fit(np.full((4, 2), "a"), [0, 1, 0, 1])


BASELINES = MODELS[2:]


@pytest.mark.parametrize("make", BASELINES)
def test_bad_requests_leave_the_baselines_unchanged(make, stream):
    """Baselines store every point, so they can (and do) reject unknown or repeated ids."""
    X, y = stream
    model = make().fit(X, y)
    model.unlearn([0])
    snapshot = copy.deepcopy(model.__dict__)
    preds = model.predict(X)
    for ids, exc, match in [
        ([5, len(X)], ValueError, "unknown"),
        ([5, -1], ValueError, "unknown"),
        ([5, 0], ValueError, "already"),
        ([[1, 2]], ValueError, "sample_ids"),
        ([0.5], TypeError, "sample_ids"),
    ]:
        with pytest.raises(exc, match=match):
            model.unlearn(ids)
    np.testing.assert_array_equal(model.predict(X), preds)
    assert set(model.__dict__) == set(snapshot)
    for key, value in snapshot.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(model.__dict__[key], value)


@pytest.mark.parametrize("make", MODELS[:2])
def test_samplers_accept_any_ids_and_reject_malformed_requests(make, stream):
    """The samplers keep no record of what they saw, so unknown, repeated or already-deleted
    ids are indistinguishable from never-stored ones: no-ops. Malformed requests raise."""
    X, y = stream
    model = make().fit(X, y)
    stored = model.stored_ids_
    model.unlearn([int(stored[0]), int(stored[0]), len(X) + 5, -3])
    model.unlearn([int(stored[0])])
    np.testing.assert_array_equal(model.stored_ids_, stored[1:]) if make is MODELS[0] else None
    snapshot = {k: np.copy(v) for k, v in model.stored_state().items()}
    for ids, exc in [([[1, 2]], ValueError), ([0.5], TypeError), ("ab", TypeError)]:
        with pytest.raises(exc, match="sample_ids"):
            model.unlearn(ids)
    for key, value in model.stored_state().items():
        np.testing.assert_array_equal(value, snapshot[key])
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.full((2, 5), np.nan))


def test_inputs_are_not_mutated(stream):
    X, y = stream
    X0, y0 = X.copy(), y.copy()
    for make in MODELS:
        make().fit(X, y).unlearn([0, 1, 2])
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_selective_hyperparameters(stream):
    X, y = stream
    for kwargs, name in [
        ({"kappa": 0}, "kappa"),
        ({"kappa": 1.5}, "kappa"),
        ({"reg": 0}, "reg"),
        ({"reg": np.nan}, "reg"),
        ({"horizon": 0}, "horizon"),
    ]:
        with pytest.raises(ValueError, match=name):
            SelectiveSamplingClassifier(**kwargs).fit(X, y)
    with pytest.raises(ValueError, match="horizon"):
        SelectiveSamplingClassifier().partial_fit(X, y, np.arange(len(X)), classes=[0, 1])
    with pytest.raises(ValueError, match="classes"):
        SelectiveSamplingClassifier(horizon=10).partial_fit(X, y, np.arange(len(X)))
    with pytest.raises(ValueError, match="sample_ids"):
        SelectiveSamplingClassifier(horizon=10).partial_fit(X, y, classes=[0, 1])
    ids = np.arange(len(X))
    model = SelectiveSamplingClassifier(horizon=1000).partial_fit(X, y, ids, classes=[0, 1])
    with pytest.raises(ValueError, match="not in classes"):
        model.partial_fit(X[:3], [0, 1, 2], sample_ids=[1001, 1002, 1003])
    with pytest.raises(ValueError, match="already stored"):
        model.partial_fit(X[:3], y[:3], sample_ids=model.stored_ids_[:3])
    with pytest.raises(ValueError, match="distinct"):
        SelectiveSamplingClassifier().fit(X[:3], y[:3], sample_ids=[1, 1, 2])
    with pytest.raises(ValueError, match="2 classes"):
        SelectiveSamplingClassifier().fit(X, np.zeros(len(X)))


def test_empty_request_is_a_no_op(stream):
    X, y = stream
    model = SelectiveSamplingClassifier().fit(X, y)
    ids = model.stored_ids_.copy()
    model.unlearn([])
    np.testing.assert_array_equal(model.stored_ids_, ids)


def test_margin_stream():
    X, y = make_margin_stream(2000, 8, margin=0.2, random_state=0)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)
    assert set(np.unique(y)) == {0, 1}
    # the generator's first draw is the separating direction u
    w = np.random.default_rng(0).standard_normal(8)
    w /= np.linalg.norm(w)
    assert (np.abs(X @ w) >= 0.2 - 1e-9).all() and ((X @ w > 0) == (y == 1)).all()
    with pytest.raises(ValueError, match="margin"):
        make_margin_stream(10, 3, margin=1.0)
    with pytest.raises(ValueError, match="label_noise"):
        make_margin_stream(10, 3, label_noise=0.5)


def test_demo_runs():
    from sys_unlearn import demo

    out = demo(seed=0)
    assert "exact=True" in out and "selective" in out
