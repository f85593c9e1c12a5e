"""Stage-1 distillation objective (TAL Eq. 5) and stage-2 temperature task sampling."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from learngene._validation import check_real

__all__ = ["TaskSampler", "kd_loss", "task_probabilities"]


def kd_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    student_feat: torch.Tensor,
    teacher_feat: torch.Tensor,
    alpha: float = 0.2,
    T: float = 3.0,
) -> torch.Tensor:
    """``α·T²·KL(softmax(q_t/T) ‖ softmax(q_s/T)) / n_el + (1 − α)·CE(logits, target)``.

    The KL term uses a sum reduction divided by the number of elements of the *logits*
    ``n x C``, as the official trainer does (``TAL/ghn3/trainer_teacher.py``: ``kl_div(...,
    reduction='sum') * T**2 / y.numel()`` with ``y`` the network's output), so it is an average
    per logit, not per sample nor per feature.

    Parameters
    ----------
    logits : Tensor (n, C)
        Descendant logits.
    target : Tensor (n,) int64
        Labels.
    student_feat : Tensor (n, d)
        q_s = M·(descendant class-token feature), M predicted by the hypernetwork.
    teacher_feat : Tensor (n, d)
        q_t = ancestry feature (``TinyViT.head_features``).
    alpha : float in [0, 1]
        Weight of the distillation term; 0 gives pure cross-entropy.
    T : float > 0
        Softmax temperature of the distillation term.
    """
    alpha = check_real(alpha, "alpha", 0.0, 1.0)
    T = check_real(T, "T", 0.0, open_low=True)
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError("logits must be a floating tensor")
    if (
        not isinstance(target, torch.Tensor)
        or target.is_floating_point()
        or target.dtype == torch.bool
    ):
        raise TypeError("target must be an integer tensor of class ids")
    if logits.dim() != 2 or target.shape != logits.shape[:1]:
        raise ValueError(f"logits (n, C) and target (n,) mismatch: {logits.shape}, {target.shape}")
    if len(logits) == 0:
        raise ValueError("logits, target: empty batch")
    if not torch.isfinite(logits).all():
        raise ValueError("logits contain NaN or inf")
    if target.min() < 0 or target.max() >= logits.shape[1]:
        raise ValueError(f"target must hold class ids in [0, {logits.shape[1]})")
    ce = F.cross_entropy(logits, target.long())
    if alpha == 0.0:
        return ce
    for name, v in (("student_feat", student_feat), ("teacher_feat", teacher_feat)):
        if not isinstance(v, torch.Tensor) or not v.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor")
    if student_feat.shape != teacher_feat.shape or student_feat.dim() != 2:
        raise ValueError(
            f"student_feat and teacher_feat must share a 2-D shape: {student_feat.shape}, "
            f"{teacher_feat.shape}"
        )
    if len(student_feat) != len(logits):
        raise ValueError("student_feat, logits: different numbers of rows")
    if not (torch.isfinite(student_feat).all() and torch.isfinite(teacher_feat).all()):
        raise ValueError("student_feat or teacher_feat contains NaN or inf")
    kl = F.kl_div(
        F.log_softmax(student_feat / T, dim=1), F.softmax(teacher_feat / T, dim=1), reduction="sum"
    )
    return alpha * T * T * kl / logits.numel() + (1.0 - alpha) * ce


def task_probabilities(sizes, temperature: float = 2.0) -> np.ndarray:
    """Temperature sampling over dataset sizes: p_τ ∝ (N_τ / Σ N)^(1/T).

    Parameters
    ----------
    sizes : sequence of positive ints
    temperature : float > 0 (1 = proportional, → ∞ = uniform)
    """
    temperature = check_real(temperature, "temperature", 0.0, open_low=True)
    s = np.asarray(sizes, dtype=np.float64)
    if s.ndim != 1 or len(s) == 0:
        raise ValueError("sizes must be a non-empty 1-D sequence")
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("sizes must be positive and finite")
    p = (s / s.sum()) ** (1.0 / temperature)
    return p / p.sum()


class TaskSampler:
    """Draw task names with ``task_probabilities`` from a seeded generator."""

    def __init__(self, sizes: dict, temperature: float = 2.0, seed=None):
        if not isinstance(sizes, dict) or not sizes:
            raise ValueError("sizes must be a non-empty dict of task name -> size")
        self.names = list(sizes)
        self.p = task_probabilities([sizes[k] for k in self.names], temperature)
        self.rng = np.random.default_rng(seed)

    def sample(self, n: int = 1) -> list[str]:
        return [self.names[i] for i in self.rng.choice(len(self.names), size=n, p=self.p)]
