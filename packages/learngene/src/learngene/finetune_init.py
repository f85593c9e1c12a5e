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

from learngene._validation import check_int
from learngene.vit import TinyViT

__all__ = ["HIDDEN_MATRICES", "prepare_for_finetuning"]

#: parameter-name suffixes of the hidden matrices the polar step acts on
HIDDEN_MATRICES = ("patch_embed.weight", "qkv.weight", "proj.weight", "fc1.weight", "fc2.weight")


def _polar(w: torch.Tensor) -> torch.Tensor:
    u, _, vh = torch.linalg.svd(w.double(), full_matrices=False)
    q = u @ vh
    rms = w.double().pow(2).mean().sqrt()
    return (q / q.pow(2).mean().sqrt() * rms).to(w.dtype)


@torch.no_grad()
def prepare_for_finetuning(
    net: TinyViT,
    *,
    spectrum: str = "polar",
    reset_head: bool = True,
    reset_tokens: bool = True,
    seed: int = 0,
) -> TinyViT:
    """A copy of ``net`` conditioned for fine-tuning; ``net`` is not modified.

    Parameters
    ----------
    net : TinyViT
        Typically ``TAL.predict(...)``'s output.
    spectrum : {"polar", "keep"}
        "polar": replace each hidden matrix (patch embedding, qkv, projection, MLP) by its
        orthogonal polar factor at the same RMS. For a rank-deficient matrix the factor's null
        directions are whatever the SVD returns (deterministic for a given matrix).
    reset_head, reset_tokens : bool
        Re-draw the classifier (and ``pre_logits``) / the class and positional tokens with timm's
        init from ``seed``.
    seed : int
        Seed of the re-drawn tensors (a private generator; the global RNG is untouched).

    Returns
    -------
    TinyViT
        In eval mode, same spec and classes.
    """
    if not isinstance(net, TinyViT):
        raise TypeError(f"net must be a TinyViT, got {type(net).__name__}")
    if spectrum not in ("polar", "keep"):
        raise ValueError(f"spectrum must be 'polar' or 'keep', got {spectrum!r}")
    for name, flag in (("reset_head", reset_head), ("reset_tokens", reset_tokens)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    g = torch.Generator().manual_seed(check_int(seed, "seed", 0))
    out = copy.deepcopy(net)

    def trunc_normal(t):
        t.copy_(torch.nn.init.trunc_normal_(torch.empty(t.shape), std=0.02, generator=g))

    for name, p in out.named_parameters():
        if spectrum == "polar" and name.endswith(HIDDEN_MATRICES):
            p.copy_(_polar(p))
        elif reset_tokens and name in ("cls_token", "pos_embed"):
            trunc_normal(p)
        elif reset_head and name.split(".")[0] in ("head", "pre_logits"):
            if name.endswith("bias"):
                p.zero_()
            else:
                trunc_normal(p)
    return out.eval()
