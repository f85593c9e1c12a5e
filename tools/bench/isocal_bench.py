"""Benchmark: NA-FIR / SCIR against scikit-learn's calibrators on real data, and at scale.

Part 1, ``real`` (the main table). Every scikit-learn bundled classification set with >= 3
classes (iris, wine, digits) and the UCR/UEA sets bundled in the aeon wheel (MiniRocket features,
needs ``--with aeon``), pooled and re-split 60/40 per seed (stratified). Four model families (MLP,
random forest, Gaussian naive Bayes, logistic regression). Calibration is cross-fitted exactly as
``CalibratedClassifierCV(cv=5, ensemble=True)`` does it: per fold one model fitted on four
folds, every calibrator fitted on the held-out fold's probabilities, test probabilities averaged
over the five (model, calibrator) pairs. The fold models are shared by all calibrators, so the
comparison is paired. scikit-learn's own ``sigmoid``, ``isotonic`` and ``temperature`` methods run
through ``CalibratedClassifierCV(FrozenEstimator(fold_model))``. ``OvR-IR+prior`` is one-vs-rest
isotonic with the one-sample uniform prior NA-FIR and SCIR use (the fair OvR for SCIR).
Reported: test log loss per cell, paired differences with 95% t-intervals over seeds, and wins.

Part 2, ``synthetic`` (``--synthetic``): the earlier digits / make_classification grid with a
single held-out calibration split (K = 10 and K = 100, 500-sample calibration at K = 100).

Part 3, ``stability``: NA-FIR's test log loss on the demo problem for ``max_iter`` 20..5000.

Part 4, ``scale``: CPU time with one thread, NA-FIR against scikit-learn's per-class
``IsotonicRegression`` at n=1e6, K=10; SCIR / NA-FIR / OvR / TS time and traced peak memory
at n=1e5, K=100.

    uv run --with aeon python tools/bench/isocal_bench.py               # real + stability + scale
    uv run --with aeon python tools/bench/isocal_bench.py --synthetic   # + the synthetic grid
    uv run python tools/bench/isocal_bench.py --quick                   # 2 seeds, sklearn sets
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from record import Run, fmt_ci, mean_ci  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.datasets import load_digits, load_iris, load_wine, make_classification  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.isotonic import IsotonicRegression  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import StratifiedKFold, train_test_split  # noqa: E402
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


def record_quality(run: Run, cells: dict, n_seeds: int) -> None:
    names = ["uncal", *METHODS]
    rows, ece_rows = [], []
    nll_ranks = {m: [] for m in names}
    ece_ranks = {m: [] for m in names}
    wins = {(o, a): [0, 0] for o in OURS for a in ANCHORS}
    for (dname, n_cal, mname), runs in cells.items():
        nll = np.array([[r[m][0] for m in names] for r in runs])
        ece = np.array([[r[m][1] for m in names] for r in runs])
        label = f"{dname}/{mname} n={n_cal}"
        rows.append([label] + [
            None if np.isnan(mu) else f"{mu:.4f} ± {sd:.3f}"
            for mu, sd in zip(nll.mean(0), nll.std(0), strict=True)
        ])  # fmt: skip
        ece_rows.append([label] + [None if np.isnan(v) else v for v in ece.mean(0)])
        for table, ranks in ((nll, nll_ranks), (ece, ece_ranks)):
            m_ = table.mean(0)
            valid = [i for i in range(len(names)) if not np.isnan(m_[i])]
            for pos, i in enumerate(sorted(valid, key=lambda i: m_[i])):
                ranks[names[i]].append(pos + 1)
        for o in OURS:
            for a in ANCHORS:
                io, ia = names.index(o), names.index(a)
                ok = ~np.isnan(nll[:, ia])
                wins[(o, a)][0] += int(np.sum(nll[ok, io] <= nll[ok, ia]))
                wins[(o, a)][1] += int(np.sum(ok))
    seeds = list(range(n_seeds))
    run.table("synthetic_nll", ["cell", *names], rows, seeds=seeds,
              title="Synthetic grid: test log loss (mean ± std over seeds)")  # fmt: skip
    run.table("synthetic_ece", ["cell", *names], ece_rows, fmt=".4f", seeds=seeds,
              title="Synthetic grid: top-label ECE (15 bins), mean over seeds")  # fmt: skip
    summary = []
    for m in names:
        t = [r[m][2] for runs in cells.values() for r in runs if not np.isnan(r[m][2])]
        summary.append([m, np.mean(nll_ranks[m]), np.mean(ece_ranks[m]), np.mean(t)])
    run.table("synthetic_ranks", ["method", "mean NLL rank", "mean ECE rank", "mean fit CPU s"],
              summary, fmt=[None, ".2f", ".2f", ".3f"], seeds=seeds,
              title="Synthetic grid: mean rank over cells (1 = best)")  # fmt: skip
    run.table(
        "synthetic_wins",
        ["method", *(f"vs {a}" for a in ANCHORS)],
        [[o] + [f"{wins[(o, a)][0]}/{wins[(o, a)][1]}" for a in ANCHORS] for o in OURS],
        seeds=seeds,
        title="Synthetic grid: paired wins on test log loss (cell x seed), ours <= anchor",
    )


def stability(run: Run) -> None:
    from sklearn.ensemble import RandomForestClassifier as RF

    X, y = load_digits(return_X_y=True)
    X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    X_cal, X_te, y_cal, y_te = train_test_split(
        X_rest, y_rest, test_size=0.5, random_state=0, stratify=y_rest
    )
    forest = RF(n_estimators=50, random_state=0).fit(X_tr, y_tr)
    P_cal, P_te = forest.predict_proba(X_cal), forest.predict_proba(X_te)
    vals = {0.0: [], 1.0: []}
    rows = []
    for it in (20, 50, 200, 1000, 5000):
        row = [it]
        for prior in (1.0, 0.0):
            cal = NAFIRCalibrator(prior_count=prior, max_iter=it, tol=1e-300).fit(P_cal, y_cal)
            loss = log_loss(y_te, cal.predict_proba(P_te))
            vals[prior].append(loss)
            row.append(loss)
        rows.append(row)
    rows.append(["range", np.ptp(vals[1.0]), np.ptp(vals[0.0])])
    run.table(
        "stability",
        ["max_iter", "prior_count=1 (default)", "prior_count=0 (unregularized)"],
        rows,
        fmt=[None, ".5f", ".5f"],
        notes="Target: range < 0.002 for the default.",
        title="NA-FIR stability on the demo problem (digits, 50-tree forest): test log loss",
    )


def cpu(f) -> tuple[float, object]:
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def scale(run: Run, big: int, big_k100: int) -> None:
    P, y, _ = make_miscalibrated(big, 10, temperature=2.0, random_state=0)

    def per_class() -> None:
        for k in range(10):
            IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(
                P[:, k], (y == k).astype(float)
            )

    t_sk, _ = cpu(per_class)
    t_na, cal = cpu(lambda: NAFIRCalibrator().fit(P, y))
    run.table(
        "scale_n1e6",
        ["method", "fit CPU s", "ratio to sklearn per-class"],
        [["sklearn IsotonicRegression x 10", t_sk, 1.0],
         [f"NA-FIR ({cal.n_iter_} iterations)", t_na, t_na / t_sk]],
        fmt=[None, ".2f", ".2f"],
        timing=True,
        notes=f"n = {big}, K = 10, one thread. Target: NA-FIR <= 3x.",
        title=f"Scale (CPU s, one thread): NA-FIR vs per-class IsotonicRegression, n={big}, K=10",
    )  # fmt: skip
    del P, y
    P, y, _ = make_miscalibrated(2 * big_k100, 100, temperature=2.0, random_state=1)
    P_cal, y_cal, P_te, y_te = P[:big_k100], y[:big_k100], P[big_k100:], y[big_k100:]
    rows = []
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
        rows.append([name, t, peak / 2**20, nll])
    run.table(
        "scale_k100",
        ["method", "fit CPU s", "peak MB", "test NLL"],
        rows,
        fmt=[None, ".2f", ".0f", ".4f"],
        timing=True,
        notes=f"n = {big_k100} calibration and test samples, K = 100. Target: SCIR within 4 GB.",
        title=f"Scale: n={big_k100}, K=100 (fit CPU s, traced peak MB, test NLL)",
    )


# ---------------------------------------------------------------------------- real data

SKLEARN_SETS = {"iris": load_iris, "wine": load_wine, "digits": load_digits}
UCR_SETS = ("ArrowHead", "ACSF1", "OSULeaf", "PickupGestureWiimoteZ", "BasicMotions",
            "JapaneseVowels", "GunPoint", "ItalyPowerDemand")  # fmt: skip
REAL_METHODS = ("uncal", "sk-sigmoid", "sk-isotonic", "sk-temperature", "TS", "OvR-IR",
                "OvR-IR+prior", "NA-FIR", "SCIR")  # fmt: skip
PAIRS = (("NA-FIR", "sk-temperature"), ("NA-FIR", "sk-isotonic"), ("NA-FIR", "sk-sigmoid"),
         ("SCIR", "OvR-IR+prior"), ("SCIR", "sk-temperature"), ("NA-FIR", "uncal"))  # fmt: skip


def ucr_features(name: str, seed: int):
    """A bundled UCR/UEA set, train and test pooled, as MiniRocket features (aeon)."""
    import aeon.datasets
    from aeon.datasets import load_classification
    from aeon.transformations.collection.convolution_based import MiniRocket

    path = os.path.join(os.path.dirname(aeon.datasets.__file__), "data")
    parts = [load_classification(name, split=s, extract_path=path) for s in ("train", "test")]
    series = [np.asarray(x, dtype=float) for X, _ in parts for x in X]
    y = np.concatenate([np.asarray(y) for _, y in parts])
    length = max(x.shape[-1] for x in series)  # zero-pad unequal lengths at the end
    X = np.stack([np.pad(x, ((0, 0), (0, length - x.shape[-1]))) for x in series])
    y = np.unique(y, return_inverse=True)[1]
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.4, random_state=seed, stratify=y)
    rocket = MiniRocket(random_state=seed).fit(X_tr)
    return rocket.transform(X_tr), y_tr, rocket.transform(X_te), y_te


def real_split(name: str, seed: int):
    if name in SKLEARN_SETS:
        X, y = SKLEARN_SETS[name](return_X_y=True)
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.4, random_state=seed, stratify=y
        )
        return X_tr, y_tr, X_te, y_te
    return ucr_features(name, seed)


def full_proba(est, X, K: int) -> np.ndarray:
    P = np.zeros((X.shape[0], K))
    P[:, np.asarray(est.classes_, dtype=int)] = est.predict_proba(X)
    return P / P.sum(1, keepdims=True)


def crossfit(model, X_tr, y_tr, X_te, y_te, seed: int) -> dict:
    """Per method: test log loss and top-label ECE of the 5-fold cross-fitted ensemble."""
    K = int(y_tr.max()) + 1
    test = {m: np.zeros((len(y_te), K)) for m in REAL_METHODS}
    folds = StratifiedKFold(5, shuffle=True, random_state=seed).split(X_tr, y_tr)
    for train, held in folds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = clone(model).fit(X_tr[train], y_tr[train])
        P_held, P_te = full_proba(est, X_tr[held], K), full_proba(est, X_te, K)
        y_held = y_tr[held]
        test["uncal"] += P_te
        frozen = FrozenEstimator(est)
        for m in ("sigmoid", "isotonic", "temperature"):
            # one split, calibrate on all of the held-out fold: the prefit semantics
            whole = [(np.arange(len(held)), np.arange(len(held)))]
            cal = CalibratedClassifierCV(frozen, method=m, cv=whole).fit(X_tr[held], y_held)
            test[f"sk-{m}"] += full_proba(cal, X_te, K)
        test["TS"] += TemperatureScaling().fit(P_held, y_held).predict_proba(P_te)
        Q = OvRIsotonicCalibrator().fit(P_held, y_held).predict_proba(P_te)
        test["OvR-IR"] += Q
        lam = 1.0 / (len(held) + 1.0)  # the one-sample uniform prior NA-FIR and SCIR use
        test["OvR-IR+prior"] += (1 - lam) * Q + lam / K
        test["NA-FIR"] += NAFIRCalibrator().fit(P_held, y_held).predict_proba(P_te)
        test["SCIR"] += SCIRCalibrator().fit(P_held, y_held).predict_proba(P_te)
    return {m: (log_loss(y_te, Q / 5), top_label_ece(y_te, Q / 5)) for m, Q in test.items()}


def real(run: Run, datasets: list[str], n_seeds: int) -> None:
    cells: dict = {}
    for dname in datasets:
        for seed in range(n_seeds):
            X_tr, y_tr, X_te, y_te = real_split(dname, seed)
            for mname, model in base_models(seed).items():
                res = run.cached(
                    f"real/{dname}/{seed}/{mname}",
                    functools.partial(crossfit, model, X_tr, y_tr, X_te, y_te, seed),
                )
                cells.setdefault((dname, int(y_tr.max()) + 1, mname), []).append(res)
                print(f"  {dname} seed {seed} {mname}: NA-FIR {res['NA-FIR'][0]:.4f} "
                      f"sk-temperature {res['sk-temperature'][0]:.4f}", flush=True)  # fmt: skip
            run.sample_load()
    seeds = list(range(n_seeds))
    per_seed = {
        f"{d}/{m}": {meth: [r[meth][0] for r in runs] for meth in REAL_METHODS}
        for (d, _, m), runs in cells.items()
    }
    rows, ranks = [], {m: [] for m in REAL_METHODS}
    for (dname, K, mname), runs in cells.items():
        mean = np.array([[r[m][0] for m in REAL_METHODS] for r in runs]).mean(0)
        rows.append([f"{dname} (K={K}) / {mname}"] + [
            f"**{v:.4f}**" if v == mean.min() else f"{v:.4f}" for v in mean
        ])  # fmt: skip
        for pos, i in enumerate(np.argsort(mean, kind="stable")):
            ranks[REAL_METHODS[i]].append(pos + 1)
    rows.append(["**mean rank**"] + [f"{np.mean(ranks[m]):.2f}" for m in REAL_METHODS])
    best = min(REAL_METHODS, key=lambda m: np.mean(ranks[m]))
    run.table(
        "main",
        ["dataset / model", *REAL_METHODS],
        rows,
        seeds=seeds,
        per_seed=per_seed,
        title="Real data: test log loss (mean over seeds, best in bold), 5-fold cross-fitting",
        notes=(
            f"{len(cells)} cells (dataset x model) x {n_seeds} seeds. `sk-*`: scikit-learn's "
            "CalibratedClassifierCV methods on the same fold models; mean rank over cells."
        ),
        headline=(
            f"real data, {len(cells)} cells x {n_seeds} seeds: mean log-loss rank NA-FIR "
            f"{np.mean(ranks['NA-FIR']):.2f}, SCIR {np.mean(ranks['SCIR']):.2f}, "
            f"scikit-learn temperature {np.mean(ranks['sk-temperature']):.2f} "
            f"(best: {best} {np.mean(ranks[best]):.2f})"
        ),
    )
    # paired differences: per cell, a 95% t-interval over seeds; then how often each side wins
    prow = []
    for a, b in PAIRS:
        better = worse = 0
        diffs = []
        for runs in cells.values():
            d = [r[a][0] - r[b][0] for r in runs]
            diffs.append(np.mean(d))
            _, lo, hi = mean_ci(d)
            better, worse = better + int(hi < 0), worse + int(lo > 0)
        wins = sum(r[a][0] <= r[b][0] for runs in cells.values() for r in runs)
        total = sum(len(runs) for runs in cells.values())
        prow.append([f"{a} − {b}", fmt_ci(diffs, 4, sign=True),
                     f"{better} / {worse} / {len(cells) - better - worse}", f"{wins}/{total}"])  # fmt: skip
    run.table(
        "paired",
        [
            "comparison (log loss)",
            "mean Δ over cells [95% CI]",
            "cells better / worse / n.s.",
            "paired wins (cell x seed)",
        ],
        prow,
        seeds=seeds,
        title="Real data: paired differences (negative = the first is better)",
        notes=(
            "Per cell, a 95% t-interval over seeds decides better / worse / not significant; "
            "the first column's interval is over the cells' mean differences."
        ),
    )
    compared = ("NA-FIR", "SCIR", "sk-temperature", "sk-isotonic", "OvR-IR+prior", "uncal")
    family_rows = []
    for mname in base_models(0):
        vals = [[r[meth][0] for (_, _, m), runs in cells.items() if m == mname for r in runs]
                for meth in compared]  # fmt: skip
        family_rows.append([mname, *map(np.mean, vals)])
    run.table(
        "by_model",
        ["model", *compared],
        family_rows,
        fmt=[None] + [".4f"] * len(compared),
        seeds=seeds,
        title="Real data: mean test log loss per model family (over datasets and seeds)",
    )
    ece_rows = []
    for (dname, K, mname), runs in cells.items():
        ece = np.array([[r[m][1] for m in REAL_METHODS] for r in runs]).mean(0)
        ece_rows.append([f"{dname} (K={K}) / {mname}", *ece])
    run.table("main_ece", ["dataset / model", *REAL_METHODS], ece_rows,
              fmt=[None] + [".4f"] * len(REAL_METHODS), seeds=seeds,
              title="Real data: top-label ECE (15 bins), mean over seeds")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, scikit-learn sets only")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument(
        "--parts",
        default="real,stability,scale",
        help="comma-separated subset of real, synthetic, stability, scale",
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if parts - {"real", "synthetic", "stability", "scale"}:
        parser.error(
            f"--parts: unknown {sorted(parts - {'real', 'synthetic', 'stability', 'scale'})}"
        )
    n_seeds = args.seeds or (2 if args.quick else 5)
    try:
        import aeon  # noqa: F401

        ucr = [] if args.quick else list(UCR_SETS)
    except ImportError:
        print("aeon is not installed: the UCR/UEA sets are skipped (run with `uv run --with aeon`)")
        ucr = []
    run = Run("isocal", uv_with=["aeon"] if ucr else [])
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        if "real" in parts:
            real(run, [*SKLEARN_SETS, *ucr], n_seeds)
        if "synthetic" in parts:
            record_quality(run, quality(["digits", "synth-K10", "synth-K100"], 3), 3)
        if "stability" in parts:
            stability(run)
        if "scale" in parts:
            scale(run, 100_000, 10_000) if args.quick else scale(run, 1_000_000, 100_000)


if __name__ == "__main__":
    main()
