"""CCA through FlexAttention: one ``mask_mod`` over ``[raw tokens ; core tokens]``.

The keys are the ``L`` raw tokens followed by the ``m`` core tokens, so the raw keys' blocks
line up with the query blocks (the causal diagonal falls on whole tiles) and the few core
tokens sit in trailing blocks of their own. With ``n(q) = clamp((q + 1 - s) // g, 0, m)``
visible cores for query ``q``:

* key ``kv < L`` (raw ``u = kv``) is visible iff ``n(q) g <= u <= q``;
* key ``kv >= L`` (core ``j = kv - L``) is visible iff ``j < n(q)``.

``create_block_mask`` turns this into a block-sparse layout, so fully masked tiles are skipped
by the fused kernel. The block mask depends only on ``(L, m, g, s)`` and the device, so it is
built once and cached (:func:`cca_block_mask`). On CUDA the kernel is compiled
(``torch.compile(flex_attention)``); on CPU the unfused eager implementation is used by default
(it materializes the scores -- for tests), or the compiled CPU kernel with ``compile=True``.
"""

from __future__ import annotations

from collections import OrderedDict

import torch

__all__ = ["cca_block_mask", "cca_mask_mod", "flex_available", "flex_cca"]

_COMPILED = None
_MASKS: OrderedDict = OrderedDict()  # (L, m, g, s, device) -> BlockMask, least recent first
_MAX_MASKS = 32


def flex_available() -> bool:
    """Whether ``torch.nn.attention.flex_attention`` can be imported."""
    try:
        import torch.nn.attention.flex_attention  # noqa: F401
    except ImportError:  # pragma: no cover - torch < 2.5
        return False
    return True


def cca_mask_mod(group_size: int, local_window: int, num_core: int, length: int):
    """The CCA visibility rule as a FlexAttention ``mask_mod(b, h, q_idx, kv_idx)``.

    Keys are laid out ``[raw tokens (length) ; core tokens (num_core)]``.
    """
    g, s, m, n_raw = group_size, local_window, num_core, length

    def mask_mod(b, h, q_idx, kv_idx):
        n = torch.clamp(torch.div(q_idx + 1 - s, g, rounding_mode="floor"), 0, m)
        raw = (kv_idx < n_raw) & (kv_idx >= n * g) & (kv_idx <= q_idx)
        core = (kv_idx >= n_raw) & (kv_idx - n_raw < n)
        return raw | core

    return mask_mod


def cca_block_mask(
    length: int, *, group_size: int, local_window: int, num_core: int, device: torch.device | str
):
    """The cached ``BlockMask`` of CCA for ``length`` queries over ``length + num_core`` keys."""
    from torch.nn.attention.flex_attention import create_block_mask

    dev = torch.device(device)
    key = (int(length), int(num_core), int(group_size), int(local_window), str(dev))
    mask = _MASKS.get(key)
    if mask is None:
        mod = cca_mask_mod(group_size, local_window, num_core, length)
        mask = create_block_mask(mod, None, None, length, length + num_core, device=dev)
        _MASKS[key] = mask
        while len(_MASKS) > _MAX_MASKS:
            _MASKS.popitem(last=False)
    else:
        _MASKS.move_to_end(key)
    return mask


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
    from torch.nn.attention.flex_attention import flex_attention

    global _COMPILED
    if q.device.type == "cpu":  # FlexAttention has no CPU backward
        if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v, core_k, core_v)):
            raise ValueError("backend='flex' on CPU is forward-only: use torch.no_grad()")
        q, k, v, core_k, core_v = (t.detach() for t in (q, k, v, core_k, core_v))
    length = q.shape[-2]
    keys = torch.cat([k, core_k], dim=-2)
    values = torch.cat([v, core_v], dim=-2)
    block_mask = cca_block_mask(
        length, group_size=group_size, local_window=local_window, num_core=num_core,
        device=q.device,
    )  # fmt: skip
    score_mod = None
    if core_bias:
        bias = torch.tensor(float(core_bias), dtype=q.dtype, device=q.device)  # a captured
        # tensor, not a Python float (dynamo would trace a float as an unsupported SymFloat)

        def score_mod(score, b, h, q_idx, kv_idx):
            return torch.where(kv_idx >= length, score + bias, score)

    use_compiled = q.device.type == "cuda" if compile is None else compile
    fn = flex_attention
    if use_compiled:
        if _COMPILED is None:
            _COMPILED = torch.compile(flex_attention, dynamic=False)
        fn = _COMPILED
    return fn(q, keys, values, score_mod=score_mod, block_mask=block_mask, scale=scale)
