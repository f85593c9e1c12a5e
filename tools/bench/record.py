"""Results as data: every benchmark table is written to ``results/<package>/<table>.json``.

A benchmark opens one :class:`Run` and passes each table it prints through
:meth:`Run.table`, which prints the table as Markdown and writes a JSON file holding the exact
command, the git commit (and whether the tree was dirty), the date, the machine (CPU count,
platform, library versions, GPU or not), the load average sampled while the run went on, the
seeds, the per-seed values and the aggregated rows. ``tools/render_results.py`` turns those files
into the README tables between ``<!-- results:<package>/<table> -->`` markers; a README table
that no results file produced fails ``render_results.py --check`` (run by the test suite).

Cells are numbers, strings or ``None``; ``fmt`` gives one format spec per column (``".3f"``) or a
single spec for every numeric cell, so the files keep numbers as numbers.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import numbers
import os
import pathlib
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"

__all__ = [
    "RESULTS",
    "ROOT",
    "Run",
    "child_json",
    "fmt_ci",
    "fmt_sd",
    "format_cell",
    "machine_info",
    "markdown_table",
    "mean_ci",
]


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=20
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """CPU count, platform and library versions of this process, and whether a GPU is visible."""
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
    }
    for dist in ("numpy", "scipy", "scikit-learn", "torch", "transformers"):
        v = _version(dist)
        if v is not None:
            info[dist] = v
    gpu = None
    if "torch" in sys.modules:  # never import torch just to look
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    info["gpu"] = gpu
    return info


def format_cell(value: Any, spec: str | None) -> str:
    """One table cell as text: ``None`` -> ``n/a``, numbers through ``spec``, the rest as is."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Real) and spec:
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return format(value, spec)
    return str(value)


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: Any = None) -> str:
    """A GitHub Markdown table; ``fmt`` is one spec for all cells or one per column."""
    specs = list(fmt) if isinstance(fmt, list | tuple) else [fmt] * len(columns)
    if len(specs) != len(columns):
        raise ValueError(f"fmt: {len(specs)} specs for {len(columns)} columns")
    head = [str(c).replace("|", "\\|") for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"rows: a row has {len(row)} cells for {len(columns)} columns")
        cells = [format_cell(v, s).replace("|", "\\|") for v, s in zip(row, specs, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _jsonable(obj: Any) -> Any:
    """numpy / torch scalars and arrays to plain Python, non-finite floats to strings."""
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, str):  # numpy arrays / scalars, tensors
        return _jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


class Run:
    """One benchmark run: its provenance, and the tables it records.

    Parameters
    ----------
    package : str
        Distribution name (``"isocal"``): tables go to ``results/<package>/``.
    argv : sequence of str, optional
        The script's arguments (default ``sys.argv[1:]``), recorded in the command line.
    out : path, optional
        Folder to write into instead of ``results/<package>`` (tests, scratch runs).
    uv_with : sequence of str, optional
        Packages the run needs beyond the workspace (``uv run --with aeon``), recorded in the
        command so that it reruns as written.
    """

    def __init__(
        self,
        package: str,
        argv: Sequence[str] | None = None,
        out: str | os.PathLike[str] | None = None,
        uv_with: Sequence[str] = (),
    ) -> None:
        self.package = package
        script = pathlib.Path(sys.argv[0]).resolve()
        try:
            script_rel = script.relative_to(ROOT).as_posix()
        except ValueError:
            script_rel = script.name
        args = list(sys.argv[1:] if argv is None else argv)
        launcher = "uv run " + "".join(f"--with {w} " for w in uv_with) + "python"
        self.command = " ".join([launcher, script_rel, *map(shlex.quote, args)]).strip()
        if out is None and "--quick" in args:
            # a smoke run must never replace the recorded results the READMEs are built from
            out = tempfile.mkdtemp(prefix=f"{package}-quick-")
            print(f"--quick: results written to {out}, not to results/{package}/")
        self.out = pathlib.Path(out) if out is not None else RESULTS / package
        self.commit = _git("rev-parse", "HEAD")
        # uncommitted edits to this package or to the benchmarks mean the commit does not pin
        # the code that ran (edits elsewhere in the workspace cannot change these numbers)
        status = _git(
            "status", "--porcelain", "--untracked-files=no", "--", f"packages/{package}", "tools"
        )
        self.dirty = bool(status)
        self.started = _dt.datetime.now(_dt.UTC)
        self._t0 = time.perf_counter()
        self._cpu0 = time.process_time()
        self.machine = machine_info()
        self._source_hash()  # at start: cached values belong to the code that was loaded
        self.loads: list[float] = []
        self.sample_load()

    def sample_load(self) -> float | None:
        """Record the 1-minute load average now (call it inside long loops; tables call it)."""
        try:
            load = os.getloadavg()[0]
        except OSError:
            return None
        self.loads.append(round(load, 2))
        return load

    def provenance(self) -> dict[str, Any]:
        """Command, commit, dates, machine and load so far, as stored in every results file."""
        self.sample_load()
        return {
            "command": self.command,
            "commit": self.commit,
            "dirty": self.dirty,
            "started": self.started.isoformat(timespec="seconds"),
            "recorded": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "wall_s": round(time.perf_counter() - self._t0, 1),
            "machine": self.machine,
            "load": {
                "max_1min": max(self.loads) if self.loads else None,
                "mean_1min": round(sum(self.loads) / len(self.loads), 2) if self.loads else None,
                "samples": len(self.loads),
            },
        }

    def table(
        self,
        name: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        title: str | None = None,
        fmt: Any = None,
        seeds: Sequence[int] | None = None,
        per_seed: Mapping[str, Any] | None = None,
        notes: Sequence[str] | str | None = None,
        timing: bool = False,
        headline: str | None = None,
        extra: Mapping[str, Any] | None = None,
        echo: bool = True,
    ) -> pathlib.Path:
        """Print one table and write ``<out>/<name>.json``; returns the file's path.

        Parameters
        ----------
        name : str
            File stem, letters, digits, ``-`` and ``_`` (``"main"``, ``"scale"``).
        columns, rows : sequences
            Header and rows; each row has one cell per column.
        title : str, optional
            One line printed above the table (not rendered into READMEs: the README's prose
            says what the table is).
        fmt : str or sequence of str, optional
            Format spec for numeric cells (one, or one per column).
        seeds : sequence of int, optional
            The seeds the rows aggregate.
        per_seed : mapping, optional
            The raw per-seed values behind the rows (any JSON-able nesting).
        notes : str or sequence of str, optional
            Lines rendered under the table (targets, what a column means).
        timing : bool, default=False
            The table holds times: rendering marks it when the load exceeded the CPU count.
        headline : str, optional
            One-sentence summary used by the workspace README's results-at-a-glance table.
        extra : mapping, optional
            Anything else worth keeping (configuration, curves).
        """
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise ValueError(f"name: {name!r} must be letters, digits, '-' or '_'")
        rows = _jsonable([list(r) for r in rows])
        text = markdown_table(columns, rows, fmt)
        notes_list = [notes] if isinstance(notes, str) else list(notes or [])
        if echo:
            print(f"\n## {title}\n" if title else "", flush=True)
            print(text)
            for line in notes_list:
                print(f"\n{line}")
            print(flush=True)
        record = {
            "package": self.package,
            "table": name,
            "title": title,
            **self.provenance(),
            "timing": timing,
            "seeds": list(seeds) if seeds is not None else None,
            "columns": list(columns),
            "fmt": list(fmt) if isinstance(fmt, list | tuple) else fmt,
            "rows": rows,
            "notes": notes_list,
            "headline": headline,
            "per_seed": per_seed,
            "extra": extra,
        }
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / f"{name}.json"
        path.write_text(json.dumps(_jsonable(record), indent=1, allow_nan=False) + "\n")
        return path

    def cached(self, key: str, compute: Any) -> Any:
        """``compute()``'s JSON-able result, stored under ``tools/bench/.cache/<package>/``.

        The cache is keyed by ``key`` and a hash of the package's source, so a rerun after a
        crash resumes where it stopped, and any code change starts afresh.
        """
        path = self._cache_path(key)
        if path.is_file():
            return json.loads(path.read_text())["value"]
        value = compute()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": key, "value": _jsonable(value)}))
        return value

    def is_cached(self, key: str) -> bool:
        """Whether :meth:`cached` would return a stored value for ``key`` (skip submitting work)."""
        return self._cache_path(key).is_file()

    def _cache_path(self, key: str) -> pathlib.Path:
        folder = ROOT / "tools" / "bench" / ".cache" / self.package / self._source_hash()
        return folder / (hashlib.sha1(key.encode()).hexdigest()[:16] + ".json")

    def _source_hash(self) -> str:
        if not hasattr(self, "_src_hash"):
            h = hashlib.sha1()
            for f in sorted((ROOT / "packages" / self.package / "src").rglob("*.py")):
                h.update(f.read_bytes())
            self._src_hash = h.hexdigest()[:12]
        return self._src_hash

    def figure(self, fig: Any, name: str, *, dpi: int = 110) -> pathlib.Path:
        """Save a matplotlib figure as ``<out>/<name>.png`` (the docs site shows it)."""
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise ValueError(f"name: {name!r} must be letters, digits, '-' or '_'")
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / f"{name}.png"
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        print(f"figure written to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        return path


def child_json(code: str, *args: str, fixed_mmap: bool = False) -> Any:
    """The JSON on the last stdout line of ``python -c code *args`` run in a fresh process.

    ``fixed_mmap=True`` fixes glibc's mmap threshold at 64 KB, so that a freed block leaves the
    resident set at once: for peak-memory probes (by default the heap keeps freed blocks of up
    to 32 MB, and a later call reuses them unseen). Leave it off when timing: every mmap /
    munmap then costs page faults.
    """
    env = dict(os.environ)
    if fixed_mmap:
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean and a Student-t confidence interval (paired differences: pass the differences).

    With one value the interval is ``(nan, nan)``: no spread, no interval.
    """
    import numpy as np
    from scipy import stats

    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("values: empty")
    m = float(x.mean())
    if x.size < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


def fmt_ci(values: Sequence[float], digits: int = 3, scale: float = 1.0, sign: bool = False) -> str:
    """``"+0.123 [+0.050, +0.196]"``: the mean and its 95% interval, for a table cell."""
    m, lo, hi = mean_ci([v * scale for v in values])
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    if math.isnan(lo):
        return f.format(m)
    return f"{f.format(m)} [{f.format(lo)}, {f.format(hi)}]"


def fmt_sd(values: Sequence[float], digits: int = 3, scale: float = 1.0) -> str:
    """``"0.812 ± 0.031"``: mean ± sample standard deviation over seeds."""
    import numpy as np

    x = np.asarray(values, dtype=float) * scale
    if x.size < 2:
        return f"{x.mean():.{digits}f}"
    return f"{x.mean():.{digits}f} ± {x.std(ddof=1):.{digits}f}"
