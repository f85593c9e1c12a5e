"""I2MoE: interpretable multimodal interaction-aware mixture of experts.

Xin, Yun, Peng, Choi, Ballard, Chen, Long, "I2MoE: Interpretable Multimodal Interaction-aware
Mixture-of-Experts", ICML 2025.
"""

from interaction_moe.data import (
    load_breast_cancer_groups,
    load_digits_halves,
    load_multibench_pickle,
    load_multimodal_npz,
    make_interaction_data,
)
from interaction_moe.demo import demo
from interaction_moe.estimator import I2MoEClassifier
from interaction_moe.fusion import (
    ConcatMLPFusion,
    LateFusion,
    LowRankTensorFusion,
    TransformerFusion,
)
from interaction_moe.losses import (
    interaction_loss,
    redundancy_loss,
    regression_losses,
    synergy_loss,
    uniqueness_loss,
)
from interaction_moe.model import I2MoE, I2MoEOutput, perturb

__all__ = [
    "ConcatMLPFusion",
    "I2MoE",
    "I2MoEClassifier",
    "I2MoEOutput",
    "LateFusion",
    "LowRankTensorFusion",
    "TransformerFusion",
    "__version__",
    "demo",
    "interaction_loss",
    "load_breast_cancer_groups",
    "load_digits_halves",
    "load_multibench_pickle",
    "load_multimodal_npz",
    "make_interaction_data",
    "perturb",
    "redundancy_loss",
    "regression_losses",
    "synergy_loss",
    "uniqueness_loss",
]

__version__ = "0.1.0"
