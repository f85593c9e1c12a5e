"""COGNATE-style transferable cost models for sparse kernels."""

from cost_model import dataset, features, kernels, matrices, models, search, space, transfer
from cost_model.dataset import (
    CostDataset,
    TimingNotReproducibleError,
    collect,
    cross_run_agreement,
)
from cost_model.demo import demo
from cost_model.features import MatrixFeaturizer
from cost_model.kernels import (
    Measurement,
    ScipyBackend,
    SimAccelBackend,
    SimCPUBackend,
    Timer,
    TorchCPUBackend,
    get_backend,
    measure,
    measure_interleaved,
    timing_quality,
)
from cost_model.matrices import MatrixSet, generate, load_mtx, load_mtx_folder
from cost_model.models import CognateModel, pairwise_rank_loss
from cost_model.search import TuneResult, evaluate, evaluate_scores, select, tune
from cost_model.space import SHARED_KNOBS, Knob, ScheduleSpace
from cost_model.transfer import ExperimentResult, finetune, matrix_overlap, run_experiment

__all__ = [
    "SHARED_KNOBS",
    "CognateModel",
    "CostDataset",
    "ExperimentResult",
    "Knob",
    "MatrixFeaturizer",
    "MatrixSet",
    "Measurement",
    "ScheduleSpace",
    "ScipyBackend",
    "SimAccelBackend",
    "SimCPUBackend",
    "Timer",
    "TimingNotReproducibleError",
    "TorchCPUBackend",
    "TuneResult",
    "__version__",
    "collect",
    "cross_run_agreement",
    "dataset",
    "demo",
    "evaluate",
    "evaluate_scores",
    "features",
    "finetune",
    "generate",
    "get_backend",
    "kernels",
    "load_mtx",
    "load_mtx_folder",
    "matrices",
    "matrix_overlap",
    "measure",
    "measure_interleaved",
    "models",
    "pairwise_rank_loss",
    "run_experiment",
    "search",
    "select",
    "space",
    "timing_quality",
    "transfer",
    "tune",
]

__version__ = "0.1.0"
