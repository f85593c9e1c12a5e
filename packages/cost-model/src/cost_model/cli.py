"""Command line: collect a cost dataset.

    python -m cost_model.cli --backend scipy-cpu --op spmm --n-matrices 300 --configs 48 \\
        --out src.npz
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cost_model.dataset import collect
from cost_model.kernels import Timer, get_backend
from cost_model.matrices import MatrixSet

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, generate matrices, measure, save ``.npz``; returns an exit code."""
    ap = argparse.ArgumentParser(prog="python -m cost_model.cli", description=__doc__)
    ap.add_argument("--backend", required=True, help="scipy-cpu, torch-cpu, sim-cpu, sim-accel")
    ap.add_argument("--op", default="spmm", choices=("spmm", "sddmm"))
    ap.add_argument("--n-matrices", type=int, default=40)
    ap.add_argument("--configs", type=int, default=24)
    ap.add_argument("--dense-width", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="verify kernels against dense")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    ms = MatrixSet.synthetic(args.n_matrices, seed=args.seed)
    ds = collect(
        get_backend(args.backend),
        args.op,
        ms,
        n_configs=args.configs,
        dense_width=args.dense_width,
        seed=args.seed,
        timer=Timer(1, args.repeats),
        check=args.check,
        verbose=True,
    )
    ds.save(args.out)
    print(f"{len(ds)} measurements of {ds.n_matrices} matrices -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
