"""I2MoE benchmark (interaction-moe): accuracy vs the backbone alone, and whether the expert
weights recover planted interaction types.

All models run in one process, one thread, same encoders, epochs (40), batch (128) and Adam lr.

E1/E2  synthetic planted interactions (4000 train / 2000 test, 2 modalities, equal proportions):
       vanilla concat fusion, I2MoE, I2MoE without interaction losses (a plain dense MoE of the
       same capacity), I2MoE with one global weight vector, and I2MoE with an extra per-expert task
       loss (ours, not in the paper); test accuracy and per-type routing accuracy (largest weight on
       the planted type's expert).
E4     the same with 4 classes and with zero-perturbation.
E5     global weights vs planted proportions (5 settings): Spearman rho for uni_1, uni_2.
E6     expert sensitivity sigma[k, j] to removing modality j.
E7     breast-cancer (3 feature groups) and digits halves (2 modalities), concat and transformer
       backbones, stratified 70/30 splits: accuracy vs vanilla, global weights.
E8     CPU seconds per training epoch vs vanilla.

Run: ``uv run python tools/bench/i2moe_bench.py`` (~20 min on 2 cores); ``--quick``: 1 seed, 10 epochs.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch
from scipy.stats import spearmanr
from sklearn.model_selection import train_test_split

from interaction_moe import (
    I2MoEClassifier,
    load_breast_cancer_groups,
    load_digits_halves,
    make_interaction_data,
)
from interaction_moe.metrics import routing_report

NAMES = ["uni_1", "uni_2", "syn", "red"]


def ms(v) -> str:
    v = np.asarray(v, dtype=float)
    return f"{v.mean():.3f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.3f}"


def fit(kw, xs, y, seed, epochs):
    t0 = time.process_time()
    clf = I2MoEClassifier(epochs=epochs, random_state=seed, **kw).fit(xs, y)
    return clf, (time.process_time() - t0) / epochs


VARIANTS = {
    "vanilla concat fusion": {"moe": False},
    "I2MoE": {},
    "I2MoE, no interaction loss": {"interaction_loss": False},
    "I2MoE, global weights": {"reweighting": "global"},
    "I2MoE + per-expert task loss (ours)": {"expert_loss_weight": 1.0},
    "I2MoE, 4 classes": {"_k4": True},
    "I2MoE, zero perturbation": {"perturbation": "zero"},
}


def synthetic(seeds, epochs, n_train, n_test):
    print(
        f"\n## E1/E2/E4 synthetic planted interactions ({n_train} train / {n_test} test, {epochs} epochs)\n"
    )
    print(
        "| model | test accuracy | routing acc uni_1 | uni_2 | syn | red | global weights (uni_1, uni_2, syn, red) | CPU s / epoch |"
    )
    print("|---|---|---|---|---|---|---|---|")
    sens = []
    warm = make_interaction_data(256, seed=0)
    fit({}, warm[0], warm[1], 0, 1)  # first-call costs out of the timings
    for name, kw in VARIANTS.items():
        kw = dict(kw)
        k4 = kw.pop("_k4", False)
        acc, rout, glob, sec = [], [], [], []
        for s in seeds:
            nc = 4 if k4 else 2
            xs, y, _ = make_interaction_data(n_train, n_classes=nc, seed=s)
            xt, yt, tt = make_interaction_data(n_test, n_classes=nc, seed=1000 + s)
            clf, t = fit(kw, xs, y, s, epochs)
            acc.append(clf.score(xt, yt))
            sec.append(t)
            if clf.moe:
                rep = routing_report(clf.interaction_weights(xt), tt)
                rout.append(rep["routing_accuracy"])
                glob.append(rep["global"])
                if name == "I2MoE":
                    T = clf._prep(xt)
                    sens.append(clf.model_.sensitivity(T).numpy())
            print(f"  {name} seed {s} done", file=sys.stderr)
        if rout:
            r = np.array(rout)
            g = np.mean(glob, axis=0)
            cells = " | ".join(ms(r[:, i]) for i in range(4))
            print(
                f"| {name} | {ms(acc)} | {cells} | {', '.join(f'{v:.2f}' for v in g)} | {np.mean(sec):.2f} |"
            )
        else:
            print(f"| {name} | {ms(acc)} | – | – | – | – | – | {np.mean(sec):.2f} |")
    S = np.mean(sens, axis=0)
    print("\n## E6 sensitivity sigma[expert, removed modality] (I2MoE, mean over seeds)\n")
    print("| expert | remove modality 1 | remove modality 2 |")
    print("|---|---|---|")
    for k, n in enumerate(NAMES):
        print(f"| {n} | {S[k, 0]:.3f} | {S[k, 1]:.3f} |")


def proportions(epochs, n_train):
    print("\n## E5 global weights vs planted proportions (seed 0)\n")
    settings = [
        (0.4, 0.2, 0.2, 0.2),
        (0.2, 0.4, 0.2, 0.2),
        (0.1, 0.1, 0.4, 0.4),
        (0.6, 0.1, 0.15, 0.15),
        (0.25, 0.25, 0.25, 0.25),
    ]
    print("| planted (uni_1, uni_2, syn, red) | global weights |")
    print("|---|---|")
    P, G = [], []
    for pr in settings:
        xs, y, _ = make_interaction_data(n_train, proportions=pr, seed=0)
        xt, _, _ = make_interaction_data(2000, proportions=pr, seed=1000)
        clf, _ = fit({}, xs, y, 0, epochs)
        g = clf.interaction_weights(xt).mean(0)
        P.append(pr)
        G.append(g)
        print(f"| {pr} | {', '.join(f'{v:.2f}' for v in g)} |")
    P, G = np.array(P), np.array(G)
    for k in range(4):
        rho = spearmanr(P[:, k], G[:, k]).statistic
        print(f"Spearman rho({NAMES[k]}) = {rho:.2f}")


def real(seeds, epochs):
    print(f"\n## E7 real feature groups (stratified 70/30, {epochs} epochs)\n")
    print(
        "| dataset | backbone | vanilla | I2MoE | I2MoE - vanilla (paired) | I2MoE global weights |"
    )
    print("|---|---|---|---|---|---|")
    for dname, loader in (
        ("breast cancer (3 groups)", load_breast_cancer_groups),
        ("digits halves (2)", load_digits_halves),
    ):
        xs, y = loader()
        for backbone in ("concat", "transformer"):
            va, mo, gl = [], [], []
            for s in seeds:
                idx = np.arange(len(y))
                tr, te = train_test_split(idx, test_size=0.3, stratify=y, random_state=s)
                a = [x[tr] for x in xs]
                b = [x[te] for x in xs]
                v, _ = fit({"moe": False, "backbone": backbone}, a, y[tr], s, epochs)
                m, _ = fit({"backbone": backbone}, a, y[tr], s, epochs)
                va.append(v.score(b, y[te]))
                mo.append(m.score(b, y[te]))
                gl.append(m.interaction_weights(b).mean(0))
            g = np.mean(gl, axis=0)
            print(
                f"| {dname} | {backbone} | {ms(va)} | {ms(mo)} | {ms(np.subtract(mo, va))} | {', '.join(f'{x:.2f}' for x in g)} |"
            )
            print(f"  {dname} {backbone} done", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [0] if args.quick else list(range(args.seeds))
    epochs = 10 if args.quick else args.epochs
    n_train, n_test = (1000, 600) if args.quick else (4000, 2000)
    t0 = time.time()
    print(f"# I2MoE benchmark: seeds {seeds}, {epochs} epochs, batch 128, Adam lr 1e-3, one thread")
    synthetic(seeds, epochs, n_train, n_test)
    proportions(epochs, n_train)
    real(seeds, epochs)
    print(f"\ntotal wall time {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
