"""The ``aware-ml`` console script: ``demo`` and ``info``."""

import argparse
import importlib
import sys
import time
from collections.abc import Sequence

from aware_ml.registry import DEMO_SECONDS, PACKAGES, import_name, installed_packages

__all__ = ["main", "run_demo"]


def run_demo(package: str, seed: int = 0) -> str:
    """Run one package's demo and return its result table.

    Parameters
    ----------
    package : str
        Distribution name, e.g. ``"isocal"`` or ``"qat-dg"``.
    seed : int, default=0
        Seed passed to the package's ``demo``.

    Returns
    -------
    str
        The table the demo produced.
    """
    if package not in PACKAGES:
        raise ValueError(f"package: unknown package {package!r}; choose from {sorted(PACKAGES)}")
    module = importlib.import_module(import_name(package))
    return module.demo(seed=seed)


def _demo(packages: Sequence[str], seed: int) -> int:
    versions = installed_packages()
    unknown = [p for p in packages if p not in PACKAGES]
    if unknown:
        print(
            f"aware-ml: unknown package(s) {unknown}; choose from {sorted(PACKAGES)}",
            file=sys.stderr,
        )
        return 2
    chosen = list(packages) or [p for p, v in versions.items() if v is not None]
    failed = 0
    start = time.perf_counter()
    for i, name in enumerate(chosen, 1):
        # one progress line per package: where the tour is and roughly how long it has left
        left = sum(DEMO_SECONDS.get(p, 3.0) for p in chosen[i - 1 :])
        print(
            f"[{i}/{len(chosen)}] {name}: {time.perf_counter() - start:.0f}s elapsed, "
            f"~{left:.0f}s left",
            file=sys.stderr,
            flush=True,
        )
        if versions[name] is None:
            print(f"== {name}: not installed (pip install 'aware-ml[{name}]')\n")
            failed += 1
            continue
        print(f"== {name} {versions[name]}: {PACKAGES[name]}", flush=True)
        t0 = time.perf_counter()
        try:
            print(run_demo(name, seed=seed))
        except Exception as exc:  # keep the tour going; report at the end
            print(f"demo failed: {type(exc).__name__}: {exc}")
            failed += 1
        print(f"({time.perf_counter() - t0:.1f}s)\n", flush=True)
    print(f"tour done: {len(chosen)} package(s) in {time.perf_counter() - start:.0f}s", flush=True)
    return 1 if failed else 0


def _info() -> int:
    width = max(map(len, PACKAGES))
    for name, version in installed_packages().items():
        print(f"{name:<{width}}  {version or 'not installed'}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aware-ml`` command."""
    parser = argparse.ArgumentParser(prog="aware-ml", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a short demo of each package's main job")
    demo.add_argument(
        "packages", nargs="*", metavar="PACKAGE", help="packages to run (default: all installed)"
    )
    demo.add_argument("--seed", type=int, default=0)
    sub.add_parser("info", help="list installed aware-ml packages and versions")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo(args.packages, args.seed)
    return _info()


if __name__ == "__main__":
    sys.exit(main())
