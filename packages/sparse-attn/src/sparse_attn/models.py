"""A tiny Llama-style decoder (RMSNorm, RoPE, GQA, SwiGLU) and the attention-swap helper.

``swap_attention`` is the paper's plug-and-play use (Sec. 3, "replace the self-attention of a
pretrained LLM, then fine-tune briefly"): it changes only the attention kernel of each
:class:`~sparse_attn.modules.SelfAttention`, never the weights.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from sparse_attn.cache import KVCache
from sparse_attn.modules import SelfAttention, check_kernel, make_cache
from sparse_attn.validation import check_positive_int

__all__ = ["TinyLlama", "TinyLlamaConfig", "swap_attention"]


@dataclass
class TinyLlamaConfig:
    """Size of a :class:`TinyLlama`.

    Attributes
    ----------
    vocab_size, hidden_size, num_layers, num_heads, num_kv_heads : int
        Usual transformer sizes (GQA when ``num_kv_heads < num_heads``).
    intermediate_size : int, optional
        SwiGLU width, default ``round(8 hidden / 3)``.
    rope_theta : float
        RoPE base.
    """

    vocab_size: int = 512
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int | None = None
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads"):
            check_positive_int(getattr(self, name), name)
        if self.intermediate_size is not None:
            check_positive_int(self.intermediate_size, "intermediate_size")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} must be a multiple of num_heads {self.num_heads}"
            )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads {self.num_heads} must be a multiple of num_kv_heads {self.num_kv_heads}"
            )
        theta = self.rope_theta
        if (
            isinstance(theta, bool)
            or not isinstance(theta, numbers.Real)
            or not 0 < theta < math.inf
        ):
            raise ValueError(f"rope_theta must be a positive finite number, got {theta!r}")


class _Block(nn.Module):
    def __init__(self, cfg: TinyLlamaConfig, layer_idx: int) -> None:
        super().__init__()
        width = cfg.intermediate_size or round(8 * cfg.hidden_size / 3)
        self.attn_norm = nn.RMSNorm(cfg.hidden_size)
        self.attn = SelfAttention(
            cfg.hidden_size,
            cfg.num_heads,
            cfg.num_kv_heads,
            rope_theta=cfg.rope_theta,
            layer_idx=layer_idx,
        )
        self.mlp_norm = nn.RMSNorm(cfg.hidden_size)
        self.gate = nn.Linear(cfg.hidden_size, width, bias=False)
        self.up = nn.Linear(cfg.hidden_size, width, bias=False)
        self.down = nn.Linear(width, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor, cache: KVCache | None) -> torch.Tensor:
        h, _ = self.attn(self.attn_norm(x), cache=cache)
        x = x + h
        y = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class TinyLlama(nn.Module):
    """Decoder-only LM for tests and the synthetic long-range experiments.

    Parameters
    ----------
    config : TinyLlamaConfig
        Sizes.
    """

    def __init__(self, config: TinyLlamaConfig) -> None:
        super().__init__()
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads"):
            check_positive_int(getattr(config, name), f"config.{name}")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(_Block(config, i) for i in range(config.num_layers))
        self.norm = nn.RMSNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def make_cache(self) -> KVCache:
        """An empty KV cache matching the (first layer's) attention kernel."""
        attn = self.layers[0].attn
        return make_cache(attn.kind, attn.options, len(self.layers))

    def forward(
        self, input_ids: torch.Tensor, cache: KVCache | None = None, use_cache: bool = False
    ) -> tuple[torch.Tensor, KVCache | None]:
        """Logits (B, L, vocab) for ``input_ids`` (B, L); with a cache, L new tokens are appended.

        Returns
        -------
        logits : torch.Tensor
            (B, L, vocab_size).
        cache : KVCache or None
            The updated cache when ``use_cache`` or a cache was passed.
        """
        if not isinstance(input_ids, torch.Tensor) or input_ids.ndim != 2:
            raise ValueError("input_ids must be a (B, L) tensor")
        if input_ids.dtype not in (torch.long, torch.int32, torch.int64):
            raise TypeError(f"input_ids must be an integer tensor, got {input_ids.dtype}")
        if input_ids.numel() == 0:
            raise ValueError("input_ids must not be empty")
        if use_cache and cache is None:
            cache = self.make_cache()
        x = self.embed(input_ids)
        for block in self.layers:
            x = block(x, cache)
        return self.lm_head(self.norm(x)), cache


def swap_attention(
    model: nn.Module, kind: str = "cca", *, layers: list[int] | None = None, **options: int
) -> int:
    """Swap the attention kernel of every :class:`SelfAttention` in ``model``, in place.

    Parameters
    ----------
    model : nn.Module
        Any module holding :class:`~sparse_attn.modules.SelfAttention` layers (e.g.
        :class:`TinyLlama`). Weights, RoPE and projections are untouched.
    kind : {"dense", "cca", "sliding", "sink"}, default="cca"
        New kernel.
    layers : list of int, optional
        Indices (in module order) of the attention layers to swap; default all.
    **options
        Kernel hyper-parameters, e.g. ``group_size=16, local_window=1024``.

    Returns
    -------
    int
        Number of layers swapped.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    check_kernel(kind, options)
    attns = [m for m in model.modules() if isinstance(m, SelfAttention)]
    if not attns:
        raise ValueError("model has no SelfAttention layers to swap")
    if layers is None:
        idx = list(range(len(attns)))
    elif isinstance(layers, str) or not isinstance(layers, Sequence):
        raise TypeError(f"layers must be a list of layer indices, got {layers!r}")
    else:
        idx = list(layers)
    for i in idx:  # every index is checked before any layer changes
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < len(attns):
            raise ValueError(f"layers must hold indices in [0, {len(attns)}), got {i!r}")
    if len(set(idx)) != len(idx):
        raise ValueError(f"layers has duplicates: {idx}")
    for i in idx:
        attns[int(i)].set_kernel(kind, **options)
    return len(idx)
