"""Drop-in CCA for Hugging Face ``transformers`` Llama-family models (optional extra ``hf``).

:func:`swap_llama_attention` registers a ``"cca"`` implementation in transformers' attention
interface and switches a model to it. Prefill (a forward from an empty cache) runs
:func:`sparse_attn.cca_attention`; decoding with the model's own KV cache pools each group with
its last query as the group completes and attends over ``[visible cores ; raw window]``, which
reproduces the rows of a full forward exactly.

Decode state lives in the cache. The pooled core tokens of each layer are kept on that layer
of the ``transformers.Cache`` that the model is given (``DynamicCache`` or ``StaticCache``):
the first CCA forward through a cache layer turns it into :class:`CCADynamicLayer` or
:class:`CCAStaticLayer`, which carry the cores through everything transformers does to a
cache: beam search (``reorder_cache``), ``num_return_sequences`` and prompt-cache expansion
(``batch_repeat_interleave``), ``batch_select_indices``, ``crop`` (assisted decoding),
``reset`` (a reused static cache), offloading and ``copy.deepcopy`` (transformers' prompt-cache
reuse). Nothing is stored on the model, so one model serves any number of caches. A cache that
holds past keys but no CCA cores (filled by a dense forward), a core count that does not cover
its keys, a batch that does not match, and cache layers CCA cannot use (sliding-window,
quantized) raise :class:`CCACacheError`. The HF cache still holds every raw key (the memory
saving of CCA needs :class:`sparse_attn.CCAKVCache`).

Padding: CCA's groups are token positions, so a left-padded row would pool pad tokens into its
groups. Right padding is exact (causal rows never see the pads that follow them); a mask with a
pad before a real token raises ``ValueError`` instead of returning wrong tokens.

Compilation: the decode step is Python control flow over data-dependent lengths, so
:func:`swap_llama_attention` sets ``generation_config.disable_compile = True`` (transformers
would otherwise compile the forward for a static cache on a GPU).

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

__all__ = [
    "CCACacheError",
    "cca_attention_interface",
    "from_pretrained",
    "swap_llama_attention",
]

_NAME = "cca"
_DEFAULTS = {"group_size": 16, "local_window": 1024, "gqa_pooling": "per_query_head"}
# the keyword under which transformers hands an attention layer its cache, newest first
_CACHE_KWARGS = ("cache", "past_key_values", "past_key_value")


class CCACacheError(ValueError):
    """A transformers cache that cannot carry CCA's decode state, or that lost it."""


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


# ---------------------------------------------------------------------------------------------
# cache layers that carry the core tokens


def _cca_layer_class(base: type) -> type:
    """A subclass of transformers cache layer ``base`` that also carries CCA's core tokens.

    A plain subclass (no mixin base) so that a stock layer's ``__class__`` can be switched to
    it in place; the cores are (B, Hc, n_groups, D) key and value tensors.
    """

    class _Layer(base):
        _layer_type = None  # keeps transformers from registering it as a default layer type
        cca_cores: tuple[torch.Tensor, torch.Tensor] | None = None
        cca_group_size: int = 1

        def _map_cores(self, fn) -> None:
            if self.cca_cores is not None:
                self.cca_cores = (fn(self.cca_cores[0]), fn(self.cca_cores[1]))

        def reset(self) -> None:
            super().reset()
            self.cca_cores = None

        def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
            super().reorder_cache(beam_idx)
            self._map_cores(lambda t: t.index_select(0, beam_idx.to(t.device)))

        def batch_repeat_interleave(self, repeats: int) -> None:
            super().batch_repeat_interleave(repeats)
            self._map_cores(lambda t: t.repeat_interleave(repeats, dim=0))

        def batch_select_indices(self, indices: torch.Tensor) -> None:
            super().batch_select_indices(indices)
            self._map_cores(lambda t: t[indices, ...])

        def crop(self, tokens_to_remove: int) -> None:
            super().crop(tokens_to_remove)
            keep = int(self.get_seq_length()) // self.cca_group_size  # groups still complete
            self._map_cores(lambda t: t[..., :keep, :])

        def offload(self) -> None:
            super().offload()
            self._map_cores(lambda t: t.to("cpu", non_blocking=True))

        def prefetch(self) -> None:
            super().prefetch()
            if self.cca_cores is not None and self.cca_cores[0].device != self.device:
                self._map_cores(lambda t: t.to(self.device, non_blocking=True))

    _Layer.__name__ = _Layer.__qualname__ = f"CCA{base.__name__}"
    _Layer.__module__ = __name__
    _Layer.__doc__ = f"transformers ``{base.__name__}`` that also carries CCA's core tokens."
    return _Layer


def _layer_classes() -> dict[type, type]:
    """{transformers layer class: its CCA subclass}, built once transformers is imported."""
    global _LAYERS
    if _LAYERS is None:
        from transformers.cache_utils import DynamicLayer, StaticLayer

        _LAYERS = {}
        for base in (DynamicLayer, StaticLayer):
            cls = _cca_layer_class(base)
            globals()[cls.__name__] = cls  # picklable by name
            _LAYERS[base] = _LAYERS[cls] = cls
    return _LAYERS


_LAYERS: dict[type, type] | None = None


def _cca_layer(cache: object, layer_idx: int, group_size: int):
    """The cache's layer ``layer_idx``, turned into its CCA class (raises if it cannot be)."""
    layers = getattr(cache, "layers", None)
    if layers is None or layer_idx >= len(layers):
        raise CCACacheError(
            f"cache: {type(cache).__name__} has no layer {layer_idx}; CCA keeps its core tokens "
            "in the layers of a transformers Cache (DynamicCache or StaticCache)"
        )
    layer = layers[layer_idx]
    target = _layer_classes().get(type(layer))
    if target is None or getattr(layer, "is_sliding", False):
        raise CCACacheError(
            f"cache: layer {layer_idx} is a {type(layer).__name__}; CCA's decode state can be "
            "kept in DynamicLayer and StaticLayer (full-attention DynamicCache / StaticCache). "
            "A sliding-window, quantized or linear-attention layer drops or changes the raw keys "
            "CCA pools; use cache_implementation='dynamic' or 'static' on a model without "
            "sliding-window layers"
        )
    if type(layer) is not target:
        layer.__class__ = target
        layer.cca_cores = None
    layer.cca_group_size = group_size
    return layer


def _capture_cache(module, args, kwargs):
    """Forward pre-hook: hand the attention interface the cache of this call (if any)."""
    module._cca_call_cache = next((kwargs[k] for k in _CACHE_KWARGS if k in kwargs), None)


def _release_cache(module, args, kwargs, output):
    module._cca_call_cache = None


# ---------------------------------------------------------------------------------------------
# the attention function


def _pool_all(query, key, value, g: int, shared: bool):
    r = query.shape[1] // key.shape[1]
    if shared:
        return cca_core_tokens(query, key, value, group_size=g, shared_heads=r)
    kx, vx = key.repeat_interleave(r, 1), value.repeat_interleave(r, 1)
    return cca_core_tokens(query, kx, vx, group_size=g)


def _past_cores(layer, past: int, batch: int, g: int, layer_idx: int):
    cores = layer.cca_cores
    if cores is None:
        raise CCACacheError(
            f"cache: layer {layer_idx} holds keys for {past} tokens but no CCA core tokens: it "
            "was filled by a forward without CCA attention (switch the model with "
            "swap_llama_attention before filling the cache)"
        )
    ck, cv = cores
    need = past // g
    if ck.shape[0] != batch or ck.shape[-2] < need:
        raise CCACacheError(
            f"cache: layer {layer_idx} has core tokens for batch {ck.shape[0]} and "
            f"{ck.shape[-2]} groups, but the call needs batch {batch} and {need} groups "
            f"({past} past tokens); the cache was changed outside transformers' Cache API"
        )
    return ck[..., :need, :], cv[..., :need, :]


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
        ``gqa_pooling``; the cache of the current call is read from its cache layer
        ``module.layer_idx``.
    query : torch.Tensor
        (B, Hq, Lq, D), RoPE applied.
    key, value : torch.Tensor
        (B, Hkv, Lk, D): the cache's keys after appending the new ones (``Lk >= Lq``; a static
        cache passes its whole buffer, of which the first ``past + Lq`` are valid).
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

    Raises
    ------
    CCACacheError
        The cache cannot hold CCA's state, or holds past keys without it (module doc).
    """
    if dropout:
        raise ValueError("dropout: CCA attention does not support attention dropout")
    _check_padding(attention_mask)
    cfg = _settings(module)
    g, s, shared = cfg["group_size"], cfg["local_window"], cfg["gqa_pooling"] == "shared"
    lq, lk = query.shape[-2], key.shape[-2]
    cache = getattr(module, "_cca_call_cache", None)
    layer = None
    if cache is not None:
        layer = _cca_layer(cache, module.layer_idx, g)
        total = int(layer.get_seq_length())  # valid keys after this step's update
        key, value = key[..., :total, :], value[..., :total, :]
        lk = total
    elif lq != lk:
        raise CCACacheError(
            "cache: keys longer than the queries but no cache reached the attention layer; "
            "call the model through its forward (CCA reads the cache from the layer's call)"
        )
    past = lk - lq
    if past == 0:  # prefill: a full CCA forward, then remember every complete group's core
        out = cca_attention(
            query, key, value, scale=scaling, enable_gqa=query.shape[1] != key.shape[1],
            group_size=g, local_window=s, gqa_pooling=cfg["gqa_pooling"],
        )  # fmt: skip
        if layer is not None:
            layer.cca_cores = _pool_all(query, key, value, g, shared)
        return out.transpose(1, 2).contiguous(), None
    ck, cv = _past_cores(layer, past, query.shape[0], g, module.layer_idx)
    outs = []
    for i in range(lq):  # new positions t = past + i, each as a decode step
        t = past + i
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
    layer.cca_cores = (ck, cv)
    return torch.cat(outs, dim=-2).transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(_NAME, cca_attention_interface)
    # without a registered mask function transformers passes no mask at all to a custom
    # implementation, so padding would go unseen; the SDPA mask is None when purely causal
    AttentionMaskInterface.register(_NAME, sdpa_mask)
    _layer_classes()


def _refuse_sliding_window(config: object) -> None:
    """CCA replaces the attention pattern; a sliding-window model's cache drops raw keys."""
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None) or []
    if window is None or getattr(config, "use_sliding_window", True) is False:
        return
    if types and "sliding_attention" not in types:
        return
    raise ValueError(
        f"model: its config uses sliding-window attention (sliding_window={window}); CCA "
        "replaces the attention pattern and its decoding needs raw keys that a sliding-window "
        "cache drops. Set config.sliding_window = None (Mistral) or use_sliding_window=False "
        "(Qwen2) before swap_llama_attention if CCA is to replace the window"
    )


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

    Raises
    ------
    ValueError
        Bad settings, or a model configured with sliding-window attention.
    TypeError
        ``model`` has no Llama-family attention layers.

    Returns
    -------
    The same model, in place; ``model.config.cca_config`` records the settings so that
    ``save_pretrained`` keeps them. Each attention layer gets a forward pre-hook that hands the
    attention function the call's cache (the decode state lives there, module doc), and
    ``model.generation_config.disable_compile`` is set.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model: expected a transformers model, got {type(model).__name__}")
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
    _refuse_sliding_window(model.config)
    if any(not hasattr(m, "layer_idx") for m in layers):
        raise TypeError("model: an attention layer has no layer_idx to find its cache layer by")
    _register()
    for layer in layers:
        layer.cca_config = dict(cfg)
        if not getattr(layer, "_cca_hooked", False):
            layer.register_forward_pre_hook(_capture_cache, with_kwargs=True)
            layer.register_forward_hook(_release_cache, with_kwargs=True, always_call=True)
            layer._cca_hooked = True
    model.config.cca_config = dict(cfg)
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.disable_compile = True
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
