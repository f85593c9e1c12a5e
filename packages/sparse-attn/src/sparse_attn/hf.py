"""Drop-in CCA for Hugging Face ``transformers`` Llama-family models (optional extra ``hf``).

:func:`swap_llama_attention` registers a ``"cca"`` implementation in transformers' attention
interface and switches a model to it. Prefill (a forward without past keys) runs
:func:`sparse_attn.cca_attention`; decoding with the model's own KV cache pools each group with
its last query as the group completes (the query is only available at that step, so the pooled
core tokens live on the attention module) and attends over ``[visible cores ; raw window]``,
which reproduces the rows of a full forward exactly. Works for ``generate`` with the default
dynamic cache. The HF cache still holds every raw key (the memory saving of CCA needs
:class:`sparse_attn.CCAKVCache`).

Padding: CCA's groups are token positions, so a left-padded row would pool pad tokens into its
groups. Right padding is exact (causal rows never see the pads that follow them); a mask with a
pad before a real token raises ``ValueError`` instead of returning wrong tokens.

Save / load: the settings are written to ``config.cca_config`` by :func:`swap_llama_attention`,
so ``save_pretrained`` keeps them; transformers does not save the attention implementation, so
reload with :func:`from_pretrained` (or ``from_pretrained(path, attn_implementation="cca")``
after importing this module). A plain ``from_pretrained`` gives the dense model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sparse_attn.cache import pool_group
from sparse_attn.cca import cca_attention, cca_core_tokens
from sparse_attn.validation import check_positive_int

__all__ = ["cca_attention_interface", "from_pretrained", "swap_llama_attention"]

_NAME = "cca"
_DEFAULTS = {"group_size": 16, "local_window": 1024, "gqa_pooling": "per_query_head"}


def _settings(module: torch.nn.Module) -> dict:
    cfg = getattr(module, "cca_config", None)
    if cfg is None:
        cfg = getattr(getattr(module, "config", None), "cca_config", None)
    return {**_DEFAULTS, **(cfg or {})}


def _check_padding(attention_mask: torch.Tensor | None) -> None:
    """Raise on a pad before a real token (left or inner padding); right padding is exact."""
    if attention_mask is None:
        return
    m = attention_mask
    allowed = m if m.dtype == torch.bool else m == 0  # additive float masks: 0 = attend
    keys = allowed.reshape(allowed.shape[0], -1, allowed.shape[-1])[:, -1, :]  # last query row
    seen_real_after = torch.flip(torch.cummax(torch.flip(keys.int(), [-1]), -1).values, [-1])
    if ((~keys) & seen_real_after.bool()).any():
        raise ValueError(
            "attention_mask: a padded position precedes a real token (left padding); CCA pools "
            "fixed token positions, so pads would enter the core tokens. Pad on the right or run "
            "sequences one at a time"
        )


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
        Causal masking is CCA's own; a mask with left padding raises ``ValueError``.
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
    _check_padding(attention_mask)
    cfg = _settings(module)
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


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(_NAME, cca_attention_interface)
    # without a registered mask function transformers passes no mask at all to a custom
    # implementation, so padding would go unseen; the SDPA mask is None when purely causal
    AttentionMaskInterface.register(_NAME, sdpa_mask)


def swap_llama_attention(
    model: torch.nn.Module,
    *,
    group_size: int | None = None,
    local_window: int | None = None,
    gqa_pooling: str | None = None,
) -> torch.nn.Module:
    """Switch a transformers Llama-family model (Llama, Mistral, Qwen2, ...) to CCA attention.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A model whose attention layers dispatch through ``ALL_ATTENTION_FUNCTIONS``.
    group_size : int, optional
        g (default: ``model.config.cca_config`` when present, else 16).
    local_window : int, optional
        s (default: from the config, else 1024).
    gqa_pooling : {"per_query_head", "shared"}, optional
        See :func:`sparse_attn.cca_attention` (default: from the config, else
        ``"per_query_head"``).

    Returns
    -------
    The same model, in place; ``model.config.cca_config`` records the settings so that
    ``save_pretrained`` keeps them.
    """
    given = {"group_size": group_size, "local_window": local_window, "gqa_pooling": gqa_pooling}
    saved = getattr(getattr(model, "config", None), "cca_config", None) or {}
    cfg = {k: given[k] if given[k] is not None else saved.get(k, _DEFAULTS[k]) for k in given}
    check_positive_int(cfg["group_size"], "group_size")
    check_positive_int(cfg["local_window"], "local_window")
    if cfg["gqa_pooling"] not in ("per_query_head", "shared"):
        raise ValueError(
            f"gqa_pooling must be 'per_query_head' or 'shared', got {cfg['gqa_pooling']!r}"
        )
    layers = [m for m in model.modules() if hasattr(m, "num_key_value_groups")]
    if not layers:
        raise TypeError("model: found no Llama-family attention layers (num_key_value_groups)")
    _register()
    for layer in layers:
        layer.cca_config = dict(cfg)
    model.config.cca_config = dict(cfg)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(_NAME)
    else:  # pragma: no cover - older transformers
        model.config._attn_implementation = _NAME
    return model


def from_pretrained(path, model_cls=None, **kwargs) -> torch.nn.Module:
    """Reload a model saved after :func:`swap_llama_attention`, with CCA switched back on.

    Parameters
    ----------
    path : str or path
        A ``save_pretrained`` folder (sharded safetensors included).
    model_cls : transformers class, optional
        Default ``AutoModelForCausalLM``.
    **kwargs
        Passed to ``from_pretrained``.

    Raises
    ------
    ValueError
        The saved config has no ``cca_config`` (the model was not saved with CCA).
    """
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(path)
    if not getattr(config, "cca_config", None):
        raise ValueError(f"path: {path} holds no cca_config; save a model patched by "
                         "swap_llama_attention, or call swap_llama_attention after loading")  # fmt: skip
    model = (model_cls or AutoModelForCausalLM).from_pretrained(path, **kwargs)
    return swap_llama_attention(model)


try:  # make attn_implementation="cca" usable in from_pretrained once this module is imported
    _register()
except ImportError:  # pragma: no cover - transformers is an optional extra
    pass
