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
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from epi_ode import EARTHForecaster, NeuralCDEForecaster
from epi_ode.baselines import (
    ARRidge,
    ColaGNNLite,
    GRUForecaster,
    NetworkSIRFit,
    Persistence,
    RegionSIRFit,
)
from epi_ode.data import make_windows, simulate_metapopulation
from epi_ode.metrics import evaluate

PAPER = {  # Table 1-2 as read by a third party (spec §6); a different dataset and scale
    "US-Regions RMSE h=5/10/15": "1080 / 1244 / 1301",
    "Australia-COVID h=5 EARTH vs best baseline": "156.8 vs 204.3",
    "ablation (Australia-COVID h=5) full / EANO / GLTG / neither": "156.8 / 178.6 / 232.4 / 267.4",
}


def models(a, h, seed, sim, which):
    W = a.window
    earth = dict(window=W, horizon=h, hidden=a.hidden, epochs=a.epochs, batch_size=a.batch,
                 patience=a.patience, lr=a.lr, random_state=seed, num_threads=1)  # fmt: skip
    rnn = dict(window=W, horizon=h, epochs=200, patience=30, random_state=seed)
    table = {
        "persistence": lambda: Persistence(W, h),
        "ridge AR": lambda: ARRidge(W, h),
        "GRU": lambda: GRUForecaster(**rnn),
        "Cola-GNN-lite": lambda: ColaGNNLite(**rnn),
        "SIR per region": lambda: RegionSIRFit(W, h),
        "network SIR (true mobility)": lambda: NetworkSIRFit(W, h, mobility=sim.mobility),
        "neural CDE (no EANO/GLTG/attn)": lambda: NeuralCDEForecaster(**earth),
        "EARTH": lambda: EARTHForecaster(**earth),
        "EARTH: EANO only (no GLTG)": lambda: EARTHForecaster(**earth, use_gltg=False),
        "EARTH: GLTG only (no EANO)": lambda: EARTHForecaster(**earth, use_eano=False),
        "EARTH: neither": lambda: EARTHForecaster(**earth, use_eano=False, use_gltg=False),
    }
    return {k: table[k] for k in which}


def run(a, h, seed, which, missing=0.0):
    sim = simulate_metapopulation(a.regions, a.weeks, seed=seed, missing_rate=missing)
    w = make_windows(sim.cases, a.window, h)
    Ytr, Yva = sim.cases[: w.train_end], sim.cases[w.train_end : w.val_end]
    # test truth: the complete report (missingness only hides inputs)
    full = sim if missing == 0 else simulate_metapopulation(a.regions, a.weeks, seed=seed)
    truth = full.cases[w.t_test]
    out = {}
    for name, make in models(a, h, seed, sim, which).items():
        t0 = time.process_time()
        m = make().fit(Ytr, sim.adjacency, Y_val=Yva)
        pred = m.predict(w.X_test)
        r = evaluate(truth, pred, peak_threshold=np.nanmean(Ytr, axis=0))
        r["cpu"] = time.process_time() - t0
        hist = getattr(m, "history_", None)
        if hist:
            r["epochs"] = len(hist)
            r["best_epoch"] = int(np.argmin([e["val_loss"] for e in hist])) + 1
            r["s_per_epoch"] = float(np.mean([e["seconds"] for e in hist]))
        out[name] = r
    return out


def table(results, names, title, ref="EARTH"):
    print(f"\n### {title}\n")
    print(
        "| model | RMSE | MAE | PCC | peak MAE | RMSE / EARTH's (paired) | CPU s per fit | epochs run (best) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in names:
        rs = [r[n] for r in results]

        def f(k, rs=rs):
            return f"{np.mean([r[k] for r in rs]):.1f} ± {np.std([r[k] for r in rs]):.1f}"

        pcc = f"{np.mean([r['PCC'] for r in rs]):.3f} ± {np.std([r['PCC'] for r in rs]):.3f}"
        ratio = [r[n]["RMSE"] / r[ref]["RMSE"] for r in results]
        ep = (f"{np.mean([r['epochs'] for r in rs]):.0f} ({np.mean([r['best_epoch'] for r in rs]):.0f})"
              if "epochs" in rs[0] else "-")  # fmt: skip
        print(f"| {n} | {f('RMSE')} | {f('MAE')} | {pcc} | {f('peak_MAE')} | "
              f"{np.mean(ratio):.3f} ± {np.std(ratio):.3f} | {np.mean([r['cpu'] for r in rs]):.1f} | {ep} |")  # fmt: skip
    if "s_per_epoch" in results[0].get(ref, {}):
        print(f"\n{ref}: {np.mean([r[ref]['s_per_epoch'] for r in results]):.2f} CPU s per epoch "
              f"(1 thread, hidden {ARGS.hidden}, batch {ARGS.batch})")  # fmt: skip


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="f1,f2,f3")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--horizons", type=int, nargs="*", default=[3, 5, 10])
    ap.add_argument("--regions", type=int, default=10)
    ap.add_argument("--weeks", type=int, default=520)
    ap.add_argument("--window", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--patience", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3, help="EARTH and the neural CDE")
    ap.add_argument("--models", default=None, help="comma-separated subset of F1's models")
    ap.add_argument("--quick", action="store_true")
    a = ARGS = ap.parse_args()
    if a.quick:
        a.regions, a.weeks, a.hidden, a.epochs, a.horizons, a.seeds = 5, 208, 8, 10, [4], 2
    torch.set_num_threads(1)
    parts = a.parts.split(",")
    print(f"# EARTH benchmark: {a.regions} regions, {a.weeks} weeks, window {a.window}, "
          f"{a.seeds} seeds, EARTH hidden {a.hidden}, <= {a.epochs} epochs (patience "
          f"{a.patience}), batch {a.batch}, lr {a.lr}; GRU / Cola-GNN <= 200 epochs (patience 30)")  # fmt: skip
    print("paper (different data and scale): " + "; ".join(f"{k}: {v}" for k, v in PAPER.items()))
    base = ["persistence", "ridge AR", "GRU", "Cola-GNN-lite", "SIR per region",
            "network SIR (true mobility)", "neural CDE (no EANO/GLTG/attn)", "EARTH"]  # fmt: skip
    if a.models:
        base = [m for m in base if m in a.models.split(",")]
    if "f1" in parts:
        for h in a.horizons:
            res = [run(a, h, s, base) for s in range(a.seeds)]
            table(res, base, f"F1: horizon {h} (test RMSE etc. over {a.seeds} seeds, mean ± std)")
    if "f2" in parts:
        abl = [
            "EARTH",
            "EARTH: EANO only (no GLTG)",
            "EARTH: GLTG only (no EANO)",
            "EARTH: neither",
        ]
        h = 5 if 5 in a.horizons else a.horizons[0]
        res = [run(a, h, s, abl) for s in range(a.seeds)]
        table(res, abl, f"F2: ablations, horizon {h}")
    if "f3" in parts:
        h = 5 if 5 in a.horizons else a.horizons[0]
        for rate in (0.3, 0.5):
            res = [run(a, h, s, ["GRU", "EARTH"], missing=rate) for s in range(a.seeds)]
            table(
                res,
                ["GRU", "EARTH"],
                f"F3: {int(rate * 100)} % of reports missing (MCAR), horizon {h}; GRU on forward-filled inputs",
            )


if __name__ == "__main__":
    main()
