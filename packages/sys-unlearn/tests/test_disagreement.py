import numpy as np
import pytest

from sys_unlearn import DisagreementSamplingClassifier, audit_unlearning, linear_hypotheses


def naive_cal(P: np.ndarray, y: np.ndarray, m: int) -> list[int]:
    mistakes = np.zeros(P.shape[1], dtype=int)
    picked = []
    for t in range(len(P)):
        alive = mistakes <= m
        if alive.any() and len(set(P[t, alive])) > 1:
            picked.append(t)
            mistakes += P[t] != y[t]
    return picked


@pytest.mark.parametrize("max_mistakes", [0, 2])
def test_query_rule_matches_brute_force(stream, max_mistakes):
    X, y = stream
    H = linear_hypotheses(X.shape[1], 64, random_state=1)
    model = DisagreementSamplingClassifier(H, max_mistakes=max_mistakes).fit(X, y)
    np.testing.assert_array_equal(model.stored_ids_, naive_cal(H(X), y, max_mistakes))


@pytest.mark.parametrize("max_mistakes", [0, 3])
def test_unlearning_is_exact(stream, max_mistakes):
    X, y = stream
    H = linear_hypotheses(X.shape[1], 256, random_state=2)
    model = DisagreementSamplingClassifier(H, max_mistakes=max_mistakes).fit(X, y)
    assert 3 < len(model.stored_ids_) < len(X)
    gone = model.stored_ids_[::3]
    model.unlearn(gone)
    fresh = DisagreementSamplingClassifier(H, max_mistakes=max_mistakes).fit(
        X[model.stored_ids_], y[model.stored_ids_]
    )
    assert len(fresh.stored_ids_) == len(model.stored_ids_)
    np.testing.assert_array_equal(fresh.mistakes_, model.mistakes_)
    assert audit_unlearning(model, X, y, gone).exact


def test_non_stored_deletion_is_free(stream):
    X, y = stream
    model = DisagreementSamplingClassifier(linear_hypotheses(5, 64), max_mistakes=1).fit(X, y)
    before = (model.stored_ids_.copy(), model.mistakes_.copy())
    model.unlearn(np.setdiff1d(np.arange(len(X)), model.stored_ids_)[:20])
    np.testing.assert_array_equal(before[0], model.stored_ids_)
    np.testing.assert_array_equal(before[1], model.mistakes_)


def test_realizable_class_learns_the_target():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 1))
    thresholds = np.linspace(-1, 1, 101)

    def H(X):
        return (X[:, :1] > thresholds[None, :]).astype(int)

    y = (X[:, 0] > 0.3).astype(int)
    model = DisagreementSamplingClassifier(H).fit(X, y)
    assert len(model.stored_ids_) < 20  # binary search: ~log2(101) labels
    assert model.score(X, y) > 0.97
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_bad_hypotheses():
    X = np.zeros((4, 2))
    with pytest.raises(TypeError, match="hypotheses"):
        DisagreementSamplingClassifier(None).fit(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="hypotheses"):
        DisagreementSamplingClassifier(lambda X: np.zeros(len(X))).fit(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="max_mistakes"):
        DisagreementSamplingClassifier(linear_hypotheses(2), max_mistakes=-1).fit(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="n_hypotheses"):
        linear_hypotheses(2, 0)
