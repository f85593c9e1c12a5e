"""A small distillation loop with optional DA-KD difficulty-aware data updating.

``distill`` takes any teacher/student callables that map input ids ``(batch, L - 1)`` to logits
``(batch, L - 1, vocab)``. With ``difficulty_aware=True`` it runs He et al. (ICML 2025),
Algorithm 1 in our reading: after ``warmup_epochs`` full epochs, and then every
``update_every`` epochs, the student's per-sample NLL on the current distillation set is
divided by the teacher's (cached once: the teacher is frozen) to give the difficulty score,
and :class:`~kd_losses.sampler.DifficultyAwareSampler` prunes the easy samples.

Cost is counted in sequences passed through each model (``teacher_forwards``: distillation
steps plus any teacher scoring; ``student_forwards``: training steps plus DDS scoring).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

from kd_losses.difficulty import dataset_nll, difficulty_score, sequence_nll
from kd_losses.functional import LOSS_NAMES, distill_loss
from kd_losses.sampler import DifficultyAwareSampler

__all__ = ["DistillResult", "distill", "evaluate_lm", "train_lm"]

Model = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class DistillResult:
    """What :func:`distill` did.

    Attributes
    ----------
    history : list of dict
        One row per epoch: epoch, fraction (size of the distillation set), train_loss,
        teacher_forwards, student_forwards (cumulative) and, with validation data,
        val_loss / val_acc.
    teacher_forwards : int
        Sequences passed through the teacher in total.
    student_forwards : int
        Sequences passed through the student in total (with and without gradient).
    active_indices : torch.Tensor
        The final distillation set.
    """

    history: list[dict[str, float]] = field(default_factory=list)
    teacher_forwards: int = 0
    student_forwards: int = 0
    active_indices: torch.Tensor | None = None


def _labels(batch: torch.Tensor, pad_id: int | None) -> torch.Tensor:
    labels = batch[:, 1:].clone()
    if pad_id is not None:
        labels[labels == pad_id] = -100
    return labels


def _check_tokens(tokens: torch.Tensor, name: str = "tokens") -> None:
    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.int64:
        raise TypeError(f"{name} must be an int64 torch.Tensor of shape (n, L)")
    if tokens.ndim != 2 or tokens.shape[0] < 1 or tokens.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n >= 1, L >= 2), got {tuple(tokens.shape)}")
    if tokens.numel() and int(tokens.min()) < 0:
        raise ValueError(f"{name} has negative ids")


def _check_int(name: str, value: object, lo: int) -> int:
    # numpy integers from a sweep are ints too; bools are not
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {value!r}")
    return int(value)


def _check_rate(name: str, value: object, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    ok = (value > 0 if positive else value >= 0) and math.isfinite(value)
    if not ok:
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'} and finite, got {value}")
    return float(value)


def _check_pad_id(pad_id: object) -> int | None:
    if pad_id is None:
        return None
    if isinstance(pad_id, bool) or not isinstance(pad_id, numbers.Integral):
        raise TypeError(f"pad_id must be an int or None, got {type(pad_id).__name__}")
    return int(pad_id)


def _forward(model: Model, ids: torch.Tensor, name: str) -> torch.Tensor:
    """``model(ids)``, an embedding's IndexError turned into an error naming the tokens."""
    try:
        return model(ids)
    except IndexError as e:
        raise ValueError(f"{name}: the model raised IndexError ({e}); are the ids within its "
                         "vocabulary?") from e  # fmt: skip


def _check_vocab(logits: torch.Tensor, labels: torch.Tensor, name: str) -> None:
    """Target ids must index the model's vocabulary (cross_entropy would raise a raw error)."""
    valid = labels[labels != -100]
    if valid.numel() and int(valid.max()) >= logits.shape[-1]:
        raise ValueError(
            f"{name} holds id {int(valid.max())}, outside the model's {logits.shape[-1]} logits"
        )


@torch.no_grad()
def evaluate_lm(
    model: Model, tokens: torch.Tensor, *, batch_size: int = 64, pad_id: int | None = None
) -> tuple[float, float]:
    """Mean next-token NLL and accuracy of a causal LM on a token set.

    Parameters
    ----------
    model : callable
        ids ``(batch, L - 1)`` -> logits ``(batch, L - 1, vocab)``.
    tokens : torch.Tensor of int64, shape (n, L)
        Evaluation sequences.
    batch_size : int, default=64
        Sequences per forward pass.
    pad_id : int, optional
        Ignored target id.

    Returns
    -------
    (float, float)
        Token-averaged NLL and top-1 accuracy.
    """
    if not callable(model):
        raise TypeError("model must be callable: ids -> logits")
    _check_tokens(tokens)
    batch_size = _check_int("batch_size", batch_size, 1)
    pad_id = _check_pad_id(pad_id)
    was_training = getattr(model, "training", False)
    if isinstance(model, nn.Module):
        model.eval()
    nll, correct, count = 0.0, 0, 0
    try:
        for start in range(0, tokens.shape[0], batch_size):
            batch = tokens[start : start + batch_size]
            labels = _labels(batch, pad_id)
            logits = _forward(model, batch[:, :-1], "tokens").float()
            _check_vocab(logits, labels, "tokens")
            valid = labels != -100
            nll += torch.nn.functional.cross_entropy(
                logits[valid], labels[valid], reduction="sum"
            ).item()
            correct += int((logits.argmax(-1)[valid] == labels[valid]).sum())
            count += int(valid.sum())
    finally:
        if isinstance(model, nn.Module) and was_training:
            model.train()
    if count == 0:
        raise ValueError(f"tokens has no target to score: every label is pad_id={pad_id}")
    return nll / count, correct / count


def train_lm(
    model: nn.Module,
    tokens: torch.Tensor,
    *,
    epochs: int = 5,
    batch_size: int = 32,
    lr: float = 3e-3,
    pad_id: int | None = None,
    seed: int = 0,
    verbose: bool = False,
) -> list[float]:
    """Train a causal LM with cross-entropy (used to make the teacher).

    Parameters
    ----------
    model : nn.Module
        ids -> logits.
    tokens : torch.Tensor of int64, shape (n, L)
        Training sequences.
    epochs, batch_size, lr : training schedule (AdamW, cosine decay).
    pad_id : int, optional
        Ignored target id.
    seed : int, default=0
        Shuffling seed.
    verbose : bool, default=False
        Show a progress bar.

    Returns
    -------
    list of float
        Mean training loss per epoch.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    _check_tokens(tokens)
    epochs = _check_int("epochs", epochs, 0)
    batch_size = _check_int("batch_size", batch_size, 1)
    lr = _check_rate("lr", lr)
    pad_id = _check_pad_id(pad_id)
    seed = _check_int("seed", seed, 0)
    if not isinstance(verbose, bool):
        raise TypeError(f"verbose must be a bool, got {type(verbose).__name__}")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * -(-tokens.shape[0] // batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(steps, 1))
    g = torch.Generator().manual_seed(seed)
    model.train()
    out = []
    for _ in tqdm(range(epochs), disable=not verbose, desc="train"):
        perm = torch.randperm(tokens.shape[0], generator=g, device="cpu").to(tokens.device)
        total, nb = 0.0, 0
        for start in range(0, len(perm), batch_size):
            batch = tokens[perm[start : start + batch_size]]
            logits = _forward(model, batch[:, :-1], "tokens")
            _check_vocab(logits, _labels(batch, pad_id), "tokens")
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), _labels(batch, pad_id).reshape(-1)
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
            nb += 1
        out.append(total / max(nb, 1))
    model.eval()
    return out


def distill(
    student: nn.Module,
    teacher: Model,
    tokens: torch.Tensor,
    *,
    loss: str | Callable[..., torch.Tensor] = "bdl",
    loss_kwargs: dict[str, object] | None = None,
    epochs: int = 4,
    batch_size: int = 32,
    lr: float = 2e-3,
    optimizer: torch.optim.Optimizer | None = None,
    ce_weight: float = 0.0,
    difficulty_aware: bool = False,
    sampler: DifficultyAwareSampler | None = None,
    warmup_epochs: int = 1,
    update_every: int = 1,
    pad_id: int | None = None,
    val_tokens: torch.Tensor | None = None,
    seed: int = 0,
    verbose: bool = False,
) -> DistillResult:
    """Distill ``teacher`` into ``student`` on a token dataset.

    Parameters
    ----------
    student : nn.Module
        ids ``(batch, L - 1)`` -> logits ``(batch, L - 1, vocab)``; trained in place.
    teacher : callable
        Same signature; called under ``torch.no_grad``.
    tokens : torch.Tensor of int64, shape (n, L)
        Distillation sequences.
    loss : str or callable, default="bdl"
        A name from :data:`kd_losses.functional.LOSS_NAMES` or a callable
        ``loss(student_logits, teacher_logits, labels=labels) -> scalar``.
    loss_kwargs : dict, optional
        Extra keyword arguments for a named loss (temperature, alpha, lam, chunk_size ...).
    epochs : int, default=4
        Passes over the (current) distillation set.
    batch_size : int, default=32
        Sequences per step.
    lr : float, default=2e-3
        AdamW learning rate (ignored when ``optimizer`` is given).
    optimizer : torch.optim.Optimizer, optional
        Optimizer over the student's parameters.
    ce_weight : float, default=0.0
        Weight of an added ground-truth cross-entropy term.
    difficulty_aware : bool, default=False
        Enable DA-KD data updating (a default :class:`DifficultyAwareSampler` unless one is
        passed in ``sampler``).
    sampler : DifficultyAwareSampler, optional
        Sampler to use (implies ``difficulty_aware=True``).
    warmup_epochs : int, default=1
        Full-data epochs before the first pruning update.
    update_every : int, default=1
        Epochs between pruning updates.
    pad_id : int, optional
        Target id that is ignored by the losses.
    val_tokens : torch.Tensor of int64, optional
        Validation sequences evaluated after every epoch.
    seed : int, default=0
        Seed for shuffling.
    verbose : bool, default=False
        Show a progress bar.

    Returns
    -------
    DistillResult
        History and cost counters.
    """
    _check_tokens(tokens)
    if val_tokens is not None:
        _check_tokens(val_tokens, "val_tokens")
    if not isinstance(student, nn.Module):
        raise TypeError("student must be a torch.nn.Module (its parameters are trained)")
    if not callable(teacher):
        raise TypeError("teacher must be callable: ids -> logits")
    if isinstance(loss, str):
        if loss not in LOSS_NAMES:
            raise ValueError(f"loss must be one of {LOSS_NAMES} or a callable, got {loss!r}")
        name, kw = loss, dict(loss_kwargs or {})

        def loss_fn(s: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            return distill_loss(name, s, t, labels=labels, **kw)  # type: ignore[arg-type]

    elif callable(loss):
        if loss_kwargs:
            raise ValueError("loss_kwargs is only used with a named loss")

        def loss_fn(s: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            return loss(s, t, labels=labels)

    else:
        raise TypeError("loss must be a loss name or a callable")
    epochs = _check_int("epochs", epochs, 1)
    batch_size = _check_int("batch_size", batch_size, 1)
    update_every = _check_int("update_every", update_every, 1)
    warmup_epochs = _check_int("warmup_epochs", warmup_epochs, 0)
    seed = _check_int("seed", seed, 0)
    ce_weight = _check_rate("ce_weight", ce_weight, positive=False)
    pad_id = _check_pad_id(pad_id)
    if optimizer is None:
        lr = _check_rate("lr", lr)
    elif not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    else:
        mine = {id(p) for p in student.parameters()}
        if not any(id(p) in mine for grp in optimizer.param_groups for p in grp["params"]):
            raise ValueError("optimizer holds none of the student's parameters")
    for arg, flag in (("difficulty_aware", difficulty_aware), ("verbose", verbose)):
        if not isinstance(flag, bool):
            raise TypeError(f"{arg} must be a bool, got {type(flag).__name__}")
    if sampler is not None and not isinstance(sampler, DifficultyAwareSampler):
        raise TypeError(f"sampler must be a DifficultyAwareSampler, got {type(sampler).__name__}")

    n = tokens.shape[0]
    if sampler is not None:
        difficulty_aware = True
        if sampler.n != n:
            raise ValueError(f"sampler covers {sampler.n} samples, tokens has {n}")
    elif difficulty_aware:
        sampler = DifficultyAwareSampler(n, seed=seed)
    opt = optimizer or torch.optim.AdamW(student.parameters(), lr=lr, weight_decay=0.01)
    g = torch.Generator().manual_seed(seed)
    # teacher NLL per sample, filled for free from the distillation steps' teacher logits
    teacher_nll = torch.full((n,), float("nan"), device=tokens.device)
    result = DistillResult()
    student.train()
    for epoch in tqdm(range(epochs), disable=not verbose, desc="distill"):
        if sampler is not None:
            if epoch >= warmup_epochs and (epoch - warmup_epochs) % update_every == 0:
                active = sampler.active_indices
                missing = active[torch.isnan(teacher_nll[active])]
                if len(missing):
                    teacher_nll[missing] = dataset_nll(
                        teacher, tokens, indices=missing, batch_size=batch_size, pad_id=pad_id
                    )
                    result.teacher_forwards += len(missing)
                student.eval()
                s_nll = dataset_nll(
                    student, tokens, indices=active, batch_size=batch_size, pad_id=pad_id
                )
                student.train()
                result.student_forwards += len(active)
                sampler.update(difficulty_score(s_nll, teacher_nll[active]))
            sampler.set_epoch(epoch)
            order = torch.tensor(list(iter(sampler)), dtype=torch.long, device=tokens.device)
        else:
            order = torch.randperm(n, generator=g, device="cpu").to(tokens.device)
        total, nb = 0.0, 0
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            batch = tokens[idx]
            labels = _labels(batch, pad_id)
            with torch.no_grad():
                t_logits = _forward(teacher, batch[:, :-1], "tokens")
            result.teacher_forwards += len(idx)
            if torch.isnan(teacher_nll[idx]).any():
                teacher_nll[idx] = sequence_nll(t_logits, labels)
            s_logits = _forward(student, batch[:, :-1], "tokens")
            if epoch == 0 and start == 0:
                _check_vocab(s_logits, labels, "tokens")
            result.student_forwards += len(idx)
            value = loss_fn(s_logits, t_logits, labels)
            if ce_weight > 0:
                value = value + ce_weight * torch.nn.functional.cross_entropy(
                    s_logits.reshape(-1, s_logits.shape[-1]).float(),
                    labels.reshape(-1),
                )
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            total += value.item()
            nb += 1
        row: dict[str, float] = {
            "epoch": epoch,
            "fraction": len(order) / n,
            "train_loss": total / max(nb, 1),
            "teacher_forwards": result.teacher_forwards,
            "student_forwards": result.student_forwards,
        }
        if val_tokens is not None:
            row["val_loss"], row["val_acc"] = evaluate_lm(student, val_tokens, pad_id=pad_id)
        result.history.append(row)
    student.eval()
    result.active_indices = sampler.active_indices if sampler is not None else torch.arange(n)
    return result
