"""SARC: spectral-aware reservoir computing for fast time-series classification.

Liu, Wei, Zhou, Chen, "Spectral-Aware Reservoir Computing for Fast and Accurate Time Series
Classification", ICML 2025.
"""

from spectral_reservoir.data import (
    BUNDLED,
    archive_names,
    load_archive,
    load_bundled,
    make_lag_sign,
    make_periodic_motifs,
)
from spectral_reservoir.demo import demo
from spectral_reservoir.estimators import (
    PAPER_GRID,
    BiESNModelSpace,
    SARCClassifier,
    SARCClassifierCV,
    SARCTransformer,
)
from spectral_reservoir.features import model_space_features
from spectral_reservoir.periods import extract_periods, hp_filter, wavelet_components
from spectral_reservoir.reservoir import (
    ReservoirWeights,
    freqres_states,
    make_weights,
    states_batch,
)

__all__ = [
    "BUNDLED",
    "PAPER_GRID",
    "BiESNModelSpace",
    "ReservoirWeights",
    "SARCClassifier",
    "SARCClassifierCV",
    "SARCTransformer",
    "__version__",
    "archive_names",
    "demo",
    "extract_periods",
    "freqres_states",
    "hp_filter",
    "load_archive",
    "load_bundled",
    "make_lag_sign",
    "make_periodic_motifs",
    "make_weights",
    "model_space_features",
    "states_batch",
    "wavelet_components",
]

__version__ = "0.1.0"
