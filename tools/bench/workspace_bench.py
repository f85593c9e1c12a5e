"""The workspace README's command timings, recorded: the full test suite and the demo tour.

    uv run python tools/bench/workspace_bench.py              # both (~8-14 min on 2 cores)
    uv run python tools/bench/workspace_bench.py --only demo  # the demo tour only (~1 min)

Runs each command as a user does (in this environment, from the repository root), parses what
it prints (pytest's summary line; the demo's package count) and records the wall-clock and
child CPU time to ``results/aware-ml/commands.json``, which the root README renders.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time

from record import ROOT, Run

SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|warnings?)")


def _timed(cmd: list[str]) -> tuple[str, float, float, int]:
    """``(output, wall s, child CPU s, return code)`` of one command run from the root."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=os.environ.copy())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.stdout + proc.stderr, wall, cpu, proc.returncode


def pytest_counts(output: str) -> dict[str, int]:
    """pytest's final summary line as counts (``{"passed": 7388, "skipped": 111, ...}``)."""
    last = [ln for ln in output.splitlines() if " in " in ln and SUMMARY.search(ln)]
    if not last:
        raise RuntimeError("pytest printed no summary line:\n" + output[-2000:])
    return {k.rstrip("s") if k.startswith("error") else k: int(n)
            for n, k in SUMMARY.findall(last[-1])}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["tests", "demo"], default=None)
    args = ap.parse_args(argv)
    run = Run("aware-ml", argv=argv)
    rows, per = [], {}
    if args.only in (None, "demo"):
        exe = os.path.join(os.path.dirname(sys.executable), "aware-ml")
        out, wall, cpu, rc = _timed([exe, "demo"])
        n = len(re.findall(r"^\[\d+/\d+\]", out, re.M))
        rows.append(["uv run aware-ml demo", f"{n} package demos" + ("" if rc == 0 else ", FAILED"),
                     wall, cpu])  # fmt: skip
        per["demo"] = {"returncode": rc, "demos": n}
    if args.only in (None, "tests"):
        out, wall, cpu, rc = _timed([sys.executable, "-m", "pytest", "-q"])
        counts = pytest_counts(out)
        tests = {k: v for k, v in counts.items() if not k.startswith("warning")}
        total = sum(tests.values())
        shown = ", ".join(f"{v:,} {k}" for k, v in tests.items())
        rows.append(["uv run pytest", f"{total:,} tests: {shown}", wall, cpu])
        per["pytest"] = {"returncode": rc, **counts}
    run.table(
        "commands",
        ["command", "result", "wall s", "CPU s (children)"],
        rows,
        fmt=[None, None, ".0f", ".0f"],
        per_seed=per,
        timing=True,
        notes="Run one after the other on the machine named below; wall time includes start-up.",
    )
    return 0 if all(v.get("returncode") == 0 for v in per.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
