"""Hugging Face Llama-family models as Puzzle parents, and children exported back to transformers.

``from_hf`` maps ``LlamaForCausalLM`` (and Mistral-style) weights onto
:class:`~nas_puzzle.model.HeteroDecoder` (same pre-norm RMSNorm / rotate-half RoPE / SwiGLU / GQA
computation) and raises, listing them, when the source holds parameters the decoder would drop
(Qwen2's q/k/v biases, Qwen3's q/k norms, ...). ``to_hf`` builds a
:class:`~nas_puzzle.hf_modeling.PuzzleLlamaForCausalLM` (a ``LlamaForCausalLM`` subclass) whose
config carries per-layer ``block_configs``, so ``save_pretrained`` -> ``from_pretrained`` rebuilds
the same heterogeneous child: after ``import nas_puzzle.hf`` through the Auto classes, or from the
directory alone with ``trust_remote_code=True`` (the modeling file is saved with the weights).
"""

from __future__ import annotations

import torch

from nas_puzzle.config import BlockConfig, DecoderConfig
from nas_puzzle.model import HeteroDecoder

__all__ = ["SUPPORTED_FAMILIES", "UnsupportedModelError", "from_hf", "to_hf"]


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


SUPPORTED_FAMILIES = ("llama", "mistral")


class UnsupportedModelError(ValueError):
    """The source model is not a family ``from_hf`` reproduces exactly (names what it found)."""


def _unsupported_features(model) -> list[str]:
    """What the decoder cannot compute: each entry names the config field or parameters."""
    c = model.config
    found = []
    for attr in ("logits_scaling", "embedding_multiplier", "residual_multiplier",
                 "attention_multiplier"):  # fmt: skip
        v = getattr(c, attr, None)
        if v is not None and v != 1:
            found.append(f"{attr}={v}")
    for attr in ("final_logit_softcapping", "attn_logit_softcapping"):
        if getattr(c, attr, None):
            found.append(f"{attr}={getattr(c, attr)}")
    window = getattr(c, "sliding_window", None)
    if window is not None and getattr(c, "use_sliding_window", True):
        if window < getattr(c, "max_position_embeddings", 0):
            found.append(
                f"sliding_window={window} < max_position_embeddings={c.max_position_embeddings}"
            )
    if getattr(c, "hidden_act", "silu") != "silu":
        found.append(f"hidden_act={c.hidden_act!r} (SwiGLU needs silu)")
    scaling = getattr(c, "rope_scaling", None) or {}
    params = getattr(c, "rope_parameters", None) or {}
    rope = scaling.get("rope_type", params.get("rope_type", "default"))
    if rope != "default":
        found.append(f"rope_type={rope!r}")
    attn = getattr(getattr(model, "model", None), "layers", [None])[0]
    attn = getattr(attn, "self_attn", None)
    if attn is not None and (hasattr(attn, "q_norm") or hasattr(attn, "k_norm")):
        found.append("QK-norm (q_norm / k_norm)")
    biases = [n for n, _ in model.named_parameters() if n.endswith(".bias")]
    if biases:
        found.append(f"biases ({len(biases)}: {biases[:3]})")
    return found


def from_hf(model) -> HeteroDecoder:
    """A ``HeteroDecoder`` parent with the weights of a Llama-family causal LM (copied).

    Only the families in ``SUPPORTED_FAMILIES`` are read: Llama, and Mistral whose sliding
    window covers the whole context (or is off). Each is tested to give the HF model's logits.
    Any other ``model_type``, or a supported one with a feature the decoder does not compute
    (logit or residual multipliers, a sliding window, soft-capping, QK-norm, biases, another
    RoPE), raises :class:`UnsupportedModelError` listing what it found.

    Parameters
    ----------
    model : transformers.LlamaForCausalLM or MistralForCausalLM

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
    family = getattr(model.config, "model_type", None)
    found = _unsupported_features(model)
    if family not in SUPPORTED_FAMILIES or found:
        raise UnsupportedModelError(
            f"model: from_hf reproduces {list(SUPPORTED_FAMILIES)} models without extra "
            f"features; this one is {family!r}"
            + (f" with {found}" if found else "")
            + ": the decoder would compute something else"
        )
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
    used = {id(v) for v in sd.values()}
    dropped = [n for n, p in model.named_parameters() if id(p) not in used]
    if dropped:
        raise UnsupportedModelError(
            f"model: from_hf would drop {len(dropped)} parameter(s) the decoder has no place for "
            f"(biases, extra norms, ...): {dropped[:8]}"
        )
    sd = {k: v.detach().float() for k, v in sd.items()}
    return HeteroDecoder.from_state_dict(cfg, sd, [cfg.parent_block] * cfg.n_layers)


def _block_dict(b: BlockConfig) -> dict:
    return {
        "attention": {"kind": b.attention.kind, "n_kv_heads": b.attention.n_kv_heads},
        "ffn": {"kind": b.ffn.kind, "intermediate": b.ffn.intermediate},
    }


def _register() -> None:
    """Puzzle classes in the Auto registries, and ``auto_map`` written by ``save_pretrained``."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from nas_puzzle.hf_modeling import PuzzleLlamaConfig, PuzzleLlamaForCausalLM

    try:
        AutoConfig.register("puzzle_llama", PuzzleLlamaConfig)
        AutoModelForCausalLM.register(PuzzleLlamaConfig, PuzzleLlamaForCausalLM)
    except ValueError:  # already registered (module reloaded)
        pass
    PuzzleLlamaConfig.register_for_auto_class()
    PuzzleLlamaForCausalLM.register_for_auto_class("AutoModelForCausalLM")


def to_hf(child: HeteroDecoder):
    """A ``PuzzleLlamaForCausalLM`` (a ``LlamaForCausalLM``) computing the same function as ``child``.

    Parameters
    ----------
    child : HeteroDecoder
        Any Puzzle child (per-layer GQA KV heads, FFN widths, linear and no-op subblocks).

    Returns
    -------
    PuzzleLlamaForCausalLM (eval mode, float32)
        ``save_pretrained`` writes ``block_configs`` into ``config.json`` and this package's
        modeling file beside the weights; it reloads to the same logits.
    """
    from nas_puzzle.hf_modeling import PuzzleLlamaConfig, PuzzleLlamaForCausalLM

    if not isinstance(child, HeteroDecoder):
        raise TypeError(f"child must be a HeteroDecoder, got {type(child).__name__}")
    _register()
    cfg = child.cfg
    hf_cfg = PuzzleLlamaConfig(
        block_configs=[_block_dict(blk.config) for blk in child.blocks],
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
    hf = PuzzleLlamaForCausalLM(hf_cfg).eval()
    with torch.no_grad():
        hf.model.embed_tokens.weight.copy_(child.embed.weight)
        hf.model.norm.weight.copy_(child.norm.weight)
        if not cfg.tie_embeddings:
            hf.lm_head.weight.copy_(child.lm_head.weight)
        for layer, blk in zip(hf.model.layers, child.blocks, strict=True):
            b: BlockConfig = blk.config
            at, ff = blk.attn, blk.ffn
            if b.attention.kind != "noop":
                layer.input_layernorm.weight.copy_(at.norm.weight)
                if b.attention.kind == "linear":
                    layer.self_attn.linear.weight.copy_(at.linear.weight)
                else:
                    for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
                        getattr(layer.self_attn, p).weight.copy_(getattr(at, p).weight)
            if b.ffn.kind != "noop":
                layer.post_attention_layernorm.weight.copy_(ff.norm.weight)
                if b.ffn.kind == "linear":
                    layer.mlp.linear.weight.copy_(ff.linear.weight)
                else:
                    for p in ("gate_proj", "up_proj", "down_proj"):
                        getattr(layer.mlp, p).weight.copy_(getattr(ff, p).weight)
    return hf.eval()
