"""``KDTrainer``: a drop-in ``transformers.Trainer`` that distils a causal LM into another.

``pip install "kd-losses[hf]"``. The student runs its body once (``output_hidden_states``, with
``logits_to_keep=1`` so no full-vocabulary logits are formed), the teacher runs under
``torch.no_grad``, and :func:`kd_losses.fused_kd_loss` computes the distillation loss from the
last hidden states and both lm-head weights, block by block, over the next-token positions that
the attention mask and the labels (``-100`` ignored) keep. Any loss of the package works by
name; ``ce_weight`` adds the usual next-token cross-entropy. Everything else -- optimiser,
schedule, accumulation, ``accelerate``/DDP -- is ``Trainer``'s.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import Trainer

from kd_losses._kernels import KINDS
from kd_losses.fused import fused_kd_loss

__all__ = ["KDTrainer", "kd_loss_for_causal_lm"]


def _body(model, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """Last hidden states (B, T, d) after the final norm, without full-vocabulary logits."""
    kwargs = {k: v for k, v in inputs.items() if k != "labels"}
    try:
        out = model(**kwargs, output_hidden_states=True, logits_to_keep=1, use_cache=False)
    except TypeError:  # models without logits_to_keep
        out = model(**kwargs, output_hidden_states=True, use_cache=False)
    return out.hidden_states[-1]


def _head(model) -> tuple[torch.Tensor, torch.Tensor | None]:
    inner = getattr(model, "module", model)  # DDP / accelerate wrappers
    head = inner.get_output_embeddings()
    if head is None:
        raise TypeError("model: has no output embeddings (lm head); is it a causal LM?")
    return head.weight, getattr(head, "bias", None)


def kd_loss_for_causal_lm(
    student,
    teacher,
    inputs: dict[str, torch.Tensor],
    *,
    loss: str = "bdl",
    loss_kwargs: dict[str, float] | None = None,
    temperature: float = 1.0,
    ce_weight: float = 0.0,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """Distillation loss of ``student`` towards ``teacher`` on one batch of token ids.

    Parameters
    ----------
    student, teacher : transformers causal LMs
        Same vocabulary (the lm-head weights must have the same number of rows).
    inputs : dict
        ``input_ids`` (B, T), optionally ``attention_mask`` and ``labels`` (``-100`` ignored;
        default: ``input_ids``).

    Returns
    -------
    torch.Tensor
        Scalar: the mean KD loss over the kept next-token positions, plus ``ce_weight`` times
        the cross-entropy of the student on the same positions.
    """
    if loss not in KINDS:
        raise ValueError(f"loss: must be one of {KINDS}, got {loss!r}")
    if not isinstance(ce_weight, int | float) or isinstance(ce_weight, bool) or ce_weight < 0:
        raise ValueError(f"ce_weight: must be a non-negative number, got {ce_weight!r}")
    ids = inputs["input_ids"]
    labels = inputs.get("labels", ids)
    hs = _body(student, inputs)[:, :-1]
    with torch.no_grad():
        ht = _body(teacher, inputs)[:, :-1]
    ws, bs = _head(student)
    wt, bt = _head(teacher)
    if ws.shape[0] != wt.shape[0]:
        raise ValueError(
            f"teacher: vocabulary {wt.shape[0]} differs from the student's {ws.shape[0]}"
        )
    keep = labels[:, 1:] != -100
    if "attention_mask" in inputs and inputs["attention_mask"] is not None:
        keep = keep & inputs["attention_mask"][:, 1:].bool()
    kd = fused_kd_loss(
        hs, ws, student_bias=bs, teacher_hidden=ht.to(hs.dtype), teacher_weight=wt.to(ws.dtype),
        teacher_bias=None if bt is None else bt.to(ws.dtype), loss=loss, mask=keep,
        temperature=temperature, chunk_size=chunk_size, **(loss_kwargs or {}),
    )  # fmt: skip
    if ce_weight == 0:
        return kd
    # cross-entropy on the kept positions through the same fused pass would need another
    # kernel; the logits of the kept tokens only are formed here (a fraction of a batch)
    logits = torch.nn.functional.linear(hs[keep], ws, bs)
    ce = torch.nn.functional.cross_entropy(logits.float(), labels[:, 1:][keep])
    return kd + ce_weight * ce


class KDTrainer(Trainer):
    """``transformers.Trainer`` whose loss is knowledge distillation from ``teacher``.

    Parameters
    ----------
    teacher : transformers causal LM
        Frozen (``eval()``, no gradients); moved to the student's device at the first step.
    kd_loss : str, default="bdl"
        Any loss of the package: ``fkl, rkl, jsd, tvd, skl, srkl, akl, bdl``.
    kd_loss_kwargs : dict, optional
        The loss's parameter (``lam`` for bdl, ``beta`` for jsd, ...).
    temperature : float, default=1.0
    ce_weight : float, default=0.0
        Weight of the student's next-token cross-entropy added to the KD loss.
    chunk_size : int, optional
        Token rows per fused block (default: automatic, see :func:`fused_kd_loss`).
    *args, **kwargs
        ``Trainer``'s (``model=student``, ``args``, ``train_dataset``, ...).
    """

    def __init__(
        self,
        *args: Any,
        teacher=None,
        kd_loss: str = "bdl",
        kd_loss_kwargs: dict[str, float] | None = None,
        temperature: float = 1.0,
        ce_weight: float = 0.0,
        chunk_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        if teacher is None:
            raise ValueError("teacher: KDTrainer needs a teacher model")
        if kd_loss not in KINDS:
            raise ValueError(f"kd_loss: must be one of {KINDS}, got {kd_loss!r}")
        super().__init__(*args, **kwargs)
        self.teacher = teacher.eval().requires_grad_(False)
        self.kd_loss, self.kd_loss_kwargs = kd_loss, dict(kd_loss_kwargs or {})
        self.temperature, self.ce_weight, self.chunk_size = temperature, ce_weight, chunk_size

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """The KD loss of one batch (``return_outputs`` gives ``(loss, None)``)."""
        device = inputs["input_ids"].device
        if next(self.teacher.parameters()).device != device:
            self.teacher.to(device)
        loss = kd_loss_for_causal_lm(
            model, self.teacher, inputs, loss=self.kd_loss, loss_kwargs=self.kd_loss_kwargs,
            temperature=self.temperature, ce_weight=self.ce_weight, chunk_size=self.chunk_size,
        )  # fmt: skip
        return (loss, None) if return_outputs else loss
