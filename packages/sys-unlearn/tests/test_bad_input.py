import copy

import numpy as np
import pytest

from sys_unlearn import (
    DisagreementSamplingClassifier,
    NewtonRemovalLogisticRegression,
    RetrainingClassifier,
    SelectiveSamplingClassifier,
    SISAClassifier,
    linear_hypotheses,
    make_margin_stream,
)

MODELS = [
    lambda: SelectiveSamplingClassifier(kappa=0.5),
    lambda: DisagreementSamplingClassifier(linear_hypotheses(5, 32), max_mistakes=2),
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
    with pytest.raises(TypeError, match="X"):
        make().fit(np.full((4, 2), "a"), [0, 1, 0, 1])


@pytest.mark.parametrize("make", MODELS)
def test_bad_requests_leave_the_model_unchanged(make, stream):
    X, y = stream
    model = make().fit(X, y)
    model.unlearn([int(model.stored_ids_[0])])
    snapshot = copy.deepcopy(model.__dict__)
    preds = model.predict(X)
    stored = model.stored_ids_[1]
    for ids, exc, match in [
        ([stored, len(X)], ValueError, "unknown"),
        ([stored, -1], ValueError, "unknown"),
        ([stored, stored], ValueError, "repeated"),
        ([stored, int(snapshot.get("_deleted", {0}).copy().pop())], ValueError, "already"),
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
        SelectiveSamplingClassifier().partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match="classes"):
        SelectiveSamplingClassifier(horizon=10).partial_fit(X, y)
    model = SelectiveSamplingClassifier(horizon=1000).partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match="not in classes"):
        model.partial_fit(X[:3], [0, 1, 2])
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
