"""Benchmark: Puzzle (BLD + replace-1-block KL + MIP) vs pruning baselines at equal *measured* speed.

A byte-level llama-style parent is trained here on generated text (nas_puzzle.toy_corpus); a
decoupled BLD library is built, every (layer, variant) scored by replace-1-block KL, per-variant
runtimes measured on this CPU in context (prefill + cached decode at batch b), and for budgets of
90-40 % of the parent's runtime the MIP child is compared with the no-op-only MIP, ShortGPT depth
pruning, Minitron-style uniform width pruning (activation-importance weights, no BLD) and the best
homogeneous library child under the same budget (plus greedy / random / max-params /
LM-loss-scored MIP / MIP on a no-BLD library, pre-GKD). Those five then get the same short GKD.

Equal budget is not equal speed (removal baselines land below the budget), so each method's
held-out KL(parent || child) after GKD is traced against its *measured* speedup over the
budgets and interpolated (log KL, linear in speedup) at common speedups; seeds give paired
ratios to Puzzle with 95 % t-intervals. Speed is measured twice, interleaved with the parent
and repeated until every model's 95 % interval is within 5 % of its mean (min over rounds):
the in-package decoder (prefill + cached decode) and Hugging Face ``generate`` of the exported
child (``to_hf``). The cost table is checked against >= 10 random children timed the same way.

    uv run python tools/bench/puzzle_bench.py            # 3 seeds (~30 min on 2 cores)
    uv run python tools/bench/puzzle_bench.py --quick    # smoke run, writes to a temp folder
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import torch
from record import Run, fmt_ci, mean_ci
from scipy.stats import spearmanr

import nas_puzzle as npz
from nas_puzzle import baselines
from nas_puzzle.cost import _model_runner

GKD_METHODS = ("puzzle", "homogeneous", "width_prune", "noop_only", "depth_prune")
SPEEDS = (1.25, 1.5, 2.0, 2.5, 3.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds seed..seed+n-1")
    ap.add_argument("--quick", action="store_true", help="tiny smoke-test configuration")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--backend", choices=("measure", "measure_subblocks", "analytic"), default="measure",
                    help="per-variant cost backend fed to the MIP")  # fmt: skip
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    ap.add_argument("--rel-ci", type=float, default=0.05,
                    help="time every model until its 95%% interval is within this of its mean")  # fmt: skip
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=None, help="default 4 (2 with --quick)")
    ap.add_argument("--parent-steps", type=int, default=None, help="default 300 (60 with --quick)")
    ap.add_argument("--png", type=str, default=None, help="write a speedup/accuracy plot")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.budgets = 1, [0.9, 0.6]
    rec = Run("nas-puzzle", out=tempfile.mkdtemp() if args.quick else None)
    results = [run(args, args.seed + k, rec) for k in range(args.seeds)]
    report(rec, results, args)


def interp_kl(points: list[tuple[float, float]], s: float) -> float | None:
    """log-KL at speedup ``s`` on a method's measured curve (linear between neighbours); None
    outside the measured range (no extrapolation)."""
    pts = sorted(points)
    x = np.array([p[0] for p in pts])
    y = np.log(np.maximum([p[1] for p in pts], 1e-8))
    if len(x) == 0 or s < x[0] or s > x[-1]:
        return None
    return float(np.interp(s, x, y))


def equal_speed(results: list[dict], key: str) -> tuple[list, dict]:
    """Rows: common speedup, method, geometric-mean KL [CI], ratio to Puzzle [CI] (paired)."""
    rows, per_seed = [], {}
    for s in SPEEDS:
        logs = {}
        for m in GKD_METHODS:
            logs[m] = [
                interp_kl([(r[key], r["post"]["kl_to_parent"]) for r in res["rows"]
                           if r["method"] == m and r["post"] is not None], s)
                for res in results
            ]  # fmt: skip
        per_seed[f"{s}"] = logs
        base = logs["puzzle"]
        if all(v is None for v in base):
            continue
        for m in GKD_METHODS:
            vals = [v for v in logs[m] if v is not None]
            if not vals:
                rows.append([f"{s:.2f}x", m, "outside measured range", "", "", 0])
                continue
            mean, lo, hi = mean_ci(vals) if len(vals) > 1 else (vals[0], np.nan, np.nan)
            kl = f"{np.exp(mean):.4f}" + (
                f" [{np.exp(lo):.4f}, {np.exp(hi):.4f}]" if len(vals) > 1 else ""
            )
            pair = [
                a - b for a, b in zip(logs[m], base, strict=True) if a is not None and b is not None
            ]
            if m == "puzzle" or not pair:
                ratio, wins = ("1" if m == "puzzle" else "no paired seed"), ""
            else:
                pm, plo, phi = mean_ci(pair) if len(pair) > 1 else (pair[0], np.nan, np.nan)
                ratio = f"{np.exp(pm):.2f}" + (
                    f" [{np.exp(plo):.2f}, {np.exp(phi):.2f}]" if len(pair) > 1 else ""
                )
                wins = f"{sum(d > 0 for d in pair)}/{len(pair)}"
            rows.append([f"{s:.2f}x", m, kl, ratio, wins, len(vals)])  # fmt: skip
    return rows, per_seed


def report(rec: Run, results: list[dict], args: argparse.Namespace) -> None:
    """Write the equal-speed, per-budget, cost-check and pipeline tables."""
    seeds = [r["seed"] for r in results]
    cols = ["speedup", "method", "KL after GKD (geo-mean [95% CI])", "KL / Puzzle's [95% CI]",
            "Puzzle lower on", "seeds in range"]  # fmt: skip
    note = (
        "KL = held-out KL(parent || child) after {gkd} equal GKD steps, interpolated (log KL, "
        "linear in speedup) on each method's curve over budgets {b}; a method is only compared "
        "inside the speedups it reached. KL / Puzzle's > 1: the baseline keeps less of the "
        "parent at that speed (paired over seeds)."
    ).format(gkd=results[0]["info"]["steps_gkd"], b=", ".join(f"{x:.0%}" for x in args.budgets))
    heads = []
    for key, name, what in (("speedup", "equal_speed", "in-package decoder (prefill + cached decode)"),
                            ("speedup_generate", "equal_speed_generate", "HF generate of the exported child")):  # fmt: skip
        rows, per_seed = equal_speed(results, key)
        at2 = [
            r
            for r in rows
            if r[0] == "2.00x" and r[1] != "puzzle" and r[3] not in ("", "no paired seed")
        ]
        head = "; ".join(f"{r[1]} {r[3].split(' ')[0]}x Puzzle's KL" for r in at2)
        heads.append(head)
        rec.table(
            name, cols, rows, seeds=seeds, per_seed=per_seed,
            title=f"Equal measured speed ({what}): KL after GKD at common speedups",
            notes=[note, f"Speed: {what}, batch 32, 32 + 32 tokens, one thread, thread CPU time, "
                   f"interleaved with the parent until every model's 95% interval is within "
                   f"{args.rel_ci:.0%} of its mean; speedup = parent's min / child's min."],
            headline=f"at 2x measured speed ({'decoder' if key == 'speedup' else 'HF generate'}): {head}" if head else None,
        )  # fmt: skip
    # per budget
    brows = []
    per_budget = {}
    for frac in args.budgets:
        for m in GKD_METHODS:
            rs = [
                r
                for res in results
                for r in res["rows"]
                if r["budget"] == frac and r["method"] == m
            ]
            if not rs:
                continue
            per_budget[f"{frac}/{m}"] = rs
            brows.append([f"{frac:.0%}", m, fmt_ci([r["pre"]["kl_to_parent"] for r in rs], 4),
                          fmt_ci([r["post"]["kl_to_parent"] for r in rs], 4),
                          fmt_ci([100 * r["post"]["acc_retained"] for r in rs], 1),
                          f"{np.mean([r['cost'] for r in rs]):.2f}",
                          fmt_ci([r["speedup"] for r in rs], 2), fmt_ci([r["speedup_generate"] for r in rs], 2),
                          len(rs)])  # fmt: skip
    rec.table(
        "budgets",
        ["budget", "method", "KL before GKD", "KL after GKD", "acc. retained %", "predicted cost",
         "speedup (decoder)", "speedup (HF generate)", "seeds"],
        brows, seeds=seeds, per_seed=per_budget,
        title="Per budget: mean [95% t-interval over seeds]",
        notes="Budget = fraction of the parent's runtime under the in-context measured cost table; "
              "predicted cost = the MIP-side estimate / parent. width_prune has no row where no "
              "uniformly narrowed shape fits the budget.",
    )  # fmt: skip
    # pre-GKD library baselines
    lrows = []
    for frac in args.budgets:
        for m in ("puzzle", "greedy", "random", "max_params", "lm_scored", "no_bld"):
            rs = [
                r
                for res in results
                for r in res["rows"]
                if r["budget"] == frac and r["method"] == m
            ]
            if rs:
                lrows.append([f"{frac:.0%}", m, fmt_ci([r["pre"]["kl_to_parent"] for r in rs], 4),
                              fmt_ci([r["speedup"] for r in rs], 2), len(rs)])  # fmt: skip
    rec.table(
        "library_baselines",
        ["budget", "method", "KL (no GKD)", "speedup (decoder)", "seeds"],
        lrows, seeds=seeds,
        title="Search over the same library, before GKD (paper App. F.2 baselines, F.1.4, §3)",
        notes="greedy, random-from-library, max-params: App. F.2; lm_scored: the MIP on "
              "replace-1-block LM loss (F.1.4); no_bld: the MIP on a library of training-free "
              "inits only (§3).",
    )  # fmt: skip
    # cost check
    crows = []
    for name in results[0]["checks"]:
        vs = [res["checks"][name] for res in results]
        e = np.abs(np.concatenate([v["rel_err"] for v in vs]))
        crows.append([name, len(e), f"{np.median(e):.1%}", f"{e.max():.1%}", f"{np.mean(e <= 0.15):.0%}",
                      ", ".join(f"{v['spearman']:.3f}" for v in vs),
                      f"{sum(v['kv_monotone'] for v in vs)}/{len(vs)}",
                      ", ".join(str(v["rounds"]) for v in vs),
                      f"{sum(v['converged'] for v in vs)}/{len(vs)}"])  # fmt: skip
    rec.table(
        "cost_check",
        ["costs", "children", "median abs err", "max abs err", "within 15%", "Spearman per seed",
         "KV monotone", "rounds per seed", "all within CI target"],
        crows, seeds=seeds,
        per_seed={n: [{k: v for k, v in res["checks"][n].items()} for res in results] for n in results[0]["checks"]},
        title="Cost prediction vs measured whole-model time of random children (parent-relative)",
        notes=[f"Targets (issue #45): median error <= 15%, Spearman >= 0.9, >= 10 children. Children "
               f"and parent timed round-robin until every 95% interval is within {args.rel_ci:.0%} "
               f"of its mean (rounds = how many that took; at most {10 if args.quick else 60}).",
               "measure_subblocks (control) = each subblock timed alone and summed."],
        timing=True,
    )  # fmt: skip
    info = [res["info"] for res in results]
    rec.table(
        "pipeline",
        ["seed", "parent params", "parent test LM loss", "parent top-1", "BLD not worse than init",
         "additivity Spearman", "whole run s"],
        [[i["seed"], f"{i['params'] / 1e6:.2f}M", f"{i['lm_loss']:.3f}", f"{i['top1']:.3f}",
          f"{i['bld_better']:.0%}", f"{i['additivity']:.2f}", f"{i['total_s']:.0f}"] for i in info],
        seeds=seeds, per_seed=info,
        title="Pipeline checks per seed",
        notes="BLD not worse than init: share of (layer, variant) pairs whose replace-1-block KL "
              "with the BLD-trained library is <= that of the training-free init (paper §3). "
              "Additivity: Spearman of summed replace-1-block KL vs the realised child's KL over "
              "30 random library architectures (spec A6).",
    )  # fmt: skip
    if args.png:
        from nas_puzzle.plotting import plot_tradeoff

        plot_tradeoff([{"method": r["method"], "budget": r["budget"], "speedup": r["speedup"],
                        "acc_retained": (r["post"] or r["pre"])["acc_retained"]}
                       for r in results[0]["rows"]], args.png)  # fmt: skip
        print(f"wrote {args.png}")


def _generate_clock(model, b: int, prefill: int, decode: int):
    """Closure: thread CPU time of HF ``generate`` (greedy, exactly ``decode`` new tokens) of the
    exported child."""
    hf = npz.to_hf(model)
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, model.cfg.vocab_size, (b, prefill), generator=g)
    mask = torch.ones_like(prompt)

    def fn() -> float:
        t0 = time.thread_time()
        hf.generate(prompt, attention_mask=mask, max_new_tokens=decode, min_new_tokens=decode,
                    do_sample=False, pad_token_id=0)  # fmt: skip
        return time.thread_time() - t0

    return fn


def run(args, seed: int, rec: Run) -> dict:
    """One full pipeline run for ``seed``; prints its table and returns rows, checks and info."""
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
    parent = npz.train_parent(cfg, train, steps=steps_parent, lr=3e-3, batch_size=16,
                              seed=args.seed)  # fmt: skip
    n_params = sum(p.numel() for p in parent.parameters())

    space = npz.SearchSpace.paper_default(cfg, ffn_ratios=(1.0, 0.75, 0.5, 0.25, 0.1))
    lib = npz.build_library(parent, space, train, steps=steps_bld, lr=1e-3, batch_size=8,
                            seed=args.seed)  # fmt: skip
    scores = npz.replace_one_block(parent, lib, val, metrics=("kl", "lm_loss"), max_windows=16)
    # ablation (paper §3): library of training-free inits only, scored the same way
    lib0 = npz.build_library(parent, space, train, mode="init_only", seed=args.seed)
    scores0 = npz.replace_one_block(parent, lib0, val, metrics=("kl",), max_windows=16)
    bld_better = float(np.mean(scores["kl"] <= scores0["kl"] + 1e-9))

    # ShortGPT block importance on validation windows (for the depth-pruning baseline)
    importance = baselines.block_importance(parent, npz.eval_windows(val, 64, 16)[:, :-1])
    b, prefill, decode = 32, 32, 32
    scen = npz.Scenario(batch_sizes=(b,), prefill_len=prefill, decode_len=decode)
    costs = npz.estimate(space, cfg, scen, backend=args.backend, threads=args.threads,
                         repeats=5 if q else 15)  # fmt: skip
    checks = {}
    if args.backend != "analytic":
        nch = 4 if q else 12
        sub = npz.estimate(space, cfg, scen, backend="measure_subblocks", threads=args.threads,
                           repeats=2 if q else 10)  # fmt: skip
        for name, tab in ((args.backend, costs), ("measure_subblocks (control)", sub)):
            v = npz.validate_costs(tab, cfg, n_children=nch, threads=args.threads, repeats=5,
                                   rel_ci=args.rel_ci, max_repeats=10 if q else 60, seed=args.seed)  # fmt: skip
            checks[name] = {
                k: (x.tolist() if isinstance(x, np.ndarray) else x) for k, x in v.items()
            }
    pidx = [space.index(cfg.parent_block)] * cfg.n_layers
    par_rt = costs.model_totals(pidx, b)["runtime_s"]

    parent_eval = npz.evaluate(parent, parent, test, max_windows=64)
    rows, finals = [], []
    for frac in args.budgets:
        cons = npz.Constraints(latency_max_s=frac * par_rt)
        sols = {"puzzle": npz.solve(scores, costs, cons)}
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
            post, final = None, child
            if name in GKD_METHODS:
                final = npz.uptrain(child, parent, train, steps=steps_gkd, lr=2e-4, batch_size=8,
                                    seed=args.seed)  # fmt: skip
                post = npz.evaluate(final, parent, test, max_windows=64)
            finals.append(final)
            rows.append({"budget": frac, "method": name, "cost": sol.totals["runtime_s"] / par_rt,
                         "pre": pre, "post": post, "layers": list(sol.names)})  # fmt: skip

    # measured speed, interleaved with the parent, until every 95% interval is within rel_ci
    maxr = 10 if q else 60
    # the cost table's own runner: thread CPU time of one prefill + cached greedy decode
    dec = npz.time_round_robin([_model_runner(m, scen, b) for m in [parent, *finals]],
                               repeats=5, rel_ci=args.rel_ci, max_repeats=maxr, desc="decoder")  # fmt: skip
    gk = [k for k, r in enumerate(rows) if r["method"] in GKD_METHODS]
    gen = npz.time_round_robin(
        [_generate_clock(m, b, prefill, decode) for m in [parent, *(finals[k] for k in gk)]],
        repeats=5, rel_ci=args.rel_ci, max_repeats=maxr, desc="generate",
    )  # fmt: skip
    for k, r in enumerate(rows):
        r["speedup"] = float(dec["total_min"][0] / dec["total_min"][k + 1])
        r["speedup_generate"] = None
    for j, k in enumerate(gk):
        rows[k]["speedup_generate"] = float(gen["total_min"][0] / gen["total_min"][j + 1])

    # additivity (spec A6): summed replace-1-block KL vs the realized child's KL
    rng = np.random.default_rng(args.seed)
    est, real = [], []
    for _ in range(10 if q else 30):
        idx = rng.integers(0, len(space.variants()), size=cfg.n_layers)
        est.append(float(scores["kl"][np.arange(cfg.n_layers), idx].sum()))
        child = npz.realize(parent, lib, [space.variants()[j] for j in idx])
        real.append(npz.evaluate(child, parent, test, max_windows=16)["kl_to_parent"])
    info = {
        "seed": seed, "params": n_params, "lm_loss": parent_eval["parent_lm_loss"],
        "top1": parent_eval["parent_top1_acc"], "bld_better": bld_better,
        "additivity": float(spearmanr(est, real).statistic), "steps_gkd": steps_gkd,
        "total_s": time.perf_counter() - t_start,
        "rounds_decoder": dec["rounds"], "converged_decoder": dec["converged"],
        "rounds_generate": gen["rounds"], "converged_generate": gen["converged"],
        "parent_decoder_s": float(dec["total_min"][0]), "parent_generate_s": float(gen["total_min"][0]),
    }  # fmt: skip
    rec.sample_load()
    print(f"\n[seed {seed}] parent {n_params / 1e6:.2f}M params, test LM loss {info['lm_loss']:.3f}; "
          f"timing rounds: decoder {dec['rounds']} (converged {dec['converged']}), "
          f"generate {gen['rounds']} (converged {gen['converged']}); {info['total_s']:.0f}s")  # fmt: skip
    print(
        f"{'budget':>6} {'method':<12} {'cost':>5} {'dec':>6} {'gen':>6} | {'KL':>7} | {'GKD KL':>7} | layers"
    )
    for r in rows:
        g = f"{r['speedup_generate']:>5.2f}x" if r["speedup_generate"] else f"{'':>6}"
        post = f"{r['post']['kl_to_parent']:>7.4f}" if r["post"] else f"{'':>7}"
        print(f"{r['budget']:>6.0%} {r['method']:<12} {r['cost']:>5.2f} {r['speedup']:>5.2f}x {g} | "
              f"{r['pre']['kl_to_parent']:>7.4f} | {post} | {' '.join(r['layers'])}")  # fmt: skip
    return {"seed": seed, "rows": rows, "checks": checks, "info": info}


if __name__ == "__main__":
    main()
