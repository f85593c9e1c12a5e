"""Training-free initialization of child subblocks from the parent (paper App. A).

* FFN width reduction by *Channel Contribution*: C_k = mean_tokens |X_k| * ||W_down[:, k]||.
* Fewer KV heads: mean-pool the K and V projection heads within each group.
* Linear attention: W_lin = W_o W_v (V heads repeated to match Q heads) — the exact attention
  output when every token attends only to itself.
* Linear FFN: W_lin = W_down W_up (gate ignored).
* No-op: nothing; parent variant: copy.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nas_puzzle.config import AttentionConfig, DecoderConfig, FFNConfig
from nas_puzzle.model import AttentionSubblock, FFNSubblock

__all__ = ["channel_contribution", "init_attention", "init_ffn"]


@torch.no_grad()
def channel_contribution(ffn: FFNSubblock, x: Tensor) -> Tensor:
    """Average contribution of each intermediate channel to the FFN output.

    Parameters
    ----------
    ffn : FFNSubblock
        A SwiGLU subblock.
    x : Tensor, shape (..., d_model)
        Calibration inputs of the subblock (hidden states entering the FFN), cast to its dtype
        and device.

    Returns
    -------
    Tensor, shape (intermediate,)
        ``mean_tokens |X_k| * ||W_down[:, k]||_2``.
    """
    if not isinstance(ffn, FFNSubblock):
        raise TypeError(f"ffn must be an FFNSubblock, got {type(ffn).__name__}")
    if ffn.variant.kind != "swiglu":
        raise ValueError(f"ffn must be a SwiGLU subblock, got kind={ffn.variant.kind!r}")
    if not isinstance(x, Tensor) or x.shape[-1] != ffn.cfg.d_model or x.numel() == 0:
        raise ValueError(f"x must be a non-empty (..., {ffn.cfg.d_model}) tensor")
    if not x.is_floating_point() or not torch.isfinite(x).all():
        raise ValueError("x must hold finite floating-point values")  # one sync per calibration
    x = x.to(ffn.down_proj.weight)  # calibration inputs in the subblock's dtype and device
    act = ffn.intermediate(x).reshape(-1, ffn.variant.intermediate).abs().mean(0)
    return act * ffn.down_proj.weight.norm(dim=0)


def _new_child(parent, variant, config_cls: type, subblock_cls: type, parent_kind: str, what: str):
    """Check ``variant`` and the parent's kind, build the child and copy the parent's norm into it."""
    if not isinstance(parent, subblock_cls):
        raise TypeError(f"parent must be a {subblock_cls.__name__}, got {type(parent).__name__}")
    if not isinstance(variant, config_cls):
        raise TypeError(f"variant must be an {config_cls.__name__}, got {type(variant).__name__}")
    if parent.variant.kind != parent_kind:
        raise ValueError(f"parent must be a {what} subblock")
    ref = next(parent.parameters())
    with torch.device(ref.device):  # the child lives where the parent does (a GPU parent too)
        child = subblock_cls(parent.cfg, variant).to(ref.dtype)
    if variant.kind != "noop":
        child.norm.weight.copy_(parent.norm.weight)
    return child


@torch.no_grad()
def init_attention(parent: AttentionSubblock, variant: AttentionConfig) -> AttentionSubblock:
    """Initialize an attention variant from the parent's attention subblock (no data needed)."""
    child = _new_child(parent, variant, AttentionConfig, AttentionSubblock, "gqa", "GQA attention")
    cfg: DecoderConfig = parent.cfg
    if variant.kind == "noop":
        return child
    hd, nq, nkv_p = cfg.head_dim, cfg.n_heads, parent.variant.n_kv_heads
    if variant.kind == "gqa":
        nkv = variant.n_kv_heads
        if nkv_p % nkv:
            raise ValueError(f"variant n_kv_heads={nkv} must divide the parent's {nkv_p}")
        g = nkv_p // nkv
        child.q_proj.weight.copy_(parent.q_proj.weight)
        child.o_proj.weight.copy_(parent.o_proj.weight)
        for name in ("k_proj", "v_proj"):
            w = getattr(parent, name).weight.view(nkv, g, hd, cfg.d_model).mean(1)
            getattr(child, name).weight.copy_(w.reshape(nkv * hd, cfg.d_model))
        return child
    # linear: out = W_o [v_{h(1)}; ...; v_{h(nq)}], each query head reads its KV group's value
    wv = parent.v_proj.weight.view(nkv_p, hd, cfg.d_model)
    wv = wv.repeat_interleave(nq // nkv_p, dim=0).reshape(nq * hd, cfg.d_model)
    child.linear.weight.copy_(parent.o_proj.weight @ wv)
    return child


@torch.no_grad()
def init_ffn(parent: FFNSubblock, variant: FFNConfig, calib: Tensor | None = None) -> FFNSubblock:
    """Initialize an FFN variant from the parent's FFN subblock.

    Parameters
    ----------
    parent : FFNSubblock
    variant : FFNConfig
    calib : Tensor, shape (..., d_model), optional
        FFN inputs for Channel Contribution; required for reduced SwiGLU widths.
    """
    child = _new_child(parent, variant, FFNConfig, FFNSubblock, "swiglu", "SwiGLU FFN")
    if variant.kind == "noop":
        return child
    if variant.kind == "linear":
        child.linear.weight.copy_(parent.down_proj.weight @ parent.up_proj.weight)
        return child
    width = variant.intermediate
    if width > parent.variant.intermediate:
        raise ValueError(
            f"variant intermediate={width} exceeds the parent's {parent.variant.intermediate}"
        )
    if width == parent.variant.intermediate:
        keep = torch.arange(width, device=parent.gate_proj.weight.device)
    else:
        if calib is None:
            raise ValueError("calib is required to prune FFN channels (Channel Contribution)")
        try:
            score = channel_contribution(parent, calib)
        except (TypeError, ValueError) as e:  # name the argument the caller passed
            raise type(e)(f"calib: {e}") from None
        keep = torch.topk(score, width).indices.sort().values  # keep the original order
    child.gate_proj.weight.copy_(parent.gate_proj.weight[keep])
    child.up_proj.weight.copy_(parent.up_proj.weight[keep])
    child.down_proj.weight.copy_(parent.down_proj.weight[:, keep])
    return child
