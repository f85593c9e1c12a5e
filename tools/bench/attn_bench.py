"""Benchmark for sparse-attn: CCA-Attention and region top-k attention vs dense SDPA (CPU).

Sections, all in one run:
  A. scaling: forward and forward+backward time and peak-RSS growth vs sequence length for
     dense SDPA (fused causal), dense SDPA with an explicit mask, CCA, sliding window and
     sink+window (median of 3 after 1 warm-up; peak = growth of the process's peak RSS,
     reset before each measurement through /proc/self/clear_refs, Linux only);
  B. approximation error vs dense on structured inputs (locality, needle, iid) and region
     top-k on clustered inputs;
  C. decode KV-cache entries after L tokens;
  D. a tiny Llama trained on multi-query associative recall with dense attention, swapped to
     CCA / sliding / sink (zero-shot and after short fine-tuning), accuracy by distance.

Usage: uv run python tools/bench/attn_bench.py [--quick] [--png PATH]
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import sparse_attn as sa
from sparse_attn.demo import clustered_qkv, locality_qkv

METHODS = ["dense", "dense_mask", "cca", "sliding", "sink"]


def run_method(name: str, q, k, v, g: int, s: int):
    if name == "dense":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if name == "dense_mask":
        n = q.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool).tril()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    if name == "cca":
        return sa.cca_attention(q, k, v, group_size=g, local_window=s)
    if name == "sliding":
        return sa.sliding_window_attention(q, k, v, s)
    return sa.sink_window_attention(q, k, v, num_sink=4, window=s)


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return float("nan")


_LIBC = ctypes.CDLL("libc.so.6")
# Serve every allocation >= 128 KiB by mmap (no dynamic threshold), so freed tensors leave
# the resident set and the peak RSS of the next measurement reflects what it allocates.
_LIBC.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD


def _reset_peak() -> float:
    """Reset the peak RSS (Linux: write 5 to clear_refs) and return the current RSS in MB."""
    _LIBC.malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return _status_mb("VmRSS")


def measure(name: str, length: int, g: int, s: int, heads: int, dim: int, reps: int) -> dict:
    """Median time of ``reps`` runs after one warm-up, and peak RSS growth above the inputs."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, heads, length, dim) for _ in range(3))
    res = {}
    base = _reset_peak()
    times = []
    with torch.no_grad():
        for i in range(reps + 1):
            t0 = time.perf_counter()
            run_method(name, q, k, v, g, s)
            if i:
                times.append(time.perf_counter() - t0)
    res["fwd"], res["fwd_mb"] = statistics.median(times), _status_mb("VmHWM") - base
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
    base = _reset_peak()
    times = []
    for i in range(reps + 1):
        t0 = time.perf_counter()
        run_method(name, qg, kg, vg, g, s).sum().backward()
        if i:
            times.append(time.perf_counter() - t0)
        qg.grad = kg.grad = vg.grad = None
    res["fwdbwd"], res["fwdbwd_mb"] = statistics.median(times), _status_mb("VmHWM") - base
    return res


def pairs(name: str, length: int, g: int, s: int) -> int:
    if name in ("dense", "dense_mask"):
        return length * (length + 1) // 2
    if name == "cca":
        return sa.cca_stats(length, g, s).visible_pairs
    window = s if name == "sliding" else s + 4
    return sum(min(t + 1, window) for t in range(length))


def section_scaling(args) -> list[dict]:
    rows = []
    for length in args.lengths:
        for name in args.methods:
            if name == "dense_mask" and length > args.max_mask_len:
                continue
            res = measure(name, length, args.g, args.s, 4, 64, args.reps)
            res.update(method=name, L=length, pairs=pairs(name, length, args.g, args.s))
            rows.append(res)
            print(f"  measured {name:<10} L={length}", file=sys.stderr, flush=True)
    print(
        f"\n## A. Scaling (B=1, H=4, D=64, fp32, CPU, {args.threads} thread(s); "
        f"g={args.g}, s={args.s}; ratios = dense SDPA / method)\n"
    )
    print(
        "| L | method | fwd s | fwd x | fwd+bwd s | fwd+bwd x | peak MB fwd | peak MB fwd+bwd "
        "| pairs x | us per token (fwd) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for length in args.lengths:
        ref = next((r for r in rows if r["L"] == length and r["method"] == "dense"), None)
        if ref is None:  # no dense row: ratios against the method itself
            ref = {"fwd": float("nan"), "fwdbwd": float("nan"), "pairs": length * (length + 1) // 2}
        for r in (r for r in rows if r["L"] == length):
            print(
                f"| {length} | {r['method']} | {r['fwd']:.3f} | {ref['fwd'] / r['fwd']:.2f} "
                f"| {r['fwdbwd']:.3f} | {ref['fwdbwd'] / r['fwdbwd']:.2f} | {r['fwd_mb']:.0f} "
                f"| {r['fwdbwd_mb']:.0f} | {ref['pairs'] / r['pairs']:.2f} "
                f"| {1e6 * r['fwd'] / length:.1f} |"
            )
    return rows


def rel_err(out, ref, v) -> float:
    return ((out - ref).norm(dim=-1).mean() / v.norm(dim=-1).mean()).item()


def section_approx(args) -> None:
    length = 1024 if args.quick else 2048
    print(f"\n## B. Approximation error vs dense (mean ||o - o_dense|| / mean ||v||, L={length})\n")
    print("Locality-dominated inputs (k_t = [cos t w, sin t w], q = beta sqrt2 k), CCA g=16:\n")
    windows = [16, 64, 256, 1024]
    print("| beta | " + " | ".join(f"CCA s={s}" for s in windows) + " | sliding s=64 | s=256 |")
    print("|---|" + "---|" * (len(windows) + 2))
    for beta in (0.5, 1.0, 2.0):
        q, k, v = locality_qkv(length, 64, beta)
        ref = sa.dense_attention(q, k, v)
        errs = [rel_err(sa.cca_attention(q, k, v, group_size=16, local_window=s), ref, v)
                for s in windows]  # fmt: skip
        sw = [rel_err(sa.sliding_window_attention(q, k, v, s), ref, v) for s in (64, 256)]
        print(f"| {beta} | " + " | ".join(f"{e:.4f}" for e in errs + sw) + " |")

    gen = torch.Generator().manual_seed(0)
    n, d = 1024, 64
    q = 0.1 * torch.randn(1, 1, n, d, generator=gen)
    k = 0.1 * torch.randn(1, 1, n, d, generator=gen)
    v = torch.randn(1, 1, n, d, generator=gen)
    needle = torch.randn(d, generator=gen)
    needle = 6 * needle / needle.norm()
    k[0, 0, 200], q[0, 0, -1] = needle, needle
    res = {}
    for label, match in (("group-last query = needle", True), ("group-last query random", False)):
        q2 = q.clone()
        if match:
            q2[0, 0, 207] = needle
        out = sa.cca_attention(q2, k, v, group_size=16, local_window=64)
        res[label] = F.cosine_similarity(out[0, 0, -1], v[0, 0, 200], dim=0).item()
    res["dense"] = F.cosine_similarity(
        sa.dense_attention(q, k, v)[0, 0, -1], v[0, 0, 200], dim=0
    ).item()
    print("\nNeedle at position 200 of 1024 (g=16, s=64), cosine(o_last, v_needle): " +
          ", ".join(f"{a}: {b:.3f}" for a, b in res.items()))  # fmt: skip

    print("\nRandom iid q, k, v (N(0,1), D=64): CCA error vs dense (/ mean||v||; / ||o_dense||)")
    q, k, v = (torch.randn(1, 2, length, 64, generator=gen) for _ in range(3))
    ref = sa.dense_attention(q, k, v)
    cells = []
    for g in (4, 16):
        for s in (32, 256):
            out = sa.cca_attention(q, k, v, group_size=g, local_window=s)
            e2 = ((out - ref).norm() / ref.norm()).item()
            cells.append(f"g={g},s={s}: {rel_err(out, ref, v):.3f}; {e2:.3f}")
    print("  " + "; ".join(cells))

    print("\nRegion top-k on clustered inputs (N=2048, D=32, H=2, R=64, 8 centres):\n")
    q, k, v = clustered_qkv(2048, 32, 2, 64)
    ref = sa.dense_attention(q, k, v, is_causal=False)
    print("| top_k | min/max bound score | random regions | median left-out mass bound |")
    print("|---|---|---|---|")
    for top_k in (1, 2, 4, 8, 16):
        out, st = sa.region_attention(q, k, v, region_size=64, top_k=top_k, return_stats=True)
        rnd = sa.region_attention(
            q, k, v, region_size=64, top_k=top_k, score="random", generator=gen
        )
        print(f"| {top_k} | {rel_err(out, ref, v):.4f} | {rel_err(rnd, ref, v):.4f} "
              f"| {st.mass_bound.median().item():.2e} |")  # fmt: skip

    print("\nRegion top-k timing vs dense bidirectional SDPA (R=64, k=8, H=2, D=32):\n")
    print("| N | dense s | region s | dense / region |")
    print("|---|---|---|---|")
    for n in (2048, 4096) if args.quick else (2048, 8192):
        q, k, v = clustered_qkv(n, 32, 2, 64)
        t0 = time.perf_counter()
        sa.dense_attention(q, k, v, is_causal=False)
        td = time.perf_counter() - t0
        t0 = time.perf_counter()
        sa.region_attention(q, k, v, region_size=64, top_k=8)
        tr = time.perf_counter() - t0
        print(f"| {n} | {td:.3f} | {tr:.3f} | {td / tr:.2f} |")


def section_cache(args) -> None:
    print(f"\n## C. Decode KV-cache entries per layer and head after L tokens (g={args.g}, "
          f"s={args.s}; sink = 4 + window s)\n")  # fmt: skip
    print("| L | dense | CCA | CCA / dense | sink+window |")
    print("|---|---|---|---|---|")
    for length in [*args.lengths, 32768, 131072]:
        cca = sa.analytic_cache_entries(length, args.g, args.s)
        print(f"| {length} | {length} | {cca} | {cca / length:.3f} | {min(length, 4 + args.s)} |")
    # check the analytic count against the real cache once
    cache = sa.CCAKVCache(1, group_size=args.g, local_window=args.s)
    q, k, v = (torch.randn(1, 1, 3000, 8) for _ in range(3))
    cache.attend(0, q, k, v)
    assert cache.num_entries() == sa.analytic_cache_entries(3000, args.g, args.s)


def evaluate(net, data, windows) -> dict[str, float]:
    ids, tgt, dist = data
    with torch.no_grad():
        logits, _ = net(ids)
    m = tgt != -100
    correct = (logits.argmax(-1)[m] == tgt[m]).float().view(ids.shape[0], -1)
    s, g = windows
    buckets = {"in window": dist <= s, "1-4 windows back": (dist > s) & (dist <= 4 * (s + g)),
               "> 4 windows back": dist > 4 * (s + g)}  # fmt: skip
    out = {"all": correct.mean().item()}
    for name, sel in buckets.items():
        out[name] = correct[sel].mean().item() if sel.any() else float("nan")
    return out


def train(net, steps, lr, gen, cfg, desc) -> None:
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.0)
    t0 = time.perf_counter()
    for step in range(steps):
        ids, tgt, _ = sa.associative_recall_batch(generator=gen, **cfg)
        logits, _ = net(ids)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        if step % 200 == 0 or step == steps - 1:
            print(f"  {desc} step {step} loss {loss.item():.3f} "
                  f"({time.perf_counter() - t0:.0f}s)", file=sys.stderr, flush=True)  # fmt: skip


def section_lm(args) -> None:
    g, s, length = 4, 16, 128
    data_cfg = dict(batch_size=16, length=length, num_pairs=4, num_queries=4, num_keys=16,
                    num_values=16, vocab_size=64)  # fmt: skip
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    eval_data = sa.associative_recall_batch(
        generator=torch.Generator().manual_seed(123), **{**data_cfg, "batch_size": 512}
    )
    cfg = sa.TinyLlamaConfig(vocab_size=64, hidden_size=64, num_layers=2, num_heads=4,
                             num_kv_heads=2)  # fmt: skip
    dense = sa.TinyLlama(cfg)
    train(dense, args.lm_steps, 3e-3, gen, data_cfg, "dense pre-train")
    kernels = {
        "cca": ("cca", {"group_size": g, "local_window": s}),
        "sliding": ("sliding", {"window": s + g}),
        "sink": ("sink", {"num_sink": 4, "window": s}),
    }
    results = {"dense (pre-trained)": evaluate(dense, eval_data, (s, g))}
    tuned = {}
    for name, (kind, opts) in kernels.items():
        net = copy.deepcopy(dense)
        sa.swap_attention(net, kind, **opts)
        results[f"{name} zero-shot"] = evaluate(net, eval_data, (s, g))
        train(net, args.ft_steps, 3e-3, gen, data_cfg, f"{name} fine-tune")
        results[f"{name} fine-tuned"] = evaluate(net, eval_data, (s, g))
        tuned[name] = net
    dense_ft = copy.deepcopy(dense)
    train(dense_ft, args.ft_steps, 3e-3, gen, data_cfg, "dense fine-tune")
    results["dense (same extra steps)"] = evaluate(dense_ft, eval_data, (s, g))
    for g2, s2 in ((2, 16), (8, 16), (4, 8), (4, 32)):
        net = tuned["cca"]
        sa.swap_attention(net, "cca", group_size=g2, local_window=s2)
        results[f"cca fine-tuned, run at g={g2} s={s2}"] = evaluate(net, eval_data, (s, g))
    print(f"\n## D. Tiny Llama (2 layers, hidden 64, GQA 4/2) on associative recall, L={length}, "
          f"4 pairs + 4 queries; pre-train {args.lm_steps} steps dense, fine-tune "
          f"{args.ft_steps} steps; CCA g={g} s={s}, sliding {s + g}, sink 4+{s}\n")  # fmt: skip
    cols = ["all", "in window", "1-4 windows back", "> 4 windows back"]
    print("| model | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for name, r in results.items():
        print(f"| {name} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")


def plot(rows, path) -> None:
    from sparse_attn.plotting import plot_scaling

    plot_scaling(rows, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, few steps")
    p.add_argument("--lengths", type=int, nargs="+", default=None)
    p.add_argument("--g", type=int, default=16, help="CCA group size")
    p.add_argument("--s", type=int, default=256, help="CCA local window / sliding window")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--max-mask-len", type=int, default=8192)
    p.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    p.add_argument("--lm-steps", type=int, default=None)
    p.add_argument("--ft-steps", type=int, default=None)
    p.add_argument("--skip", nargs="*", default=[], choices=["scaling", "approx", "cache", "lm"])
    p.add_argument("--png", default=None, help="save the scaling plot here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.lengths is None:
        args.lengths = [512, 1024, 2048] if args.quick else [1024, 2048, 4096, 8192]
    if args.lm_steps is None:
        args.lm_steps = 150 if args.quick else 1000
    if args.ft_steps is None:
        args.ft_steps = 30 if args.quick else 200
    print(f"# sparse-attn benchmark (torch {torch.__version__}, CPU)")
    rows = section_scaling(args) if "scaling" not in args.skip else []
    if "approx" not in args.skip:
        section_approx(args)
    if "cache" not in args.skip:
        section_cache(args)
    if "lm" not in args.skip:
        section_lm(args)
    if args.png and rows:
        plot(rows, args.png)


if __name__ == "__main__":
    main()
