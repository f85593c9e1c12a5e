"""Hugging Face Llama-family models as Puzzle parents, and children exported back to transformers.

``from_hf`` maps ``LlamaForCausalLM`` weights onto :class:`~nas_puzzle.model.HeteroDecoder`
(same pre-norm RMSNorm / rotate-half RoPE / SwiGLU / GQA computation). ``to_hf`` builds a
``LlamaForCausalLM`` from a (heterogeneous) child: per-layer KV-head counts and FFN widths are
set on the layer's own modules, and linear / no-op subblocks replace the attention or MLP module
of that layer. The export runs with stock transformers code (no ``trust_remote_code``); saving it
with ``save_pretrained`` stores the weights, but reloading a heterogeneous child needs ``to_hf``
again on the loaded Puzzle child (a stock config cannot describe per-layer shapes).
"""

from __future__ import annotations

import torch
from torch import nn

from nas_puzzle.config import BlockConfig, DecoderConfig
from nas_puzzle.model import HeteroDecoder

__all__ = ["from_hf", "to_hf"]


def _config_from_hf(c) -> DecoderConfig:
    if getattr(c, "hidden_act", "silu") != "silu":
        raise ValueError(
            f"only SwiGLU (hidden_act='silu') models are supported, got {c.hidden_act!r}"
        )
    if getattr(c, "attention_bias", False) or getattr(c, "mlp_bias", False):
        raise ValueError("models with attention or MLP biases are not supported")
    scaling = getattr(c, "rope_scaling", None) or {}
    params = getattr(c, "rope_parameters", None) or {}
    rope_type = scaling.get("rope_type", params.get("rope_type", "default"))
    if rope_type != "default":
        raise ValueError(f"only the default RoPE is supported, got rope_type={rope_type!r}")
    theta = params.get("rope_theta", getattr(c, "rope_theta", 10000.0))
    return DecoderConfig(
        vocab_size=c.vocab_size,
        d_model=c.hidden_size,
        n_layers=c.num_hidden_layers,
        n_heads=c.num_attention_heads,
        n_kv_heads=c.num_key_value_heads,
        head_dim=getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads,
        ffn_intermediate=c.intermediate_size,
        max_seq_len=c.max_position_embeddings,
        rope_theta=float(theta),
        norm_eps=c.rms_norm_eps,
        tie_embeddings=bool(getattr(c, "tie_word_embeddings", False)),
    )


def from_hf(model) -> HeteroDecoder:
    """A ``HeteroDecoder`` parent with the weights of a Llama-family causal LM (copied).

    Parameters
    ----------
    model : transformers.LlamaForCausalLM (or a model with the same module layout)

    Returns
    -------
    HeteroDecoder
    """
    if (
        not hasattr(model, "model")
        or not hasattr(model.model, "layers")
        or not hasattr(model, "config")
    ):
        raise TypeError(f"model must be a Llama-family causal LM, got {type(model).__name__}")
    cfg = _config_from_hf(model.config)
    sd = {"embed.weight": model.model.embed_tokens.weight, "norm.weight": model.model.norm.weight}
    if not cfg.tie_embeddings:
        sd["lm_head.weight"] = model.lm_head.weight
    for i, layer in enumerate(model.model.layers):
        a, m = layer.self_attn, layer.mlp
        sd[f"blocks.{i}.attn.norm.weight"] = layer.input_layernorm.weight
        for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
            sd[f"blocks.{i}.attn.{p}.weight"] = getattr(a, p).weight
        sd[f"blocks.{i}.ffn.norm.weight"] = layer.post_attention_layernorm.weight
        for p in ("gate_proj", "up_proj", "down_proj"):
            sd[f"blocks.{i}.ffn.{p}.weight"] = getattr(m, p).weight
    sd = {k: v.detach().float() for k, v in sd.items()}
    return HeteroDecoder.from_state_dict(cfg, sd, [cfg.parent_block] * cfg.n_layers)


class _ZeroAttention(nn.Module):
    def forward(self, hidden_states, *args, **kwargs):
        return torch.zeros_like(hidden_states), None


class _LinearAttention(nn.Module):
    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.linear = linear

    def forward(self, hidden_states, *args, **kwargs):
        return self.linear(hidden_states), None


class _ZeroMLP(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)


class _LinearMLP(nn.Module):
    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.linear = linear

    def forward(self, x):
        return self.linear(x)


def _copy_linear(src: nn.Linear) -> nn.Linear:
    out = nn.Linear(src.in_features, src.out_features, bias=False)
    out.weight.data.copy_(src.weight.data)
    return out


def to_hf(child: HeteroDecoder):
    """A ``transformers.LlamaForCausalLM`` computing the same function as ``child``.

    Parameters
    ----------
    child : HeteroDecoder
        Any Puzzle child (per-layer GQA KV heads, FFN widths, linear and no-op subblocks).

    Returns
    -------
    transformers.LlamaForCausalLM (eval mode, float32)
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    if not isinstance(child, HeteroDecoder):
        raise TypeError(f"child must be a HeteroDecoder, got {type(child).__name__}")
    cfg = child.cfg
    hf_cfg = LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.ffn_intermediate,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim,
        max_position_embeddings=cfg.max_seq_len,
        rms_norm_eps=cfg.norm_eps,
        rope_theta=cfg.rope_theta,
        tie_word_embeddings=cfg.tie_embeddings,
        attention_bias=False,
        mlp_bias=False,
    )
    hf = LlamaForCausalLM(hf_cfg).eval()
    with torch.no_grad():
        hf.model.embed_tokens.weight.copy_(child.embed.weight)
        hf.model.norm.weight.copy_(child.norm.weight)
        if not cfg.tie_embeddings:
            hf.lm_head.weight.copy_(child.lm_head.weight)
        for layer, blk in zip(hf.model.layers, child.blocks, strict=True):
            b: BlockConfig = blk.config
            at, ff = blk.attn, blk.ffn
            if b.attention.kind == "noop":
                layer.self_attn = _ZeroAttention()
            else:
                layer.input_layernorm.weight.copy_(at.norm.weight)
                if b.attention.kind == "linear":
                    layer.self_attn = _LinearAttention(_copy_linear(at.linear))
                else:
                    sa = layer.self_attn
                    for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
                        setattr(sa, p, _copy_linear(getattr(at, p)))
                    sa.num_key_value_groups = cfg.n_heads // b.attention.n_kv_heads
            if b.ffn.kind == "noop":
                layer.mlp = _ZeroMLP()
            else:
                layer.post_attention_layernorm.weight.copy_(ff.norm.weight)
                if b.ffn.kind == "linear":
                    layer.mlp = _LinearMLP(_copy_linear(ff.linear))
                else:
                    for p in ("gate_proj", "up_proj", "down_proj"):
                        setattr(layer.mlp, p, _copy_linear(getattr(ff, p)))
    return hf.eval()
