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
"""

from __future__ import annotations

import copy

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
    "epi-ode:EARTHForecaster[solver='dopri5']": "torchdiffeq makes its tolerances with "
    "torch.tensor(..., device=y0.device): on the shadow device a real meta tensor, without values",
}
SHADOW_CALLS = [pytest.param(p, "call", id=p.id) for c in CASES if c.values[1] == "call"
                for p in (c.values[0], *grid_points(c.values[0]))]  # fmt: skip


@pytest.mark.parametrize("entry, where", SHADOW_CALLS)
def test_follows_a_shadow_accelerator(entry, where) -> None:
    """Inputs (and the entry's modules) on another device: no op may mix in a CPU tensor."""
    if entry.id in CPU_ONLY or entry.id in SHADOW_SKIP:
        pytest.skip(CPU_ONLY.get(entry.id) or SHADOW_SKIP[entry.id])
    modules = _modules(entry)
    try:
        with shadow_device():
            for m in modules:
                m.to(shadow.DEVICE)
            out = entry.raw["call"](**to_shadow(copy.deepcopy(entry.raw["kwargs"])))
            for t in _floats(out):
                assert isinstance(t, shadow.Shadow), f"{entry.id} returned a tensor on {t.device}"
    except shadow.DeviceMismatchError as exc:
        raise AssertionError(f"{entry.id} mixes devices: {exc}") from exc
    finally:
        with shadow_device():
            for m in modules:
                m.to("cpu")


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
    try:
        with shadow_device():
            est = entry.raw["cls"](**{**entry.raw.get("init", {}), "device": shadow.DEVICE.type})
            est.fit(**to_shadow(copy.deepcopy(entry.raw["fit"])))
            for method, kwargs in entry.raw["methods"].items():
                out = getattr(est, method)(**to_shadow(copy.deepcopy(kwargs)))
                assert not isinstance(out, shadow.Shadow) or method in ("forward", "transform")
    except shadow.DeviceMismatchError as exc:
        raise AssertionError(f"{entry.id} mixes devices: {exc}") from exc
