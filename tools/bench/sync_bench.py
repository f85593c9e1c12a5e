"""Benchmark: SYNC vs ERM, ERM-last, IRM, LSSAE (and the paper's ablations) on evolving domains.

Every model gets the same backbone width, optimiser, iterations, batch per domain and
intermediate-domain model selection; runs are side by side in one process, one thread, over
seeds. Prints target Avg / Wst accuracy (mean ± std) per dataset, paired differences to SYNC,
the MI estimate over training, and (spurious Circle) the drop against plain Circle.

    uv run python tools/bench/sync_bench.py                       # Circle, Sine, spurious Circle
    uv run python tools/bench/sync_bench.py --ablations          # + variants B, C, D on Circle
    uv run python tools/bench/sync_bench.py --datasets rotated_digits --ablations  # Table 2
    uv run python tools/bench/sync_bench.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import evolving_dg as edg

DATASETS = {
    "circle": lambda s: edg.make_circle(seed=s),
    "sine": lambda s: edg.make_sine(seed=s),
    "spurious_circle": lambda s: edg.make_spurious_circle(seed=s),
    "rotated_digits": lambda s: edg.make_rotated_digits(seed=s),
}
# per-dataset SYNC weights (official scripts) and d_z
HP = {
    "circle": dict(z_dim=20, lambda_evolve=0.01, lambda_mi=1.0, lambda_causal=0.02),
    "spurious_circle": dict(z_dim=20, lambda_evolve=0.01, lambda_mi=1.0, lambda_causal=0.02),
    "sine": dict(z_dim=32, lambda_evolve=0.001, lambda_mi=1.0, lambda_causal=0.001),
    "rotated_digits": dict(z_dim=32, lambda_evolve=0.005, lambda_mi=0.005, lambda_causal=0.001),
}


def models(ds_name: str, args, seed: int) -> dict:
    common = dict(lr=args.lr, epochs=args.epochs, iters_per_epoch=args.iters, width=args.width,
                  batch_per_domain=args.batch, random_state=seed,
                  backbone="cnn" if ds_name == "rotated_digits" else "mlp")  # fmt: skip
    hp = HP[ds_name]
    out = {
        "ERM": edg.ERM(**common),
        "ERMLast": edg.ERMLast(**common),
        "IRM": edg.IRM(**common),
        "LSSAE": edg.LSSAE(z_dim=hp["z_dim"], lambda_evolve=hp["lambda_evolve"], **common),
        "SYNC": edg.SYNC(**hp, **common),
    }
    if args.ablations and ds_name in ("circle", "rotated_digits"):  # paper Table 2: RMNIST
        for v in ("B", "C", "D"):
            out[f"abl-{v}"] = edg.ablation(v, **hp, **common)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["circle", "sine", "spurious_circle"],
                    choices=sorted(DATASETS))  # fmt: skip
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument(
        "--ablations",
        action="store_true",
        help="also SYNC variants B, C, D (Circle, Rotated digits)",
    )
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.epochs, args.iters, args.seeds = 2, 5, 1
    torch.set_num_threads(1)
    res: dict = {}
    mi_curves: dict = {}
    t_all = time.process_time()
    for ds_name in args.datasets:
        for seed in range(args.seeds):
            src, val, tgt = DATASETS[ds_name](seed).default_split()
            for name, m in models(ds_name, args, seed).items():
                t0 = time.process_time()
                accs = m.fit(src, val_domains=val).score_sequence(tgt)
                r = edg.evolving_report(accs)
                res.setdefault((ds_name, name), []).append(
                    (r["avg"], r["worst"], time.process_time() - t0, m.best_epoch_)
                )
                if "mi" in m.history_[0]:
                    mi_curves.setdefault((ds_name, name), []).append([h["mi"] for h in m.history_])
                print(f"{ds_name:<16} seed {seed} {name:<8} avg {r['avg']:.3f} worst "
                      f"{r['worst']:.3f} ({time.process_time() - t0:.0f} CPU s, best epoch "
                      f"{m.best_epoch_})", flush=True)  # fmt: skip
    print(f"\nsettings: {args.epochs} epochs x {args.iters} iterations, batch {args.batch}/domain, "
          f"width {args.width}, lr {args.lr}, {args.seeds} seeds; total {time.process_time() - t_all:.0f} CPU s")  # fmt: skip
    print("\n| dataset | model | target Avg | target Wst | Avg − SYNC (paired) | CPU s/run |")
    print("|---|---|---|---|---|---|")
    for (ds_name, name), rows in res.items():
        a = np.array(rows)
        ref = np.array(res[(ds_name, "SYNC")])
        d = 100 * (a[:, 0] - ref[:, 0])
        print(f"| {ds_name} | {name} | {100 * a[:, 0].mean():.1f} ± {100 * a[:, 0].std(ddof=1) if len(a) > 1 else 0:.1f} "
              f"| {100 * a[:, 1].mean():.1f} ± {100 * a[:, 1].std(ddof=1) if len(a) > 1 else 0:.1f} "
              f"| {d.mean():+.1f} ± {d.std(ddof=1) if len(a) > 1 else 0:.1f} | {a[:, 2].mean():.0f} |")  # fmt: skip
    if "circle" in args.datasets and "spurious_circle" in args.datasets:
        print("\nspurious Circle: target Avg drop against plain Circle (points, mean over seeds)")
        for name in ("ERM", "ERMLast", "IRM", "LSSAE", "SYNC"):
            c = np.array(res[("circle", name)])[:, 0]
            s = np.array(res[("spurious_circle", name)])[:, 0]
            print(f"  {name:<8} {100 * (c - s).mean():+.1f} ± {100 * (c - s).std(ddof=1) if len(c) > 1 else 0:.1f}")  # fmt: skip
    print("\nMI estimate (nats per domain, mean over seeds) at epochs 1 / mid / last")
    for (ds_name, name), curves in mi_curves.items():
        c = np.mean(np.array(curves), 0)
        print(f"  {ds_name:<16} {name:<8} {c[0]:.4f} / {c[len(c) // 2]:.4f} / {c[-1]:.4f}")


if __name__ == "__main__":
    main()
