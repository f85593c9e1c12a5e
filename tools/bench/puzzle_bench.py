"""Benchmark: Puzzle (BLD + replace-1-block KL + MIP) vs pruning baselines at equal runtime budgets.

A byte-level llama-style parent is trained here on generated text (nas_puzzle.toy_corpus); a
decoupled BLD library is built, every (layer, variant) scored by replace-1-block KL, per-variant
runtimes measured on this CPU (prefill + cached decode at batch b), and for budgets of 90/70/50%
of the parent's runtime the MIP child is compared with the no-op-only MIP, ShortGPT depth
pruning, Minitron-style uniform width pruning (activation-importance weights, no BLD) and the best
homogeneous library child under the same budget (plus greedy / random / max-params /
LM-loss-scored MIP / MIP on a no-BLD library, pre-GKD). Those five then get the same short GKD.
Costs are measured in context (homogeneous decoders, see nas_puzzle.cost) and checked against
measured whole-model time of random children, beside the summed-subblock control. Quality: held-out LM loss, next-token accuracy retained
and KL to the parent; speed: measured whole-model throughput relative to the parent.

    uv run python tools/bench/puzzle_bench.py            # default (~5-6 min on 2 shared cores)
    uv run python tools/bench/puzzle_bench.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from scipy.stats import spearmanr

import nas_puzzle as npz
from nas_puzzle import baselines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--seeds", type=int, default=1, help="repeat the whole run for seeds seed..seed+n-1"
    )
    ap.add_argument("--quick", action="store_true", help="tiny smoke-test configuration")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--backend", choices=("measure", "measure_subblocks", "analytic"), default="measure",
                    help="per-variant cost backend fed to the MIP")  # fmt: skip
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.9, 0.7, 0.5])
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=None, help="default 4 (2 with --quick)")
    ap.add_argument("--parent-steps", type=int, default=None, help="default 300 (60 with --quick)")
    ap.add_argument("--png", type=str, default=None, help="write a speedup/accuracy plot")
    args = ap.parse_args()
    all_rows, all_checks = [], []
    for k in range(args.seeds):
        rows, checks = run(args, args.seed + k)
        all_rows += [(args.seed + k, *r) for r in rows]
        all_checks.append(checks)
    if args.seeds > 1:
        summarize(all_rows)
        summarize_costs(all_checks)


def summarize_costs(all_checks: list) -> None:
    """Cost-prediction check pooled over seeds (each seed: its own table and random children)."""
    if not all_checks or not all_checks[0]:
        return
    print("\n## Across seeds: cost prediction vs measured whole-model time (parent-relative)\n")
    print("| costs | children | median abs err | max abs err | within 15% | Spearman per seed |"
          " KV monotone |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name in all_checks[0]:
        vs = [c[name] for c in all_checks]
        e = np.abs(np.concatenate([v["rel_err"] for v in vs]))
        rho = ", ".join(f"{v['spearman']:.3f}" for v in vs)
        mono = sum(v["kv_monotone"] for v in vs)
        print(f"| {name} | {len(e)} | {np.median(e):.1%} | {e.max():.1%} | "
              f"{np.mean(e <= 0.15):.0%} | {rho} | {mono}/{len(vs)} |")  # fmt: skip


def summarize(all_rows) -> None:
    """Mean and 95 % t-interval over seeds of the post-GKD KL, per budget and method."""
    from scipy.stats import t as student

    print("\n## Across seeds: held-out KL(parent || child) after GKD, mean [95 % CI]\n")
    print("| budget | method | KL before GKD | KL after GKD | speedup (measured) | seeds |")
    print("|---|---|---|---|---|---|")
    keys = sorted({(r[1], r[2]) for r in all_rows if r[6] is not None}, key=lambda k: (-k[0], k[1]))
    for frac, name in keys:
        rs = [r for r in all_rows if r[1] == frac and r[2] == name]
        pre = np.array([r[5]["kl_to_parent"] for r in rs])
        post = np.array([r[6]["kl_to_parent"] for r in rs])
        sp = np.array([r[4] for r in rs])

        def ci(v):
            if len(v) < 2:
                return f"{v.mean():.4f}"
            h = student.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
            return f"{v.mean():.4f} [{v.mean() - h:.4f}, {v.mean() + h:.4f}]"

        print(f"| {frac:.0%} | {name} | {ci(pre)} | {ci(post)} | {sp.mean():.2f}x | {len(rs)} |")


def run(args, seed: int) -> list:
    """One full pipeline run; prints its tables and returns its rows."""
    args = argparse.Namespace(**{**vars(args), "seed": seed})
    torch.set_num_threads(args.threads)
    q = args.quick
    t_start = time.perf_counter()

    n_layers = args.layers or (2 if q else 4)
    cfg = npz.DecoderConfig(d_model=args.d_model, n_layers=n_layers, n_heads=8, n_kv_heads=8,
                            ffn_intermediate=4 * args.d_model, max_seq_len=64)  # fmt: skip
    steps_parent, steps_bld, steps_gkd = (60, 15, 10) if q else (300, 60, 40)
    steps_parent = args.parent_steps or steps_parent
    text = npz.toy_corpus(400_000 if q else 2_000_000, seed=args.seed)
    train, val, test = npz.split_tokens(text, (0.9, 0.05, 0.05))
    t0 = time.perf_counter()
    parent = npz.train_parent(cfg, train, steps=steps_parent, lr=3e-3, batch_size=16,
                              seed=args.seed)  # fmt: skip
    t_parent = time.perf_counter() - t0
    n_params = sum(p.numel() for p in parent.parameters())

    space = npz.SearchSpace.paper_default(cfg, ffn_ratios=(1.0, 0.75, 0.5, 0.25, 0.1))
    t0 = time.perf_counter()
    lib = npz.build_library(parent, space, train, steps=steps_bld, lr=1e-3, batch_size=8,
                            seed=args.seed)  # fmt: skip
    t_bld = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = npz.replace_one_block(parent, lib, val, metrics=("kl", "lm_loss"), max_windows=16)
    t_score = time.perf_counter() - t0
    # ablation (paper §3): library of training-free inits only, scored the same way
    lib0 = npz.build_library(parent, space, train, mode="init_only", seed=args.seed)
    scores0 = npz.replace_one_block(parent, lib0, val, metrics=("kl",), max_windows=16)
    bld_better = float(np.mean(scores["kl"] <= scores0["kl"] + 1e-9))

    # ShortGPT block importance on validation windows (for the depth-pruning baseline)
    importance = baselines.block_importance(parent, npz.eval_windows(val, 64, 16)[:, :-1])
    b, prefill, decode = 32, 32, 32
    scen = npz.Scenario(batch_sizes=(b,), prefill_len=prefill, decode_len=decode)
    t0 = time.perf_counter()
    costs = npz.estimate(space, cfg, scen, backend=args.backend, threads=args.threads,
                         repeats=5 if q else 15)  # fmt: skip
    t_cost = time.perf_counter() - t0
    checks = {}
    if args.backend != "analytic":
        reps, nch = (2, 4) if q else (10, 12)
        sub = npz.estimate(space, cfg, scen, backend="measure_subblocks", threads=args.threads,
                           repeats=reps)  # fmt: skip
        for name, tab in ((args.backend, costs), ("measure_subblocks (control)", sub)):
            checks[name] = npz.validate_costs(tab, cfg, n_children=nch, threads=args.threads,
                                              repeats=reps, seed=args.seed)  # fmt: skip
    pidx = [space.index(cfg.parent_block)] * cfg.n_layers
    par_rt = costs.model_totals(pidx, b)["runtime_s"]

    def speedups(models: list) -> list[float]:
        """Throughput of each model / parent, timed round-robin (min over rounds) so that load
        drifts on the shared machine hit parent and children alike."""
        best = [float("inf")] * (len(models) + 1)
        for _ in range(3 if q else 5):
            for k, m in enumerate([parent, *models]):
                r = npz.measure_throughput(m, b, prefill, decode, repeats=1, threads=args.threads)
                best[k] = min(best[k], r["seconds"])
        return [best[0] / t for t in best[1:]]

    parent_tps = npz.measure_throughput(parent, b, prefill, decode, threads=args.threads)[
        "tokens_per_s"
    ]
    parent_eval = npz.evaluate(parent, parent, test, max_windows=64)
    rows, plot_rows, children, t_mip = [], [], [], 0.0
    for frac in args.budgets:
        cons = npz.Constraints(latency_max_s=frac * par_rt)
        t0 = time.perf_counter()
        sols = {"puzzle": npz.solve(scores, costs, cons)}
        t_mip += time.perf_counter() - t0
        sols["homogeneous"] = baselines.best_homogeneous(scores, costs, cons)
        try:
            sols["width_prune"] = baselines.width_pruning(scores, costs, cons)
        except npz.InfeasibleError:
            pass
        sols["noop_only"] = baselines.noop_only(scores, costs, cons, cfg.parent_block)
        sols["depth_prune"] = baselines.depth_pruning(
            importance, scores, costs, cons, cfg.parent_block
        )
        if not q:
            sols["greedy"] = baselines.greedy(scores, costs, cons)
            sols["random"] = baselines.random_from_library(scores, costs, cons, seed=args.seed)
            sols["max_params"] = baselines.max_params(scores, costs, cons)
            sols["lm_scored"] = npz.solve(scores, costs, cons, objective="lm_loss")
            sols["no_bld"] = npz.solve(scores0, costs, cons)
        for name, sol in sols.items():
            child = npz.realize(parent, lib0 if name in ("no_bld", "width_prune") else lib, sol)
            pre = npz.evaluate(child, parent, test, max_windows=64)
            post = None
            if name in ("puzzle", "homogeneous", "width_prune", "noop_only", "depth_prune"):
                up = npz.uptrain(child, parent, train, steps=steps_gkd, lr=2e-4, batch_size=8,
                                 seed=args.seed)  # fmt: skip
                post = npz.evaluate(up, parent, test, max_windows=64)
            children.append(child)
            rows.append([frac, name, sol.totals["runtime_s"] / par_rt, None, pre, post, sol.names])
    for row, sp in zip(rows, speedups(children), strict=True):
        row[3] = sp
        plot_rows.append({"method": row[1], "budget": row[0], "speedup": sp,
                          "acc_retained": (row[5] or row[4])["acc_retained"]})  # fmt: skip

    # additivity (spec A6): summed replace-1-block KL vs the realized child's KL
    rng = np.random.default_rng(args.seed)
    est, real = [], []
    for _ in range(10 if q else 30):
        idx = rng.integers(0, len(space.variants()), size=cfg.n_layers)
        est.append(float(scores["kl"][np.arange(cfg.n_layers), idx].sum()))
        child = npz.realize(parent, lib, [space.variants()[j] for j in idx])
        real.append(npz.evaluate(child, parent, test, max_windows=16)["kl_to_parent"])
    rho = spearmanr(est, real).statistic

    total = time.perf_counter() - t_start
    print(f"parent: {n_params / 1e6:.2f}M params, {cfg.n_layers} layers, d={cfg.d_model}; "
          f"test LM loss {parent_eval['parent_lm_loss']:.3f}, "
          f"top-1 acc {parent_eval['parent_top1_acc']:.3f}; "
          f"{parent_tps:.0f} tok/s (b={b}, {prefill}+{decode} tokens, {args.threads} thread)")  # fmt: skip
    print(
        f"library: {len(space.attention)} attention x {len(space.ffn)} FFN variants, "
        f"{len(lib.training_log)} BLD units x {steps_bld} steps; costs backend={args.backend}"
    )
    print(f"BLD vs init-only library: replace-1-block KL not worse for {bld_better:.0%} of "
          f"(layer, variant) pairs; additivity: Spearman(sum of 1-block KL, child KL) = "
          f"{rho:.2f} over {len(est)} random library architectures")  # fmt: skip
    print(
        f"time: parent {t_parent:.0f}s, BLD {t_bld:.0f}s, scoring {t_score:.0f}s, "
        f"costs {t_cost:.0f}s, MIP {t_mip:.2f}s total, whole run {total:.0f}s"
    )
    print()
    hdr = (f"{'budget':>6} {'method':<11} {'cost':>5} {'speedup':>7} | {'LM loss':>7} "
           f"{'acc%':>6} {'KL':>7} | {'GKD LM':>7} {'acc%':>6} {'KL':>7} | layers")  # fmt: skip
    print(hdr)
    print("-" * len(hdr))
    for frac, name, cost, sp, pre, post, names in rows:
        g = (f"{post['lm_loss']:>7.3f} {100 * post['acc_retained']:>6.1f} "
             f"{post['kl_to_parent']:>7.4f}") if post else f"{'':>7} {'':>6} {'':>7}"  # fmt: skip
        short = " ".join(n.replace("gqa", "g").replace("ffn", "f").replace("linear", "lin")
                         for n in names)  # fmt: skip
        print(
            f"{frac:>6.0%} {name:<11} {cost:>5.2f} {sp:>6.2f}x | {pre['lm_loss']:>7.3f} "
            f"{100 * pre['acc_retained']:>6.1f} {pre['kl_to_parent']:>7.4f} | {g} | {short}"
        )
    print()
    print("cost = MIP-side runtime estimate / parent (sum of per-block costs); speedup = measured")
    print("whole-model throughput / parent; acc% = next-token accuracy retained vs parent;")
    print(f"KL = held-out KL(parent || child); GKD = after {steps_gkd} equal GKD steps (cos + KL).")
    for frac in args.budgets:
        pz = next(r for r in rows if r[0] == frac and r[1] == "puzzle")
        un = next(r for r in rows if r[0] == frac and r[1] == "homogeneous")
        ratio = un[4]["kl_to_parent"] / max(pz[4]["kl_to_parent"], 1e-12)
        print(f"budget {frac:.0%}: homogeneous KL / Puzzle KL = {ratio:.2f} (pre-GKD)")
    if checks:
        print("\ncost prediction vs measured whole-model time of random children "
              f"(b={b}, {prefill}+{decode} tokens, parent-relative, same round-robin as the parent):")  # fmt: skip
        for name, v in checks.items():
            e = np.abs(v["rel_err"])
            print(f"  {name:<28} |err| median {np.median(e):.1%}, max {e.max():.1%}, "
                  f"within 15%: {np.mean(e <= 0.15):.0%}; Spearman {v['spearman']:.3f}; "
                  f"raw pred/meas - 1 median {np.median(v['abs_rel_err']):+.1%}; "
                  f"KV heads monotone: {v['kv_monotone']}")  # fmt: skip
    if args.png:
        from nas_puzzle.plotting import plot_tradeoff

        plot_tradeoff(plot_rows, args.png)
        print(f"wrote {args.png}")
    return rows, checks


if __name__ == "__main__":
    main()
