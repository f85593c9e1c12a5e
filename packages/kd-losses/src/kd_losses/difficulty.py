"""DA-KD's distillation difficulty score (DDS): student loss over teacher loss, per sample.

He et al. (ICML 2025), difficulty-aware data updating (DiffUp): a sample is worth distilling
when the teacher already handles it well but the student does not, i.e. when the ratio of the
student's cross-entropy to the teacher's cross-entropy on the sample's target tokens is large.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import torch

from kd_losses._validation import all_finite

__all__ = ["dataset_nll", "difficulty_score", "sequence_nll"]


def _check_labels(logits: torch.Tensor, labels: torch.Tensor, name: str = "logits") -> None:
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor")
    if not isinstance(labels, torch.Tensor) or labels.dtype not in (torch.int64, torch.int32):
        raise TypeError("labels must be an int64/int32 torch.Tensor")
    if logits.ndim != 3:
        raise ValueError(f"{name} must have shape (batch, seq, vocab), got {tuple(logits.shape)}")
    if tuple(labels.shape) != tuple(logits.shape[:2]):
        raise ValueError(
            f"labels must have shape {tuple(logits.shape[:2])}, got {tuple(labels.shape)}"
        )


def sequence_nll(
    logits: torch.Tensor, labels: torch.Tensor, *, ignore_index: int = -100
) -> torch.Tensor:
    """Mean next-token negative log-likelihood of each sequence.

    Parameters
    ----------
    logits : torch.Tensor, shape (batch, seq, vocab)
        Model logits aligned with ``labels``.
    labels : torch.Tensor, shape (batch, seq)
        Target ids; ``ignore_index`` marks padding.
    ignore_index : int, default=-100
        Padding label.

    Returns
    -------
    torch.Tensor, shape (batch,)
        Mean NLL over each sequence's valid tokens (0 for a sequence with none), float32.
    """
    _check_labels(logits, labels)
    if not all_finite(logits):
        raise ValueError("logits contains NaN or inf")
    valid = labels != ignore_index
    safe = torch.where(valid, labels, torch.zeros_like(labels)).long()
    lp = torch.log_softmax(logits.float(), dim=-1)
    nll = -lp.gather(-1, safe.unsqueeze(-1)).squeeze(-1) * valid
    return nll.sum(1) / valid.sum(1).clamp_min(1)


def difficulty_score(
    student_nll: torch.Tensor, teacher_nll: torch.Tensor, *, eps: float = 1e-6
) -> torch.Tensor:
    """DDS = student NLL / teacher NLL per sample (higher = harder for the student).

    Parameters
    ----------
    student_nll : torch.Tensor, shape (n,)
        Per-sample mean NLL of the student (see :func:`sequence_nll`).
    teacher_nll : torch.Tensor, shape (n,)
        Per-sample mean NLL of the teacher on the same samples.
    eps : float, default=1e-6
        Added to the teacher NLL so a perfectly predicted sample does not divide by zero.

    Returns
    -------
    torch.Tensor, shape (n,)
        The distillation difficulty scores.
    """
    for name, x in (("student_nll", student_nll), ("teacher_nll", teacher_nll)):
        if not isinstance(x, torch.Tensor) or x.ndim != 1:
            raise ValueError(f"{name} must be a 1-D torch.Tensor")
        if x.numel() == 0:
            raise ValueError(f"{name} is empty")
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} contains NaN or inf")
        if bool((x < 0).any()):
            raise ValueError(f"{name} must be non-negative")
    if student_nll.shape != teacher_nll.shape:
        raise ValueError(
            f"length mismatch: student_nll {student_nll.numel()} vs teacher_nll "
            f"{teacher_nll.numel()}"
        )
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    return student_nll.float() / (teacher_nll.float() + eps)


@torch.no_grad()
def dataset_nll(
    model: Callable[[torch.Tensor], torch.Tensor],
    tokens: torch.Tensor,
    *,
    indices: torch.Tensor | None = None,
    batch_size: int = 32,
    pad_id: int | None = None,
) -> torch.Tensor:
    """Per-sequence mean NLL of a causal LM over (a subset of) a token dataset.

    Parameters
    ----------
    model : callable
        Maps input ids ``(batch, L - 1)`` to logits ``(batch, L - 1, vocab)``.
    tokens : torch.Tensor, shape (n, L)
        Token ids; inputs are ``tokens[:, :-1]`` and targets ``tokens[:, 1:]``.
    indices : torch.Tensor, optional
        Rows to score (default: all).
    batch_size : int, default=32
        Sequences per forward pass.
    pad_id : int, optional
        Target id that is ignored.

    Returns
    -------
    torch.Tensor, shape (len(indices),)
        Mean NLL per sequence.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 2 or tokens.is_floating_point():
        raise ValueError("tokens must be an integer tensor of shape (n, L)")
    if tokens.shape[0] == 0 or tokens.shape[1] < 2:
        raise ValueError(f"tokens needs n >= 1 sequences of L >= 2 ids, got {tuple(tokens.shape)}")
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, numbers.Integral)
        or batch_size < 1
    ):
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if indices is None:
        indices = torch.arange(tokens.shape[0], device=tokens.device)
    out = []
    for start in range(0, len(indices), batch_size):
        batch = tokens[indices[start : start + batch_size]]
        labels = batch[:, 1:].clone()
        if pad_id is not None:
            labels[labels == pad_id] = -100
        out.append(sequence_nll(model(batch[:, :-1]), labels))
    return torch.cat(out) if out else torch.zeros(0, device=tokens.device)
