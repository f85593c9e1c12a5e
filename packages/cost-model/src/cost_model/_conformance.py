"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import scipy.io
import scipy.sparse as sp
import torch

from cost_model import (
    CognateModel,
    MatrixFeaturizer,
    generate,
    load_mtx,
    load_mtx_folder,
    pairwise_rank_loss,
)
from cost_model.matrices import check_matrix


def _dense(A):
    return check_matrix(A).toarray()


def _featurize(A):
    return MatrixFeaturizer(8)(check_matrix(A))


def _generate(**kw):
    return generate(**kw).toarray()


def _write_mtx(folder):
    A = sp.csr_array(np.array([[1.0, 0, 2.0], [0, 0, 3.0], [4.0, 0, 0]]))
    scipy.io.mmwrite(str(folder / "a.mtx"), A)
    return folder / "a.mtx"


def _write_suitesparse(folder):
    for name in ("b1", "b2"):
        (folder / name).mkdir()
        scipy.io.mmwrite(str(folder / name / f"{name}.mtx"), sp.csr_array(np.eye(3) * 2))
        scipy.io.mmwrite(str(folder / name / f"{name}_b.mtx"), np.ones((3, 1)))
    return folder


def _cost_data():
    import cost_model as C

    ms = C.MatrixSet.synthetic(6, seed=0, rows=(128, 256), nnz=(300, 900))
    feat = C.MatrixFeaturizer(8)
    ds = C.collect(C.SimAccelBackend(), "spmm", ms, n_configs=6, seed=0, featurizer=feat)
    return ds.split(test_frac=0.34, seed=0)


class _Oracle:
    """A 'model' whose scores are the simulator's own costs (a perfect ranking)."""

    def __init__(self, backend):
        self.backend = backend

    def predict(self, A, configs, *, space, hardware, dense_width=64):
        return self.backend.cost("spmm", A, configs, dense_width)


_A = generate("uniform", 256, 256, 0.02, seed=0)


def _tune(budget, include_default=True, op="spmm", model=None):
    """The measured result of model-guided tuning on the simulated accelerator."""
    from cost_model import SimAccelBackend, tune

    be = SimAccelBackend()
    res = tune(model or _Oracle(be), _A, be, op, budget=budget, include_default=include_default)
    return {"config": res.config, "runtime_s": res.runtime_s, "n": len(res.measurements)}


def _select(n_candidates=16, k=3, seed=0, model=None, hardware=None):
    """The best ``k`` of ``n_candidates`` sampled configurations, scored by ``model``."""
    from cost_model import SimAccelBackend, select

    be = SimAccelBackend()
    return select(model or _Oracle(be), _A, be.space("spmm"), hardware=hardware or be.hardware,
                  n_candidates=n_candidates, k=k, seed=seed)  # fmt: skip


def _select_best(n_candidates=16, seed=0):
    """The configuration of lowest simulated cost among the candidates ``select`` draws."""
    from cost_model import SimAccelBackend

    be = SimAccelBackend()
    cands = be.space("spmm").sample(n_candidates, seed=seed, include_default=True)
    return cands[int(np.argmin(be.cost("spmm", _A, cands, 64)))]


def _best_cost():
    from cost_model import SimAccelBackend

    be = SimAccelBackend()
    return float(be.cost("spmm", _A, be.space("spmm").enumerate(), 64).min())


def _eval_scores(scores, per_matrix=False):
    from cost_model import evaluate_scores

    tr, _ = _DATA
    return evaluate_scores(tr, scores, per_matrix=per_matrix)


class _TrueRuntime:
    """A 'model' whose scores are the measured log runtimes (a perfect ranking)."""

    def score(self, ds):
        return np.log(ds.runtime)


def _evaluate(model=None, ks=(1, 5), on="train"):
    from cost_model import evaluate

    tr, te = _DATA
    return evaluate(_TrueRuntime() if model is None else model, tr if on == "train" else te, ks)


def _overlap(same=True):
    from cost_model import matrix_overlap

    tr, te = _DATA
    return matrix_overlap(tr, tr if same else te)


def _agreement(min_agreement=None):
    from cost_model import cross_run_agreement

    tr, _ = _DATA
    return cross_run_agreement(tr, tr, min_agreement=min_agreement)


_DATA = _cost_data()


def entries() -> list[dict]:
    rng = np.random.default_rng(0)
    dense = np.where(rng.random((12, 10)) < 0.3, rng.normal(size=(12, 10)), 0.0)
    s = torch.as_tensor(rng.normal(size=8))
    t = torch.as_tensor(rng.normal(size=8))
    g = torch.as_tensor([0, 0, 0, 1, 1, 1, 2, 2])
    tr, te = _cost_data()
    return [
        {"name": "check_matrix", "call": _dense, "kwargs": {"A": dense},
         "arrays": {"A": {"kind": "float", "ndim": 2}}, "rows": [["A"]],
         "order": "equivariant"},
        {"name": "MatrixFeaturizer", "call": _featurize, "kwargs": {"A": dense},
         "arrays": {"A": {"kind": "float", "ndim": 2}}, "order": None},
        {"name": "generate", "call": _generate,
         "kwargs": {"family": "uniform", "n_rows": 20, "n_cols": 16, "density": 0.2, "seed": 0},
         "params": {"n_rows": {"type": "int", "bad": [0]},
                    "density": {"type": "float", "bad": [0.0, 1.5, float("nan")]},
                    "family": {"type": "str", "bad": ["dense"]}}},
        {"name": "pairwise_rank_loss", "call": pairwise_rank_loss,
         "kwargs": {"scores": s, "log_runtime": t, "groups": g},
         "arrays": {"scores": "float", "log_runtime": "float", "groups": "int"},
         "rows": [["scores", "log_runtime", "groups"]], "order": "invariant",
         "params": {"margin": {"type": "float", "bad": [-1.0, float("nan")]}},
         "known": [{"kwargs": {"scores": torch.tensor([0.0, 5.0]),
                               "log_runtime": torch.tensor([0.0, 1.0]),
                               "groups": torch.tensor([0, 0])},
                    "check": lambda out: float(out) == 0.0,
                    "why": "the faster row scored lower by more than the margin costs nothing"}]},
        {"name": "load_mtx", "kind": "loader", "write": _write_mtx, "read": load_mtx,
         "check": lambda A: np.array_equal(A.toarray(), [[1, 0, 2], [0, 0, 3], [4, 0, 0]]),
         "corrupt": ["truncate", "header", "empty"]},
        {"name": "load_mtx_folder", "kind": "loader", "write": _write_suitesparse,
         "read": load_mtx_folder,
         "check": lambda ms: ms.names == ["b1", "b2"] and all(
             np.array_equal(A.toarray(), np.eye(3) * 2) for A in ms.matrices),
         "corrupt": [("garbled-member", lambda p: (p / "b1" / "b1.mtx").write_text("no\n")),
                     ("no-matrix", lambda p: [f.unlink() for f in p.rglob("*.mtx")])]},
        {"name": "CognateModel", "kind": "estimator", "cls": CognateModel,
         "init": {"het_sizes": {tr.hardware: tr.het_sizes}, "resolution": 8, "embed_dim": 8,
                  "het_dim": 4},
         "fit": {"ds": tr, "epochs": 1},
         "not_sklearn": "fit(ds) takes a CostDataset of (matrix, configuration, runtime) rows",
         "methods": {"score": {"ds": te}},
         "params": {"resolution": {"type": "int", "bad": [0]},
                    "embed_dim": {"type": "int", "bad": [0]},
                    "margin": {"type": "float", "bad": [float("nan"), -1.0]},
                    "loss": {"type": "str", "bad": ["hinge"]},
                    "mapper": {"type": "str", "bad": ["linear"]}},
         "grid": {"loss": ["mse_log"], "mapper": ["naive"]}},
        {"name": "evaluate_scores", "call": _eval_scores,
         "kwargs": {"scores": np.log(_DATA[0].runtime)},
         "arrays": {"scores": {"kind": "float", "ndim": 1}},
         "grid": {"per_matrix": [True]},
         "known": [{"kwargs": {"scores": np.log(_DATA[0].runtime)},
                    "check": lambda r: r["pair_acc"] == 1.0,
                    "why": "the true runtimes rank every pair right"}]},
        {"name": "evaluate", "call": _evaluate, "kwargs": {},
         "params": {"ks": {"bad": [(), (0,), (1.5,), "1"], "good": (1, 2)}},
         "grid": {"on": ["test"]},
         "known": [{"kwargs": {}, "check": lambda r: r["pair_acc"] == 1.0 and r["captured"] == 1.0
                    and r["top1"] == r["oracle"],
                    "why": "the true runtimes rank every pair right and find each fastest row"},
                   {"kwargs": {"model": object()}, "raises": ["model"],
                    "why": "an object without score"}]},
        {"name": "matrix_overlap", "call": _overlap, "kwargs": {},
         "known": [{"kwargs": {}, "check": lambda names: sorted(names) == sorted(_DATA[0].matrix_names),
                    "why": "a dataset overlaps itself entirely"}]},
        {"name": "cross_run_agreement", "call": _agreement, "kwargs": {},
         "params": {"min_agreement": {"type": "float", "bad": [1.5, -0.1, float("nan")], "good": 0.5}},
         "known": [{"kwargs": {}, "check": lambda a: a == 1.0,
                    "why": "a collection agrees with itself"}]},
        {"name": "tune", "call": _tune, "kwargs": {"budget": 3},
         "params": {"budget": {"type": "int", "bad": [0, 10**6]},
                    "op": {"type": "str", "bad": ["gemm"]}},
         "grid": {"include_default": [False]},
         "known": [{"kwargs": {"budget": 1, "include_default": False},
                    "check": lambda r: r["n"] == 1 and r["runtime_s"] == _best_cost(),
                    "why": "a perfect model finds the fastest configuration with one measurement"},
                   {"kwargs": {"model": object()}, "raises": ["model"],
                    "why": "an object without predict"}]},
        {"name": "select", "call": _select, "kwargs": {"n_candidates": 16, "k": 3},
         "params": {"n_candidates": {"type": "int", "bad": [0]},
                    "k": {"type": "int", "bad": [0, 17]},
                    "seed": {"type": "int"}},
         "known": [{"kwargs": {"n_candidates": 16, "k": 1},
                    "check": lambda r: len(r) == 1 and r[0] == _select_best(16),
                    "why": "a perfect model's top-1 is the fastest sampled configuration"},
                   {"kwargs": {"model": object()}, "raises": ["model"],
                    "why": "an object without predict"},
                   {"kwargs": {"hardware": 3}, "raises": ["hardware"],
                    "why": "hardware is a name"}]},
        *_timing_entries(),
    ]  # fmt: skip


def _measure(matrix_id, config, runtime_s, cv=0.01):
    from cost_model import Measurement

    return Measurement(matrix_id, "sim-cpu", "spmm", {"c": config}, runtime_s, cv, 0.0)


# matrix 0: a 10 % top gap resolved at 1 % CV; matrix 1: a 1 % gap drowned in 3 % CV
_MEASUREMENTS = [_measure(0, 0, 1.0), _measure(0, 1, 1.1), _measure(0, 2, 2.0),
                 _measure(1, 0, 1.01, 0.03), _measure(1, 1, 1.0, 0.03)]  # fmt: skip


def _timing_entries() -> list[dict]:
    from cost_model import get_backend, timing_quality

    return [
        {"name": "timing_quality", "call": timing_quality,
         "kwargs": {"measurements": _MEASUREMENTS},
         "params": {"cv_max": {"type": "float", "bad": [0.0, 1.0, float("nan")]}},
         "known": [{"kwargs": {"measurements": _MEASUREMENTS},
                    "check": lambda q: np.allclose(q["gap"], [0.1, 0.01])
                    and q["resolved"].tolist() == [True, False] and q["frac_resolved"] == 0.5
                    and q["median_cv"] == 0.01 and q["frac_cv_ok"] == 1.0,
                    "why": "gap 0.1 > 2 x 1 % CV is resolved; gap 0.01 < 2 x 3 % is not"},
                   {"kwargs": {"measurements": [*_MEASUREMENTS[:3], _measure(1, 0, 1.0)]},
                    "raises": ["matrix"], "check": None,
                    "why": "a matrix with one configuration cannot be ranked"},
                   {"kwargs": {"measurements": [*_MEASUREMENTS, _measure(2, 0, float("nan"))]},
                    "raises": ["measurements"], "check": None, "why": "a NaN runtime"},
                   {"kwargs": {"measurements": _MEASUREMENTS[0]}, "raises": ["measurements"],
                    "check": None, "why": "one Measurement, not a list"}]},
        {"name": "get_backend", "call": lambda name="sim-cpu": type(get_backend(name)).__name__,
         "kwargs": {},
         "params": {"name": {"type": "str", "bad": ["cuda", "SIM-CPU"]}},
         "known": [{"kwargs": {"name": n}, "check": functools.partial(operator.eq, c),
                    "why": f"{n} is the {c}"}
                   for n, c in (("scipy-cpu", "ScipyBackend"), ("torch-cpu", "TorchCPUBackend"),
                                ("sim-cpu", "SimCPUBackend"), ("sim-accel", "SimAccelBackend"))]
                  + [{"kwargs": {"name": ["sim-cpu"]}, "raises": ["name"], "check": None,
                      "why": "a list, not a name"}]},
    ]  # fmt: skip
