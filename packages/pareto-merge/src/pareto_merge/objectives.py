"""Per-task objectives on merged parameters: unlabeled entropy (AdaMerging) and cross-entropy."""

import math
from collections.abc import Callable, Mapping

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

__all__ = ["Objective", "cross_entropy_objective", "entropy_objective"]

Objective = Callable[[Mapping[str, torch.Tensor]], torch.Tensor]


def _forward(module: nn.Module, head: Callable[[torch.Tensor], torch.Tensor] | None) -> Callable:
    def logits(params: Mapping[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        out = functional_call(module, dict(params), (x,))
        return out if head is None else head(out)

    return logits


def _check_head(head) -> None:
    if head is not None and not callable(head):
        raise TypeError(
            f"head: must be callable (module output -> logits), got {type(head).__name__}"
        )


def _check_inputs(inputs: torch.Tensor, name: str = "inputs") -> None:
    if not isinstance(inputs, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(inputs).__name__}")
    if inputs.ndim < 1 or inputs.shape[0] == 0:
        raise ValueError(f"{name}: empty batch")
    if inputs.is_floating_point() and not torch.isfinite(inputs).all():
        raise ValueError(f"{name}: contains NaN or inf")


def entropy_objective(
    module: nn.Module,
    inputs: torch.Tensor,
    head: Callable[[torch.Tensor], torch.Tensor] | None = None,
    diversity: float = 0.0,
) -> Objective:
    """Mean Shannon entropy of the predictions on unlabeled ``inputs`` (AdaMerging's surrogate).

    ``L = mean_i H(p(y | x_i)) - diversity * H(mean_i p(y | x_i))``. With ``diversity = 0`` this
    is AdaMerging's objective. Entropy alone has trivial minimizers (every input assigned to one
    class with certainty); a model with few free parameters (AdaMerging's coefficients) rarely
    reaches them, but Pareto Merging's low-rank term does within a few hundred steps.
    ``diversity = 1`` adds the marginal-entropy term of information maximization (SHOT, Liang et
    al., 2020), which rules those solutions out: a collapsed model has zero marginal entropy.

    Parameters
    ----------
    module : nn.Module
        A template whose ``state_dict`` keys are the merged keys; it is called through
        ``torch.func.functional_call`` with the merged tensors, so its own weights are unused.
    inputs : Tensor of shape (n, ...)
        Unlabeled inputs of the task.
    head : callable, optional
        Task-specific head applied to the module's output (e.g. a frozen classifier).
    diversity : float, default=0.0
        Weight (>= 0) of the marginal-entropy bonus.

    Returns
    -------
    callable
        ``objective(params) -> scalar Tensor``.
    """
    _check_inputs(inputs)
    _check_head(head)
    ok = isinstance(diversity, int | float | np.integer | np.floating) and not isinstance(
        diversity, bool
    )
    if not (ok and math.isfinite(diversity) and diversity >= 0):
        raise ValueError(f"diversity: must be a finite number >= 0, got {diversity!r}")
    logits = _forward(module, head)

    def objective(params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        logp = torch.log_softmax(logits(params, inputs), dim=-1)
        p = logp.exp()
        loss = -(p * logp).sum(-1).mean()
        if diversity:
            marginal = p.mean(0)
            loss = loss + diversity * (marginal * torch.log(marginal.clamp_min(1e-12))).sum()
        return loss

    return objective


def cross_entropy_objective(
    module: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    head: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> Objective:
    """Cross-entropy on labelled ``(inputs, targets)``, for merging with validation labels.

    Parameters
    ----------
    module, inputs, head : as in :func:`entropy_objective`
    targets : LongTensor of shape (n,)

    Returns
    -------
    callable
    """
    _check_inputs(inputs)
    _check_head(head)
    if not isinstance(targets, torch.Tensor):
        raise TypeError(f"targets: expected a torch.Tensor, got {type(targets).__name__}")
    if targets.ndim != 1:
        raise ValueError(f"targets: must be 1-D class ids, got shape {tuple(targets.shape)}")
    if targets.is_floating_point() or targets.is_complex() or targets.dtype == torch.bool:
        raise TypeError(f"targets: must hold integer class ids, got dtype {targets.dtype}")
    if targets.shape[0] != inputs.shape[0]:
        raise ValueError(f"targets: {targets.shape[0]} labels for {inputs.shape[0]} inputs")
    if targets.numel() and int(targets.min()) < 0:
        raise ValueError(f"targets: class ids must be >= 0, got {int(targets.min())}")
    targets = targets.long()
    logits = _forward(module, head)

    def objective(params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        out = logits(params, inputs)
        if int(targets.max()) >= out.shape[-1]:
            raise ValueError(f"targets: class id {int(targets.max())} >= {out.shape[-1]} logits")
        return nn.functional.cross_entropy(out, targets)

    return objective
