"""Figures drawn from results files, written beside them as ``results/<package>/<table>.png``.

Every figure is drawn from a results JSON only (the numbers a command recorded), so a figure
never shows a number that no file holds:

- every ``results/*/parity.json``: the largest relative difference to the official code per
  component, on a log scale, with the 1e-5 fp64 target; rows that are documented deviations
  (the paper's behaviour kept as our default) are drawn in another colour;
- ``results/epi-ode/real_us_hhs_horizon_5.json``: each model's RMSE relative to EARTH's with
  its paired 95% CI on the official US-HHS file;
- one headline figure for every other package (``summaries``): each row's value with its
  interval (``m ± sd`` or ``m [lo, hi]`` as the table holds it), or curves over columns.

``uv run python tools/plot_results.py`` rewrites them; the docs site shows them next to the
README sections that link them.
"""

from __future__ import annotations

import json
import pathlib
import re
import textwrap

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


CELL = re.compile(
    r"^\s*\**([-+]?[\d.]+(?:e[-+]?\d+)?)\**"  # value (bold marks a table's best)
    r"(?:\s*±\s*([\d.]+(?:e[-+]?\d+)?)"  # ± spread
    r"|\s*\[([-+]?[\d.]+(?:e[-+]?\d+)?),\s*([-+]?[\d.]+(?:e[-+]?\d+)?)\])?"  # [lo, hi]
)


def cell(value) -> tuple[float, float, float] | None:
    """``(value, low, high)`` from a table cell: a number, ``m ± s`` or ``m [lo, hi]``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value), float(value), float(value)
    m = CELL.match(str(value or ""))
    if not m:
        return None
    v = float(m.group(1))
    if m.group(2):
        s = float(m.group(2))
        return v, v - s, v + s
    if m.group(3):
        return v, float(m.group(3)), float(m.group(4))
    return v, v, v


def _rows(key: str) -> tuple[dict, list[list]]:
    d = json.loads((RESULTS / f"{key}.json").read_text())
    return d, d["rows"]


def dots(key: str, columns: list[str], labels: list[str], title: str, xlabel: str, *,
         name: str = "summary", log: bool = False, ref: float | None = None) -> None:  # fmt: skip
    """One row per table row, one marker per column (value with its interval) on a shared axis."""
    d, rows = _rows(key)
    cols = d["columns"]
    li = [cols.index(c) for c in labels]
    series = [(c, cols.index(c)) for c in columns]
    rows = [r for r in rows if any(cell(r[j]) for _, j in series)]
    fig, ax = plt.subplots(figsize=(8.0, 0.34 * len(rows) * max(1, len(series) / 2) + 1.5))
    step = 0.7 / max(len(series), 1)
    for s, (c, j) in enumerate(series):
        off = (s - (len(series) - 1) / 2) * step
        for i, r in enumerate(rows[::-1]):
            pt = cell(r[j])
            if pt is None:
                continue
            v, lo, hi = pt
            ax.errorbar(v, i + off, xerr=[[v - lo], [hi - v]], fmt="o", ms=4, capsize=2,
                        color=f"C{s}", label=c if i == 0 or not ax.get_legend_handles_labels()[1].count(c) else None)  # fmt: skip
    if ref is not None:
        ax.axvline(ref, color="k", lw=1)
    if log:
        ax.set_xscale("log")
    names = [" · ".join(str(r[k]).strip("*") for k in li) for r in rows[::-1]]
    ax.set_yticks(range(len(rows)), [n if len(n) < 60 else n[:57] + "…" for n in names], fontsize=8)
    ax.set_xlabel(xlabel, fontsize=9)
    if len(series) > 1:
        handles, texts = ax.get_legend_handles_labels()
        uniq = dict(zip(texts, handles, strict=True))
        ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="best")
    ax.set_title(textwrap.fill(f"{title} (commit {d['commit'][:7]})", 90), fontsize=9)
    _save(fig, RESULTS / key.split("/")[0] / f"{name}.png")


def lines(key: str, columns: list[str], labels: list[str], title: str, ylabel: str, *,
          group: str, name: str = "summary") -> None:  # fmt: skip
    """One panel per value of ``group``; one line per row over ``columns`` with intervals."""
    d, rows = _rows(key)
    cols = d["columns"]
    gi, li = cols.index(group), [cols.index(c) for c in labels]
    groups = list(dict.fromkeys(r[gi] for r in rows))
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.6), squeeze=False)
    for ax, g in zip(axes[0], groups, strict=True):
        for s, r in enumerate(r for r in rows if r[gi] == g):
            pts = [cell(r[cols.index(c)]) for c in columns]
            x = [i for i, p in enumerate(pts) if p]
            v = [pts[i][0] for i in x]
            ax.plot(x, v, "o-", ms=3, color=f"C{s}", label=" · ".join(str(r[k]) for k in li))
            ax.fill_between(x, [pts[i][1] for i in x], [pts[i][2] for i in x], color=f"C{s}",
                            alpha=0.15)  # fmt: skip
        ax.set_xticks(range(len(columns)), columns, fontsize=7, rotation=20)
        ax.set_title(str(g), fontsize=9)
        ax.set_ylabel(ylabel, fontsize=8)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.suptitle(f"{title} (commit {d['commit'][:7]})", fontsize=9)
    _save(fig, RESULTS / key.split("/")[0] / f"{name}.png")


def sync_circle() -> None:
    """evolving-dg: the official SYNC code beside our port on the same CIDA Circle file."""
    off, (row,) = _rows("evolving-dg/official_code_circle")
    ours, rows = _rows("evolving-dg/cida_circle_official_b64_reference")
    pts = [("official SYNC code", cell(row[off["columns"].index("target Avg % (selected)")]),
            cell(row[off["columns"].index("target Wst %")]))]  # fmt: skip
    c = ours["columns"]
    pts += [(f"ours: {r[0]}", cell(r[c.index("target Avg %")]), cell(r[c.index("target Wst %")]))
            for r in rows]  # fmt: skip
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(pts) + 1.4))
    for s, label in enumerate(("target Avg %", "target Wst %")):
        for i, p in enumerate(pts[::-1]):
            v, lo, hi = p[1 + s]
            ax.errorbar(v, i + (s - 0.5) * 0.3, xerr=[[v - lo], [hi - v]], fmt="o", ms=4,
                        capsize=2, color=f"C{s}", label=label if i == 0 else None)  # fmt: skip
    ax.set_yticks(range(len(pts)), [p[0] for p in pts[::-1]], fontsize=8)
    ax.set_xlabel("target-domain accuracy % (mean ± sd over 3 seeds)", fontsize=9)
    ax.legend(fontsize=7)
    ax.set_title(textwrap.fill("evolving-dg: CIDA Circle, official code vs our port (same file, "
                 f"schedule and selection; commits {off['commit'][:7]}, {ours['commit'][:7]})", 90),
                 fontsize=9)  # fmt: skip
    _save(fig, RESULTS / "evolving-dg" / "circle.png")


def summaries() -> None:
    """The headline figure of every package without a parity plot, from its main results file."""
    dots("brain-gcl/ood", ["ID accuracy (held-out 20% of sites 0-3)", "OOD accuracy (site 4)"],
         ["model"], "brain-gcl: in- and out-of-distribution accuracy (mean ± sd over seeds)",
         "accuracy", name="ood")  # fmt: skip
    dots("causal-ts/auroc_var", ["mean AUROC (± std over seeds)"], ["method"],
         "causal-ts: mean AUROC on make_var (± sd over seeds)", "AUROC", name="auroc_var",
         ref=0.5)  # fmt: skip
    dots("cost-model/sim_spmm", ["top-1 speedup [95% CI]"], ["strategy", "target data"],
         "cost-model: top-1 speedup over the default schedule (95% CI)", "speedup (1 = default)",
         name="sim_spmm", ref=1.0)  # fmt: skip
    sync_circle()
    dots("gfn-symmetry/atom", ["L1(p, target)"], ["loss", "method"],
         "gfn-symmetry: L1 to the target distribution, atom MDP (mean ± sd)", "L1 (log)",
         name="atom", log=True)  # fmt: skip
    dots("isocal/paired", ["mean Δ over cells [95% CI]"], ["comparison (log loss)"],
         "isocal: paired log-loss differences over dataset × model cells (95% CI)",
         "Δ log loss (left of 0 = first method better)", name="paired", ref=0.0)  # fmt: skip
    dots("kd-losses/dakd", ["val NLL"], ["method"], "kd-losses: DA-KD, validation NLL (mean ± sd)",
         "validation NLL", name="dakd")  # fmt: skip
    dots("learngene/untrained", ["avg ± sd"], ["init"],
         "learngene: accuracy of untrained initialisations over 7 tasks (mean ± sd)",
         "accuracy %", name="untrained")  # fmt: skip
    dots("nas-puzzle/equal_speed", ["KL after GKD (geo-mean [95% CI])"], ["speedup", "method"],
         "nas-puzzle: KL to the parent at equal speed (geo-mean, 95% CI)", "KL (log)",
         name="equal_speed", log=True)  # fmt: skip
    dots("pareto-merge/cnn_unlabeled", ["hypervolume"], ["method"],
         "pareto-merge: hypervolume of the merged front (mean ± sd)", "hypervolume",
         name="cnn_unlabeled")  # fmt: skip
    dots("sparse-attn/cca_speed", ["speedup"], ["s", "L", "dtype", "pass"],
         "sparse-attn: CCA speed over dense attention (CPU)", "speedup (1 = dense)",
         name="cca_speed", ref=1.0)  # fmt: skip
    dots("spectral-reservoir/accuracy", ["SARC", "BiESN", "MiniRocket", "1-NN DTW"], ["dataset"],
         "spectral-reservoir: UCR test accuracy (mean ± sd)", "accuracy", name="accuracy")  # fmt: skip
    lines("sys-unlearn/curve", ["0% deleted", "10% deleted", "20% deleted", "40% deleted",
          "60% deleted"], ["method"], "sys-unlearn: test accuracy as points are deleted (95% CI)",
          "test accuracy", group="data", name="curve")  # fmt: skip
    dots("vlm-pseudolabel/trzsl", ["H", "seen acc", "unseen acc"], ["method"],
         "vlm-pseudolabel: transductive zero-shot (mean ± sd)", "accuracy / harmonic mean",
         name="trzsl")  # fmt: skip


def main() -> None:
    for path in sorted(RESULTS.glob("*/parity.json")):
        parity(path)
    earth = RESULTS / "epi-ode" / "real_us_hhs_horizon_5.json"
    if earth.exists():
        earth_real(earth)
    summaries()


if __name__ == "__main__":
    main()
