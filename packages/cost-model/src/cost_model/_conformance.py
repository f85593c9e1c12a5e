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
        {"name": "matrix_overlap", "call": _overlap, "kwargs": {}, "grid": {"same": [False]},
         "known": [{"kwargs": {}, "check": lambda names: sorted(names) == sorted(_DATA[0].matrix_names),
                    "why": "a dataset overlaps itself entirely"}]},
        {"name": "cross_run_agreement", "call": _agreement, "kwargs": {},
         "params": {"min_agreement": {"type": "float", "bad": [1.5, -0.1, float("nan")], "good": 0.5}},
         "known": [{"kwargs": {}, "check": lambda a: a == 1.0,
                    "why": "a collection agrees with itself"}]},
        {"name": "tune", "call": _tune, "kwargs": {"budget": 3},
         "params": {"budget": {"type": "int", "bad": [0, 10**6]},
                    "op": {"type": "str", "bad": ["gemm"]}},
         "grid": {"include_default": [False], "op": ["sddmm"]},
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
        *_space_entries(),
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
         "kwargs": {}, "grid": {"name": ["scipy-cpu", "torch-cpu", "sim-accel"]},
         "params": {"name": {"type": "str", "bad": ["cuda", "SIM-CPU"]}},
         "known": [{"kwargs": {"name": n}, "check": functools.partial(operator.eq, c),
                    "why": f"{n} is the {c}"}
                   for n, c in (("scipy-cpu", "ScipyBackend"), ("torch-cpu", "TorchCPUBackend"),
                                ("sim-cpu", "SimCPUBackend"), ("sim-accel", "SimAccelBackend"))]
                  + [{"kwargs": {"name": ["sim-cpu"]}, "raises": ["name"], "check": None,
                      "why": "a list, not a name"}]},
    ]  # fmt: skip


def _knob(name="format", values=("csr", "bsr"), group="hom"):
    import cost_model as C

    k = C.Knob(name, values, group)
    return {"name": k.name, "values": k.values, "group": k.group}


def _knobs():
    import cost_model as C

    return [C.Knob("format", ("csr", "bsr"), "hom"), C.Knob("block", (1, 2, 4), "hom"),
            C.Knob("unroll", (1, 4), "het")]  # fmt: skip


def _space(knobs=None, default=None, valid=None, n=50, seed=0, include_default=True):
    import cost_model as C

    knobs = _knobs() if knobs is None else knobs
    default = {"format": "csr", "block": 1, "unroll": 1} if default is None else default
    sp_ = C.ScheduleSpace(knobs, default, valid)
    cfgs = sp_.sample(n, seed=seed, include_default=include_default)
    codes = [sp_.encode(c) for c in cfgs]
    return {"configs": cfgs, "round_trip": [sp_.decode(c["hom"], c["het"]) for c in codes]}


def _decode(hom, het):
    import cost_model as C

    return C.ScheduleSpace(_knobs(), {"format": "csr", "block": 1, "unroll": 1}).decode(hom, het)


def _mset(matrices=None, names=None):
    import cost_model as C

    ms = C.MatrixSet([_A, _A.T.tocsr()] if matrices is None else matrices,
                     ["a", "b"] if names is None else names)  # fmt: skip
    return {"names": ms.names, "nnz": [int(A.nnz) for A in ms.matrices]}


def _synthetic(n=3, seed=0, rows=(64, 128), nnz=(200, 400), families=("uniform", "banded"),
               shuffled=0.0):  # fmt: skip
    import cost_model as C

    ms = C.MatrixSet.synthetic(n, seed=seed, rows=rows, nnz=nnz, families=families,
                               shuffled=shuffled)  # fmt: skip
    return {"names": ms.names, "shapes": [A.shape for A in ms.matrices]}


def _ds_fields():
    tr, _ = _DATA
    import dataclasses

    return {f.name: getattr(tr, f.name) for f in dataclasses.fields(tr)}


def _dataset(**kw):
    import cost_model as C

    ds = C.CostDataset(**(_ds_fields() | kw))
    return {"n": len(ds), "m": ds.n_matrices, "runtime": ds.runtime}


def _write_ds(folder):
    _DATA[0].save(folder / "ds.npz")
    return folder / "ds.npz"


def _same_ds(a, b):
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in
               ("images", "scalars", "workload", "matrix_index", "hom", "het", "runtime",
                "is_default")) and a.matrix_names == b.matrix_names  # fmt: skip


def _export_ds(ds, folder):
    folder.mkdir(parents=True, exist_ok=True)
    ds.save(folder / "again.npz")
    return folder / "again.npz"


def _drop_npz(key):
    def mutate(path):
        z = dict(np.load(path))
        z.pop(key)
        np.savez(path, **z)

    return mutate


def _collect(n_configs=4, seed=0, backend="sim-cpu", protocol="median", mset=None, timer=None):
    import cost_model as C

    ms = C.MatrixSet.synthetic(3, seed=0, rows=(64, 128), nnz=(200, 400)) if mset is None else mset
    be = C.get_backend(backend) if isinstance(backend, str) else backend
    ds = C.collect(be, "spmm", ms, n_configs=n_configs, seed=seed, timer=timer,
                   featurizer=C.MatrixFeaturizer(8), protocol=protocol)  # fmt: skip
    return {"runtime": ds.runtime, "m": ds.n_matrices, "default": ds.is_default}


def _timer(warmup=1, repeats=3, stat="median", min_time=0.0, fn=None):
    import cost_model as C

    calls = []
    t = C.Timer(warmup, repeats, stat, min_time)
    t((lambda: calls.append(1)) if fn is None else fn)
    return {"calls": len(calls)}


def _measured(backend="sim-cpu", configs=None, dense_width=16, check=False, seed=0):
    import cost_model as C

    be = C.get_backend(backend) if isinstance(backend, str) else backend
    space = (be if hasattr(be, "space") else C.SimCPUBackend()).space("spmm")
    cfgs = space.sample(3, seed=0) if configs is None else configs
    out = C.measure(be, "spmm", _A, cfgs, dense_width=dense_width, check=check, seed=seed,
                    timer=C.Timer(0, 1))  # fmt: skip
    sim = getattr(be, "simulated", False)
    return {
        "configs": [m.config for m in out],
        "runtime": [m.runtime_s for m in out] if sim else len(out),
    }


def _interleaved(rounds=2, retest=1, dense_width=8, min_time=0.0, configs=None):
    import cost_model as C

    be = C.get_backend("scipy-cpu")
    cfgs = be.space("spmm").sample(3, seed=0) if configs is None else configs
    out, info = C.measure_interleaved(be, "spmm", _A, cfgs, dense_width=dense_width,
                                      rounds=rounds, retest=retest, min_time=min_time)  # fmt: skip
    return {
        "configs": [m.config for m in out],
        "top2": sorted(info["top2"]),
        "retested": info["agree"] is not None,
    }


def _sim_cost(kind="SimCPUBackend", **kw):
    import cost_model as C

    be = getattr(C, kind)(**kw)
    return be.cost("spmm", _A, be.space("spmm").sample(4, seed=0), 16)


def _kernel_result(kind="ScipyBackend", **kw):
    """The backend's prepared SpMM on every sampled configuration, against the dense product."""
    import cost_model as C
    from cost_model.kernels import make_operands, reference

    be = getattr(C, kind)(**kw)
    ops = make_operands("spmm", _A, 8, 0)
    ref = reference("spmm", _A, ops)
    errs = [float(np.abs(np.asarray(be.prepare("spmm", _A, c, ops)()) - ref).max())
            for c in be.space("spmm").sample(4, seed=0)]  # fmt: skip
    return {"max_err": max(errs), "hardware": be.hardware}


_FT: dict = {}


def _source_model():
    if "m" not in _FT:
        tr, _ = _DATA
        torch.manual_seed(0)
        _FT["m"] = CognateModel({tr.hardware: tr.het_sizes}, resolution=8, embed_dim=8,
                                het_dim=4).fit(tr, epochs=1)  # fmt: skip
    return _FT["m"]


def _finetune(strategy="cognate", lr=1e-3, epochs=1, val_frac=0.0, patience=2, seed=0,
              model=None, few=None):  # fmt: skip
    import cost_model as C

    m = C.finetune(_source_model() if model is None else model, _DATA[1] if few is None else few,
                   strategy=strategy, lr=lr, epochs=epochs, val_frac=val_frac,
                   patience=patience, seed=seed)  # fmt: skip
    return {"params": [p.detach().clone() for p in m.parameters()] if hasattr(m, "parameters")
            else None, "same_object": m is _source_model()}  # fmt: skip


def _target_data():
    import cost_model as C

    if "tgt" not in _FT:
        ms = C.MatrixSet.synthetic(6, seed=5, rows=(128, 256), nnz=(300, 900))
        ms = C.MatrixSet(ms.matrices, [f"target_{i}" for i in range(len(ms))])
        ds = C.collect(C.SimCPUBackend(), "spmm", ms, n_configs=6, seed=0,
                       featurizer=C.MatrixFeaturizer(8))  # fmt: skip
        _FT["tgt"] = ds.split(test_frac=0.34, seed=0)
    return _FT["tgt"]


def _experiment(fracs=(0.5,), seeds=(0,), strategies=("cognate", "zero_shot"), by="pairs",
                pretrain=False, val_frac=0.0, tgt_test=None):  # fmt: skip
    import cost_model as C

    src = _DATA[0]
    tt, te = _target_data()
    r = C.run_experiment(src, tt, te if tgt_test is None else tgt_test, fracs=fracs, seeds=seeds,
                         strategies=strategies, src_epochs=1, tgt_epochs=1, by=by,
                         pretrain=pretrain, val_frac=val_frac,
                         model_kwargs={"resolution": 8, "embed_dim": 8, "het_dim": 4})  # fmt: skip
    return {"keys": sorted((row["strategy"], row["frac"], row["seed"]) for row in r.rows)}


def _space_entries() -> list[dict]:
    import cost_model as C

    ints = {"type": "int", "bad": [0, -1, 1.5]}
    cfgs = C.SimCPUBackend().space("spmm").sample(3, seed=0)
    return [
        {"name": "Knob", "call": _knob, "kwargs": {},
         "grid": {"group": [{"grid_value": "het",
                             "kwargs": {"name": "unroll", "values": (1, 4), "group": "het"}}]},
         "fixed": {"name": "a knob's name is its identity (data), not a switch; the het grid "
                           "point and the known cases use other names"},
         "params": {"values": {"bad": ["csr", (), ("csr", "csr"), ("csr", "ell")]},
                    "group": {"bad": ["shared", None]}, "name": {"bad": ["colour", 3, ""]}},
         "known": [{"kwargs": {"name": "unroll", "values": [1, 2], "group": "het"},
                    "check": lambda r: r["values"] == (1, 2),
                    "why": "a list of values is stored as a tuple; het knobs take any name"},
                   {"kwargs": {"name": "block", "values": (True, 2), "group": "hom"},
                    "raises": ["block"], "check": None,
                    "why": "True is not the shared value 1 (True in (1, 2) holds in Python)"}]},
        {"name": "ScheduleSpace", "call": _space, "kwargs": {},
         "params": {"knobs": {"bad": [[], _knobs()[0], ["format"], _knobs() + _knobs()[:1]]},
                    "default": {"bad": [{"format": "csr"}, {"format": "bsr", "block": 1, "unroll": 1},
                                        [("format", "csr")]]},
                    "valid": {"bad": ["bsr"]}, "n": ints, "seed": {"type": "int", "bad": [-1]},
                    "include_default": {"bad": ["yes"]}},
         "grid": {"include_default": [False]},
         "known": [{"kwargs": {}, "check": lambda r: r["configs"] == r["round_trip"]
                    and len(r["configs"]) == 6
                    and r["configs"][0] == {"format": "csr", "block": 1, "unroll": 1},
                    "why": "the 6 valid configs (block 1 iff not BSR), default first; "
                           "decode inverts encode"},
                   {"kwargs": {"n": 2, "include_default": False},
                    "check": lambda r: len(r["configs"]) == 2, "why": "n distinct configs"}]},
        {"name": "ScheduleSpace.decode", "call": _decode,
         "kwargs": {"hom": np.array([1, 1, 0, 0, 0]), "het": np.array([1])},
         "known": [{"kwargs": {"hom": np.array([1, 1, 0, 0, 0]), "het": np.array([-1])},
                    "raises": ["het"], "check": None,
                    "why": "a negative code (it wrapped to the last value)"},
                   {"kwargs": {"hom": np.array([9, 1, 0, 0, 0]), "het": np.array([0])},
                    "raises": ["hom"], "check": None, "why": "no tenth format"},
                   {"kwargs": {"hom": np.array([1, 1, 0, 0, 0]), "het": np.array([1])},
                    "check": lambda c: c == {"format": "csr", "block": 1, "unroll": 4},
                    "why": "codes are 1 + the shared-vocabulary index and the het value index"}]},
        {"name": "MatrixSet", "call": _mset, "kwargs": {},
         "params": {"names": {"bad": [["a"], ["a", "a"], ["a", 2], "ab"]},
                    "matrices": {"bad": [[_A.toarray()], [_A.toarray(), np.full((3, 3), np.nan)],
                                         "A"]}},
         # dense examples: the suite's mutation check cannot compare scipy.sparse objects
         "known": [{"kwargs": {"matrices": [_A.toarray(), _A.T.toarray()]},
                    "check": lambda r: r["nnz"] == [_A.nnz, _A.nnz],
                    "why": "dense matrices are stored as CSR with their nonzeros"}]},
        {"name": "MatrixSet.synthetic", "call": _synthetic, "kwargs": {},
         "params": {"n": ints, "rows": {"bad": [(128, 64), (0, 8)]},
                    "nnz": {"bad": [(-1, 10)]}, "families": {"bad": ["uniform", (), ("ell",)]},
                    "shuffled": {"type": "float", "bad": [1.5, -0.1]}},
         "known": [{"kwargs": {"n": 4}, "check": lambda r: r["names"][2] == "uniform_2"
                    and all(a == b and 64 <= a <= 128 for a, b in r["shapes"]),
                    "why": "families cycled; square sizes inside rows"}]},
        {"name": "CostDataset", "call": _dataset, "kwargs": {},
         "params": {"matrix_index": {"bad": [_ds_fields()["matrix_index"] + 100,
                                             _ds_fields()["matrix_index"].astype(float)]},
                    "het": {"bad": [_ds_fields()["het"] + 50, -_ds_fields()["het"] - 1]},
                    "hom": {"bad": [_ds_fields()["hom"][:, :2]]},
                    "images": {"bad": [_ds_fields()["images"][:2],
                                       _ds_fields()["images"] * np.nan]},
                    "matrix_names": {"bad": [["x"], "abcd"]},
                    "het_sizes": {"bad": [(), (0,) * len(_ds_fields()["het_sizes"])]},
                    "runtime": {"bad": [-_ds_fields()["runtime"]]}},
         "known": [{"kwargs": {}, "check": lambda r: r["m"] == 4 and r["n"] == 24,
                    "why": "4 training matrices x 6 configurations"}]},
        {"name": "CostDataset.load", "kind": "loader", "write": _write_ds,
         "read": C.CostDataset.load, "check": lambda ds: _same_ds(ds, _DATA[0]),
         "export": _export_ds, "same": _same_ds,
         "corrupt": ["truncate", "empty", ("no-runtime", _drop_npz("runtime")),
                     ("no-meta", _drop_npz("meta"))]},
        {"name": "collect", "call": _collect, "kwargs": {}, "grid": {"backend": ["sim-accel"]},
         "fixed": {"protocol": "'interleaved' times a measured backend and raises on the "
                               "simulated one (known case); measure_interleaved has its own entry"},
         "params": {"n_configs": ints, "seed": {"type": "int", "bad": [-1], "good": 0},
                    "protocol": {"type": "str", "bad": ["mean"]},
                    "backend": {"bad": [object()]},
                    "mset": {"bad": [[_A.toarray()], C.MatrixSet()]}, "timer": {"bad": [5]}},
         "known": [{"kwargs": {}, "check": lambda r: r["m"] == 3
                    and r["default"].sum() == 3 and len(r["runtime"]) == 12,
                    "why": "n_configs per matrix, the default among them"},
                   {"kwargs": {"protocol": "interleaved"}, "raises": ["simulated"],
                    "check": None, "why": "interleaving times a measured backend"}]},
        {"name": "Timer", "call": _timer, "kwargs": {}, "grid": {"stat": ["min", "mean"]},
         "params": {"warmup": {"type": "int", "bad": [-1, 1.5, "1"], "good": 1},
                    "repeats": {"type": "int", "bad": [0, 2.5], "good": 3},
                    "stat": {"type": "str", "bad": ["max"]},
                    "min_time": {"type": "float", "bad": [-1.0, 60.0, float("nan")], "good": 0.0},
                    "fn": {"bad": [3]}},
         "known": [{"kwargs": {"warmup": 2, "repeats": 3},
                    "check": lambda r: r["calls"] == 5, "why": "warm-up calls, then one per repeat"}]},
        {"name": "measure", "call": _measured, "kwargs": {}, "grid": {"backend": ["sim-accel"]},
         "fixed": {"check": "verifies measured kernels against the dense product: the "
                            "scipy-cpu known case runs it (the simulators compute no product)"},
         "params": {"dense_width": {"type": "int", "bad": [0, 8.0], "good": 16},
                    "configs": {"bad": [[], cfgs[0], [{"format": "ell"}]]},
                    "backend": {"bad": [object()]}},
         "known": [{"kwargs": {}, "check": lambda r: r["configs"] == cfgs
                    and all(t > 0 for t in r["runtime"]),
                    "why": "one positive simulated runtime per configuration, in order"},
                   {"kwargs": {"backend": "scipy-cpu", "check": True,
                               "configs": C.get_backend("scipy-cpu").space("spmm").sample(2)},
                    "check": lambda r: r["runtime"] == 2,
                    "why": "every measured kernel agrees with the dense reference (check=True)"}]},
        {"name": "measure_interleaved", "call": _interleaved, "kwargs": {},
         "deterministic": False,  # the top two are whichever ran fastest
         "params": {"rounds": {"type": "int", "bad": [0, 1.5], "good": 2},
                    "retest": {"type": "int", "bad": [-1], "good": 1},
                    "dense_width": {"type": "int", "bad": [0], "good": 8},
                    "min_time": {"type": "float", "bad": [-0.1, 60.0], "good": 0.0},
                    "configs": {"bad": [[{"format": "csr"}], {"format": "csr"}]}},
         "known": [{"kwargs": {"retest": 0}, "check": lambda r: not r["retested"]
                    and len(r["configs"]) == 3, "why": "retest=0 skips the re-measurement"}]},
        {"name": "SimCPUBackend", "call": _sim_cost, "kwargs": {"kind": "SimCPUBackend"}, "fixed": {"kind": "selects the backend this entry covers (one entry per backend)"},
         "params": {"cache_bytes": {"type": "float", "bad": [0.0, -1.0, float("inf"), "1e5"],
                                    "good": 2.0**18}},
         "known": [{"kwargs": {"kind": "SimCPUBackend", "cache_bytes": 2.0**18},
                    "check": lambda c: np.array_equal(c, _sim_cost()),
                    "why": "the default cache size, given explicitly"}]},
        {"name": "SimAccelBackend", "call": _sim_cost, "kwargs": {"kind": "SimAccelBackend"}, "fixed": {"kind": "selects the backend this entry covers (one entry per backend)"},
         "params": {"n_pe": {"type": "int", "bad": [0, 2.5], "good": 64},
                    "buffer_bytes": {"type": "float", "bad": [0.0, float("nan")], "good": 16384.0}},
         "known": [{"kwargs": {"kind": "SimAccelBackend"}, "check": lambda c: np.all(c > 0),
                    "why": "positive simulated costs"}]},
        {"name": "ScipyBackend", "call": _kernel_result, "kwargs": {"kind": "ScipyBackend"}, "fixed": {"kind": "selects the backend this entry covers (one entry per backend)"},
         "params": {"reorder": {"bad": ["yes", 1]}, "threads": {"bad": [(0,), "2", ()]}},
         "known": [{"kwargs": {"kind": "ScipyBackend"}, "check": lambda r: r["max_err"] < 1e-5,
                    "why": "every schedule computes the dense product (float32 operands)"},
                   {"kwargs": {"kind": "ScipyBackend", "reorder": True},
                    "check": lambda r: r["max_err"] < 1e-5 and r["hardware"] == "scipy-cpu-reorder",
                    "why": "a reordered schedule returns rows in the original order"}]},
        {"name": "TorchCPUBackend", "call": _kernel_result, "kwargs": {"kind": "TorchCPUBackend"}, "fixed": {"kind": "selects the backend this entry covers (one entry per backend)"},
         "params": {"threads": {"bad": [(0,)]}, "formats": {"bad": [("coo",), ("csr", "ell"), "csr"]}},
         "known": [{"kwargs": {"kind": "TorchCPUBackend"}, "check": lambda r: r["max_err"] < 1e-4,
                    "why": "every schedule computes the dense product (float32)"}]},
        {"name": "finetune", "call": _finetune, "kwargs": {},
         "grid": {"strategy": ["naive", "head_only"]},
         "params": {"strategy": {"type": "str", "bad": ["full"]},
                    "val_frac": {"type": "float", "bad": [-0.2, 1.0, "0.2"], "good": 0.0},
                    "seed": {"type": "int", "bad": [-1], "good": 0},
                    "model": {"bad": ["model"]}, "few": {"bad": [[1, 2]]}},
         "known": [{"kwargs": {}, "check": lambda r: not r["same_object"],
                    "why": "a fine-tuned copy; the source model is not modified"}]},
        {"name": "run_experiment", "call": _experiment, "kwargs": {},
         "grid": {"by": ["matrices"], "pretrain": [True]},
         "params": {"fracs": {"bad": [(0.0,), (1.5,), (0.5, 0.5), 0.5]},
                    "seeds": {"bad": [(-1,), (0.5,), ()]},
                    "strategies": {"bad": ["cognate", ("oracle",)]},
                    "by": {"type": "str", "bad": ["rows"]}, "pretrain": {"bad": ["no"]},
                    "val_frac": {"type": "float", "bad": [1.0, -0.5], "good": 0.0},
                    "tgt_test": {"bad": [_DATA[0], "test"]}},
         "known": [{"kwargs": {"fracs": (0.5, 1.0), "seeds": (0, 1)},
                    "check": lambda r: len(r["keys"]) == 6
                    and sum(k[0] == "zero_shot" for k in r["keys"]) == 2,
                    "why": "a row per frac x seed for cognate; zero-shot (no target data) "
                           "once per seed"}]},
    ]  # fmt: skip
