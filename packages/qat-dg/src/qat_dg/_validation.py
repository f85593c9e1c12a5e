"""The input check every ``predict`` shares: a non-empty, finite, floating image batch."""

from __future__ import annotations

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
