"""The workspace status table: official code, parity and verdicts of all 18 packages.

Every cell but the official repositories' names comes from a results file: the parity tables
(``results/<pkg>/parity.json``, with the official commit they ran against), and the headlines
of the files named below as each package's verdict on real data and on its generator. The
mapping says which file answers which question; the numbers are the files'. The docs site
renders it as ``workspace.md`` (``docs/gen_pages.py``); ``python tools/workspace_status.py``
prints it.
"""

from __future__ import annotations

import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
TARGET = 1e-5  # the parity target (relative, float64)

# official: (repo or None, what the stored snapshot holds / why no harness); parity: results
# keys that compare with the official code; real / generator: results keys whose headline is
# the package's verdict on real data (files the official code or a library ships) and on its
# own generator
SOURCES: dict[str, dict] = {
    "isocal": {"official": (None, "none found"), "real": ["isocal/main"], "generator": []},
    "qat-dg": {
        "official": ("saqibjaved1/QT-DoG", None),
        "parity": ["qat-dg/parity"],
        "real": [],
        "generator": ["qat-dg/accuracy_wide"],
    },
    "kd-losses": {
        "official": (None, "none found (DA-KD)"),
        "real": [],
        "generator": ["kd-losses/dakd_paired"],
    },
    "sparse-attn": {
        "official": (
            "chenyaofo/CCA-Attention, dddavid4real/Querent",
            "project page / LICENSE and README only: no code",
        ),
        "real": [],
        "generator": ["sparse-attn/mil", "sparse-attn/cca_speed"],
    },
    "causal-ts": {
        "official": ("kimanki/CAROTS", "LICENSE and README only: no code"),
        "real": ["causal-ts/daphnet"],
        "generator": ["causal-ts/halves"],
    },
    "gfn-symmetry": {
        "official": (
            "hohyun312/sagfn",
            "symmetry quantities and TB loss: the policy is a PyG GPS model",
        ),
        "parity": ["gfn-symmetry/parity"],
        "real": [],
        "generator": ["gfn-symmetry/atom"],
    },
    "lomap-planner": {
        "official": ("leekwoon/lomap", None),
        "parity": ["lomap-planner/parity"],
        "real": [],
        "generator": ["lomap-planner/main"],
    },
    "sys-unlearn": {
        "official": (None, "none found"),
        "real": [],
        "generator": ["sys-unlearn/margin"],
    },
    "pareto-merge": {
        "official": (None, "none found"),
        "real": [],
        "generator": ["pareto-merge/conflict"],
    },
    "nas-puzzle": {
        "official": (None, "none found (Puzzle)"),
        "real": [],
        "generator": ["nas-puzzle/equal_speed"],
    },
    "cost-model": {
        "official": (None, "none found (COGNATE)"),
        "real": ["cost-model/mtx_headroom"],
        "generator": ["cost-model/sim_spmm_paired"],
    },
    "vlm-pseudolabel": {
        "official": (
            "Noahwangyuchen/CAP",
            "margin and losses: the training is an accelerate pipeline on image folders",
        ),
        "parity": ["vlm-pseudolabel/parity"],
        "real": [],
        "generator": ["vlm-pseudolabel/ssl"],
    },
    "evolving-dg": {
        "official": ("BIT-DA/SYNC", None),
        "parity": ["evolving-dg/parity", "evolving-dg/official_code_circle"],
        "real": [
            "evolving-dg/cida_circle_official_b64_reference_source_switches",
            "evolving-dg/cida_circle_official_b64_reference",
        ],
        "generator": ["evolving-dg/circle"],
    },
    "learngene": {
        "official": (
            "mathieuxu/TAL-Task-Aware-Learngene-",
            "stage-1 loss only: the hypernetwork is built on the ghn3 code",
        ),
        "parity": ["learngene/parity"],
        "real": [],
        "generator": ["learngene/untrained"],
    },
    "brain-gcl": {
        "official": ("qinsheng1900/CIA-GCL-Experimental-Results", "result tables only: no code"),
        "real": [],
        "generator": ["brain-gcl/ood"],
    },
    "interaction-moe": {
        "official": ("Raina-Xin/I2MoE", None),
        "parity": ["interaction-moe/parity"],
        "real": [],
        "generator": ["interaction-moe/routing"],
    },
    "spectral-reservoir": {
        "official": (None, "none found (SARC)"),
        "real": ["spectral-reservoir/accuracy", "spectral-reservoir/archive"],
        "generator": [],
    },
    "epi-ode": {
        "official": ("GuanchengWan/EARTH", None),
        "parity": ["epi-ode/parity"],
        "real": ["epi-ode/real_us_hhs_ablation"],
        "generator": ["epi-ode/ablation"],
    },
}


def _load(key: str) -> dict:
    path = RESULTS / f"{key}.json"
    if not path.is_file():
        raise FileNotFoundError(f"workspace status: results file {key}.json is missing")
    return json.loads(path.read_text())


def _link(key: str, page: str) -> str:
    up = "../" * page.count("/")
    return f"[`{key}`]({up}results/{key}.json)"


def parity_cell(key: str, page: str) -> tuple[str, str | None]:
    """(status text, official commit) of one parity results file."""
    rec = _load(key)
    official = (rec.get("extra") or {}).get("official") or {}
    cols = rec.get("columns", [])
    if "max relative" not in cols:  # a run-level comparison (official code's own accuracy)
        return f"run level: {rec['headline']} ({_link(key, page)})", official.get("commit")
    i = cols.index("max relative")
    rows = rec["rows"]
    ok = [r for r in rows if r[i] <= TARGET]
    off = [r[0] for r in rows if r[i] > TARGET]
    worst = max(r[i] for r in ok) if ok else float("nan")
    text = f"{len(ok)}/{len(rows)} components ≤ 1e-5 (worst {worst:.1e})"
    if off:
        text += "; documented deviations: " + "; ".join(off)
    return text + f" ({_link(key, page)})", official.get("commit")


def verdict_cell(keys: list[str], page: str) -> str:
    if not keys:
        return "—"
    return "<br>".join(f"{_load(k)['headline']} ({_link(k, page)})" for k in keys)


def table(page: str = "workspace.md") -> str:
    """The Markdown table, with links relative to ``page`` on the docs site."""
    head = ("| package | official code | parity with it (float64) | verdict on real data | "
            "verdict on the generator |\n|---|---|---|---|---|\n")  # fmt: skip
    lines = []
    for pkg, src in SOURCES.items():
        repo, why = src["official"]
        parity, commit = [], None
        for key in src.get("parity", []):
            text, c = parity_cell(key, page)
            parity.append(text)
            commit = commit or c
        code = "none found" if repo is None else f"`{repo}`"
        if repo is not None and commit:
            code += f" @ `{commit[:7]}`"
        if why and repo is not None:
            code += f" ({why})"
        elif why and why != "none found":
            code = why
        cells = [pkg, code, "<br>".join(parity) or "—", verdict_cell(src["real"], page),
                 verdict_cell(src["generator"], page)]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return head + "\n".join(lines) + "\n"


def page() -> str:
    """The docs page ``workspace.md``."""
    return (
        "# Workspace status\n\n"
        "Per package: the official code (repository and the commit the parity harness ran "
        "against), how our port compares with it (`tools/parity/<package>.py --official DIR`, "
        "float64, target ≤ 1e-5 relative), and the headline of the benchmark that gives the "
        "verdict on real data and on the package's generator. Every number comes from the "
        "linked results file; `tools/workspace_status.py` builds this table. A dash: no such "
        "run (no official code, or no real data that the official code or a library ships).\n\n"
        + table()
    )


if __name__ == "__main__":
    print(table("README.md"))
