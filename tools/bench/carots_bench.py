"""Benchmark: CAROTS vs baselines on generated VAR and Lorenz-96 series.

Each dataset/seed: normal training series, test series with spikes, level shifts, noise
bursts and causal breaks (``kind="mixed"``, see ``causal_ts.data.make_var``). Window
scores (stride 1) are evaluated with the CAROTS protocol (AUROC, trapezoid AUPRC, best F1,
point-adjusted F1). Prints mean ± std over seeds, fit/score times and ratios to CAROTS.

    uv run python tools/bench/carots_bench.py            # 5 seeds (~5 min on 2 cores)
    uv run python tools/bench/carots_bench.py --quick    # 2 seeds, fewer epochs
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from causal_ts import (
    CAROTS,
    GivenGraphDiscoverer,
    IsolationForestWindows,
    PCAReconstruction,
    PlainOneClassContrastive,
    VARResidual,
    evaluate,
    make_lorenz96,
    make_var,
    window_labels,
)

METRICS = ("AUROC", "AUPRC", "F1", "F1_PA")


def methods(
    window: int, epochs: int, seed: int, graph: np.ndarray, ablations: bool
) -> dict[str, object]:
    common = dict(window=window, epochs=epochs, random_state=seed)
    extra = {}
    if ablations:
        extra = {
            "CAROTS-noCPA": CAROTS(**common, use_cpa=False),
            "CAROTS-noCDA": CAROTS(**common, use_cda=False),
            "CAROTS-noSOCfilter": CAROTS(**common, alpha=-1.0),
            "CAROTS-oracleGraph": CAROTS(
                **common, discoverer=GivenGraphDiscoverer(graph, lag=min(3, window - 1))
            ),
        }
    return {
        "CAROTS": CAROTS(**common),
        **extra,
        "PlainOCContrastive": PlainOneClassContrastive(**common),
        "VARResidual": VARResidual(window=window),
        "IsolationForest": IsolationForestWindows(window=window, random_state=seed),
        "PCAReconstruction": PCAReconstruction(window=window),
    }


def run(args: argparse.Namespace) -> dict[tuple[str, str], dict[str, list[float]]]:
    makers = {"VAR": make_var, "Lorenz96": make_lorenz96}
    results: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for ds in args.datasets:
        for seed in range(args.seeds):
            extra = {"n_interventions": args.interventions} if ds == "VAR" else {}
            d = makers[ds](
                n_vars=args.n_vars, n_train=args.n_train, n_test=args.n_test,
                kind=args.kind, factor=args.factor, seed=seed, **extra,
            )  # fmt: skip
            y = window_labels(d.y_test, args.window)
            # windows touched by a (normal, label-0) causal intervention
            inter = window_labels(d.intervention, args.window) & (1 - y) if extra else None
            dets = methods(args.window, args.epochs, seed, d.graph, args.ablations)
            for name, det in dets.items():
                t0 = time.perf_counter()
                det.fit(d.X_train)
                t1 = time.perf_counter()
                s = det.decision_function(d.X_test)
                t2 = time.perf_counter()
                r = evaluate(s, y)
                rec = results[(ds, name)]
                for m in METRICS:
                    rec[m].append(r[m])
                if inter is not None and args.interventions:
                    # threshold reaching 80 % window recall; false alarms per window group
                    pred = s >= np.quantile(s[y == 1], 0.2)
                    rec["FPR_interv"].append(float(pred[inter == 1].mean()))
                    rec["FPR_normal"].append(float(pred[(y == 0) & (inter == 0)].mean()))
                rec["fit_s"].append(t1 - t0)
                rec["score_s"].append(t2 - t1)
                print(f"  {ds:<9} seed {seed} {name:<19} AUROC {r['AUROC']:.3f}", flush=True)
    return results


def table(results: dict[tuple[str, str], dict[str, list[float]]]) -> str:
    head = (
        f"{'dataset':<9} {'method':<19} "
        + " ".join(f"{m:>13}" for m in METRICS)
        + f" {'AUROC/CAROTS':>12} {'fit_s':>7} {'score_s':>7} {'fit/CAROTS':>10}"
    )
    lines = [head, "-" * len(head)]
    for (ds, name), rec in results.items():
        ref = results[(ds, "CAROTS")]
        cells = " ".join(f"{np.mean(rec[m]):.3f}±{np.std(rec[m]):.3f}" for m in METRICS)
        ratio = np.mean(rec["AUROC"]) / np.mean(ref["AUROC"])
        fit_ratio = np.mean(rec["fit_s"]) / np.mean(ref["fit_s"])
        fpr = ""
        if rec.get("FPR_interv"):
            fpr = f"  FPR@80%rec interv {np.mean(rec['FPR_interv']):.3f} normal " + (
                f"{np.mean(rec['FPR_normal']):.3f}"
            )
        lines.append(
            f"{ds:<9} {name:<19} {cells} {ratio:12.3f} {np.mean(rec['fit_s']):7.2f} "
            f"{np.mean(rec['score_s']):7.2f} {fit_ratio:10.3f}{fpr}"
        )
    return "\n".join(lines)


def save_png(results: dict[tuple[str, str], dict[str, list[float]]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = sorted({ds for ds, _ in results})
    names = list(dict.fromkeys(name for _, name in results))
    fig, ax = plt.subplots(figsize=(9, 3.5))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        means = [np.mean(results[(ds, name)]["AUROC"]) for ds in datasets]
        stds = [np.std(results[(ds, name)]["AUROC"]) for ds in datasets]
        ax.bar(np.arange(len(datasets)) + k * width, means, width, yerr=stds, label=name)
    ax.set_xticks(np.arange(len(datasets)) + 0.4 - width / 2, datasets)
    ax.set_ylabel("window AUROC")
    ax.axhline(0.5, color="k", lw=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="2 seeds, 2 epochs, shorter series")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--n-vars", type=int, default=10)
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--n-test", type=int, default=2000)
    p.add_argument("--factor", type=float, default=2.0, help="anomaly magnitude in std units")
    p.add_argument("--kind", default="mixed", help="anomaly kind passed to make_var/make_lorenz96")
    p.add_argument(
        "--interventions", type=int, default=0,
        help="VAR only: add this many normal causal interventions (label 0) to the test series "
        "and report false-positive rates on them at 80%% recall",
    )  # fmt: skip
    p.add_argument("--png", help="save a bar chart of AUROC to this path")
    p.add_argument("--ablations", action="store_true", help="add CAROTS ablation rows")
    p.add_argument("--datasets", nargs="+", default=["VAR", "Lorenz96"])
    args = p.parse_args()
    if args.quick:
        args.seeds, args.epochs, args.n_train, args.n_test = 2, 2, 1000, 1000
    # torch imports its compiler stack on the first optimizer; keep that out of the timings
    import torch

    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    t0 = time.perf_counter()
    res = run(args)
    print()
    print(table(res))
    if args.png:
        save_png(res, args.png)
    print(
        f"\ntotal {time.perf_counter() - t0:.0f} s; window-level metrics, mean±std over "
        f"{args.seeds} seeds; F1 = best F1 on test scores (oracle threshold, CAROTS protocol)"
    )


if __name__ == "__main__":
    main()
