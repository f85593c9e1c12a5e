"""Loss functions of Puzzle, shaped like ``torch.nn.functional``.

* :func:`normalized_mse_loss` — BLD objective (paper §3, after Kurtic et al. 2023).
* :func:`kl_to_parent` — next-token KL(p_parent || q_child), the replace-1-block score (§4.2)
  and the L_KLD term of GKD (§4.3).
* :func:`cosine_hidden_loss` — the L_cos term of GKD (§4.3).
* :func:`gkd_loss` — L_GKD = w_cos L_cos + w_kl L_KLD (+ optional w_lm L_LM, default 0).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["cosine_hidden_loss", "gkd_loss", "kl_to_parent", "normalized_mse_loss"]


def _check_same_shape(a: Tensor, b: Tensor, na: str, nb: str) -> None:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"{na} and {nb} must be tensors")
    if a.shape != b.shape:
        raise ValueError(f"{na} shape {tuple(a.shape)} != {nb} shape {tuple(b.shape)}")
    if a.numel() == 0:
        raise ValueError(f"{na} is empty")
    for n, t in ((na, a), (nb, b)):
        if not t.is_floating_point():
            raise TypeError(f"{n} must be a floating tensor, got {t.dtype}")
        if not torch.isfinite(t).all():
            raise ValueError(f"{n} contains NaN or inf")


def normalized_mse_loss(
    input: Tensor, target: Tensor, reduction: str = "batch", eps: float = 1e-12
) -> Tensor:
    """Normalized MSE ``||input - target||^2 / ||target||^2``.

    Parameters
    ----------
    input, target : Tensor, shape (..., d)
        Child and parent block outputs on the same input.
    reduction : {"batch", "per_token"}, default="batch"
        ``"batch"``: ratio of sums over the whole tensor (paper's formula).
        ``"per_token"``: ratio per last-dim vector, then the mean.
    eps : float
        Guards the division.

    Returns
    -------
    Tensor, scalar
    """
    _check_same_shape(input, target, "input", "target")
    diff = (input - target).pow(2)
    norm = target.pow(2)
    if reduction == "batch":
        return diff.sum() / (norm.sum() + eps)
    if reduction == "per_token":
        return (diff.sum(-1) / (norm.sum(-1) + eps)).mean()
    raise ValueError(f"reduction must be 'batch' or 'per_token', got {reduction!r}")


def kl_to_parent(child_logits: Tensor, parent_logits: Tensor, reduction: str = "mean") -> Tensor:
    """KL(p_parent || q_child) of next-token distributions.

    Parameters
    ----------
    child_logits, parent_logits : Tensor, shape (..., vocab)
    reduction : {"mean", "none"}
        Mean over positions, or per-position values of shape ``(...)``.
    """
    _check_same_shape(child_logits, parent_logits, "child_logits", "parent_logits")
    logp = F.log_softmax(parent_logits.float(), dim=-1)
    logq = F.log_softmax(child_logits.float(), dim=-1)
    kl = (logp.exp() * (logp - logq)).sum(-1)
    if reduction == "mean":
        return kl.mean()
    if reduction == "none":
        return kl
    raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")


def cosine_hidden_loss(child_hidden: Sequence[Tensor], parent_hidden: Sequence[Tensor]) -> Tensor:
    """``sum_l mean_tokens(1 - cos(h_c^l, h_p^l))`` over the per-layer hidden states."""
    if len(child_hidden) != len(parent_hidden) or len(child_hidden) == 0:
        raise ValueError(
            f"child_hidden has {len(child_hidden)} layers, parent_hidden {len(parent_hidden)}"
        )
    total = child_hidden[0].new_zeros(())
    for hc, hp in zip(child_hidden, parent_hidden, strict=True):
        _check_same_shape(hc, hp, "child_hidden[l]", "parent_hidden[l]")
        total = total + (1.0 - F.cosine_similarity(hc, hp, dim=-1)).mean()
    return total


def gkd_loss(
    child_logits: Tensor,
    parent_logits: Tensor,
    child_hidden: Sequence[Tensor],
    parent_hidden: Sequence[Tensor],
    targets: Tensor | None = None,
    w_cos: float = 1.0,
    w_kl: float = 1.0,
    w_lm: float = 0.0,
) -> Tensor:
    """Global-KD loss ``w_cos L_cos + w_kl L_KLD + w_lm L_LM`` (paper §4.3, default w_lm = 0).

    ``targets`` (shape ``child_logits.shape[:-1]``) is needed only when ``w_lm > 0``.
    """
    for n, w in (("w_cos", w_cos), ("w_kl", w_kl), ("w_lm", w_lm)):
        if isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise TypeError(f"{n} must be a real number, got {w!r}")
        if not 0 <= w < math.inf:
            raise ValueError(f"{n} must be finite and >= 0, got {w}")
    if not w_cos and not w_kl and not w_lm:
        raise ValueError("w_cos, w_kl and w_lm are all 0: the loss would be a constant")
    if not isinstance(child_logits, Tensor):
        raise TypeError(f"child_logits must be a tensor, got {type(child_logits).__name__}")
    if w_lm:
        if targets is None:
            raise ValueError("targets are required when w_lm > 0")
        if not isinstance(targets, Tensor) or targets.is_floating_point() or targets.is_complex():
            raise TypeError(
                f"targets must be an integer tensor, got {getattr(targets, 'dtype', targets)!r}"
            )
        if tuple(targets.shape) != tuple(child_logits.shape[:-1]):
            raise ValueError(
                f"targets shape {tuple(targets.shape)} != child_logits.shape[:-1] "
                f"{tuple(child_logits.shape[:-1])}"
            )
        if targets.numel() and (
            int(targets.min()) < 0 or int(targets.max()) >= child_logits.shape[-1]
        ):
            raise ValueError(f"targets must lie in [0, {child_logits.shape[-1]}) (the vocabulary)")
    loss = child_logits.new_zeros(())
    if w_cos:
        loss = loss + w_cos * cosine_hidden_loss(child_hidden, parent_hidden)
    if w_kl:
        loss = loss + w_kl * kl_to_parent(child_logits, parent_logits)
    if w_lm:
        _check_same_shape(child_logits, parent_logits, "child_logits", "parent_logits")
        loss = loss + w_lm * F.cross_entropy(child_logits.flatten(0, -2), targets.flatten())
    return loss
