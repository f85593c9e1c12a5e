"""CCA through FlexAttention: one ``mask_mod`` over ``[core tokens ; raw tokens]``.

The keys are the ``m`` core tokens followed by the ``L`` raw tokens. With
``n(q) = clamp((q + 1 - s) // g, 0, m)`` visible cores for query ``q``:

* key ``kv < m`` (core ``j = kv``) is visible iff ``j < n(q)``;
* key ``kv >= m`` (raw ``u = kv - m``) is visible iff ``n(q) g <= u <= q``.

``create_block_mask`` turns this into a block-sparse layout, so fully masked tiles are skipped
by the fused kernel. On CUDA the kernel is compiled (``torch.compile(flex_attention)``); on CPU
the unfused eager implementation is used by default (it materializes the scores -- for tests),
or the compiled CPU kernel with ``compile=True``.
"""

from __future__ import annotations

import torch

__all__ = ["cca_mask_mod", "flex_available", "flex_cca"]

_COMPILED = None


def flex_available() -> bool:
    """Whether ``torch.nn.attention.flex_attention`` can be imported."""
    try:
        import torch.nn.attention.flex_attention  # noqa: F401
    except ImportError:  # pragma: no cover - torch < 2.5
        return False
    return True


def cca_mask_mod(group_size: int, local_window: int, num_core: int):
    """The CCA visibility rule as a FlexAttention ``mask_mod(b, h, q_idx, kv_idx)``."""
    g, s, m = group_size, local_window, num_core

    def mask_mod(b, h, q_idx, kv_idx):
        n = torch.clamp(torch.div(q_idx + 1 - s, g, rounding_mode="floor"), 0, m)
        u = kv_idx - m
        core = (kv_idx < m) & (kv_idx < n)
        raw = (kv_idx >= m) & (u >= n * g) & (u <= q_idx)
        return core | raw

    return mask_mod


def flex_cca(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    core_k: torch.Tensor,
    core_v: torch.Tensor,
    *,
    group_size: int,
    local_window: int,
    num_core: int,
    scale: float,
    core_bias: float = 0.0,
    compile: bool | None = None,
) -> torch.Tensor:
    """CCA attention from precomputed core tokens with FlexAttention.

    Parameters
    ----------
    q, k, v : torch.Tensor
        (B, H, L, D) with equal head counts.
    core_k, core_v : torch.Tensor
        (B, H, m, D).
    group_size, local_window, num_core : int
        ``g``, ``s``, ``m``.
    scale : float
        Softmax scale.
    core_bias : float, default=0.0
        Added to every core logit (``score_mod``).
    compile : bool, optional
        Use the compiled fused kernel (default: on CUDA only).

    Returns
    -------
    torch.Tensor
        (B, H, L, Dv).
    """
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    global _COMPILED
    if q.device.type == "cpu":  # FlexAttention has no CPU backward
        if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v, core_k, core_v)):
            raise ValueError("backend='flex' on CPU is forward-only: use torch.no_grad()")
        q, k, v, core_k, core_v = (t.detach() for t in (q, k, v, core_k, core_v))
    length, m = q.shape[-2], num_core
    keys = torch.cat([core_k, k], dim=-2)
    values = torch.cat([core_v, v], dim=-2)
    block_mask = create_block_mask(
        cca_mask_mod(group_size, local_window, m), None, None, length, m + length, device=q.device
    )
    score_mod = None
    if core_bias:
        bias = torch.tensor(float(core_bias), dtype=q.dtype, device=q.device)  # a captured
        # tensor, not a Python float (dynamo would trace a float as an unsupported SymFloat)

        def score_mod(score, b, h, q_idx, kv_idx):
            return torch.where(kv_idx < m, score + bias, score)

    use_compiled = q.device.type == "cuda" if compile is None else compile
    fn = flex_attention
    if use_compiled:
        if _COMPILED is None:
            _COMPILED = torch.compile(flex_attention, dynamic=False)
        fn = _COMPILED
    return fn(q, keys, values, score_mod=score_mod, block_mask=block_mask, scale=scale)
