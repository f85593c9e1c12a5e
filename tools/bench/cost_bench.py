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
pairwise ranking accuracy; ratios are relative to target_full.

    uv run python tools/bench/cost_bench.py             # sim-cpu -> sim-accel
    uv run python tools/bench/cost_bench.py --quick
    uv run python tools/bench/cost_bench.py --real      # scipy-cpu -> torch-cpu, measured
    uv run python tools/bench/cost_bench.py --timing    # can the measured backends rank configs?
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import cost_model as C


def _features(ds: C.CostDataset) -> np.ndarray:
    """Per-row features for the tree baselines: matrix scalars, workload, knob values."""
    mi = ds.matrix_index
    return np.hstack([ds.scalars[mi], ds.workload[mi], ds.hom, ds.het]).astype(np.float32)


def _centred_log_runtime(ds: C.CostDataset) -> np.ndarray:
    """log runtime minus its matrix mean (what a per-matrix ranking needs)."""
    y = np.log(ds.runtime)
    mean = np.bincount(ds.matrix_index, y) / np.bincount(ds.matrix_index)
    return y - mean[ds.matrix_index]


def anchors(few: C.CostDataset, test: C.CostDataset, seed: int) -> dict[str, np.ndarray]:
    """Scores (lower = predicted faster) of the cheap baselines, trained on the same few rows."""
    out = {
        "default": np.where(test.is_default, 0.0, 1.0),
        "random": np.random.default_rng(seed).random(len(test)),
    }
    # best fixed configuration: mean matrix-centred log runtime of each configuration seen in the
    # few-shot rows; unseen configurations rank after the default (0 = as good as average)
    y = _centred_log_runtime(few)
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
    return out


def run(op: str, args: argparse.Namespace) -> None:
    n_mat = 36 if args.quick else 60
    ms = C.MatrixSet.synthetic(n_mat, seed=args.seed, rows=(512, 4096), nnz=(2e3, 4e4))
    feat = C.MatrixFeaturizer(32)
    if args.real:
        src_be, tgt_be = C.ScipyBackend(), C.TorchCPUBackend()
        timer = C.Timer(warmup=1, repeats=3)
    else:
        src_be, tgt_be = C.SimCPUBackend(), C.SimAccelBackend()
        timer = None
    t0 = time.perf_counter()
    src = C.collect(src_be, op, ms, n_configs=24, seed=args.seed, featurizer=feat, timer=timer)
    tgt = C.collect(tgt_be, op, ms, n_configs=24, seed=args.seed + 1, featurizer=feat, timer=timer)
    t_collect = time.perf_counter() - t0
    # test matrices are held out of the source set too (no leakage through pretraining)
    perm = np.random.default_rng(args.seed).permutation(len(ms))
    n_test = round(len(ms) / 3)
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
            for name, scores in anchors(few, test, seed).items():
                res.rows.append(
                    {
                        "strategy": name,
                        "frac": frac,
                        "seed": seed,
                        "metrics": C.evaluate_scores(test, scores),
                    }
                )
    summ = res.summary()
    ref = summ[("target_full", 1.0)]
    print(
        f"\n{src_be.hardware} -> {tgt_be.hardware}, {op.upper()}: {train.n_matrices} train / "
        f"{test.n_matrices} test matrices x 24 configs, 5% = "
        f"{len(train.subsample(0.05, seed=0))} target triples, seeds {len(seeds)}; "
        f"collect {t_collect:.0f}s, models {time.perf_counter() - t0:.0f}s"
    )
    header = (
        f"{'strategy':<13}{'frac':>6}{'top1':>8}{'top5':>8}{'oracle':>8}{'captured':>10}"
        f"{'pair_acc':>10}{'top1/full':>11}{'>=default':>10}{'> t_o':>7}{'> xgb':>7}"
    )
    print(header)
    print("-" * len(header))
    order = ["default", "random", "best_fixed", "xgb_reg", "xgb_rank", "target_only", "cognate",
             "naive", "zero_shot", "target_full"]  # fmt: skip
    top1 = {(r["strategy"], r["frac"], r["seed"]): r["metrics"]["top1"] for r in res.rows}
    for key in sorted(
        summ, key=lambda k: (k[1] if k[0] != "target_full" else 9, order.index(k[0]))
    ):
        strat, frac = key
        a = summ[key]
        mine = [top1[(strat, frac if strat != "target_full" else 1.0, s)] for s in seeds]

        def wins(other: str, mine=mine, frac=frac, strat=strat) -> str:
            base = [top1.get((other, frac, s)) for s in seeds]
            if strat == other or base[0] is None:
                return "-"
            return f"{sum(m > b for m, b in zip(mine, base, strict=True))}/{len(seeds)}"

        print(
            f"{strat:<13}{frac:>6.2f}{a['top1']:>8.3f}{a['top5']:>8.3f}{a['oracle']:>8.3f}"
            f"{a['captured']:>10.3f}{a['pair_acc']:>10.3f}{a['top1'] / ref['top1']:>11.3f}"
            f"{f'{sum(m >= 1.0 for m in mine)}/{len(seeds)}':>10}{wins('target_only'):>7}"
            f"{wins('xgb_rank'):>7}"
        )


TIMERS = {
    "3 repeats": C.Timer(warmup=1, repeats=3),
    "7 x >=20 ms": C.Timer(warmup=2, repeats=7, min_time=0.02),
}


def timing_check(op: str, args: argparse.Namespace) -> None:
    """Noise of the measured backends against the gap between their two best configurations."""
    ms = C.MatrixSet.synthetic(
        args.timing_matrices, seed=args.seed, rows=(512, 4096), nnz=(2e3, 4e4)
    )
    print(
        f"\ntiming check, {op.upper()}: {len(ms)} matrices x {args.timing_configs} configurations; "
        "CV = std/mean of the samples; resolved = both top configurations' CV < half their gap"
    )
    header = f"{'backend':<11}{'timer':<14}{'median CV':>10}{'CV<5%':>8}{'median gap':>11}{'resolved':>10}{'s':>6}"
    print(header)
    print("-" * len(header))
    for be in (C.ScipyBackend(), C.TorchCPUBackend()):
        cfgs = be.space(op).sample(args.timing_configs, seed=args.seed)
        for name, timer in TIMERS.items():
            t0 = time.perf_counter()
            meas = [
                m
                for i, A in enumerate(ms.matrices)
                for m in C.measure(be, op, A, cfgs, timer=timer, matrix_id=i)
            ]
            q = C.timing_quality(meas)
            print(
                f"{be.hardware:<11}{name:<14}{q['median_cv']:>10.3f}{q['frac_cv_ok']:>8.2f}"
                f"{np.median(q['gap']):>11.3f}{q['frac_resolved']:>10.2f}"
                f"{time.perf_counter() - t0:>6.0f}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer matrices, one seed")
    ap.add_argument("--real", action="store_true", help="measured scipy-cpu -> torch-cpu")
    ap.add_argument("--ops", default="spmm,sddmm")
    ap.add_argument("--epochs", type=int, default=30, help="source epochs (target: 2x)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fracs", default="0.05", help="target-data fractions, e.g. 0.05,0.2,0.5")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--ft-lr", type=float, default=1e-4, help="fine-tuning lr (spec/paper 1e-4)")
    ap.add_argument(
        "--val-frac", type=float, default=0.2, help="early-stopping split of the budget"
    )
    ap.add_argument("--timing", action="store_true", help="only the timing-noise check")
    ap.add_argument("--timing-matrices", type=int, default=12)
    ap.add_argument("--timing-configs", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(1)
    np.set_printoptions(precision=3)
    for op in args.ops.split(","):
        if args.timing:
            timing_check(op, args)
        else:
            run(op, args)


if __name__ == "__main__":
    main()
