"""NA-FIR and SCIR multi-class isotonic calibration.

Normalization-aware isotonic calibrators (Arad & Rosset, ICML 2025) and the
usual baselines, all as scikit-learn estimators ``fit(probs, y)`` /
``predict_proba(probs)``.
"""

from isocal.binning import HistogramBinningCalibrator
from isocal.calibrators import (
    FIRCalibrator,
    NAFIRCalibrator,
    OvRIsotonicCalibrator,
    SCIRCalibrator,
    sorted_cumulative,
    tie_groups,
)
from isocal.data import make_miscalibrated
from isocal.demo import demo
from isocal.isotonic2d import isotonic_regression_rank2d
from isocal.metrics import (
    accuracy,
    adaptive_ece,
    brier_score,
    classwise_ece,
    log_loss,
    top_label_ece,
)
from isocal.normalized_isotonic import normalized_isotonic_logloss
from isocal.plotting import reliability_diagram
from isocal.scaling import DirichletCalibrator, MatrixScaling, TemperatureScaling, VectorScaling
from isocal.wrapper import METHODS, CalibratedClassifier

__all__ = [
    "METHODS",
    "CalibratedClassifier",
    "DirichletCalibrator",
    "FIRCalibrator",
    "HistogramBinningCalibrator",
    "MatrixScaling",
    "NAFIRCalibrator",
    "OvRIsotonicCalibrator",
    "SCIRCalibrator",
    "TemperatureScaling",
    "VectorScaling",
    "__version__",
    "accuracy",
    "adaptive_ece",
    "brier_score",
    "classwise_ece",
    "demo",
    "isotonic_regression_rank2d",
    "log_loss",
    "make_miscalibrated",
    "normalized_isotonic_logloss",
    "reliability_diagram",
    "sorted_cumulative",
    "tie_groups",
    "top_label_ece",
]

__version__ = "0.1.0"
