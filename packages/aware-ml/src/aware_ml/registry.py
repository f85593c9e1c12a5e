"""The packages that make up aware-ml, and which of them are installed."""

import importlib.metadata
import importlib.util

__all__ = ["DEMO_SECONDS", "PACKAGES", "import_name", "installed_packages"]

# distribution name -> one-line summary (the import name is the dist name with "_" for "-")
PACKAGES: dict[str, str] = {
    "isocal": "NA-FIR and SCIR multi-class isotonic calibration",
    "qat-dg": "QT-DoG quantization-aware training for domain generalization, EoQ",
    "kd-losses": "KD losses for LLM distillation, DA-KD",
    "sparse-attn": "CCA-Attention and query-aware region attention",
    "causal-ts": "CAROTS causality-aware contrastive anomaly detection",
    "gfn-symmetry": "Symmetry-aware GFlowNets",
    "lomap-planner": "LoMAP manifold projection for diffusion planners",
    "sys-unlearn": "System-aware unlearning via selective sampling",
    "pareto-merge": "Pareto Merging: preference-conditioned model merging",
    "nas-puzzle": "Puzzle: blockwise local distillation + MIP architecture search",
    "cost-model": "COGNATE-style transferable cost models for sparse kernels",
    "vlm-pseudolabel": "CAP balanced pseudolabels for VLM adaptation",
    "spectral-reservoir": "SARC spectral-aware reservoir computing for time-series classification",
    "interaction-moe": "I2MoE interpretable multimodal interaction mixture of experts",
    "epi-ode": "EARTH epidemiology-aware neural ODE forecasting on a transmission graph",
    "brain-gcl": "CIA-GCL invariance-aware brain-graph contrastive learning",
    "evolving-dg": "SYNC static-dynamic causal representations for evolving domain generalization",
    "learngene": "TAL task-aware learngene parameter prediction with a graph hypernetwork",
}

# measured demo time per package on 2 CPU cores (s), used for the tour's time-left estimate
DEMO_SECONDS: dict[str, float] = {
    "isocal": 3.5,
    "qat-dg": 7.0,
    "kd-losses": 2.5,
    "sparse-attn": 2.0,
    "causal-ts": 2.0,
    "gfn-symmetry": 9.0,
    "lomap-planner": 12.0,
    "sys-unlearn": 3.0,
    "pareto-merge": 4.0,
    "nas-puzzle": 7.0,
    "cost-model": 6.5,
    "vlm-pseudolabel": 3.0,
    "spectral-reservoir": 4.5,
    "interaction-moe": 2.0,
    "epi-ode": 5.0,
    "brain-gcl": 6.0,
    "evolving-dg": 6.0,
    "learngene": 8.0,
}


def import_name(package: str) -> str:
    """Return the import name of a distribution name (``"qat-dg"`` -> ``"qat_dg"``)."""
    return package.replace("-", "_")


def installed_packages() -> dict[str, str | None]:
    """Map every aware-ml package to its installed version, or ``None`` if absent."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        if importlib.util.find_spec(import_name(name)) is None:
            out[name] = None
            continue
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "unknown"
    return out
