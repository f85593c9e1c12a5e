"""Figures drawn from results files, written beside them as ``results/<package>/<table>.png``.

Every figure is drawn from a results JSON only (the numbers a command recorded), so a figure
never shows a number that no file holds:

- every ``results/*/parity.json``: the largest relative difference to the official code per
  component, on a log scale, with the 1e-5 fp64 target; rows that are documented deviations
  (the paper's behaviour kept as our default) are drawn in another colour;
- ``results/epi-ode/real_us_hhs_horizon_5.json``: each model's RMSE relative to EARTH's with
  its paired 95% CI on the official US-HHS file.

``uv run python tools/plot_results.py`` rewrites them; the docs site shows them next to the
README sections that link them.
"""

from __future__ import annotations

import json
import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
FLOOR = 1e-17  # an exact zero is drawn at the floor (log scale)


def _save(fig, path: pathlib.Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    print(f"wrote {path.relative_to(ROOT)}")


def parity(path: pathlib.Path) -> None:
    d = json.loads(path.read_text())
    cols = d["columns"]
    rel = cols.index("max relative")
    rows = [(r[0], max(float(r[rel]), FLOOR)) for r in d["rows"]]
    fig, ax = plt.subplots(figsize=(8.5, 0.42 * len(rows) + 1.4))
    names = [n for n, _ in rows][::-1]
    vals = [v for _, v in rows][::-1]
    colours = ["#c0392b" if "default" in n or "deviation" in n else "#2c7fb8" for n in names]
    ax.barh(range(len(rows)), vals, color=colours)
    ax.set_xscale("log")
    ax.set_xlim(FLOOR / 2, 10)
    ax.axvline(1e-5, color="k", ls="--", lw=1)
    ax.text(1.2e-5, len(rows) - 0.5, "target 1e-5", fontsize=8, va="top")
    ax.set_yticks(range(len(rows)), [n if len(n) < 58 else n[:55] + "…" for n in names],
                  fontsize=8)  # fmt: skip
    ax.set_xlabel("max relative difference to the official code (log; 0 drawn at 1e-17)")
    ax.set_title(f"{d['package']}: parity with the official code (float64, commit {d['commit'][:7]})",
                 fontsize=9)  # fmt: skip
    _save(fig, path.with_suffix(".png"))


def earth_real(path: pathlib.Path) -> None:
    d = json.loads(path.read_text())
    col = next(i for i, c in enumerate(d["columns"]) if c.startswith("RMSE / EARTH"))
    pts = []
    for r in d["rows"]:
        m = re.match(r"\s*([\d.]+)\s*\[([\d.]+),\s*([\d.]+)\]", str(r[col]))
        if m:
            pts.append((r[0], *map(float, m.groups())))
    pts.sort(key=lambda p: p[1])
    fig, ax = plt.subplots(figsize=(7.0, 0.38 * len(pts) + 1.2))
    for i, (name, v, lo, hi) in enumerate(pts):
        ax.errorbar(v, i, xerr=[[v - lo], [hi - v]], fmt="o",
                    color="#c0392b" if name == "EARTH" else "#2c7fb8", capsize=3)  # fmt: skip
    ax.axvline(1.0, color="k", lw=1)
    ax.set_yticks(range(len(pts)), [p[0] for p in pts], fontsize=8)
    ax.set_xlabel("RMSE / EARTH's RMSE (paired 95% CI over seeds); right of 1 = worse")
    ax.set_title(f"US-HHS ILI, horizon 5 (official EARTH data file), commit {d['commit'][:7]}",
                 fontsize=9)  # fmt: skip
    _save(fig, path.with_suffix(".png"))


def main() -> None:
    for path in sorted(RESULTS.glob("*/parity.json")):
        parity(path)
    earth = RESULTS / "epi-ode" / "real_us_hhs_horizon_5.json"
    if earth.exists():
        earth_real(earth)


if __name__ == "__main__":
    main()
