"""A Puzzle child in NVIDIA's DeciLM layout, the one its released Puzzle models use.

``Llama-3_1-Nemotron-51B-Instruct`` and ``Llama-3_3-Nemotron-Super-49B-v1`` ship a
``config.json`` with ``model_type: "nemotron-nas"``, ``architectures: ["DeciLMForCausalLM"]`` and
one ``block_configs`` entry per layer::

    {"attention": {"no_op": false, "replace_with_linear": false, "n_heads_in_group": 8,
                   "sparsify": null, "window_length": null, "num_sink_tokens": null,
                   "use_prefill_window_in_sink_attention": false, "unshifted_sink": false},
     "ffn": {"no_op": false, "replace_with_linear": false, "ffn_mult": 5.25, "sparsify": null}}

A GQA layer has ``num_attention_heads / n_heads_in_group`` KV heads; a SwiGLU layer's width is
``ceil_256(int(2 * ffn_mult * hidden_size / 3))``; the head width is ``hidden_size /
num_attention_heads`` (there is no ``head_dim`` key). Weights keep Llama's names, a linear
replacement lives at ``self_attn.linear`` / ``mlp.linear``, and a no-op subblock has neither
weights nor its norm. The readers of that layout (NVIDIA's ``modeling_decilm.py``, vLLM's and
mlx-lm's ``nemotron-nas``) rebuild the child from these files; ``tools/bench/decilm_check.py``
loads an export with mlx-lm and compares its logits with the child's.

:func:`to_decilm` writes a child in that layout, :func:`from_decilm` reads one back (a released
model's ``block_configs`` included, when its attention has no sliding window or sinks). What
the layout cannot hold raises :class:`DecilmLayoutError` naming it: a head width other than
``hidden_size / num_attention_heads``, an FFN width that is not a multiple of 256.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping

import torch

from nas_puzzle.config import AttentionConfig, BlockConfig, DecoderConfig, FFNConfig
from nas_puzzle.model import HeteroDecoder

__all__ = ["DecilmLayoutError", "decilm_block_configs", "from_decilm", "to_decilm"]


class DecilmLayoutError(ValueError):
    """A child (or a config) the DeciLM layout cannot express as it is."""


def _ffn_width(ffn_mult: float, d_model: int) -> int:
    """DeciLM's ``_ffn_mult_to_intermediate_size``: ``int(2 m d / 3)`` rounded up to 256."""
    width = int(2 * ffn_mult * d_model / 3)
    return width if width % 256 == 0 else width + 256 - width % 256


def _ffn_mult(width: int, d_model: int) -> float:
    """The ``ffn_mult`` that DeciLM's readers turn back into ``width`` (a multiple of 256)."""
    mult = round(3 * width / (2 * d_model), 6)  # mlx-lm rounds ffn_mult to 6 decimals on read
    if _ffn_width(mult, d_model) != width:  # float rounding pushed it past a multiple
        raise DecilmLayoutError(f"FFN width {width}: no ffn_mult maps back to it")
    return mult


def decilm_block_configs(child: HeteroDecoder) -> list[dict]:
    """The child's layers as NVIDIA's ``block_configs`` entries (raises what cannot be held)."""
    cfg = child.cfg
    if cfg.head_dim * cfg.n_heads != cfg.d_model:
        raise DecilmLayoutError(
            f"child: head_dim {cfg.head_dim} x {cfg.n_heads} heads != hidden size "
            f"{cfg.d_model}; the DeciLM layout derives the head width as hidden_size / heads"
        )
    bad = [(i, blk.config.ffn.intermediate) for i, blk in enumerate(child.blocks)
           if blk.config.ffn.kind == "swiglu" and blk.config.ffn.intermediate % 256]  # fmt: skip
    if bad:
        raise DecilmLayoutError(
            f"child: FFN widths {bad[:6]} (layer, width) are not multiples of 256; the DeciLM "
            "layout stores ffn_mult and its readers round the width up to a multiple of 256"
        )
    out = []
    for blk in child.blocks:
        a, f = blk.config.attention, blk.config.ffn
        attn = {"no_op": a.kind == "noop", "replace_with_linear": a.kind == "linear",
                "n_heads_in_group": cfg.n_heads // a.n_kv_heads if a.kind == "gqa" else None,
                "sparsify": None, "window_length": None, "num_sink_tokens": None,
                "use_prefill_window_in_sink_attention": False, "unshifted_sink": False}  # fmt: skip
        ffn = {"no_op": f.kind == "noop", "replace_with_linear": f.kind == "linear",
               "ffn_mult": _ffn_mult(f.intermediate, cfg.d_model) if f.kind == "swiglu" else None,
               "sparsify": None}  # fmt: skip
        out.append({"attention": attn, "ffn": ffn})
    return out


def _names(cfg: DecoderConfig, blocks: list[BlockConfig]) -> dict[str, str]:
    """{this package's parameter name: the DeciLM (Llama) name}, for the weights that exist."""
    out = {"embed.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight"}
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = "lm_head.weight"
    for i, b in enumerate(blocks):
        p, q = f"blocks.{i}.", f"model.layers.{i}."
        if b.attention.kind != "noop":
            out[p + "attn.norm.weight"] = q + "input_layernorm.weight"
            projs = ("linear",) if b.attention.kind == "linear" else ("q_proj", "k_proj",
                                                                      "v_proj", "o_proj")  # fmt: skip
            for n in projs:
                out[p + f"attn.{n}.weight"] = q + f"self_attn.{n}.weight"
        if b.ffn.kind != "noop":
            out[p + "ffn.norm.weight"] = q + "post_attention_layernorm.weight"
            projs = ("linear",) if b.ffn.kind == "linear" else ("gate_proj", "up_proj", "down_proj")
            for n in projs:
                out[p + f"ffn.{n}.weight"] = q + f"mlp.{n}.weight"
    return out


def to_decilm(
    child: HeteroDecoder, path: str | os.PathLike, dtype: torch.dtype | None = None
) -> None:
    """Write ``child`` as a DeciLM directory: ``config.json`` and ``model.safetensors``.

    Parameters
    ----------
    child : HeteroDecoder
    path : str or PathLike
        Output directory (created).
    dtype : torch.dtype, optional
        Weights' dtype (default: the child's); written to the config's ``torch_dtype``.

    Raises
    ------
    DecilmLayoutError
        The child has a head width other than ``hidden / heads`` or FFN widths the layout
        cannot store (not multiples of 256).
    """
    from safetensors.torch import save_file

    if not isinstance(child, HeteroDecoder):
        raise TypeError(f"child must be a HeteroDecoder, got {type(child).__name__}")
    blocks_json = decilm_block_configs(child)
    cfg = child.cfg
    sd = child.state_dict()
    dtype = dtype or next(child.parameters()).dtype
    tensors = {hf: sd[ours].detach().to(dtype).contiguous().clone()
               for ours, hf in _names(cfg, child.block_configs).items()}  # fmt: skip
    config = {
        "architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas",
        "block_configs": blocks_json, "hidden_size": cfg.d_model,
        "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads,
        "vocab_size": cfg.vocab_size, "max_position_embeddings": cfg.max_seq_len,
        "rms_norm_eps": cfg.norm_eps, "rope_theta": cfg.rope_theta, "rope_scaling": None,
        "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
        "tie_word_embeddings": cfg.tie_embeddings, "torch_dtype": str(dtype).split(".")[-1],
    }  # fmt: skip
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    save_file(tensors, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})


def _block_from_json(entry: Mapping, n_heads: int, d_model: int, i: int) -> BlockConfig:
    a, f = entry.get("attention", {}), entry.get("ffn", {})
    unsupported = [k for k in ("sparsify", "window_length", "num_sink_tokens") if a.get(k)]
    unsupported += [k for k in ("use_prefill_window_in_sink_attention", "unshifted_sink")
                    if a.get(k)]  # fmt: skip
    unsupported += ["ffn.sparsify"] * bool(f.get("sparsify"))
    if unsupported:
        raise DecilmLayoutError(f"block_configs[{i}]: {unsupported} are not computed here")
    if a.get("no_op"):
        attn = AttentionConfig("noop")
    elif a.get("replace_with_linear"):
        attn = AttentionConfig("linear")
    else:
        group = a.get("n_heads_in_group")
        if not isinstance(group, int) or group < 1 or n_heads % group:
            raise DecilmLayoutError(f"block_configs[{i}]: n_heads_in_group {group!r} does not "
                                    f"divide {n_heads} heads")  # fmt: skip
        attn = AttentionConfig("gqa", n_heads // group)
    if f.get("no_op"):
        ffn = FFNConfig("noop")
    elif f.get("replace_with_linear"):
        ffn = FFNConfig("linear")
    else:
        mult = f.get("ffn_mult")
        if not isinstance(mult, int | float) or not math.isfinite(mult) or mult <= 0:
            raise DecilmLayoutError(f"block_configs[{i}]: ffn_mult {mult!r}")
        ffn = FFNConfig("swiglu", _ffn_width(round(float(mult), 6), d_model))
    return BlockConfig(attn, ffn)


def _read_safetensors_dir(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Every tensor of ``model.safetensors`` or of the shards a ``model.safetensors.index.json``
    names (all present)."""
    from safetensors.torch import load_file

    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out: dict[str, torch.Tensor] = {}
    for name in files:
        full = os.path.join(path, name)
        if not os.path.isfile(full):
            raise DecilmLayoutError(f"path: weight file {name!r} is missing")
        out.update(load_file(full))
    return out


def from_decilm(path: str | os.PathLike) -> HeteroDecoder:
    """Read a DeciLM directory (``config.json`` + safetensors, single or sharded) as a child.

    Raises
    ------
    DecilmLayoutError
        A config this package does not compute (another ``model_type``, sliding windows or
        sinks, sparsity, RoPE scaling, biases), or missing / unexpected weights.
    """
    with open(os.path.join(path, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type") != "nemotron-nas" or not c.get("block_configs"):
        raise DecilmLayoutError(
            f"path: {os.fspath(path)!r} is not a DeciLM (nemotron-nas) config with block_configs"
        )
    found = [k for k in ("attention_bias", "mlp_bias") if c.get(k)]
    found += ["rope_scaling"] * bool(c.get("rope_scaling"))
    if c.get("hidden_act", "silu") != "silu":
        found.append(f"hidden_act={c['hidden_act']!r}")
    if found:
        raise DecilmLayoutError(
            f"path: the config uses {found}, which the decoder does not compute"
        )
    d, heads = int(c["hidden_size"]), int(c["num_attention_heads"])
    blocks = [_block_from_json(e, heads, d, i) for i, e in enumerate(c["block_configs"])]
    if len(blocks) != int(c["num_hidden_layers"]):
        raise DecilmLayoutError(f"path: {len(blocks)} block_configs for "
                                f"{c['num_hidden_layers']} layers")  # fmt: skip
    gqa = [b.attention.n_kv_heads for b in blocks if b.attention.kind == "gqa"]
    widths = [b.ffn.intermediate for b in blocks if b.ffn.kind == "swiglu"]
    cfg = DecoderConfig(
        vocab_size=int(c["vocab_size"]), d_model=d, n_layers=len(blocks), n_heads=heads,
        n_kv_heads=max(gqa) if gqa else heads, head_dim=d // heads,
        ffn_intermediate=max(widths) if widths else 256,
        max_seq_len=int(c.get("max_position_embeddings", 2048)),
        rope_theta=float(c.get("rope_theta", 10000.0)), norm_eps=float(c.get("rms_norm_eps", 1e-5)),
        tie_embeddings=bool(c.get("tie_word_embeddings", False)),
    )  # fmt: skip
    weights = _read_safetensors_dir(path)
    names = _names(cfg, blocks)
    missing = sorted(set(names.values()) - set(weights))
    extra = sorted(set(weights) - set(names.values()))
    if missing or extra:
        raise DecilmLayoutError(f"path: weights missing {missing[:6]}, unexpected {extra[:6]}")
    sd = {ours: weights[hf].float() for ours, hf in names.items()}
    return HeteroDecoder.from_state_dict(cfg, sd, blocks).eval()
