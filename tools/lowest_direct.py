"""Test one package against the lowest versions its pyproject allows (its dependency floors).

A fresh venv gets the package with ``uv pip install --resolution lowest-direct`` (every direct
dependency at its declared floor; transitive ones as usual) plus pytest, then runs the
package's tests. A floor that is too low fails here instead of on a user's machine.

    uv run python tools/lowest_direct.py isocal            # one package
    uv run python tools/lowest_direct.py --rotate KEY      # the package KEY picks (CI)

``--rotate`` picks one package of ``ROTATION`` from any string (CI passes the commit hash), so
successive CI runs cover every package in turn. Packages that need torch are left out of the
rotation: the lowest torch on PyPI is a multi-gigabyte CUDA build per run; their floors are
checked by hand (``tools/lowest_direct.py sparse-attn``) on a machine with the space.
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"


def _needs_torch(name: str) -> bool:
    deps = tomllib.loads((PACKAGES / name / "pyproject.toml").read_text())["project"].get(
        "dependencies", []
    )
    return any(d.replace(" ", "").lower().startswith("torch") for d in deps)


ROTATION = sorted(
    p.name
    for p in PACKAGES.iterdir()
    if (p / "pyproject.toml").is_file() and p.name != "aware-ml" and not _needs_torch(p.name)
)


def pick(key: str) -> str:
    """The package of ``ROTATION`` that ``key`` selects (stable for a given key)."""
    return ROTATION[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(ROTATION)]


def run(name: str, keep: bool = False) -> int:
    """Install ``name`` at its floors in a fresh venv and run its tests; the exit status."""
    pkg = PACKAGES / name
    if not (pkg / "pyproject.toml").is_file():
        raise SystemExit(f"package: no packages/{name}/pyproject.toml")
    uv = shutil.which("uv") or "uv"
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"lowest-{name}-"))
    t0 = time.time()
    try:
        venv = tmp / "venv"
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
        py = str(venv / "bin" / "python")
        meta = tomllib.loads((pkg / "pyproject.toml").read_text())
        dev = [d for d in meta.get("dependency-groups", {}).get("dev", []) if isinstance(d, str)]
        extras = sorted(meta["project"].get("optional-dependencies", {}))
        target = f"{pkg}[{','.join(extras)}]" if extras else str(pkg)
        cmd = [uv, "pip", "install", "--quiet", "--python", py, "--resolution", "lowest-direct",
               target, "pytest", *dev]  # fmt: skip
        subprocess.run(cmd, check=True)
        freeze = subprocess.run([uv, "pip", "freeze", "--python", py], capture_output=True,
                                text=True, check=True).stdout  # fmt: skip
        print(f"# {name} at its floors:\n" + freeze, flush=True)
        # the tests run against the installed copy (not the source tree), from the package dir
        rc = subprocess.run([py, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                             str(pkg / "tests")], cwd=tmp).returncode  # fmt: skip
        print(f"# {name}: lowest-direct tests exit {rc} in {time.time() - t0:.0f} s")
        return rc
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("package", nargs="?")
    ap.add_argument("--rotate", metavar="KEY", help="pick the package from KEY (CI: the commit)")
    ap.add_argument("--keep", action="store_true", help="keep the venv")
    a = ap.parse_args()
    if bool(a.package) == bool(a.rotate):
        ap.error("give a package or --rotate KEY")
    sys.exit(run(a.package or pick(a.rotate), a.keep))


if __name__ == "__main__":
    main()
