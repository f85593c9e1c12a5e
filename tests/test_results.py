"""Results as data: README tables are generated from results/ and the docs site builds."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEMPLATE = (
    "## What it implements",
    "## Install",
    "## Quick example",
    "## API",
    "## Results",
    "## Fidelity",
    "## Limitations",
)


def _module(name: str, path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


sys.path.insert(0, str(ROOT / "tools" / "bench"))
record = _module("record", ROOT / "tools" / "bench" / "record.py")
render = _module("render_results", ROOT / "tools" / "render_results.py")


def test_every_readme_table_is_generated_from_its_results_file() -> None:
    problems = render.check()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "readme", sorted((ROOT / "packages").glob("*/README.md")), ids=lambda p: p.parent.name
)
def test_package_readme_follows_the_template(readme: pathlib.Path) -> None:
    if readme.parent.name == "aware-ml":
        pytest.skip("the meta-package has no method of its own")
    if readme.parent.name in render.pending():
        pytest.skip(f"listed in tools/results_pending.txt: {render.pending()[readme.parent.name]}")
    text = readme.read_text()
    heads = [line.strip() for line in text.splitlines() if line.startswith("## ")]
    found = [h for h in heads if h in TEMPLATE]
    assert found == list(TEMPLATE), f"sections {found} (want {list(TEMPLATE)} in this order)"


def test_results_files_hold_provenance() -> None:
    files = sorted((ROOT / "results").glob("*/*.json"))
    assert files, "no results files"
    for f in files:
        rec = json.loads(f.read_text())
        for key in ("command", "commit", "machine", "load", "columns", "rows", "recorded"):
            assert key in rec, f"{f.relative_to(ROOT)} lacks {key!r}"
        # a command a user can paste: `uv run [--with PKG]... python tools/...`
        assert re.match(r"uv run (--with \S+ )*python tools/", rec["command"]), rec["command"]
        assert rec["machine"].get("cpu_count"), f.name
        assert all(len(r) == len(rec["columns"]) for r in rec["rows"]), f.name


def test_seed_averaged_tables_keep_their_per_seed_values() -> None:
    """A table that prints a mean ± spread over several seeds stores the values behind it."""
    bare = []
    for f in sorted((ROOT / "results").glob("*/*.json")):
        rec = json.loads(f.read_text())
        averaged = "±" in json.dumps(rec["rows"], ensure_ascii=False)
        if averaged and len(rec.get("seeds") or []) > 1 and not rec.get("per_seed"):
            bare.append(str(f.relative_to(ROOT)))
    assert not bare, f"seed-averaged tables without per_seed: {bare}"


def test_recorder_round_trip_and_render(tmp_path: pathlib.Path) -> None:
    run = record.Run("demo-pkg", argv=["--seeds", "3"], out=tmp_path / "demo-pkg")
    path = run.table(
        "main",
        ["method", "score", "time s"],
        [["ours", 0.91234, 1.5], ["baseline", float("nan"), None]],
        fmt=[None, ".3f", ".1f"],
        seeds=[0, 1, 2],
        per_seed={"ours": [0.9, 0.91, 0.92]},
        notes="target: score >= 0.9",
        timing=True,
        headline="ours 0.912",
        echo=False,
    )
    rec = json.loads(path.read_text())
    assert rec["command"].endswith("--seeds 3")
    assert rec["rows"][1][1] == "nan" and rec["per_seed"]["ours"] == [0.9, 0.91, 0.92]
    body = render.render_file("demo-pkg/main", tmp_path)
    assert "| ours | 0.912 | 1.5 |" in body and "| baseline | nan | n/a |" in body
    assert "target: score >= 0.9" in body and "seeds 0–2" in body
    # a README block is filled in, then found current; an edited number is found stale
    text = "x\n<!-- results:demo-pkg/main -->\nold\n<!-- /results -->\n"
    new, problems = render.render_block(text, tmp_path)
    assert not problems and "| ours | 0.912 | 1.5 |" in new
    assert render.render_block(new, tmp_path)[0] == new
    _missing, problems = render.render_block("<!-- results:nope/x -->\n<!-- /results -->", tmp_path)
    assert problems and "missing" in problems[0]


def test_quick_runs_never_write_the_recorded_results() -> None:
    run = record.Run("demo-pkg", argv=["--quick", "--seeds", "1"])
    assert record.RESULTS not in run.out.parents and run.out != record.RESULTS / "demo-pkg"
    assert record.Run("demo-pkg", argv=["--seeds", "1"]).out == record.RESULTS / "demo-pkg"


def test_timing_under_load_is_marked(tmp_path: pathlib.Path) -> None:
    run = record.Run("demo-pkg", argv=[], out=tmp_path / "demo-pkg")
    run.loads = [9.0]
    run.sample_load = lambda: None  # keep the fake load
    run.table("t", ["a"], [[1.0]], timing=True, echo=False)
    body = render.render_file("demo-pkg/t", tmp_path)
    assert "Timed under load 9.0" in body


def test_loose_table_in_results_section_is_reported() -> None:
    text = "## Results\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n## Fidelity\n| ok | table |\n"
    assert len(render._loose_tables(text)) == 3


def test_mean_ci_matches_the_t_interval() -> None:
    m, lo, hi = record.mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and abs((hi - lo) / 2 - 2.4841) < 1e-3  # t(0.975, 2) * 1 / sqrt(3)


@pytest.mark.skipif(shutil.which("mkdocs") is None and not (ROOT / ".venv").exists(), reason="")
def test_docs_site_builds_strictly(tmp_path: pathlib.Path) -> None:
    env = {"DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}
    import os

    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "api" / "isocal" / "index.html").is_file()
    assert "GuanchengWan/EARTH" in (tmp_path / "workspace" / "index.html").read_text()
    # every public name has an API entry (its heading's anchor), and no Sphinx role is raw text
    pages = _module("gen_pages", ROOT / "docs" / "gen_pages.py")
    missing, raw = [], []
    for pkg in pages.PACKAGES:
        if pkg.name == "aware-ml":
            continue
        html = (tmp_path / "api" / pkg.name / "index.html").read_text()
        ids = set(re.findall(r'id="([^"]+)"', html))
        missing += [f"{pkg.name}: {n}" for n, path in pages.api_entries(pages._import_name(pkg))
                    if path not in ids]  # fmt: skip
    for page in tmp_path.rglob("*.html"):
        raw += [str(page)] * bool(ROLE_TEXT.search(page.read_text()))
    assert not missing, missing
    assert not raw, raw
    # the package pages show the plots their READMEs link
    for pkg in pages.PACKAGES:
        if pkg.name != "aware-ml":
            assert "<img" in (tmp_path / "packages" / pkg.name / "index.html").read_text(), pkg.name


ROLE_TEXT = re.compile(r":(?:class|func|meth|attr|mod|obj|data|exc|math):(?:<code>|`)")


def test_docs_roles_become_markdown() -> None:
    roles = _module("griffe_roles", ROOT / "docs" / "griffe_roles.py")
    text = "See :func:`~a.b.c`, :class:`X` and :math:`\\log F`.\n\n.. math:: a = b\n   + c\n\nEnd."
    assert roles.render_roles(text) == (
        "See `c`, `X` and \\(\\log F\\).\n\n\\[ a = b + c \\]\n\nEnd."
    )


def test_docs_broken_image_fails_the_build(tmp_path: pathlib.Path) -> None:
    pages = _module("gen_pages", ROOT / "docs" / "gen_pages.py")
    readme = ROOT / "packages" / "isocal" / "README.md"
    with pytest.raises(FileNotFoundError, match=r"missing\.png"):
        pages.rewrite_links(
            "![plot](../../results/isocal/missing.png)", readme, "packages/isocal.md"
        )
    ok = pages.rewrite_links("[code](src/isocal/wrapper.py)", readme, "packages/isocal.md")
    assert ok == "`code`"


def test_prose_numbers_need_a_source(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "t.json").write_text(json.dumps({"rows": [["a", 0.4537, "0.812 ± 0.01"]]}))
    text = (
        "## Results\n\nEARTH scores 0.454 (45.4 %) and 0.81; 3 seeds in 2025. The paper reports "
        "78.39, we invented 0.777.\n\n<!-- numbers without a results file\npaper: 78.39 (Table 3)\n"
        "-->\n\n## Fidelity\n\n0.999 outside the section is not checked.\n"
    )
    assert render.unsourced(text, "pkg", tmp_path) == [
        "'0.777' in '## Results' is in no results file of pkg"
    ]
    stale = text.replace("paper: 78.39", "paper: 78.39 12.5")
    assert (
        render.unsourced(stale, "pkg", tmp_path)[-1]
        == "allow-listed 12.5 (paper) is not in the prose"
    )
    unknown = text.replace("paper: 78.39", "guess: 0.777")
    assert "has no kind" in render.unsourced(unknown, "pkg", tmp_path)[0]
    # the precision printed counts: 0.4537 is not 0.45370001 rounded differently
    assert render._held("0.4537", [0.4537]) and not render._held("0.4538", [0.4537])


def test_workspace_status_covers_every_package_from_results_files() -> None:
    status = _module("workspace_status", ROOT / "tools" / "workspace_status.py")
    names = {p.parent.name for p in (ROOT / "packages").glob("*/README.md")} - {"aware-ml"}
    assert set(status.SOURCES) == names  # all 18 packages
    table = status.table()
    assert len(table.strip().splitlines()) == 2 + len(names)
    for pkg, src in status.SOURCES.items():
        for key in src.get("parity", []) + src["real"] + src["generator"]:
            assert key.startswith(pkg + "/") and (ROOT / "results" / f"{key}.json").is_file()
    # a parity harness's record names the official commit it ran against
    assert "`GuanchengWan/EARTH` @ `" in table
