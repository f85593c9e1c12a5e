"""Benchmark: Pareto Merging vs weight averaging, Task Arithmetic, TIES and AdaMerging.

A small MLP is pre-trained on scikit-learn's digits and fine-tuned on digit tasks rendered in
shifted domains; the fine-tuned backbones are merged (each task keeps its head). The table gives
test accuracy per task, the hypervolume of the test-error points (reference: error 1 per task)
with its ratio to Task Arithmetic, and wall time; the Pareto Merging rows sweep preferences.

    uv run python tools/bench/pareto_bench.py --png pareto_front.png
    uv run python tools/bench/pareto_bench.py --quick
"""

import argparse

import numpy as np
import torch

from pareto_merge.experiment import merging_experiment
from pareto_merge.plotting import plot_front


def table(r: dict, ta_key: str) -> str:
    names = r["tasks"]
    head = (
        f"{'method':<40}"
        + "".join(f"{n:>9}" for n in names)
        + f"{'mean':>8}{'HV':>8}{'HV/TA':>7}{'time s':>8}"
    )
    lines = [head, "-" * len(head)]
    hv_ta = r["hv"][ta_key]
    for name, acc in r["points"].items():
        t = r["times"].get(name, r["times"].get(name.replace(" equal pref.", " fit"), float("nan")))
        hv = r["hv"][name]
        lines.append(
            f"{name:<40}"
            + "".join(f"{a:>9.3f}" for a in acc)
            + f"{np.mean(acc):>8.3f}{hv:>8.3f}{hv / hv_ta:>7.2f}{t:>8.2f}"
        )
    for obj, (prefs, acc) in r["fronts"].items():
        hv = r["hv"][f"Pareto Merging [{obj}] front"]
        lines.append(
            f"{f'Pareto Merging [{obj}] whole front':<40}"
            + " " * 9 * len(names)
            + f"{'':>8}{hv:>8.3f}{hv / hv_ta:>7.2f}"
        )
        if len(names) == 2:
            for p, a in zip(prefs, acc, strict=True):
                label = f"  pref=({p[0]:.1f}, {p[1]:.1f}) [{obj}]"
                lines.append(
                    f"{label:<40}" + "".join(f"{x:>9.3f}" for x in a) + f"{np.mean(a):>8.3f}"
                )
    lines.append(
        f"merge() per preference: {r['merge_ms']:.2f} ms; extra parameters {r['extra_params']} "
        f"({r['extra_params'] / r['model_params']:.1%} of the {r['model_params']}-parameter backbone)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one seed, two tasks, fewer steps")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--png", default=None, help="write the two-task front as a PNG here")
    args = parser.parse_args()
    torch.set_num_threads(1)  # repeatable timings on a shared machine
    seeds = 1 if args.quick else args.seeds
    steps = 100 if args.quick else args.steps

    summary = []
    for seed in range(seeds):
        r = merging_experiment(
            ("rot90", "invert"), objectives=("ce", "entropy"), n_steps=steps, seed=seed
        )
        ta_key = next(k for k in r["points"] if k.startswith("task arithmetic"))
        print(f"\n## two tasks {r['tasks']}, seed {seed}")
        print(table(r, ta_key))
        summary.append({k.split(" (l=")[0]: v for k, v in r["hv"].items()})
        if seed == 0 and args.png:
            _, acc = r["fronts"]["ce"]
            base = {k: tuple(v) for k, v in r["points"].items() if "equal" not in k}
            plot_front(
                acc,
                base,
                labels=(f"{r['tasks'][0]} accuracy", f"{r['tasks'][1]} accuracy"),
                path=args.png,
            )
            print(f"front written to {args.png}")
    if seeds > 1:
        print(f"\n## hypervolume over {seeds} seeds (two tasks), mean +- std")
        for key in summary[0]:
            vals = [s[key] for s in summary if key in s]
            print(f"{key:<40}{np.mean(vals):>8.3f} +- {np.std(vals):.3f}")
    if not args.quick:
        r = merging_experiment(
            ("rot90", "invert", "mirror", "blur"),
            objectives=("ce",),
            n_steps=steps,
            n_points=6,
            seed=0,
        )
        ta_key = next(k for k in r["points"] if k.startswith("task arithmetic"))
        print(
            f"\n## four tasks {r['tasks']}, seed 0 (front: {len(r['fronts']['ce'][0])} preferences on a simplex lattice)"
        )
        print(table(r, ta_key))


if __name__ == "__main__":
    main()
