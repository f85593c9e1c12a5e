"""Input checks shared by the attention operators (errors name the offending argument)."""

from __future__ import annotations

import numbers

import numpy as np
import torch

__all__ = ["check_positive_int", "check_qkv", "expand_kv", "softmax_hp"]


def check_positive_int(value: object, name: str) -> int:
    """Return ``value`` as an int, raising if it is not an integer >= 1.

    Parameters
    ----------
    value : object
        The hyper-parameter to check.
    name : str
        Argument name used in the error message.

    Returns
    -------
    int
        ``value`` as a Python int (numpy integers are accepted).
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def check_qkv(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    enable_gqa: bool,
    same_length: bool = True,
    check_finite: bool = True,
) -> None:
    """Validate SDPA-shaped ``q`` (B, Hq, Lq, D), ``k`` (B, Hkv, Lk, D), ``v`` (B, Hkv, Lk, Dv).

    Parameters
    ----------
    q, k, v : torch.Tensor
        Query, key and value tensors.
    enable_gqa : bool
        Whether ``Hq`` may be a multiple of ``Hkv`` (grouped-query attention).
    same_length : bool, default=True
        Require ``Lq == Lk`` (self-attention operators).
    check_finite : bool, default=True
        Reject NaN / inf entries.

    Raises
    ------
    TypeError
        Non-tensor inputs, non-floating dtypes or mismatched dtypes.
    ValueError
        Wrong ranks, mismatched shapes or devices, empty inputs, non-finite values.
    """
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
        if x.ndim != 4:
            raise ValueError(f"{name} must have shape (B, H, L, D), got {tuple(x.shape)}")
        if x.numel() == 0:
            raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    for name, x in (("k", k), ("v", v)):
        if x.dtype != q.dtype:
            raise TypeError(f"{name} dtype {x.dtype} does not match q dtype {q.dtype}")
        if x.device != q.device:
            raise ValueError(f"{name} is on {x.device} but q is on {q.device}")
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must agree in (B, H, L)")
    if q.shape[0] != k.shape[0]:
        raise ValueError(f"q batch {q.shape[0]} does not match k batch {k.shape[0]}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q head dim {q.shape[-1]} does not match k head dim {k.shape[-1]}")
    if same_length and q.shape[-2] != k.shape[-2]:
        raise ValueError(f"q length {q.shape[-2]} does not match k length {k.shape[-2]}")
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        if not enable_gqa:
            raise ValueError(
                f"q has {hq} heads but k has {hkv}; pass enable_gqa=True for grouped-query attention"
            )
        if hq % hkv != 0:
            raise ValueError(f"q heads {hq} must be a multiple of k heads {hkv} (enable_gqa)")
    if check_finite:
        for name, x in (("q", q), ("k", k), ("v", v)):
            # min and max carry any NaN / inf (NaN propagates), without an N-sized mask
            if not bool(torch.isfinite(torch.stack(torch.aminmax(x.detach()))).all()):
                raise ValueError(f"{name} contains NaN or inf")


def expand_kv(x: torch.Tensor, num_q_heads: int) -> torch.Tensor:
    """Repeat key/value heads (B, Hkv, L, D) -> (B, Hq, L, D), as SDPA's ``enable_gqa`` does."""
    r = num_q_heads // x.shape[1]
    return x if r == 1 else x.repeat_interleave(r, dim=1)


def softmax_hp(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim, computed in fp32 for half/bf16 inputs (fp64 stays fp64)."""
    low = x.dtype in (torch.float16, torch.bfloat16)
    return torch.softmax(x, dim=-1, dtype=torch.float32 if low else x.dtype)
