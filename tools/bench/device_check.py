"""Every package's torch paths on an accelerator against the CPU (issue #76 item 3).

For each torch estimator of the conformance registry (``tests/conformance``), the example fit
and its prediction methods run twice, ``device="cpu"`` and ``device=<--device>``; for each
function entry that takes tensors, the example call runs on CPU inputs and on inputs (and
modules) moved to the device. The table gives the largest relative difference of the outputs
and both wall times; a row fails when the device run raises or differs by more than the
tolerance (1e-4 relative for a call, 1e-2 after a fit, where float32 kernels of another device
change the training trajectory). sparse-attn's kernels have their own, finer check
(``gpu_check.py``).

    uv run python tools/bench/device_check.py                         # CUDA when present
    uv run python tools/bench/device_check.py --device cpu --packages interaction-moe  # dry run

Writes ``--out`` (default ``$OUT/device_check.json`` when ``$OUT`` is set, else a temp file):
not results data, since a lent device is not the project's recorded machine.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import os
import pathlib
import sys
import tempfile
import time
import traceback

import numpy as np
import torch
from record import markdown_table

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
from conformance_registry import all_entries  # noqa: E402

TOL = {"call": 1e-4, "fit": 1e-2}


def _move(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, torch.nn.Module):
        return copy.deepcopy(value).to(device)
    if isinstance(value, list | tuple):
        return type(value)(_move(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _move(v, device) for k, v in value.items()}
    return value


def _has_tensor(value) -> bool:
    if isinstance(value, torch.Tensor | torch.nn.Module):
        return True
    if isinstance(value, list | tuple):
        return any(_has_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_has_tensor(v) for v in value.values())
    return False


def _arrays(out) -> list[np.ndarray]:
    if isinstance(out, torch.Tensor):
        return [out.detach().cpu().double().numpy()] if out.is_floating_point() else []
    if isinstance(out, np.ndarray):
        return [out.astype(float)] if out.dtype.kind == "f" else []
    if isinstance(out, list | tuple):
        return [a for x in out for a in _arrays(x)]
    if isinstance(out, dict):
        return [a for x in out.values() for a in _arrays(x)]
    return []


def _rel(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape:
            return float("inf")
        scale = np.maximum(np.abs(y), 1e-6)
        worst = max(worst, float(np.nanmax(np.abs(x - y) / scale)) if x.size else 0.0)
    return worst


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _timed(fn, device: str):
    _sync(device)
    t0 = time.perf_counter()
    out = fn()
    _sync(device)
    return out, time.perf_counter() - t0


def _takes_device(cls) -> bool:
    if "device" in inspect.signature(cls).parameters:
        return True
    return hasattr(cls, "get_params") and "device" in cls().get_params()


def estimator_rows(entry, device: str) -> dict:
    def run(dev):
        torch.manual_seed(0)
        est = entry.raw["cls"](**{**entry.raw.get("init", {}), "device": dev})
        est.fit(**copy.deepcopy(entry.raw["fit"]))
        return {m: getattr(est, m)(**copy.deepcopy(kw)) for m, kw in entry.raw["methods"].items()}

    cpu, t_cpu = _timed(lambda: run("cpu"), "cpu")
    dev, t_dev = _timed(lambda: run(device), device)
    rel = max(_rel(_arrays(dev[m]), _arrays(cpu[m])) for m in cpu)
    return {"entry": entry.id, "kind": "fit", "max_rel_diff": rel, "cpu_s": t_cpu,
            "device_s": t_dev, "ok": rel <= TOL["fit"] or not entry.deterministic}  # fmt: skip


def call_rows(entry, device: str) -> dict:
    make = entry.raw.get("modules")
    modules = list(make()) if make else []

    def run(dev):
        for m in modules:
            m.to(dev)
        torch.manual_seed(0)
        return entry.raw["call"](**_move(copy.deepcopy(entry.raw["kwargs"]), dev))

    try:
        cpu, t_cpu = _timed(lambda: run("cpu"), "cpu")
        dev, t_dev = _timed(lambda: run(device), device)
    finally:
        for m in modules:
            m.to("cpu")
    rel = _rel(_arrays(dev), _arrays(cpu))
    return {"entry": entry.id, "kind": "call", "max_rel_diff": rel, "cpu_s": t_cpu,
            "device_s": t_dev, "ok": rel <= TOL["call"] or not entry.deterministic}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--packages", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here")
    wanted = {p for p in a.packages.split(",") if p}
    rows = []
    for e in all_entries():
        if wanted and e.package not in wanted:
            continue
        if e.kind == "estimator" and _takes_device(e.raw["cls"]):
            fn = estimator_rows
        elif e.kind == "function" and _has_tensor(e.raw["kwargs"]):
            fn = call_rows
        else:
            continue
        try:
            rows.append(fn(e, a.device))
        except Exception as exc:  # a failing path is a row, not the end of the check
            rows.append({"entry": e.id, "kind": fn.__name__.split("_")[0], "ok": False,
                         "error": f"{type(exc).__name__}: {exc}"[:300],
                         "trace": traceback.format_exc()[-1500:]})  # fmt: skip
        r = rows[-1]
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['entry']}: "
              + (r.get("error") or f"rel {r['max_rel_diff']:.1e}, cpu {r['cpu_s']:.2f} s, "
                 f"{a.device} {r['device_s']:.2f} s"), flush=True)  # fmt: skip
    info = {"device": torch.cuda.get_device_name() if a.device.startswith("cuda") else a.device,
            "torch": torch.__version__, "packages": sorted(wanted) or "all"}  # fmt: skip
    cols = ["entry", "kind", "max_rel_diff", "cpu_s", "device_s", "ok"]
    print(f"\n# device check: {info}\n")
    print(markdown_table(cols, [[r.get(c, r.get("error", "")) for c in cols] for r in rows],
                         [None, None, ".1e", ".2f", ".2f", None]))  # fmt: skip
    out = a.out or os.path.join(os.environ.get("OUT") or tempfile.mkdtemp(), "device_check.json")
    with open(out, "w") as f:
        json.dump({"info": info, "rows": rows}, f, indent=1)
    print(f"\n{sum(r['ok'] for r in rows)}/{len(rows)} paths agree; written to {out}")
    return 0 if rows and all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
