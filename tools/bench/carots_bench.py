"""Benchmark: CAROTS against cheap detectors on the paper's synthetic protocol.

Part 1 -- collapse. Default CAROTS on ``make_var(N=10)`` and ``make_lorenz96(N=10)`` over 3
seeds: final SOC loss relative to ``log(1 + 2B)`` (its value for identical embeddings), with the
official standardised biases (0.1..0.5) beside the package default (0.5..2.5 residual stds);
and the AUROC of the contrastive score alone on collective-global anomalies.

Part 2 -- the protocol: N = 20, 4,000 training and 4,000 test steps, the four TODS anomaly types
(point global, point contextual, collective global, collective trend), window 10, stride-1
window labels (a window is anomalous if any of its steps is), window AUROC; VAR and Lorenz-96;
``--seeds`` seeds. Methods: CAROTS (combined score, and its two parts), the plain one-class
contrastive encoder (no causality), the window-max VAR residual (least-squares VAR(3)), PCA
reconstruction, and PyOD's IForest, PCA, ECOD and AutoEncoder on flattened windows (PyOD is a
benchmark-only dependency), all on the same windows.

Part 3 -- the thesis test: VAR test series with normal causal interventions (a 3-innovation-std
push on the variable with most children, inside the simulator: labelled normal) and causal
breaks (an effect's segment replaced by an independent run: labelled anomalous). For every
method, the false-positive rate on intervention windows at the threshold that catches 80% of
the causal-break windows; on the Part 2 generator and on ``make_var(design="dag")``, whose
effects are mostly their parents (the design in which a break is visible at all).

Part 4 -- semi-real, offline: Daphnet's real accelerometer channels (``S06R02E0``, 9 channels,
64 Hz, shipped in the aeon wheel; its anomaly column is all zero, so the recording is used as
normal data): the first 4,000 rows train, the remaining 3,040 get the four anomaly kinds
injected in each channel's raw units scaled by its std; every detector, window AUROC, AUPRC
(average precision) and VUS-PR (aeon's ``range_pr_vus_score``, Paparrizos et al. 2022, buffer
up to 2 windows), ``--seeds`` seeds.

Part 5 -- your copy of the paper's data (``--mtsad psm --mtsad-root /path/to/PSM``, or ``smd``
with ``--machine machine-1-1``; nothing is downloaded): the same detectors and metrics on the real
labels, one table (``causal_ts.load_mtsad`` reads the layouts).

Part 6 -- what a fit costs (issue #49 item 2): N = 20, T = 4,000 + 4,000 VAR, the four kinds,
``--seeds`` seeds; fit process-CPU time on one thread of the VAR residual, CAROTS at the paper's
fixed 10 epochs, CAROTS with early stopping (``patience=2``), and the same two with the MLP
encoder, interleaved in a rotating order after a warm-up fit of each; their mean AUROC beside
it. Plus the Granger stage alone: statsmodels' ``test_causality`` loop (the package's discoverer
before this change) against the vectorised Wald statistic it now computes (same p-values).

Anomaly recipe: the package's std-scaled TODS recipes (``inject_anomalies``: magnitudes in units
of each variable's std), not the raw-unit ones of the TODS generator.

    uv run python tools/bench/carots_bench.py            # ~40 min on 2 cores
    uv run python tools/bench/carots_bench.py --quick    # 1 seed, N=10, smaller series (temp folder)
    uv run python tools/bench/carots_bench.py --parts 2  # the AUROC and halves tables only
    uv run python tools/bench/carots_bench.py --parts 2 --recipe tods  # part 2, TODS' raw units
    uv run python tools/bench/carots_bench.py --parts 4  # Daphnet, semi-real (~8 min)
    uv run python tools/bench/carots_bench.py --parts 6  # fit cost (~10 min)
    uv run python tools/bench/carots_bench.py --parts 5 --mtsad psm --mtsad-root ~/data/PSM
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from record import Run, fmt_ci, fmt_sd

from causal_ts import (
    CAROTS,
    PCAReconstruction,
    PlainOneClassContrastive,
    VARResidual,
    make_lorenz96,
    make_var,
)
from causal_ts.data import TODS_FACTORS, inject_anomalies, sliding_windows
from causal_ts.datasets import DATASETS, load_mtsad
from causal_ts.discovery import granger_pvalues_wald
from causal_ts.metrics import average_precision, evaluate, window_labels

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


# CAROTS's two score halves, scored from the combined fit (the detector's score mode)
HALVES = (("CAROTS CL only", "cl"), ("CAROTS forecaster only", "cd"))


def detectors(seed: int) -> dict:
    return {
        "CAROTS (combined)": lambda: CAROTS(window=W, random_state=seed),
        "CAROTS (validated weights)": lambda: CAROTS(
            window=W, combine="validated", random_state=seed
        ),
        "plain contrastive": lambda: PlainOneClassContrastive(window=W, random_state=seed),
        "VAR residual (window max)": lambda: VARResidual(window=W),
        "PCA reconstruction": lambda: PCAReconstruction(window=W),
        "PyOD IForest": lambda: PyODWindows("IForest", seed),
        "PyOD PCA": lambda: PyODWindows("PCA", seed),
        "PyOD ECOD": lambda: PyODWindows("ECOD", seed),
        "PyOD AutoEncoder": lambda: PyODWindows("AutoEncoder", seed),
    }


def part1(rec: Run, seeds: int) -> None:
    rows, per_seed = [], {}
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
                ratios.append(float(det.collapse_ratio_))
                yw = window_labels(d.y_test, W)
                aucs.append(float(evaluate(det.decision_function(d.X_test), yw)["AUROC"]))
            per_seed[f"{gen.__name__}/{label}"] = {"loss_ratio": ratios, "cl_auroc": aucs}
            rows.append([gen.__name__, label, ", ".join(f"{r:.2f}" for r in ratios),
                         f"{np.mean(ratios):.2f}", fmt_sd(aucs)])  # fmt: skip
    rec.table(
        "collapse",
        ["system", "biases", "loss ratio per seed", "mean", "CL-only AUROC, collective global"],
        rows, seeds=list(range(seeds)), per_seed=per_seed,
        title="Part 1: collapse (N=10): final SOC loss / log(1 + 2B), and CL-only AUROC",
        notes="Targets: loss ratio <= 0.8 at defaults (1 = identical embeddings); CL-only AUROC "
              ">= 0.95. AUROC mean ± std over seeds.",
    )  # fmt: skip


def part2(rec: Run, seeds: int, n_vars: int, T: int, recipe: str = "std") -> None:
    heads = []
    sfx = "" if recipe == "std" else "_" + recipe
    kw = {} if recipe == "std" else {"recipe": recipe}
    label = ("the package's std-scaled TODS recipes (not the raw-unit ones)" if recipe == "std"
             else "TODS' raw-unit recipes (recipe='tods', factors of TODS' own example: "
                  + ", ".join(f"{k} {v:g}" for k, v in TODS_FACTORS.items()) + ")")  # fmt: skip
    for gen in (make_var, make_lorenz96):
        auc: dict[str, dict[str, list[float]]] = {}  # method -> kind -> per-seed AUROC
        fit_s: dict[str, list[float]] = {}
        weights: dict[str, list[float]] = {}  # kind -> per-seed w_CL of the validated rule
        for seed in range(seeds):
            for kind in KINDS:
                extra = {**kw, "factor": TODS_FACTORS[kind]} if kw else {}
                d = gen(n_vars=n_vars, n_train=T, n_test=T, kind=kind, seed=seed, **extra)
                yw = window_labels(d.y_test, W)
                for name, make in detectors(seed).items():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t0 = time.process_time()
                        det = make().fit(d.X_train)
                        fit_s.setdefault(name, []).append(time.process_time() - t0)
                        s = det.decision_function(d.X_test)
                    auc.setdefault(name, {}).setdefault(kind, []).append(evaluate(s, yw)["AUROC"])
                    if name == "CAROTS (validated weights)":
                        weights.setdefault(kind, []).append(det.combine_weights_[0])
                    if name == "CAROTS (combined)":
                        for key, mode in HALVES:
                            det._score_mode = mode
                            a = evaluate(det.decision_function(d.X_test), yw)["AUROC"]
                            auc.setdefault(key, {}).setdefault(kind, []).append(a)
                print(f"  {gen.__name__} seed {seed} {kind} done", flush=True)
                rec.sample_load()
        means = {m: np.mean([v[k] for k in KINDS], axis=0) for m, v in auc.items()}  # per seed
        rows = [[name, *(float(np.mean(auc[name][k])) for k in KINDS), fmt_sd(means[name]),
                 float(np.mean(fit_s[name])) if name in fit_s else None]
                for name in auc]  # fmt: skip
        rec.table(
            f"auroc_{gen.__name__.removeprefix('make_')}{sfx}",
            ["method", *KINDS, "mean AUROC (± std over seeds)", "fit CPU s"],
            rows, fmt=[None, ".3f", ".3f", ".3f", ".3f", None, ".2f"], seeds=list(range(seeds)),
            per_seed={"auroc": auc, "fit_cpu_s": fit_s, "validated_w_cl": weights},
            title=f"Part 2: window AUROC, {gen.__name__} (N={n_vars}, T={T}+{T}), recipe {recipe!r}",
            notes=[f"N = {n_vars}, {T} training + {T} test steps, window {W}, stride-1 window "
                   f"labels; {label}. "
                   "CL only / forecaster only: CAROTS's two score halves of the same fit. "
                   "Validated weights: `combine='validated'` (this package's option): halves "
                   "standardised on the held-out tail, weight of z_CL chosen on held-out "
                   "windows vs CDA copies; mean w_CL per kind "
                   + ", ".join(f"{k} {np.mean(v):.2f}" for k, v in weights.items()) + ".",
                   "fit CPU s: process CPU time of one fit, one torch thread, mean over "
                   "seeds and anomaly kinds."],
            timing=True,
        )  # fmt: skip
        comb = means["CAROTS (combined)"]
        means["better half (per seed)"] = np.maximum(
            means["CAROTS forecaster only"], means["CAROTS CL only"]
        )
        heads.append((gen.__name__, comb, means))
    rows, per_seed = [], {}
    for name, _, means in heads:
        for combined in ("CAROTS (combined)", "CAROTS (validated weights)"):
            for other in ("CAROTS forecaster only", "CAROTS CL only", "better half (per seed)",
                          "VAR residual (window max)", "PCA reconstruction"):  # fmt: skip
                if combined != "CAROTS (combined)" and other == "PCA reconstruction":
                    continue
                diff = means[combined] - means[other]
                per_seed[f"{name}/{combined}/{other}"] = diff.tolist()
                rows.append([name, combined, other, fmt_ci(diff, sign=True),
                             f"{int(np.sum(diff > 0))}/{len(diff)}"])  # fmt: skip
    var = next(h for h in heads if h[0] == "make_var")
    rec.table(
        "halves" + sfx,
        ["system", "score", "minus", "mean AUROC difference [95% CI]", "score higher on"],
        rows, seeds=list(range(seeds)), per_seed=per_seed,
        title=f"Does each half earn its place? Paired differences of per-seed mean AUROC (recipe {recipe!r})",
        notes="Target (issue #49 item 1): combined >= forecaster-only + 0.02 on at least one "
              "system, and never below the better half by more than 0.005.",
        headline=f"VAR, N={n_vars}: CAROTS {var[1].mean():.3f} vs its forecaster half "
                 f"{var[2]['CAROTS forecaster only'].mean():.3f} vs VAR residual "
                 f"{var[2]['VAR residual (window max)'].mean():.3f} mean window AUROC",
    )  # fmt: skip


def part3(rec: Run, seeds: int, n_vars: int, T: int, design: str) -> None:
    res: dict[str, list] = {}
    for seed in range(seeds):
        d = make_var(
            n_vars=n_vars, n_train=T, n_test=T, kind="causal_break", n_breaks=8,
            n_interventions=8, design=design, seed=seed,
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
            auc = float(evaluate(s, yw)["AUROC"])
            res.setdefault(name, []).append((fpr_int, fpr_normal, auc))
        rec.sample_load()
    rows = [[name, fmt_sd(np.array(r)[:, 0]), fmt_sd(np.array(r)[:, 1]), fmt_sd(np.array(r)[:, 2])]
            for name, r in res.items()]  # fmt: skip
    if design == "tank":
        what = (
            f"VAR (Tank-style coefficients, the Part 2 generator), N={n_vars}: its "
            "couplings explain little of each variable's variance (x std 0.11 vs "
            "innovation 0.10), so an effect cut loose from its parents looks normal"
        )
    else:
        what = (
            f"VAR(1) over a random DAG (`make_var(design='dag')`), N={n_vars}, 2 parents "
            "per effect carrying 9x the innovation variance: a break raises the effect's "
            "one-step residual variance about 19x"
        )
    c, v = np.array(res["CAROTS (combined)"]), np.array(res["VAR residual (window max)"])
    rec.table(
        "interventions" if design == "tank" else f"interventions_{design}",
        ["method", "FPR on intervention windows", "FPR on other normal windows", "break AUROC"],
        rows, seeds=list(range(seeds)), per_seed=res,
        title=f"Part 3: false alarms on normal interventions at 80% recall of causal breaks "
              f"({design} design)",
        notes=[f"{what}; 8 causal breaks and 8 normal interventions (3 innovation stds on the "
               "variable with most children, inside the simulator) per test series; mean ± std "
               "over seeds.",
               "The paper's claim: CAROTS raises fewer alarms on normal interventions than a "
               "detector without causal augmentations. A design where no method separates "
               "breaks (break AUROC near 0.5) cannot test it (target of issue #49 item 4: VAR "
               "residual break AUROC >= 0.8)."],
        headline=f"{design} design: break AUROC VAR residual {v[:, 2].mean():.3f}, CAROTS "
                 f"{c[:, 2].mean():.3f}; FPR on interventions at 80% break recall CAROTS "
                 f"{c[:, 0].mean():.3f} vs VAR residual {v[:, 0].mean():.3f}",
    )  # fmt: skip


def daphnet() -> np.ndarray:
    """Daphnet S06R02E0's 9 accelerometer channels (7,040 x 9, raw units) from the aeon wheel."""
    import aeon

    path = Path(aeon.__file__).parent / "datasets/data/Daphnet_S06R02E0/S06R02E0.csv"
    data = np.genfromtxt(path, delimiter=",", skip_header=1, usecols=range(1, 11))
    if np.isnan(data).any() or data[:, -1].any():
        raise ValueError(f"{path}: unexpected content (missing cells or labelled anomalies)")
    return data[:, :-1]


def score_all(seed: int, X_train: np.ndarray, tests: dict, fit_s: dict, out: dict) -> None:
    """Fit every detector once on ``X_train``; AUROC / AUPRC / VUS-PR on each labelled test."""
    from aeon.benchmarking.metrics.anomaly_detection import range_pr_vus_score

    labels = {key: window_labels(y, W) for key, (_, y) in tests.items()}
    for name, make in detectors(seed).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            det = make().fit(X_train)
            fit_s.setdefault(name, []).append(time.process_time() - t0)
            halves = [(name, None)] + (list(HALVES) if name == "CAROTS (combined)" else [])
            for label, mode in halves:
                if mode is not None:
                    det._score_mode = mode
                for key, (X_test, _) in tests.items():
                    s, yw = det.decision_function(X_test), labels[key]
                    r = out.setdefault(label, {}).setdefault(key, {})
                    r.setdefault("AUROC", []).append(float(evaluate(s, yw)["AUROC"]))
                    r.setdefault("AUPRC", []).append(float(average_precision(s, yw)))
                    r.setdefault("VUS-PR", []).append(
                        float(range_pr_vus_score(yw, s, max_buffer_size=2 * W))
                    )


def metric_rows(out: dict, fit_s: dict, keys: list[str]) -> tuple[list, dict]:
    rows, means = [], {}
    for name, r in out.items():
        m = {k: np.mean([r[key][k] for key in keys], axis=0) for k in ("AUROC", "AUPRC", "VUS-PR")}
        means[name] = m
        rows.append([name, *(float(np.mean(r[key]["AUROC"])) for key in keys),
                     fmt_sd(m["AUROC"]), float(m["AUPRC"].mean()), float(m["VUS-PR"].mean()),
                     float(np.mean(fit_s[name])) if name in fit_s else None])  # fmt: skip
    return rows, means


def part4(rec: Run, seeds: int) -> None:
    X = daphnet()
    X_train, X_rest = X[:4000], X[4000:]
    out: dict = {}
    fit_s: dict = {}
    for seed in range(seeds):
        tests = {kind: inject_anomalies(X_rest, kind, seed=seed)[:2] for kind in KINDS}
        score_all(seed, X_train, tests, fit_s, out)
        print(f"  daphnet seed {seed} done", flush=True)
        rec.sample_load()
    rows, means = metric_rows(out, fit_s, list(KINDS))
    comb, fc = means["CAROTS (combined)"]["AUROC"], means["CAROTS forecaster only"]["AUROC"]
    var = means["VAR residual (window max)"]["AUROC"]
    rec.table(
        "daphnet",
        ["method", *(f"{k} AUROC" for k in KINDS), "mean AUROC (± std over seeds)",
         "mean AUPRC", "mean VUS-PR", "fit CPU s"],
        rows, fmt=[None, ".3f", ".3f", ".3f", ".3f", None, ".3f", ".3f", ".2f"],
        seeds=list(range(seeds)), per_seed={"metrics": out, "fit_cpu_s": fit_s},
        title=f"Part 4: Daphnet S06R02E0 (real accelerometer channels, N=9), injected anomalies, {seeds} seeds",
        notes=[f"Training: rows 0-3,999 (normal); test: rows 4,000-7,039 with one anomaly kind "
               f"injected per column (inject_anomalies defaults: 2 channels, ratio 0.01, "
               f"factor 2, radius 5; magnitudes in each channel's std of the raw accelerometer "
               f"units). Window {W}, stride-1 window labels. AUPRC: average precision; VUS-PR: "
               f"aeon's range_pr_vus_score with buffers 0..{2 * W} windows. Each detector fits "
               "once per seed; the four kinds score the same fit.",
               f"Paired over seeds: CAROTS - its forecaster half {fmt_ci(comb - fc, sign=True)}; "
               f"CAROTS - VAR residual {fmt_ci(comb - var, sign=True)} mean AUROC."],
        timing=True,
        headline=f"Daphnet (real channels, injected anomalies): CAROTS {comb.mean():.3f} vs VAR "
                 f"residual {var.mean():.3f} mean window AUROC",
    )  # fmt: skip


def part5(rec: Run, name: str, root: str, machine: str | None, seeds: int) -> None:
    d = load_mtsad(name, root, machine)
    out: dict = {}
    fit_s: dict = {}
    for seed in range(seeds):
        score_all(seed, d.X_train, {"test": (d.X_test, d.y_test)}, fit_s, out)
    rows = [[r[0], *r[2:]] for r in metric_rows(out, fit_s, ["test"])[0]]
    label = d.name + (f"/{machine}" if machine else "")
    rec.table(
        f"real_{name}",
        ["method", "AUROC (± std over seeds)", "AUPRC", "VUS-PR", "fit CPU s"],
        rows, fmt=[None, None, ".3f", ".3f", ".2f"], seeds=list(range(seeds)),
        per_seed={"metrics": out, "fit_cpu_s": fit_s},
        title=f"Part 5: {label} ({d.X_train.shape[0]} training / {d.X_test.shape[0]} test steps, "
              f"N={d.X_train.shape[1]}), real labels",
        notes=f"Read by causal_ts.load_mtsad from {root}; window {W}, stride-1 window labels.",
        timing=True,
    )  # fmt: skip


COST_METHODS = {
    "VAR residual (window max)": lambda seed: VARResidual(window=W),
    "CAROTS, paper schedule (LSTM, 10 epochs)": lambda seed: CAROTS(window=W, random_state=seed),
    "CAROTS, patience=2 (LSTM)": lambda seed: CAROTS(window=W, patience=2, random_state=seed),
    "CAROTS, MLP encoder, 10 epochs": lambda seed: CAROTS(
        window=W, encoder="mlp", random_state=seed
    ),
    "CAROTS, MLP encoder, patience=2": lambda seed: CAROTS(
        window=W, encoder="mlp", patience=2, random_state=seed
    ),
}


def statsmodels_granger(X: np.ndarray, lag: int) -> np.ndarray:
    """The discoverer's Granger stage as it was: one statsmodels test per ordered pair."""
    from statsmodels.tsa.api import VAR

    res = VAR(X).fit(maxlags=lag, trend="c")
    N = X.shape[1]
    p = np.ones((N, N))
    for c in range(N):
        for e in range(N):
            if c != e:
                p[c, e] = res.test_causality(caused=e, causing=[c], kind="f").pvalue
    return p


def paper_fit_gflop(n_vars: int, T: int, epochs: int = 10, B: int = 64, H: int = 64) -> float:
    """Multiply-add FLOPs of CAROTS's training at the paper's schedule (LSTM, 4B windows/step).

    Forward per window: the LSTM's ``W * 8H(N + H)`` plus the projector's ``2(2H^2 + 2H D)``
    (D = H); per step the SOC loss's ``(4B)^2 D`` similarities twice; a training step costs
    3 forwards (forward + backward), a validation step 1.
    """
    fwd = W * 8 * H * (n_vars + H) + 2 * (2 * H * H + 2 * H * H)
    step = 4 * B * fwd + 2 * (4 * B) ** 2 * H
    n_val = round(0.2 * T)
    train_steps, val_steps = (T - n_val - W + 1) // B, (n_val - W + 1) // B
    return epochs * (3 * train_steps + val_steps) * step / 1e9


def matmul_gflops() -> float:
    """This process's single-thread fp32 matmul rate (1024^2 GEMM), the bound of these nets."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    for _ in range(3):
        a @ b
    t0 = time.process_time()
    for _ in range(20):
        a @ b
    return 20 * 2 * 1024**3 / (time.process_time() - t0) / 1e9


def part6(rec: Run, seeds: int, n_vars: int, T: int) -> None:
    names = list(COST_METHODS)
    fit_s = {n: [] for n in names}  # per (seed, kind)
    auc = {n: [] for n in names}
    epochs = {n: [] for n in names}
    warm = make_var(n_vars=n_vars, n_train=T // 4, n_test=T // 4, seed=99)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in names:  # warm-up of every path
            COST_METHODS[n](0).fit(warm.X_train)
        step = 0
        for seed in range(seeds):
            for kind in KINDS:
                d = make_var(n_vars=n_vars, n_train=T, n_test=T, kind=kind, seed=seed)
                yw = window_labels(d.y_test, W)
                for n in names[step % len(names) :] + names[: step % len(names)]:
                    t0 = time.process_time()
                    det = COST_METHODS[n](seed).fit(d.X_train)
                    fit_s[n].append(time.process_time() - t0)
                    auc[n].append(float(evaluate(det.decision_function(d.X_test), yw)["AUROC"]))
                    epochs[n].append(len(getattr(det, "history_", [])))
                step += 1
            print(f"  cost seed {seed} done", flush=True)
            rec.sample_load()
    # Granger stage alone, same series, interleaved
    gr = {"statsmodels test_causality loop": [], "vectorised Wald (granger_pvalues_wald)": []}
    max_diff = 0.0
    for seed in range(seeds):
        X = make_var(n_vars=n_vars, n_train=T, n_test=T, seed=seed).X_train
        X = (X - X.mean(0)) / X.std(0)
        Xt = X[: round(0.8 * T)]
        t0 = time.process_time()
        p_sm = statsmodels_granger(Xt, 3)
        gr["statsmodels test_causality loop"].append(time.process_time() - t0)
        t0 = time.process_time()
        p_w = granger_pvalues_wald(Xt, 3)
        gr["vectorised Wald (granger_pvalues_wald)"].append(time.process_time() - t0)
        max_diff = max(max_diff, float(np.abs(p_sm - p_w).max()))
    var_key = names[0]
    per_seed_mean = lambda v: np.asarray(v).reshape(seeds, len(KINDS)).mean(1)  # noqa: E731
    ratio = {n: np.asarray(fit_s[n]) / np.asarray(fit_s[var_key]) for n in names}
    paper = per_seed_mean(auc[names[1]])
    rows = []
    for n in names:
        diff = per_seed_mean(auc[n]) - paper
        rows.append([n, float(np.mean(fit_s[n])), fmt_ci(per_seed_mean(ratio[n]), digits=0),
                     float(np.mean(epochs[n])) if n != var_key else None,
                     fmt_sd(per_seed_mean(auc[n])),
                     fmt_ci(diff, sign=True) if n != names[1] else "0"])  # fmt: skip
    for n, v in gr.items():
        rows.append([f"Granger stage only: {n}", float(np.mean(v)), None, None, None, None])
    best = min(names[1:], key=lambda n: np.mean(ratio[n]))
    gflop, peak = paper_fit_gflop(n_vars, T), matmul_gflops()
    paper_s = float(np.mean(fit_s[names[1]]))
    rec.table(
        "fit_cost",
        ["method", "fit CPU s", "x VAR residual [95% CI]", "epochs trained",
         "mean AUROC (± std over seeds)", "AUROC - paper schedule [95% CI]"],
        rows, fmt=[None, ".3f", None, ".1f", None, None], seeds=list(range(seeds)),
        per_seed={"fit_cpu_s": fit_s, "auroc": auc, "epochs": epochs, "granger_cpu_s": gr,
                  "paper_schedule_gflop": gflop, "matmul_gflops": peak},
        title=f"Part 6: what a fit costs (VAR, N={n_vars}, T={T}+{T}), one thread, interleaved",
        notes=[f"Process CPU time of one fit on one torch/BLAS thread; each (seed, kind) fits "
               f"every method in a rotating order after a warm-up fit of each; {seeds} seeds x "
               f"{len(KINDS)} kinds. x VAR residual: per-fit ratio, averaged per seed, 95% CI "
               "over seeds. AUROC: window AUROC, mean over the four kinds per seed.",
               f"Granger stage only: the {n_vars * (n_vars - 1)} pairwise F-tests of the "
               f"discoverer on the 80% training part, lag 3; largest p-value difference between "
               f"the two {max_diff:.1e}.",
               f"Arithmetic bound: the paper's schedule is about {gflop:.0f} GFLOP of LSTM, "
               f"projector and SOC-loss work per fit (tools/bench/carots_bench.py "
               f"paper_fit_gflop); at this process's single-thread GEMM rate "
               f"({peak:.0f} GFLOP/s) that is {gflop / peak:.2f} s, "
               f"{gflop / peak / np.mean(fit_s[var_key]):.0f}x the VAR residual's mean fit, "
               f"before any overhead; measured {paper_s:.2f} s = "
               f"{gflop / paper_s:.0f} GFLOP/s ({gflop / paper_s / peak:.0%} of that rate).",
               "Target (issue #49 item 2): fit within 20x the VAR residual."],
        timing=True,
        headline=f"CAROTS fit cost: {np.mean(ratio[names[1]]):.0f}x the VAR residual at the "
                 f"paper's schedule, {np.mean(ratio[best]):.0f}x for the cheapest variant "
                 f"({best.removeprefix('CAROTS, ')}); target 20x",
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--parts", default="1,2,3,4", help="comma-separated subset of 1-6")
    parser.add_argument("--recipe", choices=("std", "tods"), default="std",
                        help="part 2's anomaly recipe: std-scaled (default) or TODS' raw units "
                             "(tables suffixed _tods)")  # fmt: skip
    parser.add_argument("--mtsad", choices=DATASETS, help="part 5: which benchmark")
    parser.add_argument("--mtsad-root", help="part 5: the folder holding your copy")
    parser.add_argument("--machine", help="part 5 with smd: e.g. machine-1-1")
    args = parser.parse_args()
    parts = args.parts.split(",")
    torch.set_num_threads(1)
    rec = Run("causal-ts", out=tempfile.mkdtemp() if args.quick else None)
    t0 = time.perf_counter()
    seeds = 1 if args.quick else args.seeds
    n_vars, T = (10, 2000) if args.quick else (20, 4000)
    if "1" in parts:
        part1(rec, seeds)
    if "2" in parts:
        part2(rec, seeds, n_vars, T, args.recipe)
    if "3" in parts:
        for design in ("tank", "dag"):
            part3(rec, seeds, n_vars, T, design)
    if "4" in parts:
        part4(rec, seeds)
    if "5" in parts:
        if not (args.mtsad and args.mtsad_root):
            parser.error("part 5 needs --mtsad and --mtsad-root")
        part5(rec, args.mtsad, args.mtsad_root, args.machine, seeds)
    if "6" in parts:
        part6(rec, seeds, n_vars, T)
    print(f"\ntotal wall time {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
