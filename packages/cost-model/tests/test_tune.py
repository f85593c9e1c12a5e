"""Model-guided tuning: the loop measures exactly the budget, in the model's order."""

import numpy as np
import pytest

import cost_model as C


class _Oracle:
    """A 'model' whose scores are the simulator's own costs: the ranking is perfect."""

    def __init__(self, backend, op):
        self.backend, self.op = backend, op

    def predict(self, A, configs, *, space, hardware, dense_width=64):
        return self.backend.cost(self.op, A, configs, dense_width)


class _Random:
    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def predict(self, A, configs, **kw):
        return self.rng.random(len(configs))


@pytest.fixture(scope="module")
def matrix():
    return C.MatrixSet.synthetic(1, seed=3, rows=(512, 1024), nnz=(3e3, 8e3)).matrices[0]


def test_a_perfect_model_finds_the_oracle_with_one_measurement(matrix):
    be = C.SimAccelBackend()
    space = be.space("spmm")
    cands = space.enumerate()
    costs = be.cost("spmm", matrix, cands, 64)
    res = C.tune(_Oracle(be, "spmm"), matrix, be, "spmm", budget=1, include_default=False)
    assert len(res.measurements) == 1 and res.n_candidates == len(cands)
    assert res.runtime_s == pytest.approx(costs.min())
    assert res.config == cands[int(np.argmin(costs))]


def test_tune_measures_the_budget_and_never_loses_to_the_default(matrix):
    be = C.SimAccelBackend()
    space = be.space("spmm")
    t_def = be.cost("spmm", matrix, [space.default()], 64)[0]
    for budget in (1, 5, 40):
        res = C.tune(_Random(budget), matrix, be, "spmm", budget=budget)
        assert len(res.measurements) == budget
        assert any(m.config == space.default() for m in res.measurements)
        assert res.runtime_s == min(m.runtime_s for m in res.measurements) <= t_def
    sub = space.sample(30, seed=0, include_default=True)
    res = C.tune(_Random(), matrix, be, "spmm", budget=3, candidates=sub)
    assert res.n_candidates == 30 and all(m.config in sub for m in res.measurements)


def test_a_trained_cognate_model_plugs_in(matrix):
    ms = C.MatrixSet.synthetic(8, seed=0, rows=(256, 1024), nnz=(1e3, 6e3))
    feat = C.MatrixFeaturizer(16)
    ds = C.collect(C.SimAccelBackend(), "spmm", ms, n_configs=8, seed=0, featurizer=feat)
    model = C.CognateModel({ds.hardware: ds.het_sizes}, resolution=16, embed_dim=16)
    model.fit(ds, epochs=1)
    res = C.tune(model, matrix, C.SimAccelBackend(), "spmm", budget=4)
    assert len(res.measurements) == 4
    with pytest.raises(ValueError, match="resolution"):
        model.predict(matrix, [C.SimAccelBackend().space("spmm").default()],
                      space=C.SimAccelBackend().space("spmm"), hardware=ds.hardware,
                      resolution=32)  # fmt: skip


@pytest.mark.parametrize(
    ("kw", "err", "word"),
    [
        ({"budget": 0}, ValueError, "budget"),
        ({"budget": 10_000}, ValueError, "budget"),
        ({"budget": 2.0}, TypeError, "budget"),
        ({"budget": True}, TypeError, "budget"),
        ({"budget": 1, "candidates": []}, ValueError, "candidates"),
    ],
)
def test_bad_budgets_raise(matrix, kw, err, word):
    with pytest.raises(err, match=word):
        C.tune(_Random(), matrix, C.SimAccelBackend(), "spmm", **kw)


def test_a_model_without_predict_is_rejected(matrix):
    with pytest.raises(TypeError, match="predict"):
        C.tune(object(), matrix, C.SimAccelBackend(), "spmm", budget=1)
