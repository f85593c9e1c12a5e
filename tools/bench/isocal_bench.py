"""Benchmark: NA-FIR / SCIR against isotonic and parametric calibrators.

Part 1 (quality). Four base-model families (MLP, random forest, Gaussian naive
Bayes, logistic regression) on

* ``digits``: scikit-learn's bundled digits, K=10, 50/25/25 split (n_cal ~ 450);
* ``synth-K10`` / ``synth-K100``: ``make_classification`` (40 features, 30
  informative, one cluster per class, 2% label noise), 20,000 train / 10,000
  calibration / 10,000 test;
* ``synth-K100-n500``: the K=100 models calibrated on only 500 of those
  calibration samples (about 5 per class; several classes never occur).

Each cell runs ``--seeds`` seeds (data draw, split and model). Methods run with
their defaults, except Dirichlet-ODIR whose ``lambda = mu`` is chosen on a 25%
hold-out of the calibration set from {1, 1e2, 1e4} (Kull et al. 2019 tune it by
cross-validation). ``OvR-IR+prior`` is one-vs-rest isotonic with the same
one-sample uniform prior NA-FIR and SCIR use (a control: how much of the gap is
the prior alone). Reported: test log loss (NLL, probabilities floored at 1e-15),
top-label ECE (15 bins), mean ranks, and paired win counts (cell x seed) of
NA-FIR and SCIR against each anchor.

Part 2 (stability). NA-FIR's test log loss on the ``aware-ml demo`` problem
(digits, 50-tree forest) for ``max_iter`` from 20 to 5000.

Part 3 (scale). CPU time with one thread: NA-FIR fit against scikit-learn's
per-class ``IsotonicRegression`` at n=1e6, K=10; SCIR / NA-FIR / OvR fit time
and traced peak memory at n=1e5, K=100.

    uv run python tools/bench/isocal_bench.py             # ~30 min on 2 cores
    uv run python tools/bench/isocal_bench.py --quick     # 1 seed, no K=100, small scale
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits, make_classification  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.isotonic import IsotonicRegression  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from isocal import (  # noqa: E402
    DirichletCalibrator,
    FIRCalibrator,
    HistogramBinningCalibrator,
    NAFIRCalibrator,
    OvRIsotonicCalibrator,
    SCIRCalibrator,
    TemperatureScaling,
    log_loss,
    make_miscalibrated,
    top_label_ece,
)


class TunedDirichlet:
    """Dirichlet-ODIR with lambda = mu chosen on a 25% hold-out (then refitted on all)."""

    grid = (1.0, 1e2, 1e4)

    def fit(self, P: np.ndarray, y: np.ndarray) -> TunedDirichlet:
        P_a, P_b, y_a, y_b = train_test_split(P, y, test_size=0.25, random_state=0)
        best, best_loss = self.grid[0], np.inf
        for lam in self.grid:
            try:
                q = DirichletCalibrator(lam, lam, max_iter=300).fit(P_a, y_a).predict_proba(P_b)
            except ValueError:  # a class missing from the 75% part
                continue
            if (loss := log_loss(y_b, q)) < best_loss:
                best, best_loss = lam, loss
        self.model = DirichletCalibrator(best, best, max_iter=300).fit(P, y)
        return self

    def predict_proba(self, P: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(P)


METHODS = {
    "TS": TemperatureScaling,
    "Dir-ODIR": TunedDirichlet,
    "HistBin": HistogramBinningCalibrator,
    "OvR-IR": OvRIsotonicCalibrator,
    "OvR-IR+prior": None,  # built from OvR-IR's output below
    "FIR": FIRCalibrator,
    "NA-FIR": NAFIRCalibrator,
    "SCIR": SCIRCalibrator,
}
ANCHORS = ("TS", "Dir-ODIR", "OvR-IR", "OvR-IR+prior")
OURS = ("NA-FIR", "SCIR")


def base_models(seed: int) -> dict:
    return {
        "MLP": make_pipeline(
            StandardScaler(), MLPClassifier((64,), max_iter=200, random_state=seed)
        ),
        "RF": RandomForestClassifier(100, random_state=seed),
        "NB": GaussianNB(),
        "LR": make_pipeline(StandardScaler(), LogisticRegression(max_iter=300)),
    }


def splits(name: str, seed: int) -> tuple:
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        X_tr, X_rest, y_tr, y_rest = train_test_split(
            X, y, test_size=0.5, random_state=seed, stratify=y
        )
        X_cal, X_te, y_cal, y_te = train_test_split(
            X_rest, y_rest, test_size=0.5, random_state=seed, stratify=y_rest
        )
        return X_tr, y_tr, X_cal, y_cal, X_te, y_te
    K = int(name.removeprefix("synth-K"))
    X, y = make_classification(
        n_samples=40000,
        n_features=40,
        n_informative=30,
        n_classes=K,
        n_clusters_per_class=1,
        class_sep=1.0,
        flip_y=0.02,
        random_state=100 + seed,
    )
    return X[:20000], y[:20000], X[20000:30000], y[20000:30000], X[30000:], y[30000:]


def calibrate_all(P_cal, y_cal, P_te, y_te) -> dict:
    out = {"uncal": (log_loss(y_te, P_te), top_label_ece(y_te, P_te), 0.0)}
    n, K = P_cal.shape
    for name, cls in METHODS.items():
        if cls is None:
            continue
        t0 = time.process_time()
        try:
            Q = cls().fit(P_cal, y_cal).predict_proba(P_te)
        except ValueError:  # Dirichlet needs every class in the calibration labels
            out[name] = (np.nan, np.nan, np.nan)
            continue
        dt = time.process_time() - t0
        out[name] = (log_loss(y_te, Q), top_label_ece(y_te, Q), dt)
        if name == "OvR-IR":  # the same one-sample uniform prior as NA-FIR / SCIR
            lam = 1.0 / (n + 1.0)
            Qp = (1 - lam) * Q + lam / K
            out["OvR-IR+prior"] = (log_loss(y_te, Qp), top_label_ece(y_te, Qp), dt)
    return out


def quality(datasets: list[str], n_seeds: int) -> dict:
    cells: dict = {}
    for dname in datasets:
        for seed in range(n_seeds):
            X_tr, y_tr, X_cal, y_cal, X_te, y_te = splits(dname, seed)
            for mname, model in base_models(seed).items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model.fit(X_tr, y_tr)
                P_cal, P_te = model.predict_proba(X_cal), model.predict_proba(X_te)
                res = calibrate_all(P_cal, y_cal, P_te, y_te)
                cells.setdefault((dname, len(y_cal), mname), []).append(res)
                if dname == "synth-K100":  # the same models, calibrated on 500 samples
                    small = calibrate_all(P_cal[:500], y_cal[:500], P_te, y_te)
                    cells.setdefault((dname + "-n500", 500, mname), []).append(small)
                print(f"  {dname} seed {seed} {mname} done", flush=True)
    return cells


def print_quality(cells: dict) -> None:
    names = ["uncal", *METHODS]
    print("\n## Test log loss (mean +- std over seeds); ECE in the second table\n")
    print(f"| {'cell':<28} | " + " | ".join(f"{m:>13}" for m in names) + " |")
    print("|" + "---|" * (len(names) + 1))
    nll_ranks = {m: [] for m in names}
    ece_ranks = {m: [] for m in names}
    wins = {(o, a): [0, 0] for o in OURS for a in ANCHORS}
    for (dname, n_cal, mname), runs in cells.items():
        nll = np.array([[r[m][0] for m in names] for r in runs])
        ece = np.array([[r[m][1] for m in names] for r in runs])
        mean = nll.mean(0)
        cells_str = [
            "n/a" if np.isnan(mu) else f"{mu:.4f}+-{sd:.3f}"
            for mu, sd in zip(mean, nll.std(0), strict=True)
        ]
        label = f"{dname}/{mname} n={n_cal}"
        print(f"| {label:<28} | " + " | ".join(f"{c:>13}" for c in cells_str) + " |")
        for table, ranks in ((nll, nll_ranks), (ece, ece_ranks)):
            m_ = table.mean(0)
            valid = [i for i in range(len(names)) if not np.isnan(m_[i])]
            order = sorted(valid, key=lambda i: m_[i])
            for pos, i in enumerate(order):
                ranks[names[i]].append(pos + 1)
        for o in OURS:
            for a in ANCHORS:
                io, ia = names.index(o), names.index(a)
                ok = ~np.isnan(nll[:, ia])
                wins[(o, a)][0] += int(np.sum(nll[ok, io] <= nll[ok, ia]))
                wins[(o, a)][1] += int(np.sum(ok))
    print("\n## Top-label ECE (15 bins), mean over seeds\n")
    print(f"| {'cell':<28} | " + " | ".join(f"{m:>12}" for m in names) + " |")
    print("|" + "---|" * (len(names) + 1))
    for (dname, n_cal, mname), runs in cells.items():
        ece = np.array([[r[m][1] for m in names] for r in runs]).mean(0)
        label = f"{dname}/{mname} n={n_cal}"
        vals = ["n/a" if np.isnan(v) else f"{v:.4f}" for v in ece]
        print(f"| {label:<28} | " + " | ".join(f"{v:>12}" for v in vals) + " |")
    print("\n## Summary: mean rank over cells (1 = best; n/a cells skipped) and fit CPU time\n")
    print("| method | mean NLL rank | mean ECE rank | mean fit CPU s |")
    print("|---|---|---|---|")
    for m in names:
        t = [r[m][2] for runs in cells.values() for r in runs if not np.isnan(r[m][2])]
        print(
            f"| {m} | {np.mean(nll_ranks[m]):.2f} | {np.mean(ece_ranks[m]):.2f} | "
            f"{np.mean(t):.3f} |"
        )
    print("\n## Paired wins on test log loss (cell x seed): ours <= anchor\n")
    print("| method | " + " | ".join(f"vs {a}" for a in ANCHORS) + " |")
    print("|---|" + "---|" * len(ANCHORS))
    for o in OURS:
        print(
            f"| {o} | " + " | ".join(f"{wins[(o, a)][0]}/{wins[(o, a)][1]}" for a in ANCHORS) + " |"
        )
    print("\n## Cells where the mean test log loss is <= OvR-IR's\n")
    for o in OURS:
        ok, tot = 0, 0
        for runs in cells.values():
            a = np.mean([r[o][0] for r in runs])
            b = np.mean([r["OvR-IR"][0] for r in runs])
            ok, tot = ok + int(a <= b), tot + 1
        print(f"- {o}: {ok}/{tot} cells")


def stability() -> None:
    from sklearn.ensemble import RandomForestClassifier as RF

    X, y = load_digits(return_X_y=True)
    X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    X_cal, X_te, y_cal, y_te = train_test_split(
        X_rest, y_rest, test_size=0.5, random_state=0, stratify=y_rest
    )
    forest = RF(n_estimators=50, random_state=0).fit(X_tr, y_tr)
    P_cal, P_te = forest.predict_proba(X_cal), forest.predict_proba(X_te)
    print("\n## NA-FIR stability on the demo problem (digits, 50-tree forest): test log loss\n")
    print("| max_iter | prior_count=1 (default) | prior_count=0 (unregularized) |")
    print("|---|---|---|")
    vals = {0.0: [], 1.0: []}
    for it in (20, 50, 200, 1000, 5000):
        row = []
        for prior in (1.0, 0.0):
            cal = NAFIRCalibrator(prior_count=prior, max_iter=it, tol=1e-300).fit(P_cal, y_cal)
            loss = log_loss(y_te, cal.predict_proba(P_te))
            vals[prior].append(loss)
            row.append(f"{loss:.5f}")
        print(f"| {it} | {row[0]} | {row[1]} |")
    print(
        f"| range | {np.ptp(vals[1.0]):.5f} | {np.ptp(vals[0.0]):.5f} |"
        f"\n\n(target: range < 0.002 for the default)"
    )


def cpu(f) -> tuple[float, object]:
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def scale(big: int, big_k100: int) -> None:
    print(
        f"\n## Scale (CPU s, one thread): NA-FIR vs per-class IsotonicRegression, n={big}, K=10\n"
    )
    P, y, _ = make_miscalibrated(big, 10, temperature=2.0, random_state=0)

    def per_class() -> None:
        for k in range(10):
            IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(
                P[:, k], (y == k).astype(float)
            )

    t_sk, _ = cpu(per_class)
    t_na, cal = cpu(lambda: NAFIRCalibrator().fit(P, y))
    print("| method | fit CPU s | ratio to sklearn per-class |")
    print("|---|---|---|")
    print(f"| sklearn IsotonicRegression x 10 | {t_sk:.2f} | 1.00 |")
    print(f"| NA-FIR ({cal.n_iter_} iterations) | {t_na:.2f} | {t_na / t_sk:.2f} |")
    print("\n(target: NA-FIR <= 3x)")
    del P, y
    print(
        f"\n## Scale: n={big_k100}, K=100 (fit CPU s, traced peak MB, test NLL on n={big_k100})\n"
    )
    P, y, _ = make_miscalibrated(2 * big_k100, 100, temperature=2.0, random_state=1)
    P_cal, y_cal, P_te, y_te = P[:big_k100], y[:big_k100], P[big_k100:], y[big_k100:]
    print("| method | fit CPU s | peak MB | test NLL |")
    print("|---|---|---|---|")
    for name, cls in (
        ("SCIR", SCIRCalibrator),
        ("NA-FIR", NAFIRCalibrator),
        ("OvR-IR", OvRIsotonicCalibrator),
        ("TS", TemperatureScaling),
    ):
        tracemalloc.start()
        t, cal = cpu(lambda cls=cls: cls().fit(P_cal, y_cal))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        nll = log_loss(y_te, cal.predict_proba(P_te))
        print(f"| {name} | {t:.2f} | {peak / 2**20:.0f} | {nll:.4f} |")
    print("\n(target: SCIR within 4 GB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args()
    n_seeds = args.seeds or (1 if args.quick else 3)
    datasets = ["digits", "synth-K10"] if args.quick else ["digits", "synth-K10", "synth-K100"]
    t0 = time.perf_counter()
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cells = quality(datasets, n_seeds)
        print_quality(cells)
        stability()
        if args.quick:
            scale(100_000, 10_000)
        else:
            scale(1_000_000, 100_000)
    print(f"\ntotal wall time {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
