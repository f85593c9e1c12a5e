"""Device check for sparse-attn's accelerator paths (issue #60 item 5).

Runs every CCA backend the device has (``torch``, ``flex``; ``blocksparse`` on CPU) and region
attention in fp32 and bf16 against the float64 CPU references (``naive_cca_attention``,
``naive_region_attention``) on a small problem, then times CCA against SDPA (FlashAttention on
CUDA) and region attention against dense SDPA at longer lengths, and CCA at the Llama-3-8B attention shape (32/8 heads of 128,
bf16) at 32K / 64K / 128K against FlashAttention-2 (SDPA). On a machine without CUDA it
runs the same checks on the CPU at small sizes (a dry run that keeps the script working).

    uv run python tools/bench/gpu_check.py                 # CUDA when present, else a CPU dry run
    uv run python tools/bench/gpu_check.py --device cpu --quick

Prints one table per check and writes them to ``--out`` (default ``$OUT/gpu_check.json`` when
``$OUT`` is set, else ``gpu_check.json`` in a temp folder): not results data, since a lent device
is not the project's recorded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import torch
import torch.nn.functional as F
from record import markdown_table

from sparse_attn import cca_attention, region_attention
from sparse_attn.flex import flex_available
from sparse_attn.reference import naive_cca_attention, naive_region_attention

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
TOL = {"fp32": 2e-4, "bf16": 3e-2}  # max abs error against the float64 reference (unit-scale v)


def _qkv(b, h, n, d, seed, device, dtype):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, n, d, generator=g, dtype=torch.float64).to(device, dtype)
            for _ in range(3)]  # fmt: skip


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def best_time(fn, device: str, repeats: int) -> float:
    """Best of ``repeats`` calls after one warm-up (CUDA events on the GPU, CPU time otherwise)."""
    fn()
    _sync(device)
    best = float("inf")
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3)
        else:
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
    return best


def correctness(device: str) -> list[dict]:
    """Every path against the float64 references on a small problem.

    The reference sees the inputs rounded to the tested dtype, so the error measures the
    kernel's arithmetic, not the rounding of its inputs.
    """
    rows = []
    n, g, s = 512, 16, 128
    q64, k64, v64 = _qkv(1, 2, n, 32, 0, "cpu", torch.float64)
    backends = ["torch"] + (["flex"] if device == "cuda" and flex_available() else [])
    backends += ["blocksparse"] if device == "cpu" else []
    rid = torch.arange(n) // 64
    for name, dt in DTYPES.items():
        q, k, v = (x.to(device, dt) for x in (q64, k64, v64))
        qr, kr, vr = (x.double().cpu() for x in (q, k, v))
        ref = naive_cca_attention(qr, kr, vr, group_size=g, local_window=s)
        for be in backends:
            out = cca_attention(q, k, v, group_size=g, local_window=s, backend=be)
            err = float((out.double().cpu() - ref).abs().max())
            rows.append({"op": f"cca ({be})", "dtype": name, "max_abs_err": err,
                         "ok": err <= TOL[name]})  # fmt: skip
        ref = naive_region_attention(qr, kr, vr, rid, top_k=3)
        out = region_attention(q, k, v, region_size=64, top_k=3)
        err = float((out.double().cpu() - ref).abs().max())
        rows.append({"op": "region", "dtype": name, "max_abs_err": err, "ok": err <= TOL[name]})
    return rows


def speed(device: str, lengths: list[int], repeats: int) -> list[dict]:
    """CCA vs SDPA (causal) and region vs dense SDPA (bidirectional), forward."""
    rows = []
    for name, dt in DTYPES.items():
        for n in lengths:
            q, k, v = _qkv(1, 4, n, 64, 1, device, dt)
            win = min(1024, n // 2)
            sdpa = best_time(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True), device, repeats)  # fmt: skip
            cca = best_time(lambda q=q, k=k, v=v, win=win: cca_attention(q, k, v, group_size=16, local_window=win), device, repeats)  # fmt: skip
            dense = best_time(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v), device, repeats)  # fmt: skip
            region = best_time(lambda q=q, k=k, v=v: region_attention(q, k, v, region_size=64, top_k=8), device, repeats)  # fmt: skip
            rows.append({"dtype": name, "N": n, "sdpa_causal_s": sdpa, "cca_s": cca,
                         "cca_speedup": sdpa / cca, "sdpa_dense_s": dense, "region_s": region,
                         "region_speedup": dense / region})  # fmt: skip
            print(f"  {name} N={n}: CCA {sdpa / cca:.2f}x SDPA, region {dense / region:.2f}x dense",
                  flush=True)  # fmt: skip
    return rows


LLAMA = {"heads": 32, "kv_heads": 8, "dim": 128, "group": 16, "window": 1024}  # Llama-3-8B


def llama_speed(device: str, lengths: list[int], repeats: int) -> list[dict]:
    """CCA (GQA, the device's default backend) against causal SDPA (FlashAttention-2 on CUDA)
    at the Llama-3-8B attention shape in bf16, with the visible-pair bound and the share of it
    reached (target >= 0.8)."""
    from sparse_attn import cca_stats

    rows = []
    hq, hkv, d = LLAMA["heads"], LLAMA["kv_heads"], LLAMA["dim"]
    g, s = LLAMA["group"], LLAMA["window"]
    for n in lengths:
        gen = torch.Generator().manual_seed(2)
        q = torch.randn(1, hq, n, d, generator=gen).to(device, torch.bfloat16)
        k, v = (torch.randn(1, hkv, n, d, generator=gen).to(device, torch.bfloat16)
                for _ in range(2))  # fmt: skip
        st = cca_stats(n, g, s)
        bound = st.dense_pairs / st.visible_pairs
        with torch.no_grad():
            sdpa = best_time(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), device, repeats)  # fmt: skip
            cca = best_time(lambda q=q, k=k, v=v: cca_attention(q, k, v, group_size=g, local_window=s, enable_gqa=True), device, repeats)  # fmt: skip
        rows.append({"N": n, "sdpa_s": sdpa, "cca_s": cca, "speedup": sdpa / cca,
                     "bound": bound, "share_of_bound": sdpa / cca / bound,
                     "ok": sdpa / cca / bound >= 0.8})  # fmt: skip
        print(f"  llama bf16 N={n}: CCA {sdpa / cca:.2f}x SDPA (bound {bound:.2f}x)", flush=True)
    return rows


def _table(rows: list[dict]) -> str:
    fmt = [".3g" if isinstance(v, float) else None for v in rows[0].values()]
    return markdown_table(list(rows[0]), [list(r.values()) for r in rows], fmt)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--quick", action="store_true", help="small lengths (the CPU dry run)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here")
    torch.set_num_threads(1)
    lengths = [1024, 2048] if a.quick or a.device == "cpu" else [8192, 32768]
    info = {"device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
            "torch": torch.__version__, "flex": flex_available()}  # fmt: skip
    print(f"# sparse-attn device check: {info}")
    checks = correctness(a.device)
    print("\n## correctness against the float64 CPU references\n\n" + _table(checks))
    timing = speed(a.device, lengths, 3 if a.quick else 10)
    print("\n## forward speed (best of repeats)\n\n" + _table(timing))
    llama_lengths = [2048] if a.quick or a.device == "cpu" else [32768, 65536, 131072]
    llama = llama_speed(a.device, llama_lengths, 2 if a.quick or a.device == "cpu" else 5)
    print("\n## Llama-3-8B attention shape, bf16 (target: >= 0.8 of the bound)\n\n" + _table(llama))
    out = a.out or os.path.join(os.environ.get("OUT") or tempfile.mkdtemp(), "gpu_check.json")
    with open(out, "w") as f:
        json.dump(
            {"info": info, "correctness": checks, "speed": timing, "llama": llama}, f, indent=1
        )
    print(f"\nwritten to {out}")
    return 0 if all(r["ok"] for r in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
