"""Benchmark for kd-losses: memory and time of the loss paths, and an equal-cost test of DA-KD.

Part 1 -- memory/time of one forward+backward (peak resident memory of a fresh subprocess above
its post-warm-up level, with glibc's mmap threshold fixed at 64 KB so that freed temporaries
leave the resident set; CPU time with 2 threads, best of 2, in a second subprocess):

* (a) the lm-head problem: V = 128K, 1024 tokens, d = 1024, fp32 hidden states and lm-head
  weights (``--dtype bfloat16`` for bf16, recorded as ``memory_bf16``: on a CPU with AVX512-BF16
  or AMX a bf16 matmul is faster than fp32; without them PyTorch falls back to a generic kernel
  that is orders of magnitude slower, and the bf16 run takes hours; the record keeps the CPU's
  bf16 flags), every loss of the package through the fused head (automatic block sizes).
  Logits paths first compute student and teacher logits with a matmul, then the
  loss: *naive* (probability-space BDL with autograd), *TRL JSD* (the formula of TRL's
  ``GKDTrainer.generalized_jsd_loss``: log-softmax, log-mixture by logsumexp, two ``kl_div``),
  *package logits* (``distill_loss`` of each loss: every fused row's time is divided by its
  own loss's logits path), *package chunked* (BDL, ``chunk_size=64``), and *fused*
  (``fused_kd_loss`` on the hidden states, no full-vocab logits). Peak memory is
  reported with and without the lm-head weight's gradient (V x d elements, needed by any method).
* (b) the logits-only problem: V = 32K, 2048 tokens, fp32 logits given: naive BDL vs the
  package's unchunked and chunked BDL.

Part 2 -- DA-KD against equal-cost controls (``--seeds`` seeds, 1,200 training sequences: the
regime where the teacher-student gap is >= 10 points). A generated corpus with easy
and hard strata (``make_corpus``: Markov chains of graded entropy, noisy stride sequences and
copy sequences); a 4-layer teacher, a 2-layer student that can learn every stratum (it has
enough layers for the copy task's induction head). Every method distils with BDL for the same
epochs and the same per-epoch set sizes (1, 0.7, 0.49, 0.34, 0.3, 0.3 of the data: 0.52x the
teacher forward passes of full-data distillation):

* DA-KD: difficulty-score (DDS) stratified pruning (nested sets);
* random pruning: the same shrink schedule, uniform nested subsets;
* full data at equal cost: a fresh uniform subset of the same size every epoch;

plus full-data distillation for all epochs (1.0x passes) as the reference, and DA-KD with
forward KL to separate the loss from the selection. Costs count teacher and student forward
passes (DDS re-scoring adds student passes); paired 95% intervals over seeds.

    uv run python tools/bench/kd_bench.py             # ~40 min on 2 cores
    uv run python tools/bench/kd_bench.py --quick     # small sizes
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np
import torch
from record import Run, child_json, fmt_ci, fmt_sd

import kd_losses as K

_CHILD = r"""
import json, sys, time, torch
import torch.nn.functional as F
import kd_losses as K
torch.set_num_threads(2)
method, problem, dtype = sys.argv[1], sys.argv[2], sys.argv[3]
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
g = torch.Generator().manual_seed(0)
LAM = 0.1
def naive_bdl(s, t):
    p, q = torch.softmax(t.float(), -1), torch.softmax(s.float(), -1)
    m1, m2 = LAM * p + (1 - LAM) * q, LAM * q + (1 - LAM) * p
    return ((p * (torch.log(p) - torch.log(m1))).sum(-1)
            + (q * (torch.log(q) - torch.log(m2))).sum(-1)).mean()
def trl_jsd(s, t, beta=0.5):
    ls, lt = F.log_softmax(s.float(), -1), F.log_softmax(t.float(), -1)
    lm = torch.logsumexp(torch.stack([ls + torch.log(torch.tensor(1 - beta)),
                                      lt + torch.log(torch.tensor(beta))]), 0)
    kl_t = F.kl_div(lm, lt, reduction="none", log_target=True)
    kl_s = F.kl_div(lm, ls, reduction="none", log_target=True)
    return (beta * kl_t + (1 - beta) * kl_s).sum(-1).mean()
if problem == "head":
    V, N, D, dt = 131072, 1024, 1024, getattr(torch, dtype)
    hs = torch.randn(N, D, generator=g).to(dt).requires_grad_(True)
    ws = (0.02 * torch.randn(V, D, generator=g)).to(dt).requires_grad_(True)
    ht = torch.randn(N, D, generator=g).to(dt)
    wt = (0.02 * torch.randn(V, D, generator=g)).to(dt)
    def run():
        if method.startswith("fused"):
            kind = method.split(":")[1] if ":" in method else "bdl"
            loss = K.fused_kd_loss(hs, ws, teacher_hidden=ht, teacher_weight=wt, loss=kind)
        else:
            s = hs @ ws.T
            with torch.no_grad():
                t = ht @ wt.T
            if method.startswith("logits:"):  # the same loss on full logits
                loss = K.distill_loss(method.split(":")[1], s, t)
            else:
                loss = {"naive": naive_bdl, "trl_jsd": trl_jsd,
                        "logits": lambda s, t: K.bidirectional_discrepancy_loss(s, t),
                        "chunked": lambda s, t: K.bidirectional_discrepancy_loss(
                            s, t, chunk_size=64),
                        }[method](s, t)
        loss.backward()
        hs.grad = ws.grad = None
    grad_w_mb = V * D * dt.itemsize / 2**20
else:
    V, N = 32768, 2048
    s = torch.randn(N, V, generator=g).requires_grad_(True)
    t = torch.randn(N, V, generator=g)
    def run():
        loss = {"naive": naive_bdl,
                "logits": lambda s, t: K.bidirectional_discrepancy_loss(s, t),
                "chunked": lambda s, t: K.bidirectional_discrepancy_loss(s, t, chunk_size=64),
                }[method](s, t)
        loss.backward()
        s.grad = None
    grad_w_mb = 0.0
run()  # warm-up (allocator, thread pools, one-time costs)
if sys.argv[4] == "mem":
    # run under MALLOC_MMAP_THRESHOLD_ (see measure): every freed block goes back to the OS,
    # so the resident peak above the post-warm-up level is the peak of live temporaries
    open("/proc/self/clear_refs", "w").write("5")
    base = status("VmRSS")
    run()
    peak, best = status("VmHWM") - base, float("nan")
else:
    peak, best = float("nan"), float("inf")
    for _ in range(2):
        t0 = time.process_time()
        run()
        best = min(best, time.process_time() - t0)
print(json.dumps([peak, best, grad_w_mb]))
"""


def measure(method: str, problem: str, dtype: str = "float32") -> tuple[float, float, float]:
    """(peak MB above the inputs, best CPU s, weight-gradient MB): memory and time from two
    fresh subprocesses, memory with the mmap threshold fixed (see ``record.child_json``)."""
    mem = child_json(_CHILD, method, problem, dtype, "mem", fixed_mmap=True)
    time_ = child_json(_CHILD, method, problem, dtype, "time")
    return mem[0], time_[1], mem[2]


def _bf16_flags() -> list[str]:
    """The CPU flags that decide whether bf16 GEMM is fast (AVX512-BF16, AMX)."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines()
                  if ln.startswith("flags")), [])  # fmt: skip
    return sorted(f for f in flags if "bf16" in f or f.startswith("amx"))


def part1(run, quick: bool, dtype: str) -> None:
    if quick:
        print("\n(part 1 skipped with --quick: the 128K-vocab problem needs ~3 GB and minutes)")
        return
    methods = ["naive", "trl_jsd", "logits", "chunked"]
    methods += [f"logits:{k}" for k in K.LOSS_NAMES if k != "bdl"]
    methods += [f"fused:{k}" for k in K.LOSS_NAMES]
    rows = {}
    for m in methods:
        # cached per method (keyed by the package source): a rerun after a crash resumes
        rows[m] = tuple(
            run.cached(
                f"head:{m}:{dtype}:mmap-threshold", lambda m=m: list(measure(m, "head", dtype))
            )
        )
        run.sample_load()
    rows["logits:bdl"] = rows["logits"]
    names = {"naive": "naive BDL (probability space)", "trl_jsd": "TRL JSD formula",
             "logits": "package logits (BDL)", "chunked": "package chunked (64, BDL)"}  # fmt: skip
    table = []
    for m, (peak, t, gw) in rows.items():
        if m == "logits:bdl":
            continue
        kind = m.split(":")[1] if ":" in m else "bdl"
        if m.startswith("fused"):
            label = f"fused head, {kind}"
        elif m.startswith("logits:"):
            label = f"package logits ({kind})"
        else:
            label = names[m]
        # time against the package's logits path of the same loss (BDL for the BDL baselines)
        table.append([label, peak, peak - gw, t, t / rows[f"logits:{kind}"][1]])
    fused = [r for r in table if r[0].startswith("fused")]
    worst_mem = max(r[2] for r in fused)
    worst_t = max(r[4] for r in fused)
    gw_mb = rows["logits"][2]
    short = {"bfloat16": "bf16", "float32": "fp32"}[dtype]
    run.table(
        "memory" if dtype == "float32" else f"memory_{short}",
        [
            "method",
            "peak MB",
            "peak MB above the weight gradient",
            "CPU s",
            "time / logits path of the same loss",
        ],
        table,
        fmt=[None, ".0f", ".0f", ".2f", ".2f"],
        timing=True,
        title=f"lm-head + loss forward+backward, V=128K, 1024 tokens, d=1024, {short}, 2 threads",
        notes=(
            f"Target (issue #44, stated for bf16): every loss through the fused head <= 64 MB "
            f"above the weight gradient ({gw_mb:.0f} MB in {short}) at <= 1.5x the logits path's "
            "CPU time. Each fused row is timed against the package's logits path of the same "
            "loss (its `package logits` row)."
        ),
        headline=(
            f"fused head at V=128K ({short}): every loss <= {worst_mem:.0f} MB above the weight "
            f"gradient at <= {worst_t:.2f}x the logits path's time"
        ),
        extra={"dtype": dtype, "cpu_flags": _bf16_flags()},
    )
    if dtype != "float32":
        return  # the logits-only problem is stated in fp32
    rows = {m: measure(m, "logits") for m in ("naive", "logits", "chunked")}
    bp, bt = rows["naive"][0], rows["naive"][1]
    run.table(
        "memory_logits",
        ["method", "peak MB", "vs naive", "CPU s", "time vs naive"],
        [[m, peak, peak / bp, t, t / bt] for m, (peak, t, _) in rows.items()],
        fmt=[None, ".0f", ".2f", ".2f", ".2f"],
        timing=True,
        title="BDL on given logits, V=32K, 2048 tokens, fp32, forward+backward",
        notes="Targets: unchunked peak <= naive at <= 1.0x its time; chunked <= 0.25x peak at <= 1.3x time.",
    )


def part2(run, quick: bool, seeds: int, n: int) -> None:
    epochs = 6
    vocab, seq = 48, 32
    res: dict[str, list] = {}
    gaps = []
    for seed in range(seeds):
        torch.manual_seed(seed)
        tokens, _ = K.make_corpus(
            n + 500, seq_len=seq, vocab_size=vocab, n_markov=3, copy_frac=0.3,
            stride_frac=0.2, seed=seed,
        )  # fmt: skip
        train, val = tokens[:n], tokens[n:]
        teacher = K.TinyLM(vocab, d_model=128, n_layers=4, n_heads=4, max_len=seq)
        K.train_lm(teacher, train, epochs=14, batch_size=32, lr=3e-3, seed=seed)
        t_nll, t_acc = K.evaluate_lm(teacher, val)
        init = K.TinyLM(vocab, d_model=48, n_layers=2, n_heads=4, max_len=seq).state_dict()

        def student(init=init):
            m = K.TinyLM(vocab, d_model=48, n_layers=2, n_heads=4, max_len=seq)
            m.load_state_dict(init)
            return m

        ce = student()
        K.train_lm(ce, train, epochs=epochs, batch_size=32, lr=3e-3, seed=seed)
        ce_nll, ce_acc = K.evaluate_lm(ce, val)
        gaps.append(t_acc - ce_acc)
        res.setdefault("teacher", []).append((t_nll, t_acc, np.nan, np.nan))
        res.setdefault("student, ground truth only (no teacher)", []).append(
            (ce_nll, ce_acc, 0.0, epochs * n)
        )
        full_cost = None
        plans = [
            ("full data, all epochs (reference)", "bdl", None),
            ("DA-KD (DDS stratified pruning)", "bdl", "stratified"),
            ("random pruning, same schedule", "bdl", "random"),
            ("full data at equal cost (resampled)", "bdl", "resample"),
            ("DA-KD selection with FKL", "fkl", "stratified"),
        ]
        for name, loss, strategy in plans:
            sampler = None
            if strategy is not None:
                sampler = K.DifficultyAwareSampler(
                    n, prune_ratio=0.3, min_fraction=0.3, strategy=strategy, seed=seed
                )
            m = student()
            r = K.distill(
                m, teacher, train, loss=loss, epochs=epochs, batch_size=32, lr=3e-3,
                sampler=sampler, seed=seed,
            )  # fmt: skip
            nll, acc = K.evaluate_lm(m, val)
            full_cost = full_cost or r.teacher_forwards
            res.setdefault(name, []).append(
                (nll, acc, r.teacher_forwards / full_cost, r.student_forwards / full_cost)
            )
            print(f"  seed {seed} {name}: val NLL {nll:.4f}", flush=True)
        run.sample_load()
    seed_list = list(range(seeds))
    table = []
    for name, rows in res.items():
        a = np.array(rows, dtype=float)
        passes = None if np.isnan(a[0, 2]) else float(a[:, 2].mean())
        spass = None if np.isnan(a[0, 3]) else float(a[:, 3].mean())
        table.append([name, fmt_sd(a[:, 0], 4), fmt_sd(100 * a[:, 1], 1), passes, spass])
    run.table(
        "dakd",
        [
            "method",
            "val NLL",
            "val accuracy %",
            "teacher passes (x full KD)",
            "student passes (x full KD's teacher passes)",
        ],
        table,
        fmt=[None, None, None, ".2f", ".2f"],
        seeds=seed_list,
        per_seed={k: [list(r) for r in v] for k, v in res.items()},
        title=f"DA-KD vs equal-cost controls ({n} training sequences, {epochs} epochs)",
        notes=(
            f"Teacher - student (ground truth only) accuracy gap: {fmt_ci(100 * np.array(gaps), 1)} "
            "points (target >= 10). Student passes include DA-KD's difficulty re-scoring; "
            "the ground-truth-only student counts its training passes in sequences."
        ),
    )
    da = np.array([r[0] for r in res["DA-KD (DDS stratified pruning)"]])
    rows = []
    for ctrl in ("random pruning, same schedule", "full data at equal cost (resampled)",
                 "full data, all epochs (reference)"):  # fmt: skip
        d = da - np.array([r[0] for r in res[ctrl]])
        rows.append([f"DA-KD − {ctrl}", fmt_ci(d, 4, sign=True), f"{int((d < 0).sum())}/{len(d)}"])
    fkl = np.array([r[0] for r in res["DA-KD selection with FKL"]])
    d = da - fkl
    rows.append(["BDL − FKL (same DA-KD selection)", fmt_ci(d, 4, sign=True),
                 f"{int((d < 0).sum())}/{len(d)}"])  # fmt: skip
    run.table(
        "dakd_paired",
        ["comparison (val NLL)", "mean Δ [95% CI]", "first lower in"],
        rows,
        seeds=seed_list,
        title="Paired differences over seeds (negative = the first is better)",
        headline=(
            f"DA-KD − random pruning at equal teacher cost: {rows[0][1]} val NLL over {seeds} seeds"
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sequences", type=int, default=1200)
    parser.add_argument("--parts", default="1,2")
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=["float32", "bfloat16"],
        help="part 1's hidden states and lm-head weights (bf16 needs a CPU with fast bf16 GEMM)",
    )
    args = parser.parse_args()
    run = Run("kd-losses")
    parts = args.parts.split(",")
    if "1" in parts:
        part1(run, args.quick, args.dtype)
    torch.set_num_threads(1)
    if "2" in parts:
        part2(
            run, args.quick, 1 if args.quick else args.seeds, 600 if args.quick else args.sequences
        )


if __name__ == "__main__":
    main()
