"""Benchmark: CCA-Attention and region attention against fused dense SDPA, on CPU.

Timing is CPU time of one thread (``torch.set_num_threads(1)``), the best of ``--rounds``
rounds, with the methods interleaved inside each round (dense, then CCA, then dense...), so
that a slow period of a shared machine hits both. Peak memory is the peak resident set size of
a fresh subprocess running one call (so allocator caches of other runs do not leak in), measured
from its inputs: the kernel's peak counter is reset (``/proc/self/clear_refs``) after the inputs
are built, and the resident size then is subtracted from the peak after the call.

Part 1 -- CCA (H = 4, D = 64, g = 16): s in {1024, 256}, L in {2K, 8K, 32K, 64K}, fp32 and bf16,
forward and forward+backward. Each row: dense time, CCA time, speedup, and the visible-pair
bound (dense causal pairs / CCA scored pairs) the speedup is capped by; peak-memory ratio.

Part 2 -- region attention (Querent-style; R = 64, k = 8, H = 2, D = 32), N in {2048, 8192}:
forward and forward+backward time relative to dense SDPA, with the arithmetic bound.

Part 3 -- KV caches at 32K tokens, Hq/Hkv = 32/8 and 4/1 (D = 64, fp16 bytes): dense GQA,
CCA with shared pooling, CCA per query head, sink + window.

    uv run python tools/bench/attn_bench.py              # ~40 min on 2 cores
    uv run python tools/bench/attn_bench.py --quick      # 2K/8K, fp32, forward only (temp folder)
    uv run python tools/bench/attn_bench.py --flex       # compiled Flex vs SDPA, 2K-32K (~5 min)
    uv run python tools/bench/attn_bench.py --region     # region attention vs dense (~2 min)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from functools import partial

import torch
import torch.nn.functional as F
from record import Run

import sparse_attn as sa

HEADS, DIM, GROUP = 4, 64, 16


def cpu_time(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def make(length: int, dtype: torch.dtype, grad: bool, heads: int = HEADS, dim: int = DIM):
    gen = torch.Generator().manual_seed(0)
    return [
        torch.randn(1, heads, length, dim, generator=gen).to(dtype).requires_grad_(grad)
        for _ in range(3)
    ]


def run_dense(q, k, v, backward: bool) -> None:
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if backward:
        out.sum().backward()


def run_cca(q, k, v, backward: bool, window: int) -> None:
    out = sa.cca_attention(q, k, v, group_size=GROUP, local_window=window)
    if backward:
        out.sum().backward()


def interleaved(fns: dict, rounds: int) -> dict:
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], cpu_time(fn, 1))
    return best


_CHILD = r"""
import json, sys, torch
import torch.nn.functional as F
import sparse_attn as sa
torch.set_num_threads(1)
method, L, window, dtype, backward = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
dt = getattr(torch, dtype)
gen = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(1, 4, L, 64, generator=gen).to(dt).requires_grad_(backward) for _ in range(3))
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
open("/proc/self/clear_refs", "w").write("5")  # reset the peak RSS (VmHWM)
before = status("VmRSS")
if method == "dense":
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
else:
    out = sa.cca_attention(q, k, v, group_size=16, local_window=window)
if backward:
    out.sum().backward()
print(json.dumps(status("VmHWM") - before))
"""


def peak_mb(method: str, length: int, window: int, dtype: str, backward: bool) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, method, str(length), str(window), dtype, str(int(backward))],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def part1(rec: Run, lengths, windows, dtypes, modes, rounds: int, memory: bool) -> None:
    rows = []
    for window in windows:
        for length in lengths:
            st = sa.cca_stats(length, GROUP, window)
            bound = st.dense_pairs / st.visible_pairs
            for dtype in dtypes:
                for mode in modes:
                    backward = mode == "fwd+bwd"
                    dt = getattr(torch, dtype)
                    # fewer rounds for the multi-second cases
                    r = rounds if length <= 8192 else max(1, rounds // 2)
                    q, k, v = make(length, dt, backward)
                    ctx = torch.enable_grad() if backward else torch.no_grad()
                    with ctx:
                        fns = {
                            "dense": partial(run_dense, q, k, v, backward),
                            "cca": partial(run_cca, q, k, v, backward, window),
                        }
                        t = interleaved(fns, r)
                    md = mc = None
                    if memory:
                        md = peak_mb("dense", length, window, dtype, backward)
                        mc = peak_mb("cca", length, window, dtype, backward)
                    rows.append([window, length, dtype, mode, t["dense"], t["cca"],
                                 t["dense"] / t["cca"], bound, md, mc,
                                 mc / md if memory and md else None])  # fmt: skip
                    print(
                        f"  s={window} L={length} {dtype} {mode}: {t['dense'] / t['cca']:.2f}x",
                        flush=True,
                    )
                    rec.sample_load()
    rec.table(
        "cca_speed",
        ["s", "L", "dtype", "pass", "dense s", "CCA s", "speedup", "bound", "dense MB", "CCA MB",
         "mem ratio"],
        rows, fmt=[None, None, None, None, ".3f", ".3f", ".2f", ".2f", ".0f", ".0f", ".2f"],
        title="Part 1: CCA vs fused causal SDPA (CPU time, 1 thread, best of rounds)",
        notes=[f"H = {HEADS}, D = {DIM}, group g = {GROUP}, local window s; batch 1. Time: process "
               f"CPU time of one thread, best of {rounds} interleaved rounds (half as many above "
               "8K tokens). bound = dense causal pairs / CCA scored pairs, the speedup an "
               "arithmetic-bound kernel could reach. Peak memory: resident-set growth of a fresh "
               "process running one call, from its inputs."],
        timing=True,
        headline=(lambda r: f"CCA at {r[1] // 1024}K tokens (s={r[0]}, {r[2]}, {r[3]}): "
                  f"{r[6]:.2f}x dense SDPA (bound {r[7]:.2f}x)")(max(rows, key=lambda r: (r[1], r[3] == "fwd", r[2] == "float32", -r[0]))),
    )  # fmt: skip


def _region(q, k, v):
    return sa.region_attention(q, k, v, region_size=64, top_k=8)


def _bidir(fn, q, k, v, backward: bool) -> None:
    out = fn(q, k, v)
    if backward:
        out.sum().backward()


def _median_interleaved(fns: dict, rounds: int) -> dict:
    """Median CPU time of each function over ``rounds`` interleaved rounds, after a warm-up."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(cpu_time(fn, 1))
    return {name: float(torch.tensor(t).median()) for name, t in times.items()}


REGION_OPS = {"aten::topk": "top-k selection",
              "aten::_scaled_dot_product_flash_attention_for_cpu": "flash kernel",
              "aten::index_select": "gathers"}  # fmt: skip


def part2(rec: Run, sizes, rounds: int) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    rows, prof_rows = [], []
    rounds = max(5, rounds)
    for n in sizes:
        m = n // 64
        for mode in ("fwd", "fwd+bwd"):
            backward = mode == "fwd+bwd"
            q, k, v = make(n, torch.float32, backward, heads=2, dim=32)
            ctx = torch.enable_grad() if backward else torch.no_grad()
            with ctx:
                fns = {
                    "dense": partial(_bidir, F.scaled_dot_product_attention, q, k, v, backward),
                    "region": partial(_bidir, _region, q, k, v, backward),
                }
                t = _median_interleaved(fns, rounds)
                if not backward:  # where the forward's time goes
                    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
                        fns["region"]()
                    self_us = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
                    whole = sum(self_us.values())
                    shares = [100 * self_us.get(op, 0.0) / whole for op in REGION_OPS]
                    prof_rows.append([n, *shares, 100 - sum(shares)])
            rows.append([n, mode, t["dense"], t["region"], t["dense"] / t["region"], m / 8])
            print(f"  N={n} {mode}: region {rows[-1][4]:.2f}x dense", flush=True)
            rec.sample_load()
    rec.table(
        "region_speed",
        ["N", "pass", "dense s", "region s", "speed-up (dense / region)", "bound (M/k)"],
        rows, fmt=[None, None, ".4f", ".4f", ".2f", ".1f"],
        title="Part 2: region attention (R=64, k=8, H=2, D=32) vs dense SDPA (bidirectional)",
        notes=f"Region size 64, top-8 regions per query, 2 heads of 32; fp32; process CPU time of "
              f"one thread, median of {rounds} interleaved rounds after a warm-up of both. The "
              "bound M / k is the speed-up of a kernel whose time is proportional to the query-key "
              "pairs it scores.",
        timing=True,
    )  # fmt: skip
    rec.table(
        "region_profile",
        ["N", *(f"% {name}" for name in REGION_OPS.values()), "% other"],
        prof_rows, fmt=[None, ".1f", ".1f", ".1f", ".1f"],
        title="Where region attention's forward time goes (torch.profiler, self CPU time)",
        notes="Share of the self CPU time of one forward call: top-k selection of each query's "
              "regions, the fused CPU flash kernel over the (query tile, region) pairs, the "
              "gathers (queries into tiles, region keys and values per tile, outputs back per "
              "pair), and the rest (the min/max bound scores, tile bookkeeping, the log-sum-exp "
              "merge of each query's regions).",
        timing=True,
    )  # fmt: skip


def part3(rec: Run, length: int) -> None:
    rows = []
    for hq, hkv in ((32, 8), (4, 1)):
        gen = torch.Generator().manual_seed(0)
        q = torch.randn(1, hq, length, 64, generator=gen).half()
        k = torch.randn(1, hkv, length, 64, generator=gen).half()
        v = torch.randn(1, hkv, length, 64, generator=gen).half()
        caches = {
            "dense (GQA)": sa.DenseKVCache(1),
            "CCA, shared pooling": sa.CCAKVCache(1, gqa_pooling="shared"),
            "CCA, per query head": sa.CCAKVCache(1, gqa_pooling="per_query_head"),
            "sink 4 + window 1024": sa.SinkWindowKVCache(1),
        }
        sizes = {}
        for name, cache in caches.items():
            # the cache state after prefill + decode is a function of the token count only,
            # so fill it with one prefill of L - 1 tokens and one decode step
            with torch.no_grad():
                qf, kf, vf = q.float(), k.float(), v.float()
                cache.attend(0, qf[..., :-1, :], kf[..., :-1, :], vf[..., :-1, :])
                cache.attend(0, qf[..., -1:, :], kf[..., -1:, :], vf[..., -1:, :])
            sizes[name] = cache.memory_bytes() / 2  # fp32 -> fp16 bytes
        base = sizes["dense (GQA)"]
        for name, b in sizes.items():
            rows.append([f"{hq}/{hkv}", name, b / 2**20, b / base])
    rec.table(
        "kv_cache",
        ["Hq/Hkv", "cache", "MB", "vs dense GQA"],
        rows, fmt=[None, None, ".1f", ".3f"],
        title=f"Part 3: KV-cache bytes after {length} tokens (D=64, fp16, one layer)",
        notes=f"One layer, batch 1, {length} tokens (prefill of {length - 1} and one decode step), "
              "fp16 bytes; exact counts from the caches' memory_bytes().",
    )  # fmt: skip


PHASES = ("cca.core_tokens", "cca.flash.raw", "cca.flash.diag", "cca.flash.core",
          "cca.flash.bound", "cca.bound_mask", "cca.merge")  # fmt: skip


def profile(rec: Run, lengths, window: int = 1024) -> None:
    """Where CCA's forward time goes: torch.profiler over the named phases of the blocksparse
    path, beside SDPA's time and the share of visible query-key pairs (the arithmetic bound)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    rows = []
    for n in lengths:
        gen = torch.Generator().manual_seed(0)
        qkv = [torch.randn(1, 4, n, 64, generator=gen) for _ in range(3)]
        call = partial(sa.cca_attention, *qkv, group_size=16, local_window=window)
        dense = partial(F.scaled_dot_product_attention, *qkv, is_causal=True)
        with torch.no_grad():
            call(), dense()  # warm-up
            with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
                call()
            t_sdpa, t_cca = cpu_time(dense, 3), cpu_time(call, 3)
        totals = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in PHASES}
        whole = sum(totals.values())
        flash = sum(v_ for k_, v_ in totals.items() if k_.startswith("cca.flash"))
        stats = sa.cca_stats(n, 16, window)
        pair_share = stats.visible_pairs / stats.dense_pairs
        rows.append([n, 1e3 * t_sdpa, 1e3 * t_cca, t_sdpa / t_cca,
                     *(100 * totals.get(ph, 0.0) / whole for ph in PHASES),
                     (t_cca * flash / whole) / (t_sdpa * pair_share)])  # fmt: skip
        print(f"  N={n}: CCA {1e3 * t_cca:.1f} ms, SDPA {1e3 * t_sdpa:.1f} ms", flush=True)
        rec.sample_load()
    rec.table(
        "cca_profile",
        ["N", "SDPA ms", "CCA ms", "CCA speed-up", *(f"% {ph.removeprefix('cca.')}" for ph in PHASES),
         "flash time / (SDPA x visible-pair share)"],
        rows, fmt=[None, ".1f", ".1f", ".2f", *([".1f"] * len(PHASES)), ".2f"],
        title=f"Profile of CCA's forward (blocksparse, fp32, H=4, D=64, g=16, s={window})",
        notes="Share of the profiled time in each named phase (torch.profiler, CPU, one thread; "
              "core_tokens = the pooling of Eq. 1; flash.* = the fused CPU flash kernel on the "
              "raw (uncompressed) window keys, the causal diagonal, the fully visible core tokens and the partly "
              "visible boundary block; bound_mask = building that block's mask; merge = the "
              "log-sum-exp merge of the pieces). SDPA / CCA ms: best of 3 CPU times outside the "
              "profiler. Last column: the flash kernel's time against SDPA's scaled by the share "
              "of query-key pairs CCA computes; 1.0 would mean the kernel runs its pieces as "
              "efficiently as SDPA runs the full causal matrix.",
        timing=True,
    )  # fmt: skip


def _old_flex(q, k, v, ck, cv, g, s, m):
    """The pre-fix Flex layout, for comparison: core tokens before the raw keys and the block
    mask rebuilt on every call (sparse_attn < this commit)."""
    from torch.nn.attention.flex_attention import create_block_mask

    length = q.shape[-2]

    def mask_mod(b, h, q_idx, kv_idx):
        n = torch.clamp(torch.div(q_idx + 1 - s, g, rounding_mode="floor"), 0, m)
        u = kv_idx - m
        return ((kv_idx < m) & (kv_idx < n)) | ((kv_idx >= m) & (u >= n * g) & (u <= q_idx))

    bm = create_block_mask(mask_mod, None, None, length, m + length, device=q.device)
    return _compiled_flex()(q, torch.cat([ck, k], -2), torch.cat([cv, v], -2), block_mask=bm,
                            scale=q.shape[-1] ** -0.5)  # fmt: skip


_FLEX = None


def _compiled_flex():
    global _FLEX
    if _FLEX is None:
        from torch.nn.attention.flex_attention import flex_attention

        _FLEX = torch.compile(flex_attention, dynamic=False)
    return _FLEX


def _flex_cca(q, k, v, g, s, layout):
    from sparse_attn.cca import cca_core_tokens
    from sparse_attn.flex import flex_cca

    m = max(0, (q.shape[-2] - s) // g)
    ck, cv = cca_core_tokens(q, k, v, group_size=g, num_groups=m)
    if layout == "old":
        return _old_flex(q, k, v, ck, cv, g, s, m)
    return flex_cca(q, k, v, ck, cv, group_size=g, local_window=s, num_core=m,
                    scale=q.shape[-1] ** -0.5, compile=True)  # fmt: skip


def flex_part(rec: Run, lengths, rounds: int, window: int = 1024) -> None:
    """The FlexAttention path compiled on the CPU (the layout the CUDA default uses), beside the
    pre-fix layout, the blocksparse CPU default and fused causal SDPA: interleaved medians."""
    rows = []
    for n in lengths:
        q, k, v = make(n, torch.float32, False)
        stats = sa.cca_stats(n, GROUP, window)
        bound = stats.dense_pairs / stats.visible_pairs
        fns = {
            "dense": partial(run_dense, q, k, v, False),
            "flex": partial(_flex_cca, q, k, v, GROUP, window, "new"),
            "flex_old": partial(_flex_cca, q, k, v, GROUP, window, "old"),
            "blocksparse": partial(run_cca, q, k, v, False, window),
        }
        with torch.no_grad():
            out = fns["flex"]()
            ref = sa.cca_attention(q, k, v, group_size=GROUP, local_window=window)
            err = float((out - ref).abs().max())
            for fn in fns.values():  # warm-up (and compile) every path
                fn()
            times = {name: [] for name in fns}
            for _ in range(rounds):
                for name, fn in fns.items():
                    times[name].append(cpu_time(fn, 1))
        med = {name: float(torch.tensor(t).median()) for name, t in times.items()}
        rows.append([n, 1e3 * med["dense"], 1e3 * med["flex"], med["dense"] / med["flex"],
                     med["dense"] / med["flex_old"], med["dense"] / med["blocksparse"], bound,
                     med["dense"] / med["flex"] / bound, err])  # fmt: skip
        print(f"  L={n}: flex {rows[-1][3]:.2f}x (pre-fix {rows[-1][4]:.2f}x, blocksparse "
              f"{rows[-1][5]:.2f}x, bound {bound:.2f}x)", flush=True)  # fmt: skip
        rec.sample_load()
    rec.table(
        "flex_speed",
        ["L", "SDPA ms", "Flex ms", "Flex speed-up", "pre-fix Flex speed-up",
         "blocksparse speed-up", "bound", "Flex / bound", "max |Flex - blocksparse|"],
        rows, fmt=[None, ".1f", ".1f", ".2f", ".2f", ".2f", ".2f", ".2f", ".1e"],
        title=f"FlexAttention CCA compiled on the CPU (fp32, forward, H={HEADS}, D={DIM}, "
              f"g={GROUP}, s={window})",
        notes=f"Process CPU time of one thread, median of {rounds} interleaved rounds after a "
              "warm-up (and compile) of every path; each CCA time includes the core-token pooling. "
              "Flex: raw keys first, block mask cached per (length, pattern), "
              "torch.compile(flex_attention). Pre-fix Flex: core tokens first and the block mask "
              "rebuilt on every call. bound = dense causal pairs / CCA scored pairs.",
        timing=True,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 32768, 65536],
                        help="Part 1 sequence lengths")  # fmt: skip
    parser.add_argument("--region", action="store_true",
                        help="only the region-attention tables at 2K / 8K (~2 min)")  # fmt: skip
    parser.add_argument("--flex", action="store_true",
                        help="only the compiled-Flex table at 2K / 8K / 32K (~5 min)")  # fmt: skip
    parser.add_argument("--profile", action="store_true",
                        help="only the profile of CCA's forward at 2K / 8K / 32K (~2 min)")  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(1)
    rec = Run("sparse-attn", out=tempfile.mkdtemp() if args.quick else None)
    t0 = time.perf_counter()
    if args.region:
        part2(rec, [2048] if args.quick else [2048, 8192], args.rounds)
    elif args.flex:
        flex_part(rec, [2048, 8192] if args.quick else [2048, 8192, 32768], max(5, args.rounds))
    elif args.profile:
        profile(rec, [2048, 8192] if args.quick else [2048, 8192, 32768])
    elif args.quick:
        part1(rec, [2048, 8192], [1024], ["float32"], ["fwd"], args.rounds, not args.no_memory)
        part2(rec, [2048], args.rounds)
        part3(rec, 8192)
    else:
        part1(
            rec,
            args.lengths,
            [1024, 256],
            ["float32", "bfloat16"],
            ["fwd", "fwd+bwd"],
            args.rounds,
            not args.no_memory,
        )
        part2(rec, [2048, 8192], args.rounds)
        part3(rec, 32768)
    print(f"\ntotal wall time {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
