"""Interaction losses on expert outputs (I2MoE §3.2; spec §2.2), shaped like torch.nn.functional.

``clean`` is an expert's output on the unperturbed input, ``perturbed[j]`` its output with
modality ``j`` replaced by noise. All losses average over the batch.
"""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F

__all__ = [
    "interaction_loss",
    "redundancy_loss",
    "regression_losses",
    "synergy_loss",
    "uniqueness_loss",
]


def _check_outputs(clean, perturbed) -> None:
    """``clean`` a finite float (B, K) tensor, ``perturbed`` a non-empty list shaped like it."""
    if not isinstance(clean, torch.Tensor) or not clean.is_floating_point():
        raise TypeError(f"clean must be a floating-point tensor, got {type(clean).__name__}")
    if clean.ndim != 2 or clean.shape[0] == 0:
        raise ValueError(f"clean must be a non-empty (B, K) tensor, got {tuple(clean.shape)}")
    if not isinstance(perturbed, list | tuple) or not perturbed:
        raise ValueError("perturbed must be a non-empty list of tensors (one per modality)")
    for j, p in enumerate(perturbed):
        if not isinstance(p, torch.Tensor) or p.shape != clean.shape:
            raise ValueError(
                f"perturbed[{j}] must be a tensor shaped like clean {tuple(clean.shape)}, got "
                f"{tuple(getattr(p, 'shape', ()))}"
            )
    if not bool(torch.isfinite(clean).all()) or not all(
        bool(torch.isfinite(p).all()) for p in perturbed
    ):
        raise ValueError("clean or perturbed contains NaN or inf")


def _check_experts(clean, perturbed) -> int:
    """``[U_1..U_M, S, R]`` outputs: M + 2 clean tensors, M + 2 lists of M; returns M."""
    if not isinstance(clean, list | tuple) or not isinstance(perturbed, list | tuple):
        raise TypeError("clean must be a list of expert outputs, perturbed a list of lists")
    if not perturbed or not isinstance(perturbed[0], list | tuple):
        raise ValueError("perturbed must hold one list of M outputs per expert")
    M = len(perturbed[0])
    if M < 2 or len(clean) != M + 2 or len(perturbed) != M + 2:
        raise ValueError(
            f"clean, perturbed: need M + 2 experts with M >= 2 modalities, got {len(clean)} clean "
            f"and {len(perturbed)} perturbed lists of {M}"
        )
    for k, (c, p) in enumerate(zip(clean, perturbed, strict=True)):
        if not isinstance(p, list | tuple) or len(p) != M:
            raise ValueError(f"perturbed[{k}] must hold {M} outputs, one per modality")
        _check_outputs(c, p)
        if c.shape != clean[0].shape:
            raise ValueError(f"clean[{k}] is {tuple(c.shape)}, clean[0] {tuple(clean[0].shape)}")
    return M


def uniqueness_loss(
    clean: torch.Tensor, perturbed: list[torch.Tensor], m: int, margin: float = 1.0
) -> torch.Tensor:
    """Uniqueness expert of modality ``m``: stay near the outputs without another modality,
    move away from the output without modality ``m``.

    ``(1 / (M-1)) sum_{j != m} TripletMargin(anchor=clean, positive=perturbed[j],
    negative=perturbed[m], margin)`` (``p = 2``, ``eps = 1e-7`` as ``nn.TripletMarginLoss``).
    """
    _check_outputs(clean, perturbed)
    M = len(perturbed)
    if isinstance(m, bool) or not isinstance(m, numbers.Integral):
        raise TypeError(f"m must be an int, got {m!r}")
    m = int(m)
    if M < 2 or not 0 <= m < M:
        raise ValueError(f"need >= 2 perturbed outputs and 0 <= m < {M}, got m={m}")
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    terms = [
        F.triplet_margin_loss(clean, perturbed[j], perturbed[m], margin=margin, p=2, eps=1e-7)
        for j in range(M)
        if j != m
    ]
    return torch.stack(terms).mean()


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # F.normalize semantics (norm clamped at 1e-12): finite for zero vectors
    return (F.normalize(a, dim=-1, eps=1e-12) * F.normalize(b, dim=-1, eps=1e-12)).sum(-1)


def synergy_loss(clean: torch.Tensor, perturbed: list[torch.Tensor]) -> torch.Tensor:
    """Synergy expert: ``(1/M) sum_j mean_b cos(clean, perturbed[j])`` (push every removal away)."""
    _check_outputs(clean, perturbed)
    return torch.stack([_cos(clean, p).mean() for p in perturbed]).mean()


def redundancy_loss(clean: torch.Tensor, perturbed: list[torch.Tensor]) -> torch.Tensor:
    """Redundancy expert: ``(1/M) sum_j mean_b (1 - cos(clean, perturbed[j]))`` (stay the same)."""
    _check_outputs(clean, perturbed)
    return torch.stack([(1 - _cos(clean, p)).mean() for p in perturbed]).mean()


def regression_losses(
    clean: list[torch.Tensor],
    perturbed: list[list[torch.Tensor]],
    mode: str = "paper",
    margin: float = 1.0,
) -> list[torch.Tensor]:
    """Scalar-output (K = 1) versions, one loss per expert ``[U_1..U_M, S, R]``.

    ``mode="paper"``: ``U_m = mean max(0, (a-p)^2 - (a-n)^2 + margin)``, ``S = mean exp(-(a-n)^2)``
    (pushes apart, bounded), ``R = MSE(a, p)``. ``mode="reference"``: the released code,
    ``U_m = MSE(a, p) - MSE(a, n)``, ``S = MSE(a, n)`` (same sign as redundancy), ``R = MSE(a, p)``.
    """
    if mode not in ("paper", "reference"):
        raise ValueError(f"mode must be 'paper' or 'reference', got {mode!r}")
    M = _check_experts(clean, perturbed)
    if (
        isinstance(margin, bool)
        or not isinstance(margin, numbers.Real)
        or not math.isfinite(margin)
        or margin < 0
    ):
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    out = []
    for m in range(M):
        a, n = clean[m], perturbed[m][m]
        terms = []
        for j in range(M):
            if j == m:
                continue
            p = perturbed[m][j]
            if mode == "paper":
                terms.append(torch.clamp((a - p).pow(2) - (a - n).pow(2) + margin, min=0).mean())
            else:
                terms.append(F.mse_loss(a, p) - F.mse_loss(a, n))
        out.append(torch.stack(terms).mean())
    a = clean[M]
    if mode == "paper":
        out.append(torch.stack([torch.exp(-(a - n).pow(2)).mean() for n in perturbed[M]]).mean())
    else:
        out.append(torch.stack([F.mse_loss(a, n) for n in perturbed[M]]).mean())
    a = clean[M + 1]
    out.append(torch.stack([F.mse_loss(a, p) for p in perturbed[M + 1]]).mean())
    return out


def interaction_loss(
    clean: list[torch.Tensor], perturbed: list[list[torch.Tensor]], margin: float = 1.0
) -> dict[str, torch.Tensor]:
    """All interaction losses of a classification I2MoE.

    Parameters
    ----------
    clean : list of n_E tensors (B, K)
        Clean output of each expert, order ``[U_1..U_M, S, R]``.
    perturbed : list of n_E lists of M tensors (B, K)
        ``perturbed[k][j]``: expert ``k`` with modality ``j`` replaced.

    Returns
    -------
    dict
        ``uni_1..uni_M``, ``syn``, ``red`` and ``total`` = their mean.
    """
    _check_experts(clean, perturbed)
    M = len(perturbed[0])
    out = {f"uni_{m + 1}": uniqueness_loss(clean[m], perturbed[m], m, margin) for m in range(M)}
    out["syn"] = synergy_loss(clean[M], perturbed[M])
    out["red"] = redundancy_loss(clean[M + 1], perturbed[M + 1])
    out["total"] = torch.stack(list(out.values())).mean()
    return out
