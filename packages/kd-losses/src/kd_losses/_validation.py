"""Input checks shared by the losses, the difficulty score and the sampler."""

from __future__ import annotations

import numbers

import torch

__all__ = [
    "all_finite",
    "check_logit_pair",
    "check_prob_param",
    "check_reduction",
    "check_temperature",
    "resolve_mask",
]

_REDUCTIONS = ("none", "mean", "sum")


def all_finite(x: torch.Tensor) -> bool:
    """Whether ``x`` holds no NaN or inf, without a full-size temporary.

    ``torch.isfinite(x).all()`` allocates an ``x``-sized mask and, for floats, an ``abs(x)``
    copy (hundreds of MB for an lm-head weight). ``aminmax`` reads ``x`` once and propagates
    NaN, so both extremes are finite exactly when every entry is.
    """
    if x.numel() == 0:
        return True
    lo, hi = torch.aminmax(x)
    return bool(torch.isfinite(lo) & torch.isfinite(hi))


def check_logit_pair(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, *, check_finite: bool = True
) -> None:
    """Check that student and teacher logits are float tensors of one shape ``(..., vocab)``."""
    for name, x in (("student_logits", student_logits), ("teacher_logits", teacher_logits)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
        if x.ndim < 1 or x.shape[-1] < 1:
            raise ValueError(f"{name} must have shape (..., vocab) with vocab >= 1")
    if student_logits.shape[-1] != teacher_logits.shape[-1]:
        raise ValueError(
            "vocab mismatch: student_logits has vocab "
            f"{student_logits.shape[-1]}, teacher_logits has {teacher_logits.shape[-1]}"
        )
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(
            "shape mismatch: student_logits "
            f"{tuple(student_logits.shape)} vs teacher_logits {tuple(teacher_logits.shape)}"
        )
    if check_finite and not (all_finite(student_logits) and all_finite(teacher_logits)):
        # -inf marks a masked vocabulary entry; it must mask the same entries in both models
        for name, x in (("student_logits", student_logits), ("teacher_logits", teacher_logits)):
            if bool(torch.isnan(x).any()) or bool(torch.isposinf(x).any()):
                raise ValueError(f"{name} contains NaN or +inf")
        neg_s, neg_t = torch.isneginf(student_logits), torch.isneginf(teacher_logits)
        if not torch.equal(neg_s, neg_t):
            raise ValueError(
                "student_logits, teacher_logits: -inf entries (masked vocabulary) must be the "
                "same in both"
            )
        if bool(neg_s.all(-1).any()):
            raise ValueError("student_logits: a row has every entry -inf")


def check_prob_param(
    name: str, value: float, *, low_open: bool = True, high_open: bool = True
) -> float:
    """Check a mixing weight lies in (0, 1) (or the half-closed variant asked for)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    value = float(value)
    lo_ok = value > 0.0 if low_open else value >= 0.0
    hi_ok = value < 1.0 if high_open else value <= 1.0
    if not (lo_ok and hi_ok):
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lo}0, 1{hi}, got {value}")
    return value


def check_temperature(temperature: float) -> float:
    """Check the softmax temperature is a positive finite number."""
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"temperature must be a float, got {type(temperature).__name__}")
    t = float(temperature)
    if not (t > 0.0) or t == float("inf"):
        raise ValueError(f"temperature must be > 0 and finite, got {temperature}")
    return t


def check_reduction(reduction: str) -> str:
    """Check ``reduction`` is one of none/mean/sum."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    return reduction


def resolve_mask(
    token_shape: torch.Size,
    device: torch.device,
    mask: torch.Tensor | None,
    labels: torch.Tensor | None,
    ignore_index: int,
) -> torch.Tensor | None:
    """Combine ``mask`` and ``labels != ignore_index`` into one boolean mask (or None = all)."""
    out: torch.Tensor | None = None
    if mask is not None:
        if not isinstance(mask, torch.Tensor):
            raise TypeError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
        if tuple(mask.shape) != tuple(token_shape):
            raise ValueError(
                f"mask must have shape {tuple(token_shape)} (logits without vocab), "
                f"got {tuple(mask.shape)}"
            )
        if mask.dtype != torch.bool:
            if mask.is_floating_point() and not all_finite(mask):
                raise ValueError("mask contains NaN or inf")
            mask = mask != 0
        out = mask.to(device)
    if labels is not None:
        if not isinstance(labels, torch.Tensor):
            raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
        if tuple(labels.shape) != tuple(token_shape):
            raise ValueError(
                f"labels must have shape {tuple(token_shape)} (logits without vocab), "
                f"got {tuple(labels.shape)}"
            )
        lab = (labels != ignore_index).to(device)
        out = lab if out is None else out & lab
    return out  # an all-masked batch is allowed: the loss is then 0 with a zero gradient
