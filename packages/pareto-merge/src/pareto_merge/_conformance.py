"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from pareto_merge import (
    LazyStateDict,
    ParetoMerger,
    adamerging,
    check_preference,
    check_state_dicts,
    cross_entropy_objective,
    dominates,
    entropy_objective,
    hypervolume,
    load_state_dict,
    load_state_dicts,
    pareto_mask,
    save_state_dict,
    simplex_grid,
    task_arithmetic,
    task_vectors,
    ties_merge,
    tune_task_arithmetic,
    weight_average,
    weighted_task_arithmetic,
)


def _models():
    g = torch.Generator().manual_seed(0)
    theta0 = {"w": torch.randn(4, 3, generator=g), "b": torch.zeros(4)}
    ft = [
        {k: v + 0.1 * torch.randn(v.shape, generator=g) for k, v in theta0.items()}
        for _ in range(2)
    ]
    return theta0, ft


def _flat(sd):
    return torch.cat([v.reshape(-1) for v in sd.values()]).numpy()


def _merge(preference, n_steps=3, nan_objective=False):
    theta0, ft = _models()
    targets = ft

    def make(t):
        return lambda p: sum(((p[k] - t[k]) ** 2).sum() for k in t)

    objectives = [make(t) for t in targets]
    if nan_objective:  # e.g. a NaN batch in the user's evaluation data
        objectives[0] = lambda p: objectives[1](p) * float("nan")
    merger = ParetoMerger(theta0, ft, rank=1, base="task_arithmetic", n_steps=n_steps)
    merger.fit(objectives)
    return _flat(merger.merge(preference))


def _nan_ft():
    _, ft = _models()
    bad = [dict(ft[0]), ft[1]]
    bad[0]["w"] = bad[0]["w"].clone()
    bad[0]["w"][0, 0] = float("nan")
    return bad


def _missing_key_ft():
    _, ft = _models()
    return [{"w": ft[0]["w"]}, ft[1]]


def _wa(finetuned=None):
    theta0, ft = _models()
    return _flat(weight_average(theta0, ft if finetuned is None else finetuned))


def _wta(preference, scale=0.3):
    theta0, ft = _models()
    return _flat(weighted_task_arithmetic(theta0, ft, preference, scale=scale))


def _ties(density=0.5, scale=1.0, finetuned=None):
    theta0, ft = _models()
    return _flat(ties_merge(theta0, ft if finetuned is None else finetuned, density, scale))


def _tv(finetuned=None):
    theta0, ft = _models()
    return [_flat(t) for t in task_vectors(theta0, ft if finetuned is None else finetuned)]


def _check(finetuned=None):
    theta0, ft = _models()
    check_state_dicts(theta0, ft if finetuned is None else finetuned)
    return True


def _ta(scale=0.3):
    theta0, ft = _models()
    return _flat(task_arithmetic(theta0, ft, scale=scale))


def _write(folder):
    theta0, _ = _models()
    save_state_dict(theta0, folder / "model.safetensors")
    return folder / "model.safetensors"


def _write_sharded(folder):
    theta0, _ = _models()
    save_state_dict(theta0, folder / "ckpt", max_shard_bytes=16)
    return folder / "ckpt"


def _write_pair(folder):
    """Two fine-tuned checkpoints in one folder, as a merge reads them."""
    _, ft = _models()
    for i, sd in enumerate(ft[:2]):
        save_state_dict(sd, folder / f"task{i}.safetensors")
    return folder


def _read_pair(folder):
    return load_state_dicts([folder / "task0.safetensors", folder / "task1.safetensors"])


def _cut_second(folder):
    f = folder / "task1.safetensors"
    f.write_bytes(f.read_bytes()[:40])


def _write_reordered(folder):
    """A state_dict whose key order is not sorted, with user metadata: both must come back."""
    theta0, _ = _models()
    sd = dict(reversed(list(theta0.items())))
    save_state_dict(sd, folder / "m.safetensors", metadata={"preference": "[0.3, 0.7]"})
    return folder / "m.safetensors"


def _same(a, b):
    return list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)


def _export(sd, folder):
    save_state_dict(sd, folder / "again.safetensors")
    return folder / "again.safetensors"


def _fitted_merger():
    theta0, ft = _models()
    objectives = [lambda p, t=t: ((p["w"] - t["w"]) ** 2).mean() for t in ft]
    return ParetoMerger(theta0, ft, rank=2, n_steps=3, lr=1e-2).fit(objectives)


def _write_merger(folder):
    _fitted_merger().save(folder / "merger.safetensors")
    return folder / "merger.safetensors"


def _read_merger(path):
    theta0, ft = _models()
    return ParetoMerger.load(path, theta0, ft)


def _same_merger(a, b, prefs=((0.2, 0.8), (0.9, 0.1))):
    return all(_same(a.merge(list(p)), b.merge(list(p))) for p in prefs)


def _export_merger(merger, folder):
    folder.mkdir(parents=True, exist_ok=True)
    merger.save(folder / "again.safetensors")
    return folder / "again.safetensors"


def entries() -> list[dict]:
    pts = np.array([[0.1, 0.9], [0.5, 0.5], [0.9, 0.1], [0.6, 0.6], [0.3, 0.8]])
    theta0, _ = _models()
    return [
        {"name": "hypervolume", "call": hypervolume, "kwargs": {"points": pts, "ref": np.ones(2)},
         "arrays": {"points": {"kind": "float", "ndim": 2}, "ref": {"kind": "float", "ndim": 1}},
         "rows": [["points"]], "order": "invariant",
         "known": [{"kwargs": {"points": np.array([[0.5, 0.5]]), "ref": np.ones(2)},
                    "check": lambda hv: abs(hv - 0.25) < 1e-12, "why": "one point: a square"}]},
        {"name": "pareto_mask", "call": pareto_mask, "kwargs": {"points": pts},
         "arrays": {"points": {"kind": "float", "ndim": 2}}, "rows": [["points"]],
         "order": "equivariant",
         "known": [{"kwargs": {"points": pts},
                    "check": lambda m: m.tolist() == [True, True, True, False, True],
                    "why": "(0.6, 0.6) is dominated by (0.5, 0.5)"}]},
        {"name": "simplex_grid", "call": simplex_grid, "kwargs": {"n_points": 5, "n_tasks": 3},
         "params": {"n_points": {"type": "int", "bad": [1, 0]},
                    "n_tasks": {"type": "int", "bad": [1, 0]}},
         "known": [{"kwargs": {"n_points": 3, "n_tasks": 2},
                    "check": lambda g: np.allclose(g, [[0, 1], [0.5, 0.5], [1, 0]]),
                    "why": "K=2: evenly spaced on the segment"}]},
        {"name": "check_preference", "call": lambda preference: check_preference(preference, 3).numpy(),
         "kwargs": {"preference": np.array([0.2, 0.3, 0.5])},
         "arrays": {"preference": {"kind": "float", "ndim": 1}},
         "known": [{"kwargs": {"preference": np.array([0.5, 0.6, -0.1])}, "raises": ["preference"],
                    "check": None, "why": "off the simplex"}]},
        {"name": "task_arithmetic", "call": _ta, "kwargs": {"scale": 0.3},
         "params": {"scale": {"type": "float", "bad": [float("nan"), float("inf")]}},
         "known": [{"kwargs": {"scale": 0.0}, "check": lambda v: np.array_equal(v, _flat(theta0)),
                    "why": "scale 0 is the pre-trained model"}]},
        {"name": "ParetoMerger.merge", "call": _merge,
         "fixed": {"nan_objective": "the wrapper's switch for the known case that a NaN "
                                    "objective raises, not an option of merge"},
         "kwargs": {"preference": np.array([0.3, 0.7])},
         "arrays": {"preference": {"kind": "float", "ndim": 1}},
         "params": {"n_steps": {"type": "int", "bad": [0, -1]}},
         "known": [{"kwargs": {"nan_objective": True}, "raises": ["objectives"],
                    "why": "a NaN objective would train silently to NaN merge weights"}]},
        {"name": "load_state_dict", "kind": "loader", "write": _write, "read": load_state_dict,
         "check": lambda sd: _same(sd, _models()[0]), "export": _export, "same": _same,
         "corrupt": ["truncate", "empty"]},
        {"name": "LazyStateDict(sharded)", "kind": "loader", "write": _write_sharded,
         "read": lambda p: dict(LazyStateDict(p)), "check": lambda sd: _same(sd, _models()[0]),
         "corrupt": [("lost-shard", lambda p: sorted(p.glob("model-*.safetensors"))[0].unlink()),
                     ("empty-index", lambda p: (p / "model.safetensors.index.json").write_text("{}"))]},
        {"name": "ParetoMerger.save/load", "kind": "loader", "write": _write_merger,
         "read": _read_merger, "check": lambda m: _same_merger(m, _fitted_merger()),
         "export": _export_merger, "same": _same_merger, "corrupt": ["truncate", "empty"]},
        {"name": "load_state_dict(sharded)", "kind": "loader", "write": _write_sharded,
         "read": load_state_dict, "check": lambda sd: _same(sd, _models()[0]),
         "corrupt": [("lost-shard", lambda p: sorted(p.glob("model-*.safetensors"))[0].unlink()),
                     ("empty-index", lambda p: (p / "model.safetensors.index.json").write_text("{}"))]},
        {"name": "load_state_dicts", "kind": "loader", "write": _write_pair, "read": _read_pair,
         "check": lambda sds: len(sds) == 2 and all(_same(a, b) for a, b in zip(sds, _models()[1][:2], strict=True)),
         "corrupt": [("cut-second-file", _cut_second),
                     ("missing-second-file", lambda p: (p / "task1.safetensors").unlink())]},
        {"name": "save_state_dict", "kind": "loader", "write": _write_reordered,
         "read": load_state_dict,
         "check": lambda sd: _same(sd, dict(reversed(list(_models()[0].items())))),
         "export": _export, "same": _same, "corrupt": ["truncate", "empty"]},
        {"name": "weight_average", "call": _wa, "kwargs": {},
         "known": [{"kwargs": {}, "check": lambda v: np.allclose(
                        v, (_flat(_models()[1][0]) + _flat(_models()[1][1])) / 2, atol=1e-6),
                    "why": "the mean of the fine-tuned weights"},
                   {"kwargs": {"finetuned": _nan_ft()}, "raises": ["finetuned"],
                    "why": "a NaN weight in a fine-tuned model"}]},
        {"name": "weighted_task_arithmetic", "call": _wta,
         "kwargs": {"preference": np.array([0.25, 0.75])},
         "arrays": {"preference": {"kind": "float", "ndim": 1}},
         "params": {"scale": {"type": "float", "bad": [float("nan"), float("inf")]}},
         "known": [{"kwargs": {"preference": np.array([0.5, 0.5]), "scale": 0.3},
                    "check": lambda v: np.allclose(v, _ta(0.3), atol=1e-6),
                    "why": "the uniform preference is task arithmetic at the same scale"}]},
        {"name": "ties_merge", "call": _ties, "kwargs": {},
         "params": {"density": {"type": "float", "bad": [0.0, 1.5, float("nan")]},
                    "scale": {"type": "float", "bad": [float("nan")]}},
         "known": [{"kwargs": {"finetuned": _nan_ft()}, "raises": ["finetuned"],
                    "why": "a NaN weight in a fine-tuned model"}]},
        {"name": "task_vectors", "call": _tv, "kwargs": {},
         "known": [{"kwargs": {"finetuned": _missing_key_ft()}, "raises": ["finetuned"],
                    "why": "a fine-tuned model without the bias"}]},
        {"name": "check_state_dicts", "call": _check, "kwargs": {},
         "known": [{"kwargs": {"finetuned": _missing_key_ft()}, "raises": ["finetuned"],
                    "why": "a missing key"},
                   {"kwargs": {"finetuned": _nan_ft()}, "raises": ["finetuned"],
                    "why": "a NaN weight"}]},
        {"name": "dominates", "call": dominates, "kwargs": {"a": np.array([1.0, 2.0]), "b": np.array([1.0, 3.0])},
         "arrays": {"a": {"kind": "float", "ndim": 1, "inf_ok": True},
                    "b": {"kind": "float", "ndim": 1, "inf_ok": True}},  # an infinite loss compares
         "known": [{"kwargs": {"a": np.array([1.0, 2.0]), "b": np.array([1.0, 3.0])},
                    "check": lambda v: v is True, "why": "no worse, better in one objective"},
                   {"kwargs": {"a": np.array([1.0, 2.0]), "b": np.array([1.0, 2.0])},
                    "check": lambda v: v is False, "why": "equal points do not dominate"}]},
        *_objective_entries(),
    ]  # fmt: skip


@functools.cache
def _linear() -> torch.nn.Module:
    """The template module, built once (outside any device run); ``functional_call`` uses it."""
    torch.manual_seed(0)
    return torch.nn.Linear(4, 3).double()


def _zero_params(module) -> dict:
    return {k: torch.zeros_like(v) for k, v in module.state_dict().items()}


def _entropy(inputs, diversity=0.0, zero=False):
    m = _linear()
    params = _zero_params(m) if zero else dict(m.state_dict())
    with torch.no_grad():
        return entropy_objective(m, inputs, diversity=diversity)(params).item()


def _xent(inputs, targets, zero=False):
    m = _linear()
    params = _zero_params(m) if zero else dict(m.state_dict())
    with torch.no_grad():
        return cross_entropy_objective(m, inputs, targets)(params).item()


def _tune(grid=(0.0, 0.25, 0.5, 0.75, 1.0)):
    theta0, ft = _models()
    target = task_arithmetic(theta0, ft, 0.5)

    def score(sd):  # closest to the scale-0.5 merge wins
        return -sum(float((sd[k] - target[k]).pow(2).sum()) for k in sd)

    best, merged = tune_task_arithmetic(theta0, ft, score, grid)
    return best, merged["w"].numpy()


def _ada_models():
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 3)
    theta0 = {k: v.detach().clone() for k, v in m.state_dict().items()}
    ft = [{k: v + 0.3 * torch.randn_like(v) for k, v in theta0.items()} for _ in range(2)]
    x = torch.randn(16, 4)
    return m, theta0, ft, x


def _ada(n_steps=3, lr=1e-2, init_scale=0.3):
    m, theta0, ft, x = _ada_models()
    objs = [entropy_objective(m, x) for _ in ft]
    merged, coef = adamerging(theta0, ft, objs, n_steps=n_steps, lr=lr, init_scale=init_scale)
    return merged["weight"].detach().numpy(), coef


def _objective_entries() -> list[dict]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 4, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 1, 0, 2])
    log3 = float(np.log(3))
    return [
        # inputs go to the user's module as they are: their dtype and rank are its business
        {"name": "entropy_objective", "call": _entropy, "kwargs": {"inputs": x},
         "modules": lambda: [_linear()], "rows": [["inputs"]], "order": "invariant",
         "params": {"diversity": {"type": "float", "bad": [-1.0, float("nan")]}},
         "known": [{"kwargs": {"inputs": x, "zero": True}, "check": lambda v: abs(v - log3) < 1e-12,
                    "why": "zero weights: uniform predictions, entropy log 3"},
                   {"kwargs": {"inputs": x, "diversity": 1.0, "zero": True},
                    "check": lambda v: abs(v) < 1e-12,
                    "why": "uniform predictions: the marginal-entropy bonus cancels the mean entropy"}],
         "grid": {"diversity": [1.0], "zero": [True]}},
        {"name": "cross_entropy_objective", "call": _xent, "kwargs": {"inputs": x, "targets": y},
         "grid": {"zero": [True]},
         "modules": lambda: [_linear()], "arrays": {"targets": "labels"},
         "rows": [["inputs", "targets"]], "order": "invariant",
         "known": [{"kwargs": {"inputs": x, "targets": y, "zero": True},
                    "check": lambda v: abs(v - log3) < 1e-12, "why": "zero weights: cross-entropy log 3"},
                   {"kwargs": {"inputs": x, "targets": torch.tensor([0, 1, 2, 1, 0, 3])},
                    "raises": ["targets"], "check": None, "why": "a class id past the 3 logits"}]},
        {"name": "tune_task_arithmetic", "call": _tune, "kwargs": {},
         "params": {"grid": {"bad": [(), (0.5, float("nan")), "0.5"]}},
         "known": [{"kwargs": {}, "check": lambda r: r[0] == 0.5,
                    "why": "the score peaks at the scale-0.5 merge"}]},
        {"name": "adamerging", "call": _ada, "kwargs": {},
         "params": {"n_steps": {"type": "int", "bad": [0]},
                    "lr": {"type": "float", "bad": [0.0, float("nan")]},
                    "init_scale": {"type": "float", "bad": [float("nan"), float("inf")]}},
         "known": [{"kwargs": {"n_steps": 1, "lr": 1e-12},
                    "check": lambda r: np.allclose(r[1], 0.3, atol=1e-9),
                    "why": "a vanishing step leaves every coefficient at init_scale"}]},
    ]  # fmt: skip
