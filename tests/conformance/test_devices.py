"""Torch entry points follow their inputs' device, and stay finite under bf16 autocast.

The device check runs on a CPU-only machine: the call runs inside ``torch.device("meta")``,
which makes the *default* device ``meta``. A tensor the code creates without naming a device
(``torch.zeros(n)``, ``torch.as_tensor(array)``, ``torch.tensor(x)``) is then a meta tensor, and
the first operation mixing it with the CPU inputs raises "Tensor on device meta is not on the
expected device cpu": exactly the tensors that would sit on the CPU while a user's inputs are
on a GPU. Tensors created with ``device=x.device`` or ``*_like`` follow the inputs and pass;
data-dependent checks (``.item()``, NaN guards) run on real values. A 0-d tensor made from a
Python scalar is flagged too, although CUDA would accept it as a scalar: name its device.

Every function entry of the conformance registry that takes a torch tensor runs here, and
every estimator entry whose methods take one (after fitting outside the meta context).

The stronger check runs on a shadow accelerator (``shadow_device.py``): tensors that report
another device with CPU values behind them. Every tensor-taking function entry and every torch
estimator, at every point of its option grid, runs there with ``device=`` (estimators) or with
its inputs and modules moved (functions); no op may mix in a CPU tensor, outputs come back to
numpy where the API says so, and the numbers equal the CPU call's.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import shadow_device as shadow
import torch
from conformance_registry import all_entries
from conformance_spec import fitted, grid_points
from shadow_device import shadow_device, to_shadow

# entries whose code runs a documented CPU-only step (none yet): id -> reason
CPU_ONLY: dict[str, str] = {}


def _has_tensor(kwargs) -> bool:
    def walk(v):
        if isinstance(v, torch.Tensor):
            return True
        if isinstance(v, list | tuple):
            return any(walk(x) for x in v)
        if isinstance(v, dict):
            return any(walk(x) for x in v.values())
        return False

    return any(walk(v) for v in kwargs.values())


def _cases():
    out = []
    for e in all_entries():
        if e.kind == "function" and _has_tensor(e.raw["kwargs"]):
            out.append(pytest.param(e, "call", id=e.id))
        elif e.kind == "estimator":
            for m, kw in e.raw["methods"].items():
                if _has_tensor(kw):
                    out.append(pytest.param(e, m, id=f"{e.id}.{m}"))
    return out


CASES = _cases()


def _call(entry, where):
    if where == "call":
        return entry.raw["call"](**copy.deepcopy(entry.raw["kwargs"]))
    est = fitted(entry)
    return getattr(est, where)(**copy.deepcopy(entry.raw["methods"][where]))


def _floats(out):
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() else []
    if isinstance(out, list | tuple):
        return [t for x in out for t in _floats(x)]
    if isinstance(out, dict):
        return [t for x in out.values() for t in _floats(x)]
    return [t for x in vars(out).values() for t in _floats(x)] if hasattr(out, "__dict__") else []


@pytest.mark.parametrize("entry, where", CASES)
def test_follows_the_inputs_device(entry, where) -> None:
    if entry.id in CPU_ONLY:
        pytest.skip(CPU_ONLY[entry.id])
    if where != "call":
        fitted(entry)  # fit (and cache) outside the meta context
    _modules(entry)  # modules the call uses are built (and cached) outside it too
    try:
        with torch.device("meta"):
            out = _call(entry, where)
    except RuntimeError as exc:
        if "meta" in str(exc):
            raise AssertionError(
                f"{entry.id} creates a tensor without its inputs' device ({exc})"
            ) from exc
        raise
    for t in _floats(out):
        assert t.device.type == "cpu", f"{entry.id} returned a tensor on {t.device}"


@pytest.mark.parametrize("entry, where", CASES)
def test_bf16_autocast_stays_finite(entry, where) -> None:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = _call(entry, where)
    for t in _floats(out):
        assert torch.isfinite(t.detach().float()).all(), f"{entry.id}: non-finite under bf16"


def _modules(entry) -> list[torch.nn.Module]:
    """The modules an entry's call uses but builds outside it (its ``"modules"`` key)."""
    make = entry.raw.get("modules")
    return list(make()) if make else []


# points the shadow device cannot stand in for an accelerator: id -> why (GPU checks cover them)
SHADOW_SKIP = {
    "sparse-attn:cca_attention[backend='blocksparse']": "documented CPU-only backend (fused CPU "
    "flash kernel); on CUDA the torch and flex backends run",
    "sparse-attn:cca_attention[backend='flex']": "FlexAttention checks the device type itself "
    "(CUDA, CPU, HPU, MPS); tools/bench/gpu_check.py runs it on CUDA",
}
SHADOW_CALLS = [pytest.param(p, "call", id=p.id) for c in CASES if c.values[1] == "call"
                for p in (c.values[0], *grid_points(c.values[0]))]  # fmt: skip


@pytest.mark.parametrize("entry, where", SHADOW_CALLS)
def test_follows_a_shadow_accelerator(entry, where) -> None:
    """Inputs (and the entry's modules) on another device: no op may mix in a CPU tensor."""
    if entry.id in CPU_ONLY or entry.id in SHADOW_SKIP:
        pytest.skip(CPU_ONLY.get(entry.id) or SHADOW_SKIP[entry.id])
    modules = _modules(entry)
    torch.manual_seed(0)
    ref = entry.raw["call"](**copy.deepcopy(entry.raw["kwargs"]))
    try:
        with shadow_device():
            for m in modules:
                m.to(shadow.DEVICE)
            torch.manual_seed(0)
            out = entry.raw["call"](**to_shadow(copy.deepcopy(entry.raw["kwargs"])))
            for t in _floats(out):
                assert isinstance(t, shadow.Shadow), f"{entry.id} returned a tensor on {t.device}"
    except shadow.DeviceMismatchError as exc:
        raise AssertionError(f"{entry.id} mixes devices: {exc}") from exc
    finally:
        with shadow_device():
            for m in modules:
                m.to("cpu")
    if entry.deterministic:  # the same numbers on the other device (the harness computes them)
        got, want = _numbers(out), _numbers(ref)
        assert len(got) == len(want), entry.id
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7, err_msg=entry.id)


def _numbers(out) -> list:
    """Every float tensor or array of an output, as numpy (shadow tensors by their values)."""
    if isinstance(out, shadow.Shadow):
        return [out.elem.detach().double().numpy()] if out.is_floating_point() else []
    if isinstance(out, torch.Tensor):
        return [out.detach().double().numpy()] if out.is_floating_point() else []
    if isinstance(out, np.ndarray):
        return [out.astype(float)] if out.dtype.kind == "f" else []
    if isinstance(out, list | tuple):
        return [a for x in out for a in _numbers(x)]
    if isinstance(out, dict):
        return [a for x in out.values() for a in _numbers(x)]
    return []


def _uses_torch(cls) -> bool:
    import inspect
    import sys

    return "import torch" in inspect.getsource(sys.modules[cls.__module__])


def _takes_device(cls) -> bool:
    """``device`` among the constructor's parameters (through ``**kwargs`` via get_params)."""
    import inspect

    if "device" in inspect.signature(cls).parameters:
        return True
    return hasattr(cls, "get_params") and "device" in cls().get_params()


# torch estimators that take numpy inputs and have no ``device=`` yet (issue #76 item 3): each
# trains and predicts on the CPU only. A torch estimator not listed here must take ``device=``.
NO_DEVICE_YET: set[str] = set()  # empty since every torch estimator took device=
# numpy estimators that share a module with torch ones: nothing to place on a device
NUMPY_ONLY = {"epi-ode:ARRidge", "epi-ode:Persistence"}
ESTIMATORS = [pytest.param(p, id=p.id) for e in all_entries() if e.kind == "estimator"
              and _uses_torch(e.raw["cls"]) and e.id not in NUMPY_ONLY
              for p in (e, *grid_points(e))]  # fmt: skip


@pytest.mark.parametrize("entry", ESTIMATORS)
def test_estimator_trains_on_a_shadow_accelerator(entry) -> None:
    """``device=`` puts training and prediction on that device, with no CPU tensor mixed in."""
    if entry.id in SHADOW_SKIP:
        pytest.skip(SHADOW_SKIP[entry.id])
    has_device = _takes_device(entry.raw["cls"])
    if entry.id.split("[")[0] in NO_DEVICE_YET:
        assert not has_device, f"{entry.id} takes device= now: remove it from NO_DEVICE_YET"
        pytest.xfail("takes numpy inputs and trains on the CPU only: no device= option yet")
    assert has_device, f"{entry.id} is a torch estimator without device="

    def run(device):
        est = entry.raw["cls"](**{**entry.raw.get("init", {}), "device": device})
        est.fit(**to_shadow(copy.deepcopy(entry.raw["fit"])) if device != "cpu"
                else copy.deepcopy(entry.raw["fit"]))  # fmt: skip
        outs = {}
        for method, kwargs in entry.raw["methods"].items():
            kw = copy.deepcopy(kwargs)
            outs[method] = getattr(est, method)(**(to_shadow(kw) if device != "cpu" else kw))
        return outs

    want = run("cpu")
    try:
        with shadow_device():
            got = run(shadow.DEVICE.type)
    except shadow.DeviceMismatchError as exc:
        raise AssertionError(f"{entry.id} mixes devices: {exc}") from exc
    # numpy out, and the numbers a CPU fit gives: exact for most; recurrent layers run as
    # decomposed ops under the harness and differ by ~4e-8 per step, which training amplifies
    # (up to 3e-3 relative after the example fits), as a real accelerator's kernels would
    for method, out in got.items():
        assert not isinstance(out, torch.Tensor), f"{entry.id}.{method} returned a tensor"
        if entry.deterministic:
            for a, b in zip(_numbers(out), _numbers(want[method]), strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-4, err_msg=entry.id)


@pytest.mark.parametrize("use_tsl", [True, False])
def test_tal_trains_on_a_shadow_accelerator(use_tsl) -> None:
    """learngene's TAL (not an estimator entry): both stages, prediction and encoding with
    ``device=``, the ancestry's knowledge distillation included."""
    import numpy as np

    from learngene import TAL, TinyViT, ViTSpace, ViTSpec, make_mini_decathlon, make_proxy_task
    from learngene._conformance import TAL_KW, TAL_SPEC

    proxy = make_proxy_task(0, n_per_class=1, n_test_per_class=1)
    tasks = make_mini_decathlon(0, n_train=8, n_test=4)
    tasks = {k: tasks[k] for k in ("shapes", "counting")}
    space = ViTSpace(depth=(1, 1), width=(8,), heads=(2,))
    emb = {k: np.random.default_rng(i).normal(size=4) for i, k in enumerate(tasks)}
    ancestry = TinyViT(ViTSpec(depth=1, width=8, heads=2, mlp_ratio=2, patch=4, img=16, in_chans=1),
                       proxy.n_classes, head_hidden=4)  # fmt: skip
    try:
        with shadow_device():
            tal = TAL(**TAL_KW, use_tsl=use_tsl, device=shadow.DEVICE.type)
            tal.fit_stage1(proxy, ancestry, space, steps=1, meta_batch=1, batch_size=4)
            tal.fit_stage2(tasks, emb if use_tsl else None, space, steps=1, meta_batch=1,
                           batch_size=4)  # fmt: skip
            net = tal.predict(TAL_SPEC, emb["shapes"], 3)
            assert isinstance(net(to_shadow(torch.rand(2, 3, 8, 8))), shadow.Shadow)
            assert isinstance(tal.encode(TAL_SPEC, emb["shapes"]), np.ndarray)
    except shadow.DeviceMismatchError as exc:
        raise AssertionError(f"TAL mixes devices: {exc}") from exc


GFN_CASES = [("GFlowNet", "tb", True), ("GFlowNet", "subtb", "exact"), ("GFlowNet", "db", "pe"),
             ("DenseGFlowNet", "db", True), ("DenseGFlowNet", "tb", "exact"),
             ("DenseGFlowNet", "db", "flow_scaling")]  # fmt: skip


@pytest.mark.parametrize(("trainer", "loss", "correction"), GFN_CASES)
def test_gflownets_follow_the_policys_device(trainer, loss, correction) -> None:
    """gfn-symmetry's trainers (not estimator entries) run the policy, log Z and the losses on
    the policy's device, with the same losses and samples as on the CPU."""
    import networkx as nx

    import gfn_symmetry as gs

    def run(device):
        torch.manual_seed(0)
        if trainer == "GFlowNet":
            policy = gs.GraphPolicy(gs.GraphEnv(max_nodes=3, n_labels=2), 8, 1, seed=0)
        else:
            policy = gs.DenseGraphPolicy(gs.DenseGraphEnv(3, 2), 8, 1)
        policy.to(device)
        cls = getattr(gs, trainer)
        gfn = cls(policy, loss, correction, batch_size=4, seed=0)
        gfn.train(lambda g: 1.0 + g.number_of_edges(), steps=2)
        return gfn.history_, [nx.weisfeiler_lehman_graph_hash(g) for g in gfn.sample(3)]

    want = run("cpu")
    try:
        with shadow_device():
            got = run(shadow.DEVICE)
    except shadow.DeviceMismatchError as exc:
        raise AssertionError(f"{trainer} mixes devices: {exc}") from exc
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    assert got[1] == want[1]


def test_lomap_trains_and_plans_on_a_shadow_accelerator() -> None:
    """lomap-planner's trainer and planners (not estimator entries) follow the diffusion
    model's device: batches move to it, noise is drawn on the CPU generator and moved, and the
    plans come back as numpy, equal to the CPU run's."""
    from lomap_planner import (
        DiffuserPlanner,
        DiffusionTrainer,
        GaussianDiffusion,
        HierarchicalPlanner,
        LimitsNormalizer,
        TemporalUnet,
    )

    rng = np.random.default_rng(0)
    windows = rng.uniform(-1, 1, (16, 4, 4)).astype(np.float32)
    norm = LimitsNormalizer(np.array([[0.5, 0.5, -2.0, -2.0], [3.5, 3.5, 2.0, 2.0]]))
    obs, goal = np.array([[1.0, 3.0, 0.0, 0.0]]), np.array([1.0, 1.0])

    def run(device):
        torch.manual_seed(0)
        levels = [GaussianDiffusion(TemporalUnet(4, 4, dim=8, dim_mults=(1, 2)), 4, 4, 0, 3)
                  for _ in range(2)]  # fmt: skip
        for d in levels:
            d.to(device)
        trainer = DiffusionTrainer(levels[0], windows, batch_size=4, lr=1e-3, seed=0)
        losses = trainer.fit(2)
        state = trainer.state_dict()
        trainer.load_state_dict(state)
        high, low = (DiffuserPlanner(trainer.finish(), norm), DiffuserPlanner(levels[1], norm))
        flat = high.plan(obs, goal, seed=0)
        return losses, flat, HierarchicalPlanner(high, low).plan(obs, goal, seed=0)

    want = run("cpu")
    try:
        with shadow_device():
            got = run(shadow.DEVICE)
    except shadow.DeviceMismatchError as exc:
        raise AssertionError(f"lomap-planner mixes devices: {exc}") from exc
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for a, b in zip(got[1:], want[1:], strict=True):
        assert isinstance(a, np.ndarray)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
