"""Benchmark for cost-model: few-shot transfer of a sparse-kernel cost model (COGNATE-style).

For SpMM and SDDMM it collects runtimes on a source and a target platform over generated
matrices, then compares on held-out target matrices (geomean over matrices, mean over seeds):

    target_only@5%   same model, trained on 5% of the target data only
    cognate@5%       pretrained on all source data, fine-tuned on the same 5%
    naive@5%         unified het one-hot instead of per-hardware mappers, same protocol
    zero_shot        source-trained, no target labels
    target_full      target-only model on 100% of the target training data

Metrics: top-1 / top-5 speedup of the model's choice over the default (CSR) configuration,
oracle speedup among the measured candidates, fraction of the oracle log-speedup captured,
pairwise ranking accuracy; ratios are relative to target_full. Anchors on the same few-shot
rows: default, random, best fixed configuration, XGBoost regression / pairwise rank, and
XGBoost pooled over source + target rows (xgboost is a benchmark-only dependency).

    uv run python tools/bench/cost_bench.py             # sim-cpu -> sim-accel
    uv run python tools/bench/cost_bench.py --quick
    uv run --with xgboost python tools/bench/cost_bench.py --real --n-matrices 300   # measured, one core
    uv run python tools/bench/cost_bench.py --real --n-matrices 300 --collect-only   # data only
    uv run python tools/bench/cost_bench.py --tuner      # the autotuning loop (recorded)
    uv run python tools/bench/cost_bench.py --headroom   # a measured target with headroom (~10 min, idle)
    uv run --with xgboost python tools/bench/cost_bench.py --headroom --transfer   # + torch-cpu source
    uv run python tools/bench/cost_bench.py --headroom --mtx-dir DIR   # your .mtx files (SuiteSparse layout)

``--headroom`` (issue #52 items 1-2) measures a target whose knobs matter on a CPU: scipy SpMM
with a heterogeneous ``reorder`` knob (none / reverse Cuthill-McKee / degree sort, scipy.sparse
.csgraph), row panels, column tiles, X layout and 1 or 2 threads (scipy's single-threaded CSR
product is the default), on large generated matrices (100k-250k rows, X beyond the last-level
cache) of which half are stored in a scrambled order, with the interleaved min-of-k protocol and
a test-retest of every matrix's two fastest configurations (``collect(protocol="interleaved")``,
refused below 80 % agreement). It prints the oracle headroom over the default per family, how
much of the variance each knob explains, and the timing quality. Needs an idle machine.
``--transfer`` adds a measured source platform on the same matrices (torch.sparse on CPU, CSR/COO,
1 or 2 threads, same protocol) and the few-shot transfer tables torch-cpu -> scipy-cpu-reorder.
``--mtx-dir`` replaces the generated matrices by every Matrix Market file under a folder
(``cost_model.load_mtx_folder``; tables prefixed ``mtx_``); samples are then repeated to >= 10 ms.

``--tuner`` (issue #52 item 6) uses the model in a search loop on sim-cpu -> sim-accel SpMM: a
COGNATE model pretrained on the source and fine-tuned on 5% of the target ranks every one of the
1,536 configurations of each held-out matrix and ``cost_model.tune`` measures the top 1% / 5% /
10% (plus the default); random search with the same number of measurements (default included)
is the baseline. Recorded to ``results/cost-model/tuner.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from record import Run, fmt_ci, mean_ci

import cost_model as C


def _features(ds: C.CostDataset) -> np.ndarray:
    """Per-row features for the tree baselines: matrix scalars, workload, knob values."""
    mi = ds.matrix_index
    return np.hstack([ds.scalars[mi], ds.workload[mi], ds.hom, ds.het]).astype(np.float32)


def anchors(
    few: C.CostDataset, test: C.CostDataset, seed: int, src: C.CostDataset | None = None
) -> dict[str, np.ndarray]:
    """Scores (lower = predicted faster) of the cheap baselines, trained on the same few rows.

    With ``src``, also ``xgb_pooled``: XGBoost regression on the source rows plus the few
    target rows (hardware flag, each platform's het knobs in its own columns, -1 elsewhere):
    what a practitioner would try first for transfer.
    """
    out = {
        "default": np.where(test.is_default, 0.0, 1.0),
        "random": np.random.default_rng(seed).random(len(test)),
    }
    # best fixed configuration: mean matrix-centred log runtime of each configuration seen in the
    # few-shot rows; unseen configurations rank after the default (0 = as good as average)
    y = few.centred_log_runtime()
    keys = [tuple(r) for r in np.hstack([few.hom, few.het])]
    agg: dict[tuple, list[float]] = {}
    for k, v in zip(keys, y, strict=True):
        agg.setdefault(k, []).append(v)
    mean = {k: float(np.mean(v)) for k, v in agg.items()}
    test_keys = [tuple(r) for r in np.hstack([test.hom, test.het])]
    out["best_fixed"] = np.array(
        [mean.get(k, 0.0) - 1e-3 * d for k, d in zip(test_keys, test.is_default, strict=True)]
    )
    try:
        import xgboost as xgb
    except ImportError:  # benchmark-only dependency: uv run --with xgboost ...
        return out
    X, Xt = _features(few), _features(test)
    reg = xgb.XGBRegressor(n_estimators=200, max_depth=4, learning_rate=0.1, random_state=seed)
    out["xgb_reg"] = reg.fit(X, y).predict(Xt)
    order = np.argsort(few.matrix_index, kind="stable")
    groups = np.bincount(few.matrix_index)
    rank = xgb.XGBRanker(
        objective="rank:pairwise", n_estimators=200, max_depth=4, learning_rate=0.1,
        random_state=seed,
    )  # fmt: skip
    # relevance: higher = faster, integer grades within each matrix
    rel = np.zeros(len(few))
    for m in range(few.n_matrices):
        r = few.rows_of(m)
        rel[r] = np.argsort(np.argsort(-few.runtime[r]))
    rank.fit(X[order], rel[order], group=groups[groups > 0])
    out["xgb_rank"] = -rank.predict(Xt)
    if src is not None:  # the cheap transfer anchor: one XGBoost on source + few target rows

        def pooled(ds: C.CostDataset, on_target: bool) -> np.ndarray:
            mi = ds.matrix_index
            het_s = np.full((len(ds), src.het.shape[1]), -1)
            het_t = np.full((len(ds), few.het.shape[1]), -1)
            (het_t if on_target else het_s)[:] = ds.het
            flag = np.full((len(ds), 1), float(on_target))
            return np.hstack([ds.scalars[mi], ds.workload[mi], ds.hom, het_s, het_t, flag])

        Xp = np.vstack([pooled(src, False), pooled(few, True)]).astype(np.float32)
        yp = np.concatenate([src.centred_log_runtime(), y])
        reg = xgb.XGBRegressor(n_estimators=400, max_depth=6, learning_rate=0.1, random_state=seed)
        out["xgb_pooled"] = reg.fit(Xp, yp).predict(pooled(test, True).astype(np.float32))
    return out


CACHE = Path(__file__).resolve().parent / ".cache"
#: Timing of the measured runs: one core, one thread, warm-up, 7 samples of >= 10 ms, median.
REAL_TIMER = C.Timer(warmup=1, repeats=7, min_time=0.01)


def matrix_set(args: argparse.Namespace) -> C.MatrixSet:
    """Generated matrices, plus (measured runs) the real source-code matrices."""
    n = 36 if args.quick else args.n_matrices
    ms = C.MatrixSet.synthetic(n, seed=args.seed, rows=(512, 4096), nnz=(2e3, 4e4))
    if args.real and not args.quick:
        mats, names = C.matrices.source_code_matrices()
        ms.matrices += mats
        ms.names += names
    return ms


def load_or_collect(
    path: Path, ms: C.MatrixSet, collect: Callable[[], C.CostDataset], n_rows: int | None = None
) -> tuple[C.CostDataset, bool]:
    """The dataset saved at ``path`` when it holds ``ms``'s matrices (and ``n_rows`` rows), else
    ``collect()``'s, saved there; and whether it came from the disk."""
    if path.exists():
        ds = C.CostDataset.load(path)
        if ds.matrix_names == list(ms.names) and n_rows in (None, len(ds)):
            print(f"dataset loaded from {path}")
            return ds, True
    ds = collect()
    CACHE.mkdir(exist_ok=True)
    ds.save(path)
    print(f"dataset saved to {path}")
    return ds, False


def collect_cached(be: object, op: str, ms: C.MatrixSet, args: argparse.Namespace, seed: int):
    """Collect (measured: pinned to one core, cached on disk) one platform's dataset."""
    feat = C.MatrixFeaturizer(32)
    if getattr(be, "simulated", False):
        return C.collect(
            be, op, ms, n_configs=24, seed=seed, featurizer=feat, dense_width=args.dense_width
        )
    width = "" if args.dense_width == 64 else f"_w{args.dense_width}"
    path = CACHE / f"cost_{be.hardware}_{op}_{len(ms)}m_seed{seed}{width}_v2.npz"

    def collect() -> C.CostDataset:
        with C.kernels.pinned():
            return C.collect(
                be, op, ms, n_configs=24, seed=seed, featurizer=feat, timer=REAL_TIMER,
                verbose=True, dense_width=args.dense_width,
            )  # fmt: skip

    return load_or_collect(path, ms, collect)[0]


def dataset_quality(ds: C.CostDataset) -> dict:
    """``cost_model.timing_quality`` of a measured dataset's rows (runtime and CV per row)."""
    return C.timing_quality(
        [
            C.Measurement(int(m), ds.hardware, ds.op, {}, float(t), float(c), 0.0)
            for m, t, c in zip(ds.matrix_index, ds.runtime, ds.cv, strict=True)
        ]
    )


def describe(ds: C.CostDataset) -> str:
    """Timing quality (measured) and the variance each knob group explains."""
    v = ds.variance_explained()
    knobs = ", ".join(f"{k} {x:.2f}" for k, x in v.items() if k not in ("shared", "het", "all"))
    line = (
        f"  {ds.hardware:<10} {len(ds)} rows; variance of log runtime explained: shared knobs "
        f"{v['shared']:.2f}, het {v['het']:.2f}, all {v['all']:.2f} ({knobs})"
    )
    if ds.cv is not None and ds.cv.any():
        q = dataset_quality(ds)
        line += (
            f"\n  {'':<10} timing: median CV {q['median_cv']:.3f}, CV < 5% on "
            f"{q['frac_cv_ok']:.2f} of rows; top-2 resolved (both CVs < half their gap) on "
            f"{q['frac_resolved']:.2f} of matrices, top-2 gap < 1% on "
            f"{np.mean(q['gap'] < 0.01):.2f}"
        )
    return line


def run(op: str, args: argparse.Namespace, rec: Run) -> None:
    ms = matrix_set(args)
    if args.real:
        src_be, tgt_be = C.ScipyBackend(threads=(1,)), C.TorchCPUBackend(threads=(1,))
    else:
        src_be, tgt_be = C.SimCPUBackend(), C.SimAccelBackend()
    t0 = time.perf_counter()
    src = collect_cached(src_be, op, ms, args, args.seed)
    tgt = collect_cached(tgt_be, op, ms, args, args.seed + 1)
    t_collect = time.perf_counter() - t0
    per = len(tgt) // tgt.n_matrices  # 24 sampled, fewer when the space is smaller
    print(f"\n{op.upper()} data ({len(ms)} matrices x {per} sampled configurations):")
    print(describe(src))
    print(describe(tgt))
    if args.collect_only:
        return
    name = f"{'real' if args.real else 'sim'}_{op}"
    compare(src, tgt, args, rec, name, t_collect)


def compare(
    src: C.CostDataset,
    tgt: C.CostDataset,
    args: argparse.Namespace,
    rec: Run,
    name: str,
    t_collect: float,
) -> None:
    """Transfer tables (per-strategy and paired) of one source -> target pair on the same matrices."""
    op = tgt.op
    n_m = tgt.n_matrices
    # test matrices are held out of the source set too (no leakage through pretraining)
    perm = np.random.default_rng(args.seed).permutation(n_m)
    n_test = round(n_m / 3)
    test_idx, train_idx = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    train, test = tgt.take_matrices(train_idx), tgt.take_matrices(test_idx)
    src = src.take_matrices(train_idx)
    seeds = tuple(range(1 if args.quick else args.seeds))
    t0 = time.perf_counter()
    fracs = tuple(float(f) for f in args.fracs.split(","))
    res = C.run_experiment(
        src,
        train,
        test,
        fracs=fracs,
        seeds=seeds,
        strategies=("target_only", "cognate", "naive", "zero_shot", "target_full"),
        src_epochs=args.epochs,
        tgt_epochs=2 * args.epochs,
        model_kwargs={"embed_dim": 64},
        ft_lr=args.ft_lr,
        val_frac=args.val_frac,
    )
    for frac in fracs:  # anchors on the same few-shot samples
        for seed in seeds:
            few = train.subsample(frac, seed=seed)
            for anchor, scores in anchors(few, test, seed, src).items():
                res.rows.append(
                    {
                        "strategy": anchor,
                        "frac": frac,
                        "seed": seed,
                        "metrics": C.evaluate_scores(test, scores, per_matrix=True),
                    }
                )
    summ = res.summary()
    ref = summ[("target_full", 1.0)]
    t_models = time.perf_counter() - t0
    pair = f"{src.hardware} -> {tgt.hardware}"
    print(
        f"\n{pair}, {op.upper()}: {train.n_matrices} train / "
        f"{test.n_matrices} test matrices x {len(test) // test.n_matrices} configs, 5% = "
        f"{len(train.subsample(0.05, seed=0))} target triples, seeds {len(seeds)}; "
        f"collect {t_collect:.0f}s, models {t_models:.0f}s"
    )
    order = ["default", "random", "best_fixed", "xgb_reg", "xgb_rank", "xgb_pooled",
             "target_only", "cognate", "naive", "zero_shot", "target_full"]  # fmt: skip
    metric = {(r["strategy"], r["frac"], r["seed"]): r["metrics"] for r in res.rows}
    top1 = {k: m["top1"] for k, m in metric.items()}
    rows = []
    for key in sorted(
        summ, key=lambda k: (k[1] if k[0] != "target_full" else 9, order.index(k[0]))
    ):
        strat, frac = key
        a = summ[key]
        mine = [top1[(strat, frac if strat != "target_full" else 1.0, s)] for s in seeds]

        def wins(*others: str, mine=mine, frac=frac, strat=strat) -> str:
            base = [[top1.get((o, frac, s)) for o in others] for s in seeds]
            if strat in others or None in base[0]:
                return "-"
            n = sum(m > max(b) for m, b in zip(mine, base, strict=True))
            return f"{n}/{len(seeds)}"

        rows.append([strat, f"{frac:.2f}", fmt_ci(mine, 3), a["top5"], a["oracle"], a["captured"],
                     a["pair_acc"], a["top1"] / ref["top1"], f"{sum(m >= 1.0 for m in mine)}/{len(seeds)}",
                     wins("target_only"), wins("xgb_reg", "xgb_rank"), wins("xgb_pooled")])  # fmt: skip
    name += "_curve" if len(fracs) > 1 else ""
    if args.ft_lr != 1e-4:  # an ablation of the paper's fine-tuning rate gets its own tables
        name += f"_ftlr{args.ft_lr:.0e}"
    cfg = (f"{pair}, {op.upper()}: {n_m} matrices ({train.n_matrices} train / {test.n_matrices} "
           f"held-out test, held out of the source set too) x {len(test) // test.n_matrices} "
           f"configurations (the default included); 5% = {len(train.subsample(0.05, seed=0))} target triples; "
           f"fine-tuning lr {args.ft_lr:g}" + (" (the paper's)." if args.ft_lr == 1e-4 else "."))  # fmt: skip
    rec.table(
        name,
        ["strategy", "target data", "top-1 speedup [95% CI]", "top-5", "oracle", "captured",
         "pair acc.", "top-1 / full", ">= default", "> target-only", "> XGBoost", "> pooled XGB"],
        rows, fmt=[None, None, None, ".3f", ".3f", ".3f", ".3f", ".3f", None, None, None, None],
        seeds=list(seeds), per_seed={f"{k[0]}/{k[1]}/{k[2]}": v for k, v in metric.items()},
        title=f"Few-shot transfer, {pair}, {op.upper()}",
        notes=[cfg, "Speedups over the default (CSR) configuration on held-out matrices, "
               "geometric mean over matrices; top-1 [95% CI]: arithmetic mean and t-interval of "
               "the per-seed values, the other columns and top-1 / full: the protocol summary "
               "(geometric mean over seeds); captured = share of "
               "the oracle's log-speedup; the last four columns count seeds on which the row's "
               "top-1 beats the named baseline."],
    )  # fmt: skip
    # paired per-seed differences and a per-matrix bootstrap (issue #52 item 4)
    per_m = {k: np.log(m["top1_per_matrix"]) for k, m in metric.items() if "top1_per_matrix" in m}
    boot_idx = np.random.default_rng(0).integers(0, test.n_matrices, (2000, test.n_matrices))

    def matrix_boot(a: str, b: str | None, frac: float, b_frac: float) -> str:
        """Ratio of geo-mean top-1 speedups, seeds averaged, matrices resampled (95 %)."""
        d = np.mean([per_m[(a, frac, s)] - (0.0 if b is None else per_m[(b, b_frac, s)])
                     for s in seeds], axis=0)  # per matrix, mean over seeds  # fmt: skip
        bs = np.exp(d[boot_idx].mean(axis=1))
        lo, hi = np.percentile(bs, [2.5, 97.5])
        return f"{np.exp(d.mean()):.3f}x [{lo:.3f}, {hi:.3f}]"

    prow, pseed = [], {}
    for frac in fracs:
        cog = np.array([top1[("cognate", frac, s)] for s in seeds])
        for other in ("target_only", "default", "xgb_reg", "xgb_rank", "xgb_pooled", "zero_shot"):
            if other == "default":
                base = np.ones_like(cog)
            elif all((other, frac, s) in top1 for s in seeds):
                base = np.array([top1[(other, frac, s)] for s in seeds])
            elif other == "zero_shot" and all((other, 0.0, s) in top1 for s in seeds):
                base = np.array([top1[(other, 0.0, s)] for s in seeds])
            else:
                continue
            d = cog - base
            pseed[f"{frac}/{other}"] = d.tolist()
            lo, hi = mean_ci(d)[1:] if len(d) > 1 else (np.nan, np.nan)
            mb = "n/a"
            if other == "default":
                mb = matrix_boot("cognate", None, frac, frac)
            else:
                of = next((f for f in (frac, fracs[0], 0.0) if (other, f, seeds[0]) in per_m), None)
                if of is not None:
                    mb = matrix_boot("cognate", other, frac, of)
            prow.append([f"{frac:.2f}", other, fmt_ci(d, 3, sign=True),
                         "yes" if lo > 0 else ("below" if hi < 0 else "no"), mb])  # fmt: skip
    cog5 = summ.get(("cognate", 0.05)) or summ.get(("cognate", fracs[0]))
    rec.table(
        f"{name}_paired",
        ["target data", "COGNATE minus", "top-1 speedup difference [95% CI]", "CI excludes 0",
         "COGNATE / it, per-matrix bootstrap [95%]"],
        prow, seeds=list(seeds), per_seed=pseed,
        title=f"Paired over seeds: COGNATE's top-1 speedup minus each baseline's, {pair}, {op.upper()}",
        notes="Target (issue #52 item 4): COGNATE - target-only > 0 and COGNATE > default with "
              "the interval excluding 0 at 5% of the target data. The default's speedup is 1 "
              "by definition. Difference [95% CI]: t-interval over seeds. Per-matrix "
              "bootstrap: ratio of the two geo-mean top-1 speedups with each matrix's log ratio "
              "averaged over seeds, the held-out matrices resampled 2,000 times (percentile "
              "interval).",
        headline=f"{op.upper()} {pair}: COGNATE top-1 {cog5['top1']:.3f}x over default vs "
                 f"target-only {summ[('target_only', fracs[0])]['top1']:.3f}x at "
                 f"{fracs[0]:.0%} of the target data",
    )  # fmt: skip
    if len(fracs) > 1:  # data-efficiency crossing: first budget within 2% of target_full
        print(f"first fraction whose top-1 is >= 0.98 x target_full ({ref['top1']:.3f}):")
        for strat in ("cognate", "target_only", "xgb_reg", "xgb_rank", "xgb_pooled"):
            hit = [
                f
                for f in fracs
                if (strat, f) in summ and summ[(strat, f)]["top1"] >= 0.98 * ref["top1"]
            ]
            print(
                f"  {strat:<12} {f'{hit[0]:.2f}' if hit else f'not reached up to {max(fracs):.2f}'}"
            )


def tuner(args: argparse.Namespace) -> None:
    """Model-guided tuning vs random search at equal measurement budgets (simulated pair)."""
    run = Run("cost-model")
    n = 24 if args.quick else args.n_matrices
    seeds = tuple(range(1 if args.quick else 3))
    ms = C.MatrixSet.synthetic(n, seed=args.seed, rows=(512, 4096), nnz=(2e3, 4e4))
    feat = C.MatrixFeaturizer(32)
    src_be, tgt_be = C.SimCPUBackend(), C.SimAccelBackend()
    src_all = C.collect(src_be, "spmm", ms, n_configs=24, seed=args.seed, featurizer=feat)
    tgt = C.collect(tgt_be, "spmm", ms, n_configs=24, seed=args.seed + 1, featurizer=feat)
    train, test = tgt.split(test_frac=1 / 3, seed=args.seed)
    held = set(test.matrix_names)
    src = src_all.take_matrices([i for i, m in enumerate(src_all.matrix_names) if m not in held])
    space = tgt_be.space("spmm")
    cands = space.enumerate()
    fracs = (0.01, 0.05, 0.10)
    budgets = [max(2, round(f * len(cands))) for f in fracs]
    test_mats = [ms.matrices[ms.names.index(m)] for m in test.matrix_names]
    truth = [tgt_be.cost("spmm", A, cands, 64) for A in test_mats]
    default_i = cands.index(space.default())
    per_seed: dict[str, dict[str, list]] = {}
    for seed in seeds:
        sizes = {src.hardware: src.het_sizes, tgt.hardware: tgt.het_sizes}
        m = C.CognateModel(sizes, hom_present={src.hardware: src.hom_present,
                                               tgt.hardware: tgt.hom_present}, seed=seed)  # fmt: skip
        m.pretrain_matrix_encoder(src.images, src.scalars)
        m.pretrain_mapper(tgt.hardware)
        m.fit(src, epochs=args.epochs)
        m_t = C.finetune(m, train.subsample(0.05, seed=seed), strategy="cognate", seed=seed)
        rng = np.random.default_rng(seed)
        for b in budgets:
            tuned, rand = [], []
            for A, t in zip(test_mats, truth, strict=True):
                res = C.tune(m_t, A, tgt_be, "spmm", budget=b)
                tuned.append(res.runtime_s / t.min())
                pick = rng.choice(np.delete(np.arange(len(cands)), default_i), b - 1, replace=False)
                rand.append(min(t[default_i], t[pick].min()) / t.min())
            d = per_seed.setdefault(str(b), {"model": [], "random": [], "model_within5": [],
                                             "random_within5": []})  # fmt: skip
            d["model"].append(float(np.exp(np.mean(np.log(tuned)))))
            d["random"].append(float(np.exp(np.mean(np.log(rand)))))
            d["model_within5"].append(float(np.mean(np.array(tuned) <= 1.05)))
            d["random_within5"].append(float(np.mean(np.array(rand) <= 1.05)))
        run.sample_load()
    default_gap = float(np.exp(np.mean([np.log(t[default_i] / t.min()) for t in truth])))
    rows = []
    for f, b in zip(fracs, budgets, strict=True):
        d = per_seed[str(b)]
        rows.append([f"{100 * f:g}% ({b})", float(np.mean(d["model"])),
                     float(np.mean(d["model_within5"])), float(np.mean(d["random"])),
                     float(np.mean(d["random_within5"])),
                     fmt_ci(np.array(d["random"]) - np.array(d["model"]), digits=3, sign=True)])  # fmt: skip
    ten = per_seed[str(budgets[-1])]
    run.table(
        "tuner",
        ["measurements (of 1,536)", "model-guided: runtime / oracle", "within 5% of oracle",
         "random search: runtime / oracle", "within 5% of oracle", "random − model [95% CI]"],
        rows,
        fmt=[None, ".3f", ".2f", ".3f", ".2f", None],
        seeds=list(seeds),
        per_seed=per_seed,
        title=f"cost_model.tune on sim-accel SpMM: {len(test_mats)} held-out matrices, the "
        "model fine-tuned on 5% of the target data",
        notes=(
            f"Geometric mean over the held-out matrices of the best measured runtime / the "
            f"oracle (every configuration simulated), mean over {len(seeds)} seeds; the default "
            f"alone is {default_gap:.3f}x the oracle. Target (issue #52 item 6): within 5% of "
            "the oracle using <= 10% of the measurements."
        ),
        headline=f"tune() with 10% of the measurements: {np.mean(ten['model']):.3f}x the oracle "
        f"(random search {np.mean(ten['random']):.3f}x)",
    )  # fmt: skip


def headroom(args: argparse.Namespace) -> None:
    """A measured target with real headroom (issue #52 items 1-2): scipy SpMM with reordering."""
    import os

    rec = Run("cost-model", out=tempfile.mkdtemp() if args.quick else None,
              uv_with=("xgboost",) if args.transfer else ())  # fmt: skip
    if args.mtx_dir:  # a user's folder of Matrix Market files (SuiteSparse layout)
        ms = C.load_mtx_folder(args.mtx_dir)
        n, prefix = len(ms), "mtx_"
        shape = np.array([A.shape[0] for A in ms.matrices])
        nnzs = np.array([A.nnz for A in ms.matrices])
        what = (f"{n} Matrix Market matrices from {Path(args.mtx_dir).name}/ ({shape.min():,}-"
                f"{shape.max():,} rows, {nnzs.min():,}-{nnzs.max():,} nonzeros, stored order)")  # fmt: skip
        # small matrices: a sample repeats the kernel to >= 10 ms (calibrated per configuration)
        timer = C.Timer(warmup=1, repeats=3, min_time=0.01)
        sample_note = "runtime = min of 3 interleaved rounds of >= 10 ms samples"
    else:
        n, prefix = (6 if args.quick else args.n_matrices), ""
        rows, nnz = (
            ((20_000, 40_000), (1e5, 2e5)) if args.quick else ((100_000, 250_000), (4e5, 1.5e6))
        )
        ms = C.MatrixSet.synthetic(n, seed=args.seed, rows=rows, nnz=nnz, shuffled=0.5)
        what = (f"{n} generated matrices ({rows[0]:,}-{rows[1]:,} rows, {nnz[0]:.0e}-{nnz[1]:.0e} "
                "nonzeros; half scrambled by a random row and column permutation)")  # fmt: skip
        timer = C.Timer(warmup=1, repeats=3, min_time=0.0)
        sample_note = "runtime = min of 3 interleaved rounds"
    be = C.ScipyBackend(threads=(1, 2), reorder=True)
    # not pinned to one core: two threads are one of the knobs
    ds, cached = collect_interleaved(be, ms, args, timer, args.seed)
    wall = ds.timing["wall_s"]  # the collection's own, also when re-analysed from the disk
    if cached:
        what += " (measurements re-analysed from the saved collection)"
    rec.sample_load()
    # per matrix (in the dataset's order): default, oracle, oracle's knobs, single-thread oracle
    space = be.space("spmm")

    n_rows = dict(zip(ms.names, (A.shape[0] for A in ms.matrices), strict=True))

    def fam_of(name: str) -> str:
        if args.mtx_dir:  # a user's matrices: grouped by size
            m = n_rows[name]
            return (
                "< 1,000 rows"
                if m < 1000
                else ("1,000-4,999 rows" if m < 5000 else ">= 5,000 rows")
            )
        base = name.removesuffix("_shuffled").rsplit("_", 1)[0]
        return base + (" (scrambled)" if name.endswith("_shuffled") else "")

    default, allsp, one, best_cfgs = [], [], [], []
    for i in range(ds.n_matrices):
        r = ds.rows_of(i)
        rt = ds.runtime[r]
        cfgs = [space.decode(ds.hom[j], ds.het[j]) for j in r]
        d = rt[ds.is_default[r]][0]
        default.append(d)
        allsp.append(d / rt.min())
        one.append(d / rt[[c["threads"] == 1 for c in cfgs]].min())
        best_cfgs.append(cfgs[int(np.argmin(rt))])
    default, allsp, one = np.array(default), np.array(allsp), np.array(one)
    fams = np.array([fam_of(n) for n in ds.matrix_names])
    rows_out = []
    for fam in sorted(set(fams)):
        idx = np.flatnonzero(fams == fam)
        reo = [best_cfgs[i]["reorder"] for i in idx]
        rows_out.append([fam, len(idx), float(np.exp(np.mean(np.log(default[idx]))) * 1e3),
                         float(np.exp(np.mean(np.log(allsp[idx])))), float(allsp[idx].max()),
                         float(np.mean(allsp[idx] >= 1.1)), float(np.mean(allsp[idx] >= 1.3)),
                         ", ".join(f"{k} {reo.count(k)}" for k in ("none", "rcm", "degree") if reo.count(k)),
                         float(np.mean([best_cfgs[i]["threads"] == 2 for i in idx]))])  # fmt: skip
    rows_out.append(["all", len(allsp), None, float(np.exp(np.mean(np.log(allsp)))),
                     float(allsp.max()), float(np.mean(allsp >= 1.1)), float(np.mean(allsp >= 1.3)), None,
                     float(np.mean([c["threads"] == 2 for c in best_cfgs]))])  # fmt: skip
    # variance: the package's one-way / pooled shares and a matrix-aware het share
    ve = ds.variance_explained()
    y = ds.centred_log_runtime()
    key = np.unique(np.column_stack([ds.matrix_index, ds.het]), axis=0, return_inverse=True)[1]
    key = np.asarray(key).ravel()
    gm = np.bincount(key, y) / np.bincount(key)
    het_aware = float((gm[key] @ gm[key]) / (y @ y))
    label = {f"het{j}": f"het{j} ({k.name})" for j, k in enumerate(space.het_knobs)}
    var_rows = [[label.get(k, k), float(v)] for k, v in ve.items()]
    var_rows.append(["het knobs given the matrix (per-matrix group means)", het_aware])
    tq = dataset_quality(ds)
    tm = ds.timing
    per_seed = {"speedup": allsp.tolist(), "speedup_single_thread": one.tolist(),
                "names": ds.matrix_names, "retest_agree": ds.retest_agree.tolist(),
                "timing": tm, "variance": ve, "het_given_matrix": het_aware}  # fmt: skip
    rec.table(
        f"{prefix}headroom",
        ["matrices", "n", "default ms (geo-mean)", "oracle / default (geo-mean)", "largest",
         "share >= 1.1x", "share >= 1.3x", "oracle's reorder", "oracle uses 2 threads"],
        rows_out, fmt=[None, None, ".3f" if args.mtx_dir else ".1f", ".2f", ".2f", ".2f", ".2f",
                       None, ".2f"], seeds=[args.seed],
        per_seed=per_seed,
        title=f"Measured target scipy-cpu-reorder (SpMM, width {args.dense_width}): oracle headroom over the default",
        notes=[f"{what}; {args.n_configs} configurations each: the default (CSR, one thread, no "
               f"reordering, C-order X) and {args.n_configs - 1} sampled; {sample_note}. "
               "Oracle = the fastest measured configuration of each matrix.",
               f"Single-thread knobs only (threads=2 excluded): oracle / default "
               f"{np.exp(np.mean(np.log(one))):.2f}x geo-mean, {np.mean(one >= 1.3):.0%} of "
               f"matrices >= 1.3x. Target (issue #52 item 1): >= 1.3x oracle headroom."],
        timing=True,
        headline=f"scipy-cpu-reorder SpMM: oracle {np.exp(np.mean(np.log(allsp))):.2f}x the default "
                 f"(geo-mean over {n} matrices); het knobs explain {ve.get('het', float('nan')):.0%} "
                 f"pooled, {het_aware:.0%} given the matrix",
    )  # fmt: skip
    rec.table(
        f"{prefix}headroom_variance",
        ["knob group", "share of within-matrix variance of log runtime"],
        var_rows, fmt=[None, ".3f"], seeds=[args.seed],
        title="What each knob explains on scipy-cpu-reorder (CostDataset.variance_explained)",
        notes="One-way η² per knob and pooled R² per group ignore the matrix, so an effect that "
              "flips sign between matrices (reordering helps a scrambled band, hurts a "
              "column-clustered matrix) counts as unexplained there; the last row fits each "
              "(matrix, het configuration) mean: what a matrix-aware model can learn from the "
              "het knobs. Target (issue #52 item 1): het knobs explain >= 20 %.",
    )  # fmt: skip
    rec.table(
        f"{prefix}timing_quality",
        ["protocol", "rounds", "retest rounds", "test-retest argmin agreement",
         "median CV", "share CV < 5 %", "top-2 resolved", "1-min load start / end", "wall s"],
        [[tm["protocol"], tm["rounds"], tm["retest"], tm["agreement"], tq["median_cv"],
          tq["frac_cv_ok"], tq["frac_resolved"],
          f"{tm['load_start']:.1f} / {tm['load_end']:.1f}", wall]],
        fmt=[None, None, None, ".2f", ".3f", ".2f", ".2f", None, ".0f"], seeds=[args.seed],
        title="Timing quality of the scipy-cpu-reorder collection",
        notes=f"Per matrix, every configuration sampled once per round in a rotating order; the "
              f"two fastest re-measured {tm['retest']} rounds; agreement = share of matrices "
              "whose re-measurement picks the same winner (a collection below 80 % is refused: "
              "TimingNotReproducibleError). Top-2 resolved: both top configurations' CV below "
              "half their gap (cost_model.timing_quality). os.cpu_count() = "
              f"{os.cpu_count()}.",
    )  # fmt: skip
    if not args.transfer:
        return
    # a measured source platform on the same matrices: torch.sparse on CPU, same protocol and
    # threads; no BSR (its blocks come from a dense copy of each panel)
    src, _ = collect_interleaved(C.TorchCPUBackend(threads=(1, 2), formats=("csr", "coo")), ms,
                                 args, timer, args.seed + 1)  # fmt: skip
    print(describe(src))
    print(describe(ds))
    knob_effects(src, ds, rec, f"{prefix}reorder_spmm_knobs", args.seed)
    compare(src, ds, args, rec, f"{prefix}reorder_spmm", wall)


def knob_effects(src: C.CostDataset, tgt: C.CostDataset, rec: Run, name: str, seed: int) -> None:
    """Each shared knob value's marginal effect on both platforms: do they point the same way?"""
    from cost_model.space import SHARED_KNOBS

    ys, yt = src.centred_log_runtime(), tgt.centred_log_runtime()
    rows, agree = [], []
    for j, (knob, vocab) in enumerate(SHARED_KNOBS.items()):
        if not (src.hom_present[j] and tgt.hom_present[j]):
            continue
        mean_s = {c: ys[src.hom[:, j] == c].mean() for c in np.unique(src.hom[:, j])}
        mean_t = {c: yt[tgt.hom[:, j] == c].mean() for c in np.unique(tgt.hom[:, j])}
        base = tgt.hom[tgt.is_default, j][0]  # the default's value (code) of this knob
        for c in sorted(set(mean_s) & set(mean_t)):
            if c == base:
                continue
            es = float(np.exp(mean_s[c] - mean_s[base]))
            et = float(np.exp(mean_t[c] - mean_t[base]))
            same = (es - 1) * (et - 1) > 0
            agree.append(same)
            rows.append([knob, str(vocab[c - 1]), es, et, "yes" if same else "no"])
    rec.table(
        name,
        ["shared knob", "value", f"{src.hardware}: runtime vs default value",
         f"{tgt.hardware}: runtime vs default value", "same direction"],
        rows, fmt=[None, None, ".2f", ".2f", None], seeds=[seed],
        title=f"Shared knobs on both platforms ({src.hardware} -> {tgt.hardware}, SpMM)",
        notes="Per shared knob value: geometric mean runtime of the measured rows with that value "
              "over those with the default's value (matrix-centred log runtimes, every matrix, "
              "every sampled configuration); what a source-pretrained model learns about the "
              "shared knobs and what the target needs.",
        headline=f"shared knob values with the same direction on both platforms: "
                 f"{sum(agree)}/{len(agree)}",
    )  # fmt: skip


def collect_interleaved(
    be: object, ms: C.MatrixSet, args: argparse.Namespace, timer: C.Timer, seed: int
) -> tuple[C.CostDataset, bool]:
    """One platform's interleaved min-of-k collection, saved under the cache (re-analysis
    without re-timing); returns the dataset and whether it came from the cache."""
    import hashlib

    tag = hashlib.sha256("\n".join(ms.names).encode()).hexdigest()[:8]
    path = CACHE / f"cost_{be.hardware}_spmm_{len(ms)}m_{tag}_seed{seed}_n{args.n_configs}.npz"

    def collect() -> C.CostDataset:
        t0 = time.perf_counter()
        ds = C.collect(be, "spmm", ms, n_configs=args.n_configs, dense_width=args.dense_width,
                       seed=seed, timer=timer, protocol="interleaved", retest=3,
                       min_agreement=0.8, verbose=True)  # fmt: skip
        ds.timing["wall_s"] = time.perf_counter() - t0  # kept for a later re-analysis
        return ds

    return load_or_collect(path, ms, collect, n_rows=len(ms) * args.n_configs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer matrices, one seed")
    ap.add_argument("--tuner", action="store_true", help="the autotuning loop only (recorded)")
    ap.add_argument(
        "--headroom",
        action="store_true",
        help="measure the scipy-cpu-reorder target: headroom, variance, timing quality",
    )
    ap.add_argument(
        "--n-configs", type=int, default=16, help="--headroom: configurations per matrix"
    )
    ap.add_argument(
        "--mtx-dir", help="--headroom: a folder of Matrix Market files instead of generated ones"
    )
    ap.add_argument(
        "--transfer",
        action="store_true",
        help="--headroom: also collect a torch-cpu source and run the transfer tables",
    )
    ap.add_argument("--real", action="store_true", help="measured scipy-cpu -> torch-cpu, one core")
    ap.add_argument("--n-matrices", type=int, default=60, help="generated matrices")
    ap.add_argument("--collect-only", action="store_true", help="collect, describe, stop")
    ap.add_argument(
        "--dense-width", type=int, default=64, help="SpMM dense columns / SDDMM inner dimension"
    )
    ap.add_argument("--ops", default="spmm,sddmm")
    ap.add_argument("--epochs", type=int, default=30, help="source epochs (target: 2x)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fracs", default="0.05", help="target-data fractions, e.g. 0.05,0.2,0.5")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--ft-lr", type=float, default=1e-4, help="fine-tuning lr (spec/paper 1e-4)")
    ap.add_argument(
        "--val-frac", type=float, default=0.2, help="early-stopping split of the budget"
    )
    args = ap.parse_args()
    torch.set_num_threads(1)
    np.set_printoptions(precision=3)
    if args.tuner:
        tuner(args)
        return
    if args.headroom:
        headroom(args)
        return
    rec = Run("cost-model", out=tempfile.mkdtemp() if args.quick or args.collect_only else None,
              uv_with=("xgboost",))  # fmt: skip
    for op in args.ops.split(","):
        run(op, args, rec)


if __name__ == "__main__":
    main()
