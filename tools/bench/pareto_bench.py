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
import tempfile
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
        rows.append([f"{key} (front)", *([""] * len(names)), "", fmt_sd(hv),
                     None if np.isnan(t) else float(t)])  # fmt: skip
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


CONFLICT = ("rot90", "mirror", "transpose", "invert")


def task_ranges(front_acc: np.ndarray) -> np.ndarray:
    """Per-task accuracy range (points) along a front: how much the preference moves each task."""
    return 100 * np.ptp(np.asarray(front_acc), axis=0)


ALPHAS = (1.0, 0.1)  # Dirichlet concentration of the training preferences: default, sharp


def run_conflict(run, seeds, steps) -> None:
    """Item 2: four conflicting geometric tasks where the preference must matter."""
    runs = {a: [merging_experiment(CONFLICT, objective="entropy", arch="mlp", n_steps=steps,
                                   n_points=10, alpha=a, seed=s) for s in range(seeds)]
            for a in ALPHAS}  # fmt: skip
    names = runs[1.0][0]["tasks"]
    fronts = {"weighted task arithmetic": (1.0, "weighted task arithmetic"),
              "AdaMerging per preference": (1.0, "AdaMerging per preference")}  # fmt: skip
    for a in ALPHAS:
        fronts[f"Pareto Merging (alpha {a:g})"] = (a, "Pareto Merging")
        fronts[f"capacity control on AdaMerging per preference (alpha {a:g})"] = (
            a,
            "capacity control on AdaMerging per preference",
        )
    rows, per_seed = [], {}
    for label, (a, key) in fronts.items():
        hv = np.asarray([r["hv"][f"{key} (front)"] for r in runs[a]])
        rng_ = np.asarray([task_ranges(r["fronts"][key][1]) for r in runs[a]])  # (seeds, K)
        per_seed[label] = {"hv": hv.tolist(), "task_range": rng_.tolist()}
        rows.append(
            [label, fmt_sd(hv), *(f"{v:.1f}" for v in rng_.mean(0)), float(rng_.min(1).mean())]
        )
    hv_of = {k: np.asarray(v["hv"]) for k, v in per_seed.items()}
    notes = ["Fronts on the 10-point Das-Dennis lattice (K = 4); hypervolume of the test errors "
             "(reference 1 per task), mean ± sd over seeds; per-task accuracy range along the "
             "front (max - min over preferences, points), mean over seeds; the last column is "
             "the smallest task's range (mean over seeds). The capacity control's front: each "
             "preference's AdaMerging merge plus the control's low-rank term, trained with the "
             "same parameters, steps, lr and preference sampling as Pareto Merging but evaluated "
             "at the uniform preference. alpha: Dirichlet concentration of the preferences "
             "sampled in training (1 = uniform on the simplex, the package default; 0.1 = near "
             "one-hot samples, this package's option).",
             "Paired over seeds (95% t-intervals):"]  # fmt: skip
    paired = {}
    pairs = [(f"Pareto Merging (alpha {a:g})", f"capacity control on AdaMerging per preference (alpha {a:g})")
             for a in ALPHAS]  # fmt: skip
    pairs += [(f"Pareto Merging (alpha {a:g})", o) for a in ALPHAS
              for o in ("weighted task arithmetic", "AdaMerging per preference")]  # fmt: skip
    pairs.append(("Pareto Merging (alpha 0.1)", "Pareto Merging (alpha 1)"))
    for x, y in pairs:
        d = hv_of[x] - hv_of[y]
        paired[f"{x} - {y}"] = d.tolist()
        notes.append(f"- {x} front - {y} front: {fmt_ci(d, sign=True)} "
                     f"(per seed {', '.join(f'{v:+.3f}' for v in d)})")  # fmt: skip
    smallest = {k: float(np.asarray(v["task_range"]).min(1).mean()) for k, v in per_seed.items()}
    notes.append("Targets: weighted task arithmetic's per-task range >= 30 points (smallest task "
                 f"{smallest['weighted task arithmetic']:.1f}); Pareto Merging front > the "
                 "control's front with the CI excluding 0; each task moves >= 10 points along "
                 "Pareto Merging's front (smallest task: "
                 + ", ".join(f"alpha {a:g} {smallest[f'Pareto Merging (alpha {a:g})']:.1f}"
                             for a in ALPHAS) + ").")  # fmt: skip
    pm1, pm01 = hv_of["Pareto Merging (alpha 1)"], hv_of["Pareto Merging (alpha 0.1)"]
    ctrl1 = hv_of["capacity control on AdaMerging per preference (alpha 1)"]
    run.table(
        "conflict",
        ["front", "hypervolume", *(f"{n} range" for n in names), "smallest task range"],
        rows, fmt=[None, None, *([None] * len(names)), ".1f"], seeds=list(range(seeds)),
        per_seed={"fronts": per_seed, "paired": paired,
                  "points": {f"{k} (alpha {a:g})": [list(map(float, r["points"][k])) for r in runs[a]]
                             for a in ALPHAS for k in runs[a][0]["points"]}},
        title=f"Conflict setting: {len(names)} tasks {names}, MLP backbone, unlabeled entropy "
              f"objective, {seeds} seeds, {steps} steps",
        notes=notes,
        headline=f"conflict setting (4 tasks): Pareto Merging front HV {pm1.mean():.3f} (alpha 1) "
                 f"/ {pm01.mean():.3f} (alpha 0.1) vs the capacity control's front "
                 f"{ctrl1.mean():.3f}; smallest task range along the front "
                 f"{smallest['Pareto Merging (alpha 1)']:.1f} / "
                 f"{smallest['Pareto Merging (alpha 0.1)']:.1f} points",
    )  # fmt: skip


ABLATIONS = {
    "entropy + diversity, linear (default)": {"diversity": 1.0, "scalarization": "linear"},
    "entropy only, linear": {"diversity": 0.0, "scalarization": "linear"},
    "entropy + diversity, Tchebycheff": {"diversity": 1.0, "scalarization": "tchebycheff"},
    "entropy only, Tchebycheff": {"diversity": 0.0, "scalarization": "tchebycheff"},
    "alpha 0.3 (sharper preference sampling)": {"alpha": 0.3},
    "alpha 0.1 (near one-hot preference sampling)": {"alpha": 0.1},
    "rank 1 (less capacity)": {"rank": 1},
    "labelled CE objective (diagnostic)": {"objective": "ce"},
}


def run_ablations(run, seeds, steps) -> None:
    """Item 4: the objective's diversity term and the scalarization, on the conflict tasks."""
    res = {}
    for label, kw in ABLATIONS.items():
        kw = {"objective": "entropy", **kw}
        res[label] = [merging_experiment(CONFLICT, arch="mlp", n_steps=steps, n_points=10,
                                         adamerging_front=False, seed=s, **kw)
                      for s in range(seeds)]  # fmt: skip
    rows, per_seed = [], {}
    base = None
    for label, runs in res.items():
        hv = np.asarray([r["hv"]["Pareto Merging (front)"] for r in runs])
        eq = np.asarray([np.mean(r["points"]["Pareto Merging, equal preference"]) for r in runs])
        spread = np.asarray([task_ranges(r["fronts"]["Pareto Merging"][1]).mean() for r in runs])
        base = hv if base is None else base
        per_seed[label] = {"hv": hv.tolist(), "equal_pref_mean_acc": eq.tolist(),
                           "mean_task_range": spread.tolist()}  # fmt: skip
        rows.append([label, fmt_sd(hv), fmt_ci(hv - base, sign=True) if hv is not base else "",
                     100 * eq.mean(), spread.mean()])  # fmt: skip
    run.table(
        "ablations",
        ["Pareto Merging variant", "front hypervolume", "- default (paired)",
         "equal-preference mean acc", "mean task range along the front"],
        rows, fmt=[None, None, None, ".1f", ".1f"], seeds=list(range(seeds)), per_seed=per_seed,
        title=f"Ablations on the conflict tasks {list(CONFLICT)} (MLP, {seeds} seeds, {steps} steps)",
        notes="Diversity: the marginal-entropy bonus of the unlabeled objective (this package's "
              "addition to the paper's entropy; entropy only is the paper's objective). "
              "Scalarization: linear sum_k gamma_k L_k (the package default, our reading of the "
              "paper's summaries) or Tchebycheff max_k gamma_k L_k (an option). Rank 1: the tensor factors' rank "
              "(default 4). alpha: Dirichlet concentration of the preferences sampled in training "
              "(default 1; the paper samples from a Dirichlet, its concentration is this "
              "package's choice). Labelled CE: cross-entropy on 100 labelled images per task instead of "
              "the unlabeled entropy (a diagnostic: does a labelled objective make the preference "
              "matter?). Paired differences to the default with 95% t-intervals over seeds.",
    )  # fmt: skip


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
    parser.add_argument(
        "--parts",
        default="main,conflict,ablations",
        help="comma-separated: main (3-task and 2-task tables), conflict, ablations",
    )
    parser.add_argument("--conflict-seeds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds, steps = (1, 100) if args.quick else (args.seeds, args.steps)
    t0 = time.time()
    run = Run("pareto-merge", out=tempfile.mkdtemp() if args.quick else None)
    parts = args.parts.split(",")
    if "main" in parts:
        for objective, name in (("entropy", "cnn_unlabeled"), ("ce", "cnn_labelled")):
            run_setting(run, name, ("rot90", "invert", "blur"), objective, "cnn", seeds, steps, 10)
        run_setting(run, "mlp_two_tasks", ("rot90", "invert"), "entropy", "mlp", seeds, steps, 11,
                    png=args.png)  # fmt: skip
    if "conflict" in parts:
        run_conflict(run, 1 if args.quick else args.conflict_seeds, steps)
    if "ablations" in parts:
        run_ablations(run, seeds, steps)
    print(f"\ntotal wall time {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
