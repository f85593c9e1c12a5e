"""Similarity-filtered one-class contrastive (SOC) loss (paper Fig. 2b).

The first half of the batch holds normal-type samples (originals G1 and causality-
preserving augmentations G2), the second half their causality-disturbed copies (G3, G4),
with row ``k + n/2`` the disturbed copy of row ``k``. Every pair of normal-type samples
whose cosine similarity reaches the threshold ``alpha`` is pulled together with an InfoNCE
term whose denominator holds that positive and the anchor's negatives; a filtered-out
positive ``j`` also removes its disturbed copy from anchor ``i``'s negatives. Raising
``alpha`` over training (0.5 -> 0.9 by default) lets the number of admitted pairs grow as
the encoder learns, so ever more diverse normal samples are pulled together.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import torch

__all__ = ["SOCStats", "alpha_schedule", "soc_loss"]


@dataclass(frozen=True)
class SOCStats:
    """Diagnostics of one :func:`soc_loss` call.

    Attributes
    ----------
    unfiltered_ratio : float
        Fraction of ordered positive pairs (i != j) kept by the similarity filter.
    n_pairs : int
        Number of kept positive pairs |M|.
    """

    unfiltered_ratio: float
    n_pairs: int


def soc_loss(
    z: torch.Tensor, alpha: float = 0.5, temperature: float = 0.1
) -> tuple[torch.Tensor, SOCStats]:
    """Similarity-filtered one-class contrastive loss.

    Parameters
    ----------
    z : torch.Tensor of shape (2P, D)
        Embeddings (normalised inside): rows ``0..P-1`` positives, rows ``P..2P-1`` their
        disturbed copies (row ``P + k`` belongs to row ``k``).
    alpha : float, default=0.5
        Similarity threshold in [-1, 1]; ``alpha <= -1`` disables filtering.
    temperature : float, default=0.1

    Returns
    -------
    loss : torch.Tensor, scalar
        ``mean over kept pairs (i, j) of -log(e^{s_ij/t} / (e^{s_ij/t} +
        sum_{k in N_i} e^{s_ik/t}))``, with ``N_i = {P + j : s_ij >= alpha}``. Zero (still
        attached to the graph) when no pair is kept.
    stats : SOCStats
    """
    if not isinstance(z, torch.Tensor):
        raise TypeError(f"z must be a torch.Tensor; got {type(z).__name__}")
    if z.ndim != 2 or z.shape[0] < 4 or z.shape[0] % 2:
        raise ValueError(f"z must have shape (2P, D) with P >= 2; got {tuple(z.shape)}")
    if not torch.is_floating_point(z):
        raise TypeError(f"z must be floating point; got {z.dtype}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or alpha != alpha:
        raise TypeError(f"alpha must be a real number; got {alpha!r}")
    alpha = float(alpha)
    if not bool(torch.isfinite(z).all()):
        raise ValueError("z contains NaN or inf (the encoder diverged?)")
    if alpha > 1:
        raise ValueError(f"alpha must be <= 1 (cosine similarity); got {alpha}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0; got {temperature}")
    p = z.shape[0] // 2
    z = torch.nn.functional.normalize(z, dim=1)
    sim = z[:p] @ z.T  # (P, 2P): anchors are the positives only
    pos_sim, neg_sim = sim[:, :p], sim[:, p:]
    with torch.no_grad():
        keep = pos_sim >= alpha if alpha > -1 else torch.ones_like(pos_sim, dtype=torch.bool)
        keep_neg = keep.clone()
        keep_neg.fill_diagonal_(True)  # an anchor's own disturbed copy always stays
        pairs = keep.clone()
        pairs.fill_diagonal_(False)
    logits_neg = (neg_sim / temperature).masked_fill(~keep_neg, float("-inf"))
    neg_lse = torch.logsumexp(logits_neg, dim=1, keepdim=True)  # (P, 1)
    logits_pos = pos_sim / temperature
    terms = torch.logaddexp(logits_pos, neg_lse) - logits_pos  # (P, P)
    n_pairs = int(pairs.sum())
    stats = SOCStats(unfiltered_ratio=n_pairs / (p * (p - 1)), n_pairs=n_pairs)
    if n_pairs == 0:
        return z.sum() * 0.0, stats
    return terms[pairs].mean(), stats


def alpha_schedule(alpha: float | tuple[float, float], epoch: int, n_epochs: int) -> float:
    """Threshold for an epoch: fixed, or linear from ``alpha[0]`` to ``alpha[1]``.

    Parameters
    ----------
    alpha : float or (float, float)
    epoch : int
        0-based epoch index.
    n_epochs : int

    Returns
    -------
    float
        ``a0 + (a1 - a0) * epoch / (n_epochs - 1)`` (``a0`` when ``n_epochs == 1``).
    """
    for name, v in (("epoch", epoch), ("n_epochs", n_epochs)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an int; got {v!r}")
    if n_epochs < 1 or not 0 <= epoch < n_epochs:
        raise ValueError(
            f"epoch must be in [0, n_epochs) with n_epochs >= 1; got {epoch}, {n_epochs}"
        )
    if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool):
        return float(alpha)
    a0, a1 = (float(a) for a in alpha)
    if n_epochs <= 1:
        return a0
    return a0 + (a1 - a0) * epoch / (n_epochs - 1)
