"""Benchmark: system-aware unlearning (Algorithm 1) vs full retraining, SISA and Newton removal.

For each data set, every method is fitted on the training stream and then serves single-point
deletion requests; the table reports test accuracy, stored fraction of the data, memory, fit time
and milliseconds per deletion, with time and memory ratios against full retraining.

    uv run python tools/bench/unlearn_bench.py            # bundled data + margin streams 2e5, 1e6
    uv run python tools/bench/unlearn_bench.py --quick    # small sizes, ~1 minute
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sys_unlearn import (
    NewtonRemovalLogisticRegression,
    RetrainingClassifier,
    SelectiveSamplingClassifier,
    SISAClassifier,
    make_margin_stream,
)
from sys_unlearn.experiment import deletion_experiment, format_table


def unit_ball(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standardize, then scale so that training rows have norm <= 1 (the paper's assumption)."""
    scaler = StandardScaler().fit(X_train)
    A, B = scaler.transform(X_train), scaler.transform(X_test)
    r = np.linalg.norm(A, axis=1).max()
    return A / r, B / r


def datasets(
    quick: bool, seed: int
) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    out = []
    for name, loader in [
        ("breast_cancer (K=2)", load_breast_cancer),
        ("digits (K=10)", load_digits),
    ]:
        X, y = loader(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
        Xtr, Xte = unit_ball(Xtr, Xte)
        out.append((name, Xtr, Xte, ytr, yte))
    sizes = [20_000] if quick else [200_000, 1_000_000]
    for n in sizes:
        X, y = make_margin_stream(n + 20_000, 100, margin=0.1, label_noise=0.0, random_state=seed)
        out.append((f"margin n={n:.0e} d=100", X[:n], X[n:], y[:n], y[n:]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    parser.add_argument(
        "--kappa", type=float, nargs="+", default=[0.5, 0.9], help="query exponents of Algorithm 1"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--budget", type=float, default=10.0, help="seconds of one-at-a-time deletions per method"
    )
    args = parser.parse_args()
    # one BLAS thread for every method: a fair, repeatable comparison on a shared machine
    with threadpool_limits(1):
        run(args)


def run(args: argparse.Namespace) -> None:
    for name, X, X_test, y, y_test in datasets(args.quick, args.seed):
        t0 = time.perf_counter()
        kappa = args.kappa[0]
        ours = SelectiveSamplingClassifier(kappa=kappa).fit(X, y)
        core = ours.stored_ids_
        max_del = 1000 if len(X) >= 10_000 else 100
        checkpoints = [k for k in (0, 10, 100, 1000) if k <= min(max_del, len(core) - 1)]
        rng = np.random.default_rng(args.seed)
        worst = rng.permutation(core)[: max(checkpoints)]  # requests that hit the core set
        methods = {f"selective k={k}": SelectiveSamplingClassifier(kappa=k) for k in args.kappa}
        methods |= {
            "full retraining": RetrainingClassifier(),
            "SISA (5 shards)": SISAClassifier(n_shards=5, random_state=args.seed),
        }
        if np.unique(y).size == 2:
            methods["Newton removal (LR)"] = NewtonRemovalLogisticRegression(lam=1e-4)
        rows = deletion_experiment(
            methods, X, y, X_test, y_test, worst, checkpoints=checkpoints, time_budget=args.budget
        )
        print(
            f"\n## {name}: n={len(X)}, d={X.shape[1]}, deletions drawn from the k={kappa} core set"
        )
        print(format_table(rows, reference="full retraining"))
        # random requests: most ids were never stored, so they cost nothing
        rand = rng.permutation(len(X))[: max(checkpoints)]
        model = SelectiveSamplingClassifier(kappa=kappa).fit(X, y)
        t1 = time.perf_counter()
        for i in rand:
            model.unlearn([i])
        per = 1e3 * (time.perf_counter() - t1) / len(rand)
        hit = np.isin(rand, core).mean()
        print(
            f"random requests: {len(rand)} deletions, {hit:.1%} hit the core set, "
            f"{per:.3f} ms/deletion for Algorithm 1 (k={kappa}); section took {time.perf_counter() - t0:.0f}s"
        )


if __name__ == "__main__":
    main()
