"""``nn.Module`` forms of the distillation losses (thin wrappers over :mod:`kd_losses.functional`)."""

from __future__ import annotations

import numbers

import torch
from torch import nn

from kd_losses import functional as F
from kd_losses._validation import (
    check_prob_param,
    check_reduction,
    check_temperature,
)

__all__ = [
    "AdaptiveKL",
    "BidirectionalDiscrepancyLoss",
    "DistillLoss",
    "ForwardKL",
    "JSDivergence",
    "ReverseKL",
    "SkewKL",
    "SkewReverseKL",
    "TotalVariation",
    "make_loss",
]


class DistillLoss(nn.Module):
    """Base module: stores the common options and calls one functional loss.

    Parameters
    ----------
    temperature : float, default=1.0
        Softmax temperature applied to both logits.
    reduction : {"mean", "sum", "none"}, default="mean"
        As in :mod:`kd_losses.functional`.
    ignore_index : int, default=-100
        Label value treated as padding when ``labels`` are passed to ``forward``.
    chunk_size : int, optional
        Tokens per chunk for the memory-bounded path.

    Shape
    -----
    student_logits, teacher_logits : (..., vocab); mask/labels : (...); output: scalar or (...).
    """

    name: str = ""
    _param: str | None = None

    def __init__(
        self,
        temperature: float = 1.0,
        reduction: str = "mean",
        ignore_index: int = -100,
        chunk_size: int | None = None,
    ) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)
        self.reduction = check_reduction(reduction)
        self.ignore_index = int(ignore_index)
        if chunk_size is not None and (
            isinstance(chunk_size, bool)
            or not isinstance(chunk_size, numbers.Integral)
            or chunk_size < 1
        ):
            raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size!r}")
        self.chunk_size = None if chunk_size is None else int(chunk_size)

    def _extra(self) -> dict[str, float]:
        return {} if self._param is None else {self._param: getattr(self, self._param)}

    def forward(
        self,
        student_logits: torch.Tensor,
        teacher_logits: torch.Tensor,
        mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Evaluate the loss; see :mod:`kd_losses.functional` for the arguments."""
        return F.distill_loss(
            self.name,
            student_logits,
            teacher_logits,
            mask=mask,
            labels=labels,
            ignore_index=self.ignore_index,
            temperature=self.temperature,
            reduction=self.reduction,
            chunk_size=self.chunk_size,
            **self._extra(),
        )

    def extra_repr(self) -> str:
        parts = [f"temperature={self.temperature}", f"reduction={self.reduction!r}"]
        parts += [f"{k}={v}" for k, v in self._extra().items()]
        if self.chunk_size is not None:
            parts.append(f"chunk_size={self.chunk_size}")
        return ", ".join(parts)


class ForwardKL(DistillLoss):
    """KL(p_teacher || q_student); see :func:`kd_losses.functional.forward_kl`."""

    name = "fkl"


class ReverseKL(DistillLoss):
    """KL(q_student || p_teacher); see :func:`kd_losses.functional.reverse_kl`."""

    name = "rkl"


class TotalVariation(DistillLoss):
    """Total variation distance; see :func:`kd_losses.functional.total_variation`."""

    name = "tvd"


class JSDivergence(DistillLoss):
    """Generalized JSD(beta); see :func:`kd_losses.functional.js_divergence`."""

    name = "jsd"
    _param = "beta"

    def __init__(self, beta: float = 0.5, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.beta = check_prob_param("beta", beta)


class SkewKL(DistillLoss):
    """Skew KL (DistiLLM); see :func:`kd_losses.functional.skew_kl`."""

    name = "skl"
    _param = "alpha"

    def __init__(self, alpha: float = 0.1, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.alpha = check_prob_param("alpha", alpha, low_open=False)


class SkewReverseKL(DistillLoss):
    """Skew reverse KL (DistiLLM); see :func:`kd_losses.functional.skew_reverse_kl`."""

    name = "srkl"
    _param = "alpha"

    def __init__(self, alpha: float = 0.1, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.alpha = check_prob_param("alpha", alpha, low_open=False)


class AdaptiveKL(DistillLoss):
    """Adaptive KL (AKL); see :func:`kd_losses.functional.adaptive_kl`."""

    name = "akl"
    _param = "mu"

    def __init__(self, mu: float = 0.5, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.mu = check_prob_param("mu", mu, high_open=False)


class BidirectionalDiscrepancyLoss(DistillLoss):
    """DA-KD's BDL; see :func:`kd_losses.functional.bidirectional_discrepancy_loss`."""

    name = "bdl"
    _param = "lam"

    def __init__(self, lam: float = 0.1, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.lam = check_prob_param("lam", lam, low_open=False)


_CLASSES: dict[str, type[DistillLoss]] = {
    c.name: c
    for c in (
        ForwardKL,
        ReverseKL,
        JSDivergence,
        TotalVariation,
        SkewKL,
        SkewReverseKL,
        AdaptiveKL,
        BidirectionalDiscrepancyLoss,
    )
}


def make_loss(name: str, **kwargs: object) -> DistillLoss:
    """Build a loss module from its short name (fkl, rkl, jsd, tvd, skl, srkl, akl, bdl).

    Parameters
    ----------
    name : str
        Short name, see :data:`kd_losses.functional.LOSS_NAMES`.
    **kwargs
        Constructor arguments (temperature, reduction, chunk_size, alpha/beta/mu/lam).

    Returns
    -------
    DistillLoss
        The loss module.
    """
    if name not in _CLASSES:
        raise ValueError(f"name must be one of {tuple(_CLASSES)}, got {name!r}")
    return _CLASSES[name](**kwargs)
