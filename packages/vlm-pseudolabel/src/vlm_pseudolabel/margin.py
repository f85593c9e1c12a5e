"""Confusion-aware calibrated margin (CAP, paper Sec. 3.2).

A class that was rarely predicted in the last epoch (small ``r_c``) and resembles other classes
(visually or in text) gets large margins against exactly those classes; the margin
cross-entropy then pushes its decision region outwards.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["margin_cross_entropy", "margin_matrix", "self_training_loss"]


def margin_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, margin: torch.Tensor
) -> torch.Tensor:
    """``-log e^{z_y} / (e^{z_y} + sum_{c != y} e^{z_c + M[y, c]})``, averaged over the batch.

    Parameters
    ----------
    logits : Tensor (B, C)
    target : Tensor of int64 (B,)
    margin : Tensor (C, C)
        Row ``y`` holds the margins of label ``y`` against every class; the diagonal is ignored.

    Returns
    -------
    Tensor, scalar
        Equals ``F.cross_entropy(logits, target)`` when ``margin`` is zero.
    """
    if logits.ndim != 2 or target.shape != logits.shape[:1]:
        raise ValueError(
            f"logits must be (B, C) and target (B,), got {tuple(logits.shape)}, {tuple(target.shape)}"
        )
    c = logits.shape[1]
    if margin.shape != (c, c):
        raise ValueError(f"margin must be ({c}, {c}), got {tuple(margin.shape)}")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating tensor, got {logits.dtype}")
    if target.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
        raise TypeError(f"target must hold integer class ids, got {target.dtype}")
    if len(target) == 0:
        return logits.sum() * 0.0
    if not torch.isfinite(logits).all():
        raise ValueError("logits contain NaN or inf")
    if not torch.isfinite(margin).all():
        raise ValueError("margin contains NaN or inf")
    if target.min() < 0 or target.max() >= c:
        raise ValueError(f"target must hold class ids in [0, {c})")
    target = target.long()
    m = margin.to(logits)[target]  # (B, C): the label's row
    m = m.scatter(1, target[:, None], 0.0)
    return F.cross_entropy(logits + m, target)


def margin_matrix(
    counts: np.ndarray,
    visual_prototypes: np.ndarray,
    text_features: np.ndarray,
    scale: float = 12.0,
    delta: str = "ref",
    seen_mask: np.ndarray | None = None,
) -> np.ndarray:
    """The (C, C) margin matrix ``M[y, c] = m_y * S[y, c]`` (zero diagonal).

    ``r_c = sigma(c) / max_j sigma(j)`` from the confident-prediction counts ``sigma`` of the
    previous epoch; ``delta_c = (1 - r_c) / (1 + r_c)`` (``"ref"``, the released code) or
    ``1 - r_c`` (``"linear"``, the paper's summary); ``m_c = scale * (max r - min r) * delta_c``;
    ``S[i, j] = max(<vbar_i, vbar_j>, <t_i, t_j>)`` from the normalised mean image embedding of
    each class's pseudolabelled samples and the text embeddings, each row rescaled to
    ``[min_row, 1]`` as the reference does (a no-op when the diagonal is 1).

    Parameters
    ----------
    counts : ndarray (C,)
        Confident predictions per class in the previous epoch (all zero -> M = 0).
    visual_prototypes : ndarray (C, d)
        Normalised class means of the main samples' image embeddings.
    text_features : ndarray (C, d)
        Current normalised text embeddings.
    scale : float, default=12.0
        ``m`` (12 in the released configs; 14 for FGVCAircraft).
    delta : {"ref", "linear"}, default="ref"
    seen_mask : ndarray of bool (C,), optional
        TRZSL: seen classes get ``r_c = 1`` (zero rows).

    Returns
    -------
    ndarray (C, C) float32
    """
    counts = np.asarray(counts, dtype=np.float64)
    vp = np.asarray(visual_prototypes, dtype=np.float64)
    tf = np.asarray(text_features, dtype=np.float64)
    c = len(counts) if counts.ndim == 1 else 0
    if counts.ndim != 1 or c < 2 or (counts < 0).any() or not np.isfinite(counts).all():
        raise ValueError("counts must be a 1-D array of >= 2 finite non-negative numbers")
    if vp.shape[0] != c or tf.shape[0] != c or vp.shape != tf.shape:
        raise ValueError(f"visual_prototypes and text_features must both be ({c}, d)")
    if not (np.isfinite(vp).all() and np.isfinite(tf).all()):
        raise ValueError("visual_prototypes and text_features must be finite")
    if not (np.isfinite(scale) and scale >= 0):
        raise ValueError(f"scale must be a finite number >= 0, got {scale}")
    if delta not in ("ref", "linear"):
        raise ValueError(f"delta must be 'ref' or 'linear', got {delta!r}")
    if counts.max() <= 0:
        return np.zeros((c, c), dtype=np.float32)
    r = counts / counts.max()
    if seen_mask is not None:
        seen_mask = np.asarray(seen_mask, dtype=bool)
        if seen_mask.shape != (c,):
            raise ValueError(f"seen_mask must have shape ({c},)")
        r = np.where(seen_mask, 1.0, r)
    d = (1 - r) / (1 + r) if delta == "ref" else 1 - r
    m = scale * (r.max() - r.min()) * d
    sim = np.maximum(vp @ vp.T, tf @ tf.T)
    lo = sim.min(axis=1, keepdims=True)
    hi = sim.max(axis=1, keepdims=True)
    sim = lo + (sim - lo) / np.clip(hi - lo, 1e-12, None) * (1 - lo)  # row -> [min_row, 1]
    out = m[:, None] * sim
    np.fill_diagonal(out, 0.0)
    return out.astype(np.float32)


def self_training_loss(
    logits_strong: torch.Tensor,
    pseudo_labels: torch.Tensor,
    mask: torch.Tensor,
    margin: torch.Tensor,
    norm: str = "batch",
) -> torch.Tensor:
    """The unlabeled branch: margin cross-entropy of the strong view on confident pseudolabels.

    Parameters
    ----------
    logits_strong : Tensor (B, C)
        Logits of the strong views.
    pseudo_labels : Tensor of int64 (B,)
        The weak views' predictions.
    mask : Tensor of bool (B,)
        Confident rows (max probability above the threshold).
    margin : Tensor (C, C)
    norm : {"batch", "confident"}, default="batch"
        ``"confident"`` (the spec and the official code): the sum over confident rows divided by
        their number, ``Σ mask·L / max(1, Σ mask)``. ``"batch"``: divided by the batch size
        (FixMatch's ``1/(μB)``), which scales the branch by the confident share.

    Returns
    -------
    Tensor, scalar (0 when no row is confident)
    """
    if norm not in ("batch", "confident"):
        raise ValueError(f"norm must be 'batch' or 'confident', got {norm!r}")
    if logits_strong.ndim != 2 or pseudo_labels.shape != logits_strong.shape[:1]:
        raise ValueError(
            "logits_strong must be (B, C) and pseudo_labels (B,), got "
            f"{tuple(logits_strong.shape)}, {tuple(pseudo_labels.shape)}"
        )
    if mask.dtype != torch.bool or mask.shape != pseudo_labels.shape:
        raise ValueError("mask must be a bool tensor shaped like pseudo_labels")
    if logits_strong.is_floating_point() and not bool(torch.isfinite(logits_strong).all()):
        raise ValueError("logits_strong contain NaN or inf")  # also in rows the mask drops
    loss = margin_cross_entropy(logits_strong[mask], pseudo_labels[mask], margin)
    if norm == "confident" or len(mask) == 0:
        return loss
    return loss * mask.sum().to(loss.dtype) / len(mask)
