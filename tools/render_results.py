"""Render README result tables from ``results/<package>/<table>.json``.

Every block between ``<!-- results:<package>/<table> -->`` and ``<!-- /results -->`` in the
workspace README and the package READMEs is replaced by the table the results file holds, its
notes and a provenance line (command, commit, date, machine, load, seeds). The block
``<!-- results:glance -->`` renders every results file that carries a ``headline``.

    uv run python tools/render_results.py           # rewrite the blocks in place
    uv run python tools/render_results.py --check   # exit 1 if any block is stale or unsourced

``--check`` also fails when a block names a results file that does not exist, when a package
README has no generated block, when a table sits in a package README's ``## Results`` section
outside a generated block, or when that section's prose holds a number that none of the
package's results files holds (at the precision printed, or as a percentage) and that the
README's ``<!-- numbers without a results file ... -->`` list does not name under a kind:
``paper`` (the paper's own figures), ``setting`` (a configuration value), ``data`` (a data set's
size), ``derived`` (computed from recorded numbers, with how), ``target`` (an issue's target) or
``test`` (a bound a named test asserts).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "bench"))
from record import ROOT, markdown_table

RESULTS = ROOT / "results"
BLOCK = re.compile(r"(<!-- results:(?P<key>[\w./-]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.S)
OPEN = re.compile(r"<!-- results:([\w./-]+) -->")

__all__ = ["check", "load", "main", "readmes", "render_block", "render_file"]


def readmes(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """The READMEs that may hold result blocks: the workspace one and each package's."""
    return [root / "README.md", *sorted((root / "packages").glob("*/README.md"))]


def load(key: str, results: pathlib.Path = RESULTS) -> dict[str, Any]:
    """The results record ``<package>/<table>``; ``FileNotFoundError`` names the missing file."""
    path = results / f"{key}.json"
    if not path.is_file():
        raise FileNotFoundError(f"results file {path.relative_to(path.parents[2])} is missing")
    return json.loads(path.read_text())


def _machine(m: dict[str, Any]) -> str:
    parts = [f"{m.get('cpu_count')} CPUs"]
    if m.get("affinity") and m.get("affinity") != m.get("cpu_count"):
        parts[0] += f" ({m['affinity']} usable)"
    parts.append(f"Python {m.get('python')}")
    for lib in ("numpy", "torch"):
        if m.get(lib):
            parts.append(f"{lib} {m[lib]}")
    parts.append(f"GPU {m['gpu']}" if m.get("gpu") else "no GPU")
    return ", ".join(parts)


def _seeds(seeds: list[int] | None) -> str:
    if not seeds:
        return ""
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def provenance(rec: dict[str, Any], key: str) -> str:
    """The one-line source note rendered under every generated table."""
    load = rec.get("load") or {}
    bits = [
        f"`{rec['command']}`",
        f"commit `{(rec.get('commit') or 'unknown')[:7]}`"
        + (" + local edits" if rec.get("dirty") else ""),
        (rec.get("recorded") or rec.get("started") or "")[:10],
        _machine(rec.get("machine") or {}),
    ]
    official = (rec.get("extra") or {}).get("official")
    if official:
        commit = (official.get("commit") or "commit unknown")[:7]
        bits.insert(2, f"official `{official['repo']}@{commit}`"
                    + (" + local edits" if official.get("dirty") else ""))  # fmt: skip
    if load.get("max_1min") is not None:
        bits.append(f"load ≤ {load['max_1min']:.1f}")
    if _seeds(rec.get("seeds")):
        bits.append(_seeds(rec.get("seeds")))
    if rec.get("wall_s") is not None:
        bits.append(f"{rec['wall_s']:.0f} s into the run")
    line = f"<sub>Source: `results/{key}.json` · " + " · ".join(b for b in bits if b) + "</sub>"
    cpus = (rec.get("machine") or {}).get("affinity") or (rec.get("machine") or {}).get("cpu_count")
    if rec.get("timing") and load.get("max_1min") and cpus and load["max_1min"] > cpus:
        line = (
            f"**Timed under load {load['max_1min']:.1f} on {cpus} CPUs: the times are inflated "
            "and their ratios less reliable.**\n\n" + line
        )
    return line


def render_file(key: str, results: pathlib.Path = RESULTS) -> str:
    """The Markdown that replaces the body of block ``key``."""
    if key == "glance":
        return _glance(results)
    rec = load(key, results)
    parts = [markdown_table(rec["columns"], rec["rows"], rec.get("fmt"))]
    parts += list(rec.get("notes") or [])
    parts.append(provenance(rec, key))
    return "\n\n".join(parts) + "\n"


def _glance(results: pathlib.Path) -> str:
    order = _package_order()
    rows = []
    for path in sorted(results.glob("*/*.json")):
        rec = json.loads(path.read_text())
        if rec.get("headline"):
            key = f"{path.parent.name}/{path.stem}"
            script = next((w for w in rec["command"].split() if w.startswith("tools/")), "")
            rows.append(
                (
                    order.get(rec["package"], 99),
                    rec["package"],
                    f"`{script}`" if script else "",
                    rec["headline"] + (" (`--quick` run)" if "--quick" in rec["command"] else ""),
                    f"[`{key}`](results/{key}.json) @ `{(rec.get('commit') or '?')[:7]}`",
                )
            )
    rows.sort(key=lambda r: (r[0], r[1], r[4]))
    table = markdown_table(
        ["package", "benchmark", "headline (numbers from the results file)", "source"],
        [r[1:] for r in rows],
    )
    return table + "\n"


def _package_order() -> dict[str, int]:
    names = [p.parent.name for p in readmes()[1:]]
    return {n: i for i, n in enumerate(names)}


def render_block(text: str, results: pathlib.Path = RESULTS) -> tuple[str, list[str]]:
    """Re-render every block of one README; returns the new text and the problems found."""
    problems: list[str] = []

    def sub(m: re.Match[str]) -> str:
        key = m.group("key")
        try:
            body = render_file(key, results)
        except FileNotFoundError as exc:
            problems.append(f"block results:{key}: {exc}")
            return m.group(0)
        return m.group(1) + body + m.group(4)

    new = BLOCK.sub(sub, text)
    n_open, n_closed = len(OPEN.findall(text)), len(BLOCK.findall(text))
    if n_open != n_closed:
        problems.append(f"{n_open - n_closed} results block(s) without a closing <!-- /results -->")
    return new, problems


def _loose_tables(text: str) -> list[str]:
    """Table rows in a ``## Results`` section that no generated block holds."""
    out: list[str] = []
    stripped = BLOCK.sub("", text)
    for sec in re.finditer(r"^## Results[^\n]*\n(.*?)(?=^## |\Z)", stripped, re.S | re.M):
        for line in sec.group(1).splitlines():
            if line.lstrip().startswith("|") and line.rstrip().endswith("|"):
                out.append(line.strip()[:80])
    return out


# A number in a Results section's prose: thousands separators, decimals, an exponent, a sign.
NUMBER = re.compile(
    r"(?<![\w.,#§/^-])[-−+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.]\d|\w)"
)
# The README's list of numbers that no results file holds, each line under a kind:
#   <!-- numbers without a results file
#   paper: 59.57 65.08 (the paper's Table 3)
#   setting: 256 (calibration images)
#   -->
ALLOW = re.compile(r"<!-- numbers without a results file\n(?P<body>.*?)-->", re.S)
KINDS = ("paper", "setting", "data", "derived", "target", "test")


def _section(text: str, title: str = "Results") -> str:
    m = re.search(rf"^## {title}[^\n]*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return m.group(1) if m else ""


def _prose(section: str) -> str:
    """A section without what is not prose: generated blocks, code, links' targets, comments."""
    out = BLOCK.sub("", section)
    out = re.sub(r"<!--.*?-->", "", out, flags=re.S)
    out = re.sub(r"```.*?```", "", out, flags=re.S)
    out = re.sub(r"`[^`\n]*`", "", out)
    out = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", out)
    return "\n".join(ln for ln in out.splitlines() if not ln.lstrip().startswith("|"))


def _value(token: str) -> tuple[float, int]:
    """A prose token as (absolute value, decimals shown)."""
    s = token.replace(",", "").replace("−", "-").lstrip("+-")
    return float(s), (len(s.split(".")[1].split("e")[0]) if "." in s else 0)


def prose_numbers(section: str) -> list[str]:
    """The numbers a reader takes from the prose: every token but small counts (≤ 20) and years."""
    out = []
    for m in NUMBER.finditer(_prose(section)):
        x, d = _value(m.group())
        if d == 0 and "e" not in m.group() and (x <= 20 or 1990 <= x <= 2030):
            continue
        out.append(m.group())
    return out


def source_numbers(package: str, results: pathlib.Path = RESULTS) -> list[float]:
    """Every number written in one package's results files (cells, notes, per-seed values)."""
    vals: set[float] = set()
    for path in (results / package).glob("*.json"):
        for m in re.finditer(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", path.read_text()):
            vals.add(abs(float(m.group())))
    return sorted(vals)


def _held(token: str, values: list[float]) -> bool:
    """Whether ``token`` is one of ``values`` as printed (its precision), or as a percentage."""
    x, d = _value(token)
    if "e" in token.lower():
        return any(abs(v - x) <= 1e-3 * x for v in values)
    return any(abs(round(y, d) - x) < 10 ** -(d + 3) for v in values for y in (v, 100 * v))


def allowed_numbers(text: str) -> tuple[dict[str, str], list[str]]:
    """The README's allow-list ``{token: kind}`` and the problems in it (an unknown kind)."""
    out: dict[str, str] = {}
    problems: list[str] = []
    for m in ALLOW.finditer(text):
        for line in m.group("body").splitlines():
            if not line.strip():
                continue
            kind, _, rest = line.partition(":")
            if kind.strip() not in KINDS:
                problems.append(f"allow-list line '{line.strip()[:60]}' has no kind of {KINDS}")
                continue
            for tok in NUMBER.findall(re.sub(r"\([^)]*\)", "", rest)):
                out[tok.replace("−", "-").lstrip("+")] = kind.strip()
    return out, problems


def unsourced(text: str, package: str, results: pathlib.Path = RESULTS) -> list[str]:
    """Problems: prose numbers of the Results section no results file holds and no allow-list
    line names, and allow-list entries the prose no longer uses."""
    section = _section(text)
    allow, problems = allowed_numbers(text)
    values = source_numbers(package, results)
    seen = set()
    for tok in prose_numbers(section):
        key = tok.replace("−", "-").lstrip("+")
        seen |= {key, key.lstrip("-")}
        if key in allow or key.lstrip("-") in allow or _held(tok, values):
            continue
        problems.append(f"'{tok}' in '## Results' is in no results file of {package}")
    problems += [f"allow-listed {tok} ({kind}) is not in the prose" for tok, kind in allow.items()
                 if tok not in seen]  # fmt: skip
    return problems


def pending(root: pathlib.Path = ROOT) -> dict[str, str]:
    """Packages whose README is not yet migrated to generated tables (``tools/results_pending.txt``:
    ``package  # why``). They are reported, not failed; the workspace issue stays open while the
    file lists any."""
    path = root / "tools" / "results_pending.txt"
    out = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            name, _, why = line.partition("#")
            if name.strip():
                out[name.strip()] = why.strip()
    return out


def check(root: pathlib.Path = ROOT, results: pathlib.Path | None = None) -> list[str]:
    """Every problem ``--check`` reports, as sentences naming the README."""
    results = results or root / "results"
    problems: list[str] = []
    waiting = pending(root)
    for readme in readmes(root):
        if not readme.is_file():
            continue
        rel = readme.relative_to(root)
        text = readme.read_text()
        new, found = render_block(text, results)
        problems += [f"{rel}: {p}" for p in found]
        if new != text:
            stale = [
                m.group("key")
                for m, n in zip(BLOCK.finditer(text), BLOCK.finditer(new), strict=False)
                if m.group(0) != n.group(0)
            ]
            problems.append(
                f"{rel}: generated block(s) {stale} differ from their results files; "
                "run `uv run python tools/render_results.py`"
            )
        if readme.parent.parent.name == "packages" and readme.parent.name != "aware-ml":
            if readme.parent.name in waiting:
                continue
            if not BLOCK.search(text):
                problems.append(f"{rel}: no generated results block")
            for row in _loose_tables(text):
                problems.append(f"{rel}: a table in '## Results' is not generated: {row}")
            problems += [f"{rel}: {p}" for p in unsourced(text, readme.parent.name, results)]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="report, do not write")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(p, file=sys.stderr)
        for name, why in pending().items():
            print(f"pending (tools/results_pending.txt): {name}: {why}")
        print(f"{len(problems)} problem(s)" if problems else "every results block is current")
        return 1 if problems else 0
    changed = 0
    for readme in readmes():
        text = readme.read_text()
        new, problems = render_block(text)
        for p in problems:
            print(f"{readme.relative_to(ROOT)}: {p}", file=sys.stderr)
        if new != text:
            readme.write_text(new)
            changed += 1
            print(f"rewrote {readme.relative_to(ROOT)}")
    print(f"{changed} README(s) changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
