"""Benchmark: Pareto Merging against the training-free front, a capacity control and AdaMerging.

Generated tasks: scikit-learn's digits rendered in shifted domains (rot90, invert, blur); a
backbone (small CNN, or MLP) is pre-trained on the original digits and fine-tuned per task with
its own head; the backbones are merged, each task keeping its head. Settings:

* unlabeled (the paper's): entropy of the merged model's predictions on the unlabeled test
  inputs, plus the marginal-entropy bonus (``diversity=1``) that rules out the collapsed solutions;
* labelled: cross-entropy on 100 labelled training images per task.

Every trained method gets the same objective, steps and learning rate. Rows: single models
(pre-trained, individual, weight averaging, task arithmetic with a tuned scale, TIES per model and
per tensor, AdaMerging, Pareto Merging at the equal preference, the capacity control = the same
low-rank parameters trained without the preference); fronts on one preference lattice (weighted
task arithmetic, AdaMerging run once per preference, Pareto Merging). Hypervolume of the test
errors (reference error 1 per task), mean +- std over seeds, and paired differences.

    uv run python tools/bench/pareto_bench.py --png pareto_front.png     # ~25 min on 2 cores
    uv run python tools/bench/pareto_bench.py --quick

Every table is written to ``results/pareto-merge/`` (see ``record.py``); the README's tables are
generated from those files.
"""

import argparse
import time

import numpy as np
import torch
from record import Run, fmt_ci, fmt_sd

from pareto_merge.experiment import merging_experiment


def run_setting(run, name, domains, objective, arch, seeds, steps, n_points, png=None) -> None:
    runs = []
    for seed in range(seeds):
        r = merging_experiment(
            domains, objective=objective, arch=arch, n_steps=steps, n_points=n_points, seed=seed
        )
        runs.append(r)
        if seed == 0 and png and len(domains) == 2:
            _plot(r, png)
    names = runs[0]["tasks"]
    run.sample_load()
    columns = ["method", *names, "mean acc", "hypervolume", "CPU s"]
    rows = []
    for key in runs[0]["points"]:
        acc = np.asarray([r["points"][key] for r in runs])
        hv = [r["hv"][key] for r in runs]
        t = np.mean([r["times"].get(key, np.nan) for r in runs])
        rows.append([key, *(100 * acc[:, j].mean() for j in range(len(names))),
                     100 * acc.mean(), fmt_sd(hv), None if np.isnan(t) else float(t)])  # fmt: skip
    for key in runs[0]["fronts"]:
        hv = [r["hv"][f"{key} (front)"] for r in runs]
        t = np.mean([r["times"].get(key, np.nan) for r in runs])
        rows.append([f"{key} (front)", *([""] * len(names)), "", fmt_sd(hv), float(t)])
    pm_front = np.asarray([r["hv"]["Pareto Merging (front)"] for r in runs])
    pm_eq = np.asarray([r["hv"]["Pareto Merging, equal preference"] for r in runs])
    ctrl = np.asarray([r["hv"]["capacity control (no preference)"] for r in runs])
    wta = np.asarray([r["hv"]["weighted task arithmetic (front)"] for r in runs])
    notes = ["Accuracies in %, mean over seeds; hypervolume of the test errors (reference error "
             "1 per task), mean ± sd; paired differences with 95% t-intervals:"]  # fmt: skip
    diffs = {}
    for label, a, b in (
        ("Pareto Merging front - weighted task-arithmetic front", pm_front, wta),
        ("Pareto Merging front - capacity control", pm_front, ctrl),
        ("Pareto Merging at equal preference - capacity control", pm_eq, ctrl),
    ):
        diffs[label] = (a - b).tolist()
        notes.append(
            f"- {label}: {fmt_ci(a - b, sign=True)} (per seed "
            + ", ".join(f"{x:+.3f}" for x in a - b)
            + ")"
        )
    # front spread: does the preference change the model?
    spread = np.mean([np.ptp(r["fronts"]["Pareto Merging"][1], axis=0).mean() for r in runs])
    wspread = np.mean(
        [np.ptp(r["fronts"]["weighted task arithmetic"][1], axis=0).mean() for r in runs]
    )
    notes.append(
        f"- mean per-task accuracy range along the front: Pareto Merging {100 * spread:.1f} "
        f"points, weighted task arithmetic {100 * wspread:.1f}"
    )
    h = np.asarray([r["history"]["Pareto Merging"] for r in runs]).mean(0)
    k = max(1, len(h) // 10)
    curve = [float(np.mean(h[i : i + k])) for i in range(0, len(h), k)]
    notes.append(
        "- Pareto Merging training loss (mean over seeds, every 10 %): "
        + " ".join(f"{v:.3f}" for v in curve)
    )
    r0 = runs[0]
    notes.append(
        f"- merge() per preference {r0['merge_ms']:.2f} ms; extra parameters "
        f"{r0['extra_params']} ({r0['extra_params'] / r0['model_params']:.1%} of the "
        f"{r0['model_params']}-parameter backbone)"
    )
    n_pref = len(runs[0]["fronts"]["Pareto Merging"][0])
    run.table(
        name,
        columns,
        rows,
        fmt=[None, *([".1f"] * (len(names) + 1)), None, ".1f"],
        seeds=list(range(seeds)),
        per_seed={
            "hv": {k: [r["hv"][k] for r in runs] for k in runs[0]["hv"]},
            "points": {
                k: [list(map(float, r["points"][k])) for r in runs] for k in runs[0]["points"]
            },
            "paired": diffs,
        },
        title=f"{len(names)} tasks {names}, {arch.upper()} backbone, {objective} objective, "
        f"{seeds} seeds, {steps} steps, {n_pref} preferences on the front",
        notes=notes,
        headline=f"{objective}, {len(names)} tasks: Pareto Merging front HV "
        f"{pm_front.mean():.3f} vs weighted task arithmetic {wta.mean():.3f}, capacity control "
        f"{ctrl.mean():.3f}; accuracy range along the front {100 * spread:.1f} vs "
        f"{100 * wspread:.1f} points",
        extra={
            "training_loss_curve": curve,
            "front_spread_points": 100 * spread,
            "wta_front_spread_points": 100 * wspread,
        },
    )


def _plot(r, png: str) -> None:
    try:
        from pareto_merge.plotting import plot_front
    except ImportError:  # pragma: no cover
        return
    _, acc = r["fronts"]["Pareto Merging"]
    skip = ("pre-trained", "Pareto Merging, equal preference")
    base = {k: tuple(v) for k, v in r["points"].items() if k not in skip}
    others = {k: v[1] for k, v in r["fronts"].items() if k != "Pareto Merging"}
    plot_front(
        acc,
        base,
        labels=(f"{r['tasks'][0]} accuracy", f"{r['tasks'][1]} accuracy"),
        path=png,
        other_fronts=others,
    )
    print(f"front written to {png}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one seed, fewer steps")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--png", default=None, help="write the two-task front as a PNG here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds, steps = (1, 100) if args.quick else (args.seeds, args.steps)
    t0 = time.time()
    run = Run("pareto-merge")
    for objective, name in (("entropy", "cnn_unlabeled"), ("ce", "cnn_labelled")):
        run_setting(run, name, ("rot90", "invert", "blur"), objective, "cnn", seeds, steps, 10)
    run_setting(
        run, "mlp_two_tasks", ("rot90", "invert"), "entropy", "mlp", seeds, steps, 11, png=args.png
    )
    print(f"\ntotal wall time {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
