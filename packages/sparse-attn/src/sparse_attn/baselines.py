"""Baselines with the same call signature: dense, sliding-window and sink + window attention.

``sink_window_attention`` is the StreamingLLM pattern (Xiao et al., ICLR 2024) in prefill
form; unlike StreamingLLM's cache it keeps the tokens' original positions.
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F

from sparse_attn.validation import check_positive_int, check_qkv, expand_kv

__all__ = ["dense_attention", "sink_window_attention", "sliding_window_attention"]


def dense_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    is_causal: bool = True,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """Exact softmax attention: ``F.scaled_dot_product_attention`` with input checks.

    Parameters
    ----------
    q : torch.Tensor
        Queries (B, Hq, L, D).
    k, v : torch.Tensor
        Keys (B, Hkv, L, D) and values (B, Hkv, L, Dv).
    is_causal : bool, default=True
        Causal (top-left aligned, as SDPA) mask.
    scale : float, optional
        Softmax scale, default ``1 / sqrt(D)``.
    enable_gqa : bool, default=False
        Allow Hq to be a multiple of Hkv.

    Returns
    -------
    torch.Tensor
        (B, Hq, L, Dv).
    """
    check_qkv(q, k, v, enable_gqa=enable_gqa, same_length=is_causal)
    k, v = expand_kv(k, q.shape[1]), expand_kv(v, q.shape[1])
    return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale)


def _local_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    num_sink: int,
    scale: float | None,
    enable_gqa: bool,
    chunk_size: int,
) -> torch.Tensor:
    window = check_positive_int(window, "window")
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    check_qkv(q, k, v, enable_gqa=enable_gqa)
    k, v = expand_kv(k, q.shape[1]), expand_kv(v, q.shape[1])
    # Query t sees u in (t - window, t] and u < num_sink (u <= t); chunked over queries.
    length = q.shape[-2]
    outs = []
    for a in range(0, length, chunk_size):
        b = min(a + chunk_size, length)
        lo = max(0, a - window + 1)
        sink = min(num_sink, lo)  # sinks not already inside the key range
        idx = torch.cat([torch.arange(sink, device=q.device), torch.arange(lo, b, device=q.device)])
        t = torch.arange(a, b, device=q.device)[:, None]
        u = idx[None, :]
        mask = (u <= t) & ((u > t - window) | (u < num_sink))
        outs.append(
            F.scaled_dot_product_attention(
                q[..., a:b, :], k[..., idx, :], v[..., idx, :], attn_mask=mask, scale=scale
            )
        )
    return torch.cat(outs, dim=-2)


def sliding_window_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
    chunk_size: int = 512,
) -> torch.Tensor:
    """Causal sliding-window attention: token t attends to u in (t - window, t].

    Parameters
    ----------
    q : torch.Tensor
        Queries (B, Hq, L, D).
    k, v : torch.Tensor
        Keys (B, Hkv, L, D) and values (B, Hkv, L, Dv).
    window : int
        Number of most recent tokens (including t) each query sees, >= 1.
    scale : float, optional
        Softmax scale, default ``1 / sqrt(D)``.
    enable_gqa : bool, default=False
        Allow Hq to be a multiple of Hkv.
    chunk_size : int, default=512
        Query chunk size (memory O(C (C + window)) per head).

    Returns
    -------
    torch.Tensor
        (B, Hq, L, Dv).
    """
    return _local_attention(q, k, v, window, 0, scale, enable_gqa, chunk_size)


def sink_window_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    num_sink: int = 4,
    window: int = 1024,
    scale: float | None = None,
    enable_gqa: bool = False,
    chunk_size: int = 512,
) -> torch.Tensor:
    """StreamingLLM-style attention: t sees the first ``num_sink`` tokens and (t - window, t].

    Parameters
    ----------
    q : torch.Tensor
        Queries (B, Hq, L, D).
    k, v : torch.Tensor
        Keys (B, Hkv, L, D) and values (B, Hkv, L, Dv).
    num_sink : int, default=4
        Attention-sink tokens at the start, >= 0.
    window : int, default=1024
        Recent-window length, >= 1.
    scale : float, optional
        Softmax scale, default ``1 / sqrt(D)``.
    enable_gqa : bool, default=False
        Allow Hq to be a multiple of Hkv.
    chunk_size : int, default=512
        Query chunk size.

    Returns
    -------
    torch.Tensor
        (B, Hq, L, Dv).
    """
    if isinstance(num_sink, bool) or not isinstance(num_sink, numbers.Integral) or num_sink < 0:
        raise ValueError(f"num_sink must be an int >= 0, got {num_sink!r}")
    num_sink = int(num_sink)
    return _local_attention(q, k, v, window, num_sink, scale, enable_gqa, chunk_size)
