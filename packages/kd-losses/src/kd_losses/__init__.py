"""KD losses for LLM distillation, incl. DA-KD's bidirectional discrepancy loss and difficulty-aware data selection."""

from kd_losses import functional
from kd_losses.data import make_corpus
from kd_losses.demo import demo
from kd_losses.difficulty import dataset_nll, difficulty_score, sequence_nll
from kd_losses.functional import (
    LOSS_NAMES,
    adaptive_kl,
    bidirectional_discrepancy_loss,
    distill_loss,
    forward_kl,
    js_divergence,
    reverse_kl,
    skew_kl,
    skew_reverse_kl,
    total_variation,
)
from kd_losses.fused import FusedKDLoss, fused_kd_loss
from kd_losses.gkd import gkd_loss
from kd_losses.losses import (
    AdaptiveKL,
    BidirectionalDiscrepancyLoss,
    DistillLoss,
    ForwardKL,
    JSDivergence,
    ReverseKL,
    SkewKL,
    SkewReverseKL,
    TotalVariation,
    make_loss,
)
from kd_losses.sampler import DifficultyAwareSampler, stratified_select
from kd_losses.tiny_lm import TinyLM
from kd_losses.training import DistillResult, distill, evaluate_lm, train_lm

__all__ = [
    "LOSS_NAMES",
    "AdaptiveKL",
    "BidirectionalDiscrepancyLoss",
    "DifficultyAwareSampler",
    "DistillLoss",
    "DistillResult",
    "ForwardKL",
    "FusedKDLoss",
    "JSDivergence",
    "ReverseKL",
    "SkewKL",
    "SkewReverseKL",
    "TinyLM",
    "TotalVariation",
    "__version__",
    "adaptive_kl",
    "bidirectional_discrepancy_loss",
    "dataset_nll",
    "demo",
    "difficulty_score",
    "distill",
    "distill_loss",
    "evaluate_lm",
    "forward_kl",
    "functional",
    "fused_kd_loss",
    "gkd_loss",
    "js_divergence",
    "make_corpus",
    "make_loss",
    "reverse_kl",
    "sequence_nll",
    "skew_kl",
    "skew_reverse_kl",
    "stratified_select",
    "total_variation",
    "train_lm",
]

__version__ = "0.1.0"
