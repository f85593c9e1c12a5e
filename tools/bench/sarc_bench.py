"""SARC benchmark (spectral-reservoir): the lag task, the UCR/UEA sets bundled in aeon, timing.

Every method runs in one process, one thread, on the same splits; seeds change the reservoirs'
(and MiniRocket's) random draws, and for the synthetic task the data too.

S   ``make_lag_sign`` (200 train / 200 test, L = 400) with the class one period P apart,
    P in {20, 40, 80}: SARC (periods found from the data), SARC with the oracle period, the
    same-capacity bidirectional ESN without the period skip, MiniRocket, 1-NN Euclidean.
U   the bundled UCR/UEA sets at default hyper-parameters: SARC, SARC forward-only, BiESN,
    MiniRocket (aeon), reservoirpy ESN (if installed), 1-NN Euclidean (MiniRocket and 1-NN get
    unequal-length series zero-padded at the end);
    accuracy and fit + predict CPU seconds with their ratio to MiniRocket (numba warmed up first).

Run: ``uv run --with aeon --with reservoirpy python tools/bench/sarc_bench.py`` (~15 min on 2
cores); ``--quick``: 1 seed, GunPoint, ItalyPowerDemand, ArrowHead and P = 40 only.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.linear_model import RidgeClassifierCV
from sklearn.neighbors import KNeighborsClassifier

from spectral_reservoir import BiESNModelSpace, SARCClassifier, load_bundled, make_lag_sign

warnings.filterwarnings("ignore")


class MiniRocket:
    def __init__(self, seed: int) -> None:
        from aeon.classification.convolution_based import MiniRocketClassifier

        self.m = MiniRocketClassifier(random_state=seed, n_jobs=1)

    def fit(self, X, y):
        Xp = pad_right(X)
        self.L = Xp.shape[-1]
        self.m.fit(Xp, y)
        return self

    def score(self, X, y) -> float:
        return float((self.m.predict(pad_right(X, self.L)) == y).mean())


def pad_right(X, L: int | None = None):
    """Unequal-length lists -> zero-padded / cut (n, C, L) for MiniRocket / 1-NN (they need equal
    length); ``L`` defaults to the longest series (the training set's at predict time)."""
    if not isinstance(X, list):
        return X
    L = max(x.shape[-1] for x in X) if L is None else L
    out = np.zeros((len(X), X[0].shape[0], L))
    for i, x in enumerate(X):
        n = min(L, x.shape[-1])
        out[i, :, :n] = x[:, :n]
    return out


class OneNN:
    def fit(self, X, y):
        Xp = pad_right(X)
        self.L = Xp.shape[-1]
        self.m = KNeighborsClassifier(1).fit(Xp.reshape(len(y), -1), y)
        return self

    def score(self, X, y) -> float:
        return float(self.m.score(pad_right(X, self.L).reshape(len(y), -1), y))


class ReservoirPyESN:
    """reservoirpy Reservoir(100 units, sr 0.9, lr 0.3) -> [mean state, last state] -> ridge."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def _feats(self, X):
        out = []
        for s in X:
            s = np.asarray(s, dtype=float)
            s = s[:, np.isfinite(s).all(0)]
            # a fresh node per series: same seed, same weights, zero initial state
            st = self.Reservoir(units=100, sr=0.9, lr=0.3, seed=self.seed).run(s.T)
            out.append(np.concatenate([st.mean(0), st[-1]]))
        return np.array(out)

    def fit(self, X, y):
        from reservoirpy.nodes import Reservoir

        self.Reservoir = Reservoir
        self.clf = RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)).fit(self._feats(X), y)
        return self

    def score(self, X, y) -> float:
        return float(self.clf.score(self._feats(X), y))


def timed(est, Xtr, ytr, Xte, yte) -> tuple[float, float]:
    t0 = time.process_time()
    acc = est.fit(Xtr, ytr).score(Xte, yte)
    return acc, time.process_time() - t0


def ms(v) -> str:
    v = np.asarray(v, dtype=float)
    return f"{v.mean():.3f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.3f}"


def have(mod: str) -> bool:
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def part_s(seeds, lags) -> None:
    print(
        "\n## S: lag-sign task (class = sign of the lag-P correlation), 200 train / 200 test, L = 400\n"
    )
    print(
        "| P | SARC | SARC, oracle period | BiESN (no skip) | MiniRocket | 1-NN Euclid | SARC periods |"
    )
    print("|---|---|---|---|---|---|---|")
    for P in lags:
        r: dict[str, list] = {}
        npers = []
        for s in seeds:
            X, y = make_lag_sign(400, L=400, period=P, seed=s)
            split = (X[:200], y[:200], X[200:], y[200:])
            ests = {
                "sarc": SARCClassifier(random_state=s),
                "oracle": SARCClassifier(periods=[P], random_state=s),
                "esn": BiESNModelSpace(random_state=s),
                "mr": MiniRocket(s) if have("aeon") else None,
                "nn": OneNN(),
            }
            for k, e in ests.items():
                if e is not None:
                    r.setdefault(k, []).append(timed(e, *split)[0])
            npers.append(len(ests["sarc"].periods_))
            print(f"  P={P} seed {s} done", file=sys.stderr)
        cell = {k: ms(v) for k, v in r.items()}
        print(
            f"| {P} | {cell['sarc']} | {cell['oracle']} | {cell['esn']} | {cell.get('mr', 'n/a')} | "
            f"{cell['nn']} | {np.mean(npers):.0f} |"
        )


def part_u(seeds, names) -> None:
    print("\n## U: bundled UCR/UEA sets, default hyper-parameters (accuracy; fit+predict CPU s)\n")
    methods = ["SARC", "SARC fwd-only", "BiESN", "MiniRocket", "reservoirpy ESN", "1-NN Euclid"]
    print("| dataset | " + " | ".join(methods) + " | SARC time / MiniRocket |")
    print("|---|" + "---|" * (len(methods) + 1))
    means = {m: [] for m in methods}
    ratios = []
    if have("aeon"):  # numba compiles MiniRocket once; keep it out of the timings
        X, y = load_bundled("GunPoint")
        MiniRocket(0).fit(X, y).score(X, y)
    for name in names:
        Xtr, ytr = load_bundled(name, "train")
        Xte, yte = load_bundled(name, "test")
        acc = {m: [] for m in methods}
        cpu = {m: [] for m in methods}
        for s in seeds:
            ests = {
                "SARC": SARCClassifier(random_state=s),
                "SARC fwd-only": SARCClassifier(bidirectional=False, random_state=s),
                "BiESN": BiESNModelSpace(random_state=s),
                "MiniRocket": MiniRocket(s),
                "reservoirpy ESN": ReservoirPyESN(s) if have("reservoirpy") else None,
                "1-NN Euclid": OneNN() if s == seeds[0] else None,
            }
            for m, e in ests.items():
                if e is None:
                    continue
                a, t = timed(e, Xtr, ytr, Xte, yte)
                acc[m].append(a)
                cpu[m].append(t)
        cells = []
        for m in methods:
            if acc[m]:
                means[m].append(np.mean(acc[m]))
                cells.append(f"{ms(acc[m])} ({np.mean(cpu[m]):.1f} s)")
            else:
                means[m].append(np.nan)
                cells.append("n/a")
        ratio = np.mean(cpu["SARC"]) / np.mean(cpu["MiniRocket"])
        ratios.append(ratio)
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} |")
        print(f"  {name} done", file=sys.stderr)
    print(
        "| **mean** | "
        + " | ".join(
            f"{np.nanmean(means[m]):.3f}" if np.isfinite(means[m]).any() else "n/a" for m in methods
        )
        + f" | {np.exp(np.mean(np.log(ratios))):.2f} (geo. mean) |"
    )
    d = np.array(means["SARC"]) - np.array(means["MiniRocket"])
    e = np.array(means["SARC"]) - np.array(means["BiESN"])
    print(
        f"\nSARC - MiniRocket: {np.mean(d):+.3f} mean over sets; SARC - BiESN: {np.mean(e):+.3f}; "
        f"SARC ahead of BiESN on {int((e > 0).sum())}/{len(e)} sets"
    )


def part_cv(seeds, names) -> None:
    """U2: the paper's protocol, hyper-parameters by 5-fold CV over PAPER_GRID (120 points)."""
    from spectral_reservoir import SARCClassifierCV

    print("\n## U2: SARCClassifierCV (paper grid, 5-fold) vs defaults\n")
    print("| dataset | SARC defaults | SARC CV | CV fit CPU s | chosen (seed 0) |")
    print("|---|---|---|---|---|")
    for name in names:
        Xtr, ytr = load_bundled(name, "train")
        Xte, yte = load_bundled(name, "test")
        d, c, t, chosen = [], [], [], None
        for s in seeds:
            d.append(SARCClassifier(random_state=s).fit(Xtr, ytr).score(Xte, yte))
            t0 = time.process_time()
            cv = SARCClassifierCV(random_state=s).fit(Xtr, ytr)
            t.append(time.process_time() - t0)
            c.append(float((cv.predict(Xte) == yte).mean()))
            chosen = chosen or cv.best_params_
        print(f"| {name} | {ms(d)} | {ms(c)} | {np.mean(t):.0f} | {chosen} |")
        print(f"  cv {name} done", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--parts", default="s,u")
    ap.add_argument("--datasets", nargs="*", default=None, help="subset of the bundled sets")
    args = ap.parse_args()
    seeds = [0] if args.quick else list(range(args.seeds))
    names = ["GunPoint", "ItalyPowerDemand", "ArrowHead"] if args.quick else [
        "ArrowHead", "GunPoint", "ItalyPowerDemand", "OSULeaf", "ACSF1",
        "PickupGestureWiimoteZ", "BasicMotions", "JapaneseVowels",
    ]  # fmt: skip
    if args.datasets:
        names = args.datasets
    t0 = time.time()
    print(
        f"# SARC benchmark: seeds {seeds}, one thread; aeon {'yes' if have('aeon') else 'no'}, "
        f"reservoirpy {'yes' if have('reservoirpy') else 'no'}"
    )
    if "s" in args.parts.split(","):
        part_s(seeds, [40] if args.quick else [20, 40, 80])
    if "cv" in args.parts.split(","):
        part_cv(
            seeds, args.datasets or ["GunPoint", "ItalyPowerDemand", "ArrowHead", "BasicMotions"]
        )
    if "u" in args.parts.split(","):
        if not have("aeon"):
            print("\n(U skipped: the bundled sets need aeon; run with `uv run --with aeon ...`)")
        else:
            part_u(seeds, names)
    print(f"\ntotal wall time {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
