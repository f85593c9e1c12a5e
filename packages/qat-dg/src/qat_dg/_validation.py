"""Input checks: the image batch every ``predict`` shares, and hyper-parameter scalars."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from torch import Tensor, nn


def check_batch(x: Tensor, model: nn.Module, input_shape: tuple[int, ...] | None = None) -> Tensor:
    """``x`` validated (NaN would give NaN logits) and cast to ``model``'s parameter dtype.

    With ``input_shape`` the batch must be ``(B, *input_shape)``; otherwise any ``(B, ...)``.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating tensor, got {x.dtype}")
    if input_shape is not None:
        if x.ndim != len(input_shape) + 1 or tuple(x.shape[1:]) != tuple(input_shape):
            raise ValueError(
                f"x must have shape (B, {', '.join(map(str, input_shape))}), got {tuple(x.shape)}"
            )
    elif x.ndim < 2:
        raise ValueError(f"x must be a batch (B, ...), got shape {tuple(x.shape)}")
    if len(x) == 0:
        raise ValueError("x is empty")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or inf")
    p = next(model.parameters(), None)
    return x if p is None else x.to(p.dtype)  # e.g. float16 images into a float32 net


def check_int(name: str, value: object, lo: int = 1) -> int:
    """``value`` as a Python int >= ``lo`` (numpy integers accepted, bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value}")
    return int(value)


def check_real(name: str, value: object, lo: float = 0.0, open_lo: bool = True) -> float:
    """``value`` as a finite float > ``lo`` (>= with ``open_lo=False``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or (v <= lo if open_lo else v < lo):
        raise ValueError(f"{name} must be finite and {'>' if open_lo else '>='} {lo}, got {value}")
    return v


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)
