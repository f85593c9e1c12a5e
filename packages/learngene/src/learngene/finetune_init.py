"""Conditioning predicted parameters before fine-tuning (ours, not in the paper).

Measured in ``tools/bench/tal_bench.py`` (part ``finetune``): a hypernetwork's hidden matrices are
effectively low-rank (participation ratio ~10 for 48-wide matrices, whatever the decoder rank),
and a random init forced to rank 16 at timm's scale fine-tunes about as badly as the predicted one.
Fine-tuning from the predicted tensors then starts in a few shared directions. This module keeps
what the prediction says about *directions* and gives back the spectrum and fresh heads:

* ``spectrum="polar"``: each hidden matrix ``W = U S Vᵀ`` becomes its orthogonal polar factor
  ``U Vᵀ`` (the nearest semi-orthogonal matrix), rescaled to ``W``'s RMS, so its scale is kept
  and every singular value is equal;
* ``reset_head``: the classifier gets timm's init (trunc-normal 0.02, zero bias), the usual
  practice when fine-tuning on a task;
* ``reset_tokens``: class token and positional embedding get timm's init (the predicted positional
  embedding is low-rank too).

The untrained accuracy of the result is at chance once the head is reset: use it to fine-tune,
not to score the prediction.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from learngene._validation import check_int
from learngene.cnn import TinyResNet
from learngene.vit import TinyViT

__all__ = ["HIDDEN_MATRICES", "hidden_matrices", "prepare_for_finetuning"]

#: parameter-name suffixes of a TinyViT's hidden matrices (the polar step's targets)
HIDDEN_MATRICES = ("patch_embed.weight", "qkv.weight", "proj.weight", "fc1.weight", "fc2.weight")
_HEADS = ("head", "pre_logits", "distill_head")


def hidden_matrices(net: nn.Module) -> dict[str, torch.Tensor]:
    """The weights of every linear map and convolution except the heads, by parameter name."""
    return {
        f"{name}.weight": m.weight
        for name, m in net.named_modules()
        if isinstance(m, nn.Linear | nn.Conv2d) and name.split(".")[0] not in _HEADS
    }


def _polar(w: torch.Tensor) -> torch.Tensor:
    """Orthogonal polar factor of ``w`` viewed as (out, rest), at ``w``'s RMS."""
    m = w.double().reshape(w.shape[0], -1)
    u, _, vh = torch.linalg.svd(m, full_matrices=False)
    q = u @ vh
    rms = m.pow(2).mean().sqrt()
    return (q / q.pow(2).mean().sqrt() * rms).reshape(w.shape).to(w.dtype)


@torch.no_grad()
def prepare_for_finetuning(
    net: TinyViT | TinyResNet,
    *,
    spectrum: str = "polar",
    reset_head: bool = True,
    reset_tokens: bool = True,
    seed: int = 0,
) -> TinyViT | TinyResNet:
    """A copy of ``net`` conditioned for fine-tuning; ``net`` is not modified.

    Parameters
    ----------
    net : TinyViT or TinyResNet
        Typically ``TAL.predict(...)``'s output.
    spectrum : {"polar", "keep"}
        "polar": replace each hidden matrix (patch embedding, qkv, projection, MLP; a
        convolution viewed as (out, in·k·k)) by its orthogonal polar factor at the same RMS. For a rank-deficient matrix the factor's null
        directions are whatever the SVD returns (deterministic for a given matrix).
    reset_head, reset_tokens : bool
        Re-draw the classifier (and ``pre_logits``) / the class and positional tokens with timm's
        init from ``seed``.
    seed : int
        Seed of the re-drawn tensors (a private generator; the global RNG is untouched).

    Returns
    -------
    TinyViT or TinyResNet
        In eval mode, same spec and classes.
    """
    if not isinstance(net, TinyViT | TinyResNet):
        raise TypeError(f"net must be a TinyViT or a TinyResNet, got {type(net).__name__}")
    if spectrum not in ("polar", "keep"):
        raise ValueError(f"spectrum must be 'polar' or 'keep', got {spectrum!r}")
    for name, flag in (("reset_head", reset_head), ("reset_tokens", reset_tokens)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    g = torch.Generator().manual_seed(check_int(seed, "seed", 0))
    out = copy.deepcopy(net)

    def trunc_normal(t):
        t.copy_(torch.nn.init.trunc_normal_(torch.empty(t.shape), std=0.02, generator=g))

    hidden = hidden_matrices(out) if spectrum == "polar" else {}
    for name, p in out.named_parameters():
        if name in hidden:
            p.copy_(_polar(p))
        elif reset_tokens and name in ("cls_token", "pos_embed"):
            trunc_normal(p)
        elif reset_head and name.split(".")[0] in ("head", "pre_logits"):
            if name.endswith("bias"):
                p.zero_()
            else:
                trunc_normal(p)
    return out.eval()
