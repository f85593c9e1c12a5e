"""CAP: balanced pseudolabels for vision-language model adaptation.

Wang, Bai, Li, Guan, Nie, Chen, "Handling Imbalanced Pseudolabels for Vision-Language Models
with Concept Alignment and Confusion-Aware Calibrated Margin", ICML 2025.
"""

from vlm_pseudolabel.alignment import detect_mismatch, select_descriptions
from vlm_pseudolabel.baselines import CPL, FPL, GRIP, IFPL, FixMatchST, Oracle, ZeroShot
from vlm_pseudolabel.cap import CAP, zero_shot_proba
from vlm_pseudolabel.data import (
    VLMTask,
    make_glyph_digits_task,
    make_synthetic_vlm_task,
    render_glyph,
)
from vlm_pseudolabel.demo import demo
from vlm_pseudolabel.margin import margin_cross_entropy, margin_matrix, self_training_loss
from vlm_pseudolabel.metrics import (
    evaluate,
    expected_calibration_error,
    harmonic_mean,
    pseudolabel_report,
)
from vlm_pseudolabel.model import Adapter, PromptModel
from vlm_pseudolabel.pseudolabels import grow_main_samples, growth_k, topk_pseudolabels
from vlm_pseudolabel.text_prompts import TextContextPrompts

__all__ = [
    "CAP",
    "CPL",
    "FPL",
    "GRIP",
    "IFPL",
    "Adapter",
    "FixMatchST",
    "Oracle",
    "PromptModel",
    "TextContextPrompts",
    "VLMTask",
    "ZeroShot",
    "__version__",
    "demo",
    "detect_mismatch",
    "evaluate",
    "expected_calibration_error",
    "grow_main_samples",
    "growth_k",
    "harmonic_mean",
    "make_glyph_digits_task",
    "make_synthetic_vlm_task",
    "margin_cross_entropy",
    "margin_matrix",
    "pseudolabel_report",
    "render_glyph",
    "select_descriptions",
    "self_training_loss",
    "topk_pseudolabels",
    "zero_shot_proba",
]

__version__ = "0.1.0"
