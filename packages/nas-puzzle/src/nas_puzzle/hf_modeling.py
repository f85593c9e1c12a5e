"""A Llama whose layers differ: the config and model classes a saved Puzzle child reloads into.

Self-contained (imports only torch and transformers) because ``save_pretrained`` copies this file
next to the weights: with the ``auto_map`` it writes, ``AutoModelForCausalLM.from_pretrained(d,
trust_remote_code=True)`` rebuilds the child from the directory alone. After ``import
nas_puzzle.hf`` the classes are also registered with the Auto classes (no remote code needed).

``block_configs`` holds one dict per layer, the layout of NVIDIA's DeciLM-style configs:
``{"attention": {"kind": "gqa"|"linear"|"noop", "n_kv_heads": int|None},
"ffn": {"kind": "swiglu"|"linear"|"noop", "intermediate": int|None}}``.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM

__all__ = ["PuzzleLlamaConfig", "PuzzleLlamaForCausalLM", "shape_layers"]


class PuzzleLlamaConfig(LlamaConfig):
    """``LlamaConfig`` plus per-layer ``block_configs`` (see the module docstring)."""

    model_type = "puzzle_llama"

    def __init__(self, block_configs: list[dict] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.block_configs = list(block_configs or [])
        if self.block_configs and len(self.block_configs) != self.num_hidden_layers:
            raise ValueError(
                f"block_configs: {len(self.block_configs)} entries for "
                f"{self.num_hidden_layers} layers"
            )


class ZeroAttention(nn.Module):
    """A removed attention subblock: adds nothing to the residual stream."""

    def forward(self, hidden_states, *args, **kwargs):
        return torch.zeros_like(hidden_states), None


class LinearAttention(nn.Module):
    """Attention replaced by one linear map of the normalised hidden state."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.linear = nn.Linear(d_model, d_model, bias=False)

    def forward(self, hidden_states, *args, **kwargs):
        return self.linear(hidden_states), None


class ZeroMLP(nn.Module):
    """A removed FFN subblock."""

    def forward(self, x):
        return torch.zeros_like(x)


class LinearMLP(nn.Module):
    """FFN replaced by one linear map."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.linear = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        return self.linear(x)


def shape_layers(model: LlamaForCausalLM, block_configs: list[dict]) -> None:
    """Give every decoder layer of ``model`` the modules its block config names (fresh weights)."""
    c = model.config
    d, hd = c.hidden_size, getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    for layer, b in zip(model.model.layers, block_configs, strict=True):
        att, ffn = b["attention"], b["ffn"]
        if att["kind"] == "noop":
            layer.self_attn = ZeroAttention()
        elif att["kind"] == "linear":
            layer.self_attn = LinearAttention(d)
        elif att["kind"] == "gqa":
            sa, kv = layer.self_attn, int(att["n_kv_heads"])
            if c.num_attention_heads % kv:
                raise ValueError(f"block_configs: n_kv_heads={kv} must divide the query heads")
            sa.k_proj = nn.Linear(d, kv * hd, bias=False)
            sa.v_proj = nn.Linear(d, kv * hd, bias=False)
            sa.num_key_value_groups = c.num_attention_heads // kv
        else:
            raise ValueError(f"block_configs: unknown attention kind {att['kind']!r}")
        if ffn["kind"] == "noop":
            layer.mlp = ZeroMLP()
        elif ffn["kind"] == "linear":
            layer.mlp = LinearMLP(d)
        elif ffn["kind"] == "swiglu":
            w = int(ffn["intermediate"])
            layer.mlp.gate_proj = nn.Linear(d, w, bias=False)
            layer.mlp.up_proj = nn.Linear(d, w, bias=False)
            layer.mlp.down_proj = nn.Linear(w, d, bias=False)
        else:
            raise ValueError(f"block_configs: unknown ffn kind {ffn['kind']!r}")


class PuzzleLlamaForCausalLM(LlamaForCausalLM):
    """``LlamaForCausalLM`` built layer by layer from ``config.block_configs``."""

    config_class = PuzzleLlamaConfig

    def __init__(self, config: PuzzleLlamaConfig) -> None:
        super().__init__(config)
        if config.block_configs:
            shape_layers(self, config.block_configs)
