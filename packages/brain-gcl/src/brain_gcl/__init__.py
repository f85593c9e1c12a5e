"""CIA-GCL: causal invariance-aware augmentation for brain-graph contrastive learning.

Yu, Liu, Ji, "Causal Invariance-aware Augmentation for Brain Graph Contrastive Learning",
ICML 2025 (PMLR 267:73221-73240).
"""

from brain_gcl import data, metrics
from brain_gcl.demo import demo
from brain_gcl.edge_models import FCSVM, FCLogReg
from brain_gcl.environments import infer_environments
from brain_gcl.models import CIAGCL, GCN, GIN, BrainNetCNN, CIGALike, GraphCL

__all__ = [
    "CIAGCL",
    "FCSVM",
    "GCN",
    "GIN",
    "BrainNetCNN",
    "CIGALike",
    "FCLogReg",
    "GraphCL",
    "__version__",
    "data",
    "demo",
    "infer_environments",
    "metrics",
]

__version__ = "0.1.0"
