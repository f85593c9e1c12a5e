"""EARTH benchmark on the seeded metapopulation simulator (spec §5.2), CPU scale.

F1  N = 10 regions, 520 weeks, W = 20, horizons 3 / 5 / 10: EARTH against persistence, ridge
    AR, a shared GRU, a small Cola-GNN, per-region SIR fits, a network-SIR fit with the true
    mobility matrix and the plain neural CDE (EARTH's encoder without EANO, GLTG, attention).
F2  ablations at h = 5 (paper Table 2): EANO only, GLTG only, neither.
F3  missing reports (MCAR) at rates 0.3 / 0.5, h = 5: EARTH (spline over observed points) vs
    the GRU on forward-filled inputs.

Every model sees the same chronological split (train 0.5 / validation 0.3 / test 0.2), the
validation set for early stopping, and its seed; metrics are on de-normalised test counts,
peak MAE with each region's training mean as threshold. Seeds vary the simulator and the model.

    uv run python tools/bench/epi_bench.py                 # all parts, ~1.5 h on 1 core
    uv run python tools/bench/epi_bench.py --parts f1      # one part
    uv run python tools/bench/epi_bench.py --quick         # N = 5, 208 weeks, d = 8, 10 epochs
    uv run python tools/bench/epi_bench.py --data DIR/us_hhs.txt --adjacency DIR/us_hhs-adj.txt \
        --parts curve,f1 --horizons 5    # a real file (the EARTH repository ships US-HHS)

With ``--data`` every table is written as ``real_<file stem>_<table>`` beside the simulator's.
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import time

import numpy as np
import torch
from record import Run, fmt_ci, fmt_sd

from epi_ode import EARTHForecaster, NeuralCDEForecaster
from epi_ode.baselines import (
    ARRidge,
    ColaGNNLite,
    GRUForecaster,
    LSTMForecaster,
    NetworkSIRFit,
    Persistence,
    RegionSEIRFit,
    RegionSIRFit,
)
from epi_ode.data import load_colagnn, make_windows, simulate_metapopulation
from epi_ode.metrics import evaluate

PAPER = (  # Table 1-2 as read by a third party (spec §6); a different dataset and scale
    "Paper (different data and scale): US-Regions RMSE h=5/10/15 1080 / 1244 / 1301; "
    "Australia-COVID h=5 EARTH 156.8 vs best baseline 204.3; ablation (Australia-COVID h=5) "
    "full / EANO / GLTG / neither 156.8 / 178.6 / 232.4 / 267.4."
)
ABLATIONS = ["EARTH", "EARTH: EANO only (no GLTG)", "EARTH: GLTG only (no EANO)", "EARTH: neither",
             "neural CDE (no EANO/GLTG/attn)"]  # fmt: skip
F1_MODELS = ["persistence", "ridge AR", "GRU", "LSTM", "Cola-GNN-lite", "SIR per region",
             "SEIR per region", "network SIR (true mobility)", "neural CDE (no EANO/GLTG/attn)",
             "EARTH"]  # fmt: skip


def models(a, h, seed, sim):
    W = a.window
    earth = dict(window=W, horizon=h, hidden=a.hidden, epochs=a.epochs, batch_size=a.batch,
                 patience=a.patience, lr=a.lr, random_state=seed, num_threads=1)  # fmt: skip
    rnn = dict(window=W, horizon=h, epochs=200, patience=30, random_state=seed)
    mobility = getattr(sim, "mobility", None)
    return {
        "persistence": lambda: Persistence(W, h),
        "ridge AR": lambda: ARRidge(W, h),
        "GRU": lambda: GRUForecaster(**rnn),
        "LSTM": lambda: LSTMForecaster(**rnn),
        "Cola-GNN-lite": lambda: ColaGNNLite(**rnn),
        "SIR per region": lambda: RegionSIRFit(W, h),
        "SEIR per region": lambda: RegionSEIRFit(W, h),
        "network SIR (true mobility)": lambda: NetworkSIRFit(W, h, mobility=mobility),
        "neural CDE (no EANO/GLTG/attn)": lambda: NeuralCDEForecaster(**earth),
        "EARTH": lambda: EARTHForecaster(**earth),
        "EARTH: EANO only (no GLTG)": lambda: EARTHForecaster(**earth, use_gltg=False),
        "EARTH: GLTG only (no EANO)": lambda: EARTHForecaster(**earth, use_eano=False),
        "EARTH: neither": lambda: EARTHForecaster(**earth, use_eano=False, use_gltg=False),
        "EARTH dopri5": lambda: EARTHForecaster(**{**earth, "epochs": 5}, solver="dopri5"),
    }


@functools.cache
def data(a, seed, missing):
    if a.data:
        Y, A = load_colagnn(a.data, a.adjacency)
        return Y, A, Y, None
    sim = simulate_metapopulation(a.regions, a.weeks, seed=seed, missing_rate=missing)
    # test truth: the complete report (missingness only hides inputs)
    full = sim if missing == 0 else simulate_metapopulation(a.regions, a.weeks, seed=seed)
    return sim.cases, sim.adjacency, full.cases, sim


@functools.cache
def fit_one(a, name, h, seed, missing=0.0):
    """Fit one model (cached: the curve part's h = 5 fits serve f1 too)."""
    cases, adjacency, truth_cases, sim = data(a, seed, missing)
    w = make_windows(cases, a.window, h)
    Ytr, Yva = cases[: w.train_end], cases[w.train_end : w.val_end]
    t0 = time.process_time()
    m = models(a, h, seed, sim)[name]().fit(Ytr, adjacency, Y_val=Yva)
    pred = m.predict(w.X_test)
    r = evaluate(truth_cases[w.t_test], pred, peak_threshold=np.nanmean(Ytr, axis=0))
    r["cpu"] = time.process_time() - t0
    hist = getattr(m, "history_", None)
    if hist:
        r["epochs"] = len(hist)
        r["best_epoch"] = int(np.argmin([e["val_loss"] for e in hist])) + 1
        r["s_per_epoch"] = float(np.mean([e["seconds"] for e in hist]))
        r["val_curve"] = [e["val_loss"] for e in hist]
    print(f"  {name} h={h} seed={seed} missing={missing}: RMSE {r['RMSE']:.1f} "
          f"({r['cpu']:.0f} CPU s)", flush=True)  # fmt: skip
    return r


def horizon_table(run, a, key, names, h, missing=0.0, title="", headline=None):
    key = a.prefix + key  # a real file's tables never replace the simulator's
    seeds = list(range(a.seeds))
    res = {n: [fit_one(a, n, h, s, missing) for s in seeds] for n in names}
    run.sample_load()
    ref = res["EARTH"]
    rows = []
    for n in names:
        rs = res[n]
        ratio = [r["RMSE"] / e["RMSE"] for r, e in zip(rs, ref, strict=True)]
        ep = (f"{np.mean([r['epochs'] for r in rs]):.0f} ({np.mean([r['best_epoch'] for r in rs]):.0f})"
              if "epochs" in rs[0] else "-")  # fmt: skip
        dg = 3 if a.data else 1  # a real ILI file is in % weighted ILI (about 0.5 to 8)
        rows.append([n, fmt_sd([r["RMSE"] for r in rs], dg), fmt_sd([r["MAE"] for r in rs], dg),
                     fmt_sd([r["PCC"] for r in rs], 3), fmt_sd([r["peak_MAE"] for r in rs], dg),
                     fmt_ci(ratio, 3), float(np.mean([r["cpu"] for r in rs])), ep])  # fmt: skip
    best = min(names, key=lambda n: np.mean([r["RMSE"] for r in res[n]]))
    run.table(
        key,
        [
            "model",
            "RMSE",
            "MAE",
            "PCC",
            "peak MAE",
            "RMSE / EARTH's [95% CI, paired]",
            "CPU s per fit",
            "epochs run (best)",
        ],
        rows,
        fmt=[None] * 6 + [".1f", None],
        seeds=seeds,
        per_seed={
            n: {k: [r[k] for r in res[n]] for k in ("RMSE", "MAE", "PCC", "peak_MAE")}
            for n in names
        },
        title=title,
        notes=f"Mean ± std over seeds; lowest mean RMSE: {best}.",
        headline=headline(res) if headline else None,
    )
    return res


def curve(run, a):
    h = 5
    res = horizon_table(
        run, a, "ablation", ABLATIONS, h,
        title=f"Ablations at h = {h} after up to {a.epochs} epochs (paper Table 2)",
        headline=lambda res: (
            f"{a.source}, {a.seeds} seeds, h = 5, <= {a.epochs} epochs: EARTH RMSE "
            f"{np.mean([r['RMSE'] for r in res['EARTH']]):.4g}; neither-mechanism ablation / "
            f"EARTH {np.mean([r['RMSE'] / e['RMSE'] for r, e in zip(res['EARTH: neither'], res['EARTH'], strict=True)]):.3f}"
        ),
    )  # fmt: skip
    # do the mechanisms matter? each ablation's paired RMSE difference against its seed spread
    ref = np.array([r["RMSE"] for r in res["EARTH"]])
    rows = []
    for n in ABLATIONS[1:]:
        d = np.array([r["RMSE"] for r in res[n]]) - ref
        spread = float(np.std(ref, ddof=1)) if len(ref) > 1 else float("nan")
        rows.append([n, fmt_ci(d, 3 if a.data else 1, sign=True), spread,
                     bool(abs(d.mean()) > spread)])  # fmt: skip
    run.table(
        a.prefix + "ablation_verdict",
        ["ablation", "RMSE − EARTH's [95% CI]", "EARTH's seed spread (sd)", "|Δ| > spread"],
        rows,
        fmt=[None, None, ".3f" if a.data else ".1f", None],
        seeds=list(range(a.seeds)),
        title="Do EANO and GLTG matter at this budget?",
    )
    marks = sorted({1, 2, 5, 10, 20, 40, 60, 80, 100, 150, 200} & set(range(1, a.epochs + 1)))
    rows = []
    for n in ABLATIONS:
        curves = [r["val_curve"] for r in res[n]]
        row = [n]
        for e in marks:  # a run stopped early keeps its last value
            row.append(float(np.mean([c[min(e, len(c)) - 1] for c in curves])))
        rows.append(row)
    run.table(
        a.prefix + "training_curve",
        ["model", *(f"epoch {e}" for e in marks)],
        rows,
        fmt=[None] + [".4f"] * len(marks),
        seeds=list(range(a.seeds)),
        per_seed={n: [r["val_curve"] for r in res[n]] for n in ABLATIONS},
        title="Validation loss (normalised L1) by epoch, mean over seeds",
        notes="A run stopped early by patience keeps its last value in later columns.",
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", default="curve,f1,f3,dopri5")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--horizons", type=int, nargs="*", default=[3, 5, 10])
    ap.add_argument("--regions", type=int, default=10)
    ap.add_argument("--weeks", type=int, default=520)
    ap.add_argument("--window", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--patience", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3, help="EARTH and the neural CDE")
    ap.add_argument("--data", default=None, help="a Cola-GNN-layout series (T x N .txt)")
    ap.add_argument("--adjacency", default=None, help="its N x N adjacency .txt")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.regions, a.weeks, a.hidden, a.epochs, a.horizons, a.seeds = 5, 208, 8, 10, [5], 2
    if a.data and not a.adjacency:
        ap.error("--data needs --adjacency")
    torch.set_num_threads(1)
    run = Run("epi-ode")
    parts = a.parts.split(",")
    print(f"# EARTH benchmark: {a.regions} regions, {a.weeks} weeks, window {a.window}, "
          f"{a.seeds} seeds, EARTH hidden {a.hidden}, <= {a.epochs} epochs (patience "
          f"{a.patience}), batch {a.batch}, lr {a.lr}; RNNs <= 200 epochs (patience 30)\n{PAPER}")  # fmt: skip
    stem = pathlib.Path(a.data).stem if a.data else ""
    a.prefix = f"real_{stem.replace('-', '_')}_" if a.data else ""
    a.source = (
        f"real file {stem} ({a.data and pathlib.Path(a.data).name})"
        if a.data
        else (f"simulated {a.regions}-region SIRS")
    )
    if a.data:
        print(f"# data: {a.data} (seeds vary the models only); tables prefixed {a.prefix!r}")
    args = argparse.Namespace(**vars(a))
    frozen = _Frozen(args)
    if "curve" in parts:
        curve(run, frozen)
    if "f1" in parts:
        for h in a.horizons:
            horizon_table(run, frozen, f"horizon_{h}", F1_MODELS, h,
                          title=f"F1: horizon {h}, test metrics over {a.seeds} seeds")  # fmt: skip
    if "f3" in parts:
        for rate in (0.3, 0.5):
            horizon_table(run, frozen, f"missing_{int(rate * 100)}", ["GRU", "EARTH"], 5, rate,
                          title=f"F3: {int(rate * 100)} % of reports missing (MCAR), h = 5; GRU "
                          "on forward-filled inputs")  # fmt: skip
    if "dopri5" in parts:
        r = fit_one(frozen, "EARTH dopri5", 5, 0)
        run.table(
            "dopri5",
            ["solver", "epochs", "CPU s per epoch", "test RMSE after 5 epochs"],
            [["dopri5 (rtol 1e-3, atol 1e-4)", r["epochs"], r["s_per_epoch"], r["RMSE"]]],
            fmt=[None, None, ".1f", ".1f"],
            timing=True,
            title="The adaptive solver finishes a fit",
        )


class _Frozen:
    """Hashable view of the arguments (the fit cache keys on it)."""

    def __init__(self, ns):
        self.__dict__.update(vars(ns))

    def __hash__(self):
        return hash(tuple(sorted((k, str(v)) for k, v in self.__dict__.items())))

    def __eq__(self, other):
        return self.__dict__ == other.__dict__


if __name__ == "__main__":
    main()
