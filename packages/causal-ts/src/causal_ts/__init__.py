"""CAROTS causality-aware contrastive anomaly detection for multivariate time series.

Graph convention throughout: ``graph[c, e] = True`` iff variable ``c`` causes ``e``
(row = cause, column = effect).
"""

from causal_ts.augment import (
    CausalityDisturbingAugmentor,
    CausalityPreservingAugmentor,
    DisturbanceInfo,
    dfs_subgraph,
)
from causal_ts.baselines import IsolationForestWindows, PCAReconstruction, VARResidual
from causal_ts.data import (
    inject_anomalies,
    inject_causal_break,
    make_lorenz96,
    make_var,
    simulate_lorenz96,
    simulate_var,
    sliding_windows,
)
from causal_ts.datasets import DAPHNET_CHANNELS, DATASETS, load_daphnet, load_mtsad
from causal_ts.demo import demo
from causal_ts.detector import CAROTS, PlainOneClassContrastive
from causal_ts.discovery import GivenGraphDiscoverer, VARGrangerDiscoverer
from causal_ts.losses import alpha_schedule, soc_loss
from causal_ts.metrics import evaluate, point_adjust, window_labels
from causal_ts.neural_discovery import NeuralGrangerDiscoverer

__all__ = [
    "CAROTS",
    "DAPHNET_CHANNELS",
    "DATASETS",
    "CausalityDisturbingAugmentor",
    "CausalityPreservingAugmentor",
    "DisturbanceInfo",
    "GivenGraphDiscoverer",
    "IsolationForestWindows",
    "NeuralGrangerDiscoverer",
    "PCAReconstruction",
    "PlainOneClassContrastive",
    "VARGrangerDiscoverer",
    "VARResidual",
    "__version__",
    "alpha_schedule",
    "demo",
    "dfs_subgraph",
    "evaluate",
    "inject_anomalies",
    "inject_causal_break",
    "load_daphnet",
    "load_mtsad",
    "make_lorenz96",
    "make_var",
    "point_adjust",
    "simulate_lorenz96",
    "simulate_var",
    "sliding_windows",
    "soc_loss",
    "window_labels",
]

__version__ = "0.1.0"
