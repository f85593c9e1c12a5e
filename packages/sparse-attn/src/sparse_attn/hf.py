"""Drop-in CCA for Hugging Face ``transformers`` Llama-family models (optional extra ``hf``).

:func:`swap_llama_attention` registers a ``"cca"`` implementation in transformers' attention
interface and switches a model to it. Prefill (a forward without past keys) runs
:func:`sparse_attn.cca_attention`; decoding with the model's own KV cache pools each group with
its last query as the group completes (the query is only available at that step, so the pooled
core tokens live on the attention module) and attends over ``[visible cores ; raw window]``,
which reproduces the rows of a full forward exactly. Works for ``generate`` with the default
dynamic cache. The HF cache still holds every raw key (the memory saving of CCA needs
:class:`sparse_attn.CCAKVCache`); padding inside a batch is not supported.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sparse_attn.cache import pool_group
from sparse_attn.cca import cca_attention, cca_core_tokens
from sparse_attn.validation import check_positive_int

__all__ = ["cca_attention_interface", "swap_llama_attention"]

_NAME = "cca"


def cca_attention_interface(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: object,
) -> tuple[torch.Tensor, None]:
    """transformers attention-interface function for CCA (see the module doc).

    Parameters
    ----------
    module : torch.nn.Module
        The attention layer; its ``cca_config`` holds ``group_size``, ``local_window`` and
        ``gqa_pooling``.
    query : torch.Tensor
        (B, Hq, Lq, D), RoPE applied.
    key, value : torch.Tensor
        (B, Hkv, Lk, D): the cache's keys after appending the new ones (``Lk >= Lq``).
    attention_mask : torch.Tensor or None
        Ignored (causal masking is CCA's own; padding is not supported).
    scaling : float, optional
        Softmax scale.
    dropout : float, default=0.0
        Must be 0.

    Returns
    -------
    attn_output : torch.Tensor
        (B, Lq, Hq, D).
    attn_weights : None
    """
    if dropout:
        raise ValueError("dropout: CCA attention does not support attention dropout")
    cfg = module.cca_config
    g, s, shared = cfg["group_size"], cfg["local_window"], cfg["gqa_pooling"] == "shared"
    lq, lk = query.shape[-2], key.shape[-2]
    gqa = query.shape[1] != key.shape[1]
    if lq == lk:  # prefill: a full CCA forward, then remember every complete group's core
        out = cca_attention(
            query, key, value, scale=scaling, enable_gqa=gqa, group_size=g, local_window=s,
            gqa_pooling=cfg["gqa_pooling"],
        )  # fmt: skip
        r = query.shape[1] // key.shape[1]
        if shared:
            ck, cv = cca_core_tokens(query, key, value, group_size=g, shared_heads=r)
        else:
            kx, vx = key.repeat_interleave(r, 1), value.repeat_interleave(r, 1)
            ck, cv = cca_core_tokens(query, kx, vx, group_size=g)
        module._cca_cores = (ck, cv)
        return out.transpose(1, 2).contiguous(), None
    ck, cv = module._cca_cores
    outs = []
    for i in range(lq):  # decode: new positions t = lk - lq + i
        t = lk - lq + i
        qi = query[..., i : i + 1, :]
        if (t + 1) % g == 0:  # group ending at t completes now: pool it with q_t
            kg, vg = key[..., t + 1 - g : t + 1, :], value[..., t + 1 - g : t + 1, :]
            kc, vc = pool_group(qi, kg, vg, None, shared)
            ck, cv = torch.cat([ck, kc], dim=-2), torch.cat([cv, vc], dim=-2)
        n = max(0, (t + 1 - s) // g)
        raw_k, raw_v = key[..., n * g : t + 1, :], value[..., n * g : t + 1, :]
        core_k, core_v = ck[..., :n, :], cv[..., :n, :]
        if core_k.shape[1] != raw_k.shape[1]:  # cores per query head: expand the raw window
            r = core_k.shape[1] // raw_k.shape[1]
            raw_k, raw_v = raw_k.repeat_interleave(r, 1), raw_v.repeat_interleave(r, 1)
        keys = torch.cat([core_k, raw_k], dim=-2)
        values = torch.cat([core_v, raw_v], dim=-2)
        outs.append(
            F.scaled_dot_product_attention(
                qi, keys, values, scale=scaling, enable_gqa=keys.shape[1] != qi.shape[1]
            )
        )
    module._cca_cores = (ck, cv)
    return torch.cat(outs, dim=-2).transpose(1, 2).contiguous(), None


def swap_llama_attention(
    model: torch.nn.Module,
    *,
    group_size: int = 16,
    local_window: int = 1024,
    gqa_pooling: str = "per_query_head",
) -> torch.nn.Module:
    """Switch a transformers Llama-family model (Llama, Mistral, Qwen2, ...) to CCA attention.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A model whose attention layers dispatch through ``ALL_ATTENTION_FUNCTIONS``.
    group_size : int, default=16
        g.
    local_window : int, default=1024
        s.
    gqa_pooling : {"per_query_head", "shared"}, default="per_query_head"
        See :func:`sparse_attn.cca_attention`.

    Returns
    -------
    The same model, in place.
    """
    from transformers import AttentionInterface

    check_positive_int(group_size, "group_size")
    check_positive_int(local_window, "local_window")
    if gqa_pooling not in ("per_query_head", "shared"):
        raise ValueError(f"gqa_pooling must be 'per_query_head' or 'shared', got {gqa_pooling!r}")
    layers = [m for m in model.modules() if hasattr(m, "num_key_value_groups")]
    if not layers:
        raise TypeError("model: found no Llama-family attention layers (num_key_value_groups)")
    AttentionInterface.register(_NAME, cca_attention_interface)
    cfg = {"group_size": group_size, "local_window": local_window, "gqa_pooling": gqa_pooling}
    for layer in layers:
        layer.cca_config = dict(cfg)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(_NAME)
    else:  # pragma: no cover - older transformers
        model.config._attn_implementation = _NAME
    return model
