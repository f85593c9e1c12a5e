import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, RidgeClassifier

from sys_unlearn import NewtonRemovalLogisticRegression, RetrainingClassifier, SISAClassifier


def test_retraining_equals_fit_on_remaining(stream):
    X, y = stream
    model = RetrainingClassifier(LogisticRegression()).fit(X, y)
    gone = np.arange(0, 600, 7)
    model.unlearn(gone)
    keep = np.setdiff1d(np.arange(len(X)), gone)
    ref = LogisticRegression().fit(X[keep], y[keep])
    np.testing.assert_allclose(model.decision_function(X), ref.decision_function(X))
    np.testing.assert_array_equal(model.stored_ids_, keep)


def test_sisa_retrains_only_touched_shards(stream):
    X, y = stream
    model = SISAClassifier(n_shards=4, random_state=0).fit(X, y)
    before = list(model.estimators_)
    victim = 10
    model.unlearn([victim])
    touched = model.shard_of_[victim]
    for s in range(4):
        assert (model.estimators_[s] is before[s]) == (s != touched)
    rows = (model.shard_of_ == touched) & (np.arange(len(X)) != victim)
    ref = RidgeClassifier(alpha=1.0).fit(X[rows], y[rows])
    np.testing.assert_allclose(model.estimators_[touched].coef_, ref.coef_)
    assert model.score(X, y) > 0.8
    assert victim not in model.stored_ids_


def test_sisa_survives_single_class_and_empty_shards():
    X = np.arange(12, dtype=float).reshape(6, 2)
    y = np.array([0, 0, 0, 1, 1, 1])
    model = SISAClassifier(n_shards=3, random_state=1).fit(X, y)
    model.unlearn(np.flatnonzero(model.shard_of_ == 0))
    assert model.estimators_[0] is None
    assert model.predict(X).shape == (6,)


@pytest.mark.parametrize("n_remove", [1, 20])
def test_newton_removal_approximates_retraining(stream, n_remove):
    X, y = stream
    model = NewtonRemovalLogisticRegression(lam=1e-2).fit(X, y)
    gone = np.arange(n_remove) * 11
    model.unlearn(gone)
    keep = np.setdiff1d(np.arange(len(X)), gone)
    ref = NewtonRemovalLogisticRegression(lam=1e-2).fit(X[keep], y[keep])
    w, w_ref = model._w, ref._w
    assert np.linalg.norm(w - w_ref) < 1e-3 * np.linalg.norm(w_ref)
    assert model.residual_norm_ < 1e-2


def test_newton_matches_closed_form_gradient_zero_after_fit(stream):
    X, y = stream
    model = NewtonRemovalLogisticRegression(lam=1e-2, noise=0.5).fit(X, y)
    assert model.residual_norm_ < 1e-4
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1)


def test_newton_is_binary_only():
    X = np.random.default_rng(0).standard_normal((9, 2))
    with pytest.raises(ValueError, match="binary"):
        NewtonRemovalLogisticRegression().fit(X, np.arange(9) % 3)
    with pytest.raises(ValueError, match="lam"):
        NewtonRemovalLogisticRegression(lam=0).fit(X, np.arange(9) % 2)
