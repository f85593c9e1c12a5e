"""Benchmark: CAROTS against cheap detectors on the paper's synthetic protocol.

Part 1 -- collapse. Default CAROTS on ``make_var(N=10)`` and ``make_lorenz96(N=10)`` over 3
seeds: final SOC loss relative to ``log(1 + 2B)`` (its value for identical embeddings), with the
official standardised biases (0.1..0.5) beside the package default (0.5..2.5 residual stds);
and the AUROC of the contrastive score alone on collective-global anomalies.

Part 2 -- the protocol: N = 20, 4,000 training and 4,000 test steps, the four TODS anomaly types
(point global, point contextual, collective global, collective trend), window 10, stride-1
window labels (a window is anomalous if any of its steps is), window AUROC; VAR and Lorenz-96;
``--seeds`` seeds. Methods: CAROTS (combined score, and its two parts), the plain one-class
contrastive encoder (no causality), the window-max VAR residual (statsmodels VAR), PCA
reconstruction, and PyOD's IForest, PCA, ECOD and AutoEncoder on flattened windows (PyOD is a
benchmark-only dependency), all on the same windows.

Part 3 -- the thesis test: VAR test series with normal causal interventions (a 3-innovation-std
push on the variable with most children, inside the simulator: labelled normal) and causal
breaks (an effect's segment replaced by an independent run: labelled anomalous). For every
method, the false-positive rate on intervention windows at the threshold that catches 80% of
the causal-break windows.

    uv run python tools/bench/carots_bench.py            # ~40 min on 2 cores
    uv run python tools/bench/carots_bench.py --quick    # 1 seed, N=10, smaller series
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch

from causal_ts import (
    CAROTS,
    PCAReconstruction,
    PlainOneClassContrastive,
    VARResidual,
    make_lorenz96,
    make_var,
)
from causal_ts.data import sliding_windows
from causal_ts.metrics import evaluate, window_labels

W = 10
KINDS = ("point_global", "point_contextual", "collective_global", "collective_trend")


class PyODWindows:
    """A PyOD detector on flattened, standardised stride-1 windows."""

    def __init__(self, name: str, seed: int) -> None:
        self.name, self.seed = name, seed

    def fit(self, X: np.ndarray) -> PyODWindows:
        from pyod.models.auto_encoder import AutoEncoder
        from pyod.models.ecod import ECOD
        from pyod.models.iforest import IForest
        from pyod.models.pca import PCA

        self.mean_, self.std_ = X.mean(0), X.std(0) + 1e-12
        F = self._flat(X)
        self.model_ = {
            "IForest": lambda: IForest(random_state=self.seed),
            "PCA": lambda: PCA(random_state=self.seed),
            "ECOD": lambda: ECOD(),
            "AutoEncoder": lambda: AutoEncoder(
                epoch_num=10, random_state=self.seed, verbose=0, hidden_neuron_list=[64, 32]
            ),
        }[self.name]()
        self.model_.fit(F)
        return self

    def _flat(self, X: np.ndarray) -> np.ndarray:
        w = sliding_windows((X - self.mean_) / self.std_, W)
        return w.reshape(w.shape[0], -1)

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return self.model_.decision_function(self._flat(X))


def detectors(seed: int) -> dict:
    return {
        "CAROTS (combined)": lambda: CAROTS(window=W, random_state=seed),
        "plain contrastive": lambda: PlainOneClassContrastive(window=W, random_state=seed),
        "VAR residual (window max)": lambda: VARResidual(window=W),
        "PCA reconstruction": lambda: PCAReconstruction(window=W),
        "PyOD IForest": lambda: PyODWindows("IForest", seed),
        "PyOD PCA": lambda: PyODWindows("PCA", seed),
        "PyOD ECOD": lambda: PyODWindows("ECOD", seed),
        "PyOD AutoEncoder": lambda: PyODWindows("AutoEncoder", seed),
    }


def part1(seeds: int) -> None:
    print("\n## Part 1: collapse (N=10) -- final SOC loss / log(1 + 2B), and CL-only AUROC\n")
    print("| system | biases | loss ratio per seed | mean | CL-only AUROC, collective global |")
    print("|---|---|---|---|---|")
    for gen in (make_var, make_lorenz96):
        for label, kw in (
            ("official 0.1..0.5 (standardised)", {
                "bias_candidates": (0.1, 0.2, 0.3, 0.4, 0.5), "bias_unit": "standardized"}),
            ("default 0.5..2.5 residual stds", {}),
        ):  # fmt: skip
            ratios, aucs = [], []
            for seed in range(seeds):
                d = gen(n_vars=10, kind="collective_global", seed=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    det = CAROTS(window=W, score="cl", random_state=seed, **kw).fit(d.X_train)
                ratios.append(det.collapse_ratio_)
                yw = window_labels(d.y_test, W)
                aucs.append(evaluate(det.decision_function(d.X_test), yw)["AUROC"])
            print(
                f"| {gen.__name__} | {label} | {', '.join(f'{r:.2f}' for r in ratios)} | "
                f"{np.mean(ratios):.2f} | {np.mean(aucs):.3f} +- {np.std(aucs):.3f} |",
                flush=True,
            )
    print("\n(targets: loss ratio <= 0.8 at defaults; CL-only AUROC >= 0.95)")


def part2(seeds: int, n_vars: int, T: int) -> None:
    print(
        f"\n## Part 2: mean window AUROC over the four anomaly types (N={n_vars}, "
        f"T={T}+{T}, {seeds} seeds)\n"
    )
    for gen in (make_var, make_lorenz96):
        table: dict[str, list[float]] = {}
        per_kind: dict[str, dict[str, list[float]]] = {}
        parts: dict[str, list[float]] = {"CAROTS CL only": [], "CAROTS forecaster only": []}
        for seed in range(seeds):
            for kind in KINDS:
                d = gen(n_vars=n_vars, n_train=T, n_test=T, kind=kind, seed=seed)
                yw = window_labels(d.y_test, W)
                for name, make in detectors(seed).items():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        det = make().fit(d.X_train)
                        s = det.decision_function(d.X_test)
                    auc = evaluate(s, yw)["AUROC"]
                    table.setdefault(name, []).append(auc)
                    per_kind.setdefault(name, {}).setdefault(kind, []).append(auc)
                    if name == "CAROTS (combined)":
                        for mode, key in (
                            ("cl", "CAROTS CL only"),
                            ("cd", "CAROTS forecaster only"),
                        ):
                            det._score_mode = mode
                            parts[key].append(
                                evaluate(det.decision_function(d.X_test), yw)["AUROC"]
                            )
                print(f"  {gen.__name__} seed {seed} {kind} done", flush=True)
        print(f"\n### {gen.__name__}\n")
        print("| method | " + " | ".join(KINDS) + " | mean AUROC |")
        print("|---|" + "---|" * (len(KINDS) + 1))
        for name, values in {**table, **parts}.items():
            if name in per_kind:
                cells = " | ".join(f"{np.mean(per_kind[name][k]):.3f}" for k in KINDS)
            else:
                arr = np.array(values).reshape(seeds, len(KINDS))
                cells = " | ".join(f"{v:.3f}" for v in arr.mean(0))
            seed_means = np.array(values).reshape(seeds, len(KINDS)).mean(1)
            print(f"| {name} | {cells} | {seed_means.mean():.3f} +- {seed_means.std():.3f} |")


def part3(seeds: int, n_vars: int, T: int) -> None:
    print(
        "\n## Part 3: false alarms on normal interventions (3 innovation stds) at 80% recall "
        "of causal breaks (VAR)\n"
    )
    res: dict[str, list] = {}
    for seed in range(seeds):
        d = make_var(
            n_vars=n_vars, n_train=T, n_test=T, kind="causal_break", n_breaks=8,
            n_interventions=8, seed=seed,
        )  # fmt: skip
        yw = window_labels(d.y_test, W)
        iw = window_labels(d.intervention, W) & ~yw
        for name, make in detectors(seed).items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = make().fit(d.X_train).decision_function(d.X_test)
            thr = np.quantile(s[yw == 1], 0.2)  # 80% of causal-break windows score above it
            fpr_int = float(np.mean(s[iw == 1] >= thr))
            fpr_normal = float(np.mean(s[(yw == 0) & (iw == 0)] >= thr))
            auc = evaluate(s, yw)["AUROC"]
            res.setdefault(name, []).append((fpr_int, fpr_normal, auc))
    print("| method | FPR on intervention windows | FPR on other normal windows | break AUROC |")
    print("|---|---|---|---|")
    for name, rows in res.items():
        a = np.array(rows)
        print(
            f"| {name} | {a[:, 0].mean():.3f} +- {a[:, 0].std():.3f} | "
            f"{a[:, 1].mean():.3f} +- {a[:, 1].std():.3f} | {a[:, 2].mean():.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    seeds = 1 if args.quick else args.seeds
    part1(seeds)
    n_vars, T = (10, 2000) if args.quick else (20, 4000)
    part2(seeds, n_vars, T)
    part3(seeds, n_vars, T)
    print(f"\ntotal wall time {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
