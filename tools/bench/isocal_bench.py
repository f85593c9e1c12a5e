"""Benchmark: NA-FIR / SCIR vs isotonic and parametric calibrators.

Part 1 (quality): four scikit-learn bundled data sets (digits, wine, iris,
breast cancer as K=2) plus a synthetic K=20 problem, two base classifiers
(MLP, random forest), 50/25/25 train/calibration/test splits over several
seeds. Reports test log loss, top-label ECE (15 bins) and accuracy as
mean +- std, with the log-loss ratio to one-vs-rest isotonic and the fit time.

Part 2 (scaling): fit / predict time and peak traced memory of every
calibrator on synthetic overconfident K=10 probabilities for n up to 1e5.

    uv run python tools/bench/isocal_bench.py            # default (~5 min on 2 busy cores)
    uv run python tools/bench/isocal_bench.py --quick    # smaller, ~1 min
"""

from __future__ import annotations

import os

# Tiny matrices + many BLAS threads on a shared machine is mostly contention.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import (  # noqa: E402
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
)
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from isocal import (  # noqa: E402
    DirichletCalibrator,
    FIRCalibrator,
    HistogramBinningCalibrator,
    MatrixScaling,
    NAFIRCalibrator,
    OvRIsotonicCalibrator,
    SCIRCalibrator,
    TemperatureScaling,
    VectorScaling,
    accuracy,
    log_loss,
    make_miscalibrated,
    top_label_ece,
)

METHODS = {
    "TS": TemperatureScaling,
    "VS": VectorScaling,
    "MS": MatrixScaling,
    "Dir-ODIR": DirichletCalibrator,
    "HistBin": HistogramBinningCalibrator,
    "OvR-IR": OvRIsotonicCalibrator,
    "FIR": FIRCalibrator,
    "NA-FIR": NAFIRCalibrator,
    "SCIR": SCIRCalibrator,
}
BASE = "OvR-IR"
FLOOR = 1e-3  # NLL is also reported after flooring every method's output at this value


def floored(Q: np.ndarray) -> np.ndarray:
    Q = np.maximum(Q, FLOOR)
    return Q / Q.sum(axis=1, keepdims=True)


def scores(y: np.ndarray, Q: np.ndarray, dt: float) -> tuple:
    return (log_loss(y, Q), top_label_ece(y, Q), accuracy(y, Q), dt, log_loss(y, floored(Q)))


def datasets(quick: bool) -> dict:
    out = {
        "digits": load_digits(return_X_y=True),
        "wine": load_wine(return_X_y=True),
        "iris": load_iris(return_X_y=True),
        "breast-cancer": load_breast_cancer(return_X_y=True),
    }
    n = 3000 if quick else 4000
    out["synth-K20"] = make_classification(
        n_samples=n,
        n_features=40,
        n_informative=30,
        n_classes=20,
        n_clusters_per_class=1,
        class_sep=1.2,
        random_state=0,
    )
    return out


def classifiers(seed: int) -> dict:
    return {
        "MLP": make_pipeline(
            StandardScaler(),
            MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, random_state=seed),
        ),
        "RF": RandomForestClassifier(n_estimators=100, random_state=seed),
    }


def quality(quick: bool, n_seeds: int) -> tuple[list, dict]:
    rows, saved = [], {}
    for dname, (X, y) in datasets(quick).items():
        for cname in ("MLP", "RF"):
            res: dict[str, list] = {m: [] for m in ["uncal", *METHODS]}
            for seed in range(n_seeds):
                X_tr, X_rest, y_tr, y_rest = train_test_split(
                    X, y, test_size=0.5, random_state=seed, stratify=y
                )
                X_cal, X_te, y_cal, y_te = train_test_split(
                    X_rest, y_rest, test_size=0.5, random_state=seed, stratify=y_rest
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    clf = classifiers(seed)[cname].fit(X_tr, y_tr)
                P_cal, P_te = clf.predict_proba(X_cal), clf.predict_proba(X_te)
                res["uncal"].append(scores(y_te, P_te, 0.0))
                for mname, cls in METHODS.items():
                    t0 = time.perf_counter()
                    cal = cls().fit(P_cal, y_cal)
                    dt = time.perf_counter() - t0
                    Q = cal.predict_proba(P_te)
                    res[mname].append(scores(y_te, Q, dt))
                    if seed == 0 and dname == "digits" and cname == "MLP":
                        saved[mname] = (y_te, Q)
                if seed == 0 and dname == "digits" and cname == "MLP":
                    saved["uncal"] = (y_te, P_te)
            rows.append((dname, cname, len(y_cal), {m: np.array(v) for m, v in res.items()}))
            print(f"  done {dname}/{cname}", flush=True)
    return rows, saved


def print_quality(rows: list, n_seeds: int) -> None:
    print(
        f"\n## Quality on held-out test sets, mean +- std over {n_seeds} seeds "
        "(NLL ratio and fit-time ratio are relative to OvR-IR; NLL@floor: outputs floored "
        f"at {FLOOR:g} and renormalized before scoring, for every method alike)\n"
    )
    head = (
        f"| {'data/clf':<22} | {'method':<9} | {'NLL':>15} | {'NLL/OvR':>7} | "
        f"{'NLL@floor':>15} | "
        f"{'ECE':>15} | {'acc':>6} | {'fit ms':>8} | {'fit/OvR':>7} |"
    )
    print(head)
    print("|" + "|".join("-" * (len(c) + 0) for c in head.split("|")[1:-1]) + "|")
    ranks = {m: [] for m in ["uncal", *METHODS]}
    ratios = {m: [] for m in ["uncal", *METHODS]}
    ece_ranks = {m: [] for m in ["uncal", *METHODS]}
    floor_ranks = {m: [] for m in ["uncal", *METHODS]}
    for dname, cname, n_cal, res in rows:
        base_nll = res[BASE][:, 0].mean()
        base_t = res[BASE][:, 3].mean()
        nll_means = {m: v[:, 0].mean() for m, v in res.items()}
        ece_means = {m: v[:, 1].mean() for m, v in res.items()}
        order = sorted(nll_means, key=nll_means.get)
        eorder = sorted(ece_means, key=ece_means.get)
        floor_means = {m: v[:, 4].mean() for m, v in res.items()}
        forder = sorted(floor_means, key=floor_means.get)
        for m in res:
            ranks[m].append(order.index(m) + 1)
            ece_ranks[m].append(eorder.index(m) + 1)
            floor_ranks[m].append(forder.index(m) + 1)
            ratios[m].append(nll_means[m] / base_nll)
        for m, v in res.items():
            tag = f"{dname}/{cname} n={n_cal}" if m == "uncal" else ""
            fl = f"{v[:, 4].mean():.4f}+-{v[:, 4].std():.4f}"
            t = v[:, 3].mean()
            print(
                f"| {tag:<22} | {m:<9} | {v[:, 0].mean():>7.4f}+-{v[:, 0].std():<6.4f} | "
                f"{v[:, 0].mean() / base_nll:>7.2f} | {fl:>15} | "
                f"{v[:, 1].mean():>7.4f}+-{v[:, 1].std():<6.4f} | "
                f"{v[:, 2].mean():>6.3f} | {1000 * t:>8.1f} | "
                f"{(t / base_t if m != 'uncal' else 0):>7.2f} |"
            )
    print("\n## Summary over all data set x classifier cells\n")
    print("| method    | mean NLL rank | mean NLL@floor rank | mean ECE rank | geo-mean NLL/OvR |")
    print("|-----------|---------------|---------------------|---------------|------------------|")
    for m in ranks:
        print(
            f"| {m:<9} | {np.mean(ranks[m]):>13.2f} | {np.mean(floor_ranks[m]):>19.2f} | "
            f"{np.mean(ece_ranks[m]):>13.2f} | {np.exp(np.mean(np.log(ratios[m]))):>16.3f} |"
        )


def scaling(sizes: list[int], n_classes: int = 10) -> None:
    print(
        f"\n## Fit / predict cost on synthetic overconfident probabilities (K={n_classes}); "
        "ratios relative to OvR-IR at the same n\n"
    )
    print(
        f"| {'n':>7} | {'method':<9} | {'fit s':>8} | {'fit/OvR':>8} | {'predict s':>9} | "
        f"{'peak MB':>8} | {'mem/OvR':>7} | {'test NLL':>8} |"
    )
    print(
        "|---------|-----------|----------|----------|-----------|----------|---------|----------|"
    )
    for n in sizes:
        P, y, _ = make_miscalibrated(2 * n, n_classes, temperature=2.0, random_state=n)
        P_cal, y_cal, P_te, y_te = P[:n], y[:n], P[n:], y[n:]
        out = {}
        for mname, cls in METHODS.items():
            tracemalloc.start()
            t0 = time.perf_counter()
            cal = cls().fit(P_cal, y_cal)
            t_fit = time.perf_counter() - t0
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            t0 = time.perf_counter()
            Q = cal.predict_proba(P_te)
            t_pred = time.perf_counter() - t0
            out[mname] = (t_fit, t_pred, peak / 2**20, log_loss(y_te, Q))
        bf, _, bm, _ = out[BASE]
        for mname, (tf, tp, mem, nll) in out.items():
            print(
                f"| {n:>7} | {mname:<9} | {tf:>8.3f} | {tf / bf:>8.2f} | {tp:>9.3f} | "
                f"{mem:>8.1f} | {mem / bm:>7.2f} | {nll:>8.4f} |",
                flush=True,
            )


def save_png(path: str, saved: dict) -> None:
    import matplotlib

    from isocal import reliability_diagram

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["uncal", "TS", "OvR-IR", "NA-FIR", "SCIR"]
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2))
    for ax, m in zip(axes, names, strict=True):
        y_te, Q = saved[m]
        reliability_diagram(y_te, Q, n_bins=10, ax=ax)
        ax.set_title(f"{m}: ECE {top_label_ece(y_te, Q):.3f}")
    fig.suptitle("digits / MLP, seed 0")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nwrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer seeds, smaller sizes")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 5)")
    parser.add_argument("--png", default=None, help="write reliability diagrams to this PNG")
    parser.add_argument(
        "--sizes", type=int, nargs="*", default=None, help="calibration sizes for part 2"
    )
    args = parser.parse_args()
    n_seeds = args.seeds or (2 if args.quick else 5)
    sizes = args.sizes or ([1000, 10000] if args.quick else [1000, 10000, 100000])
    t0 = time.perf_counter()
    rows, saved = quality(args.quick, n_seeds)
    print_quality(rows, n_seeds)
    scaling(sizes)
    if args.png:
        save_png(args.png, saved)
    print(f"\ntotal wall time {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
