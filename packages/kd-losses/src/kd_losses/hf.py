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

__all__ = ["KDTrainer", "UnsupportedHeadError", "kd_loss_for_causal_lm"]


def _body(model, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Last hidden states (B, T, d) after the final norm, and the model's own logits at the
    last position (B, V), without full-vocabulary logits elsewhere."""
    kwargs = {k: v for k, v in inputs.items() if k != "labels"}
    try:
        out = model(**kwargs, output_hidden_states=True, logits_to_keep=1, use_cache=False)
    except TypeError:  # models without logits_to_keep
        out = model(**kwargs, output_hidden_states=True, use_cache=False)
    return out.hidden_states[-1], out.logits[:, -1]


# config attributes that change the head beyond lm_head(h): a multiplier the fused path can
# apply to h, or a non-linear map it cannot
_LOGIT_MULTIPLIERS = {"logits_scaling": lambda v: 1.0 / v, "logit_scale": lambda v: v}
_UNSUPPORTED_HEAD = ("final_logit_softcapping", "output_multiplier_scale", "logit_softcapping")


class UnsupportedHeadError(ValueError):
    """The model's logits are not ``lm_head(h)`` times a known multiplier."""


def _head(model, name: str) -> tuple[torch.Tensor, torch.Tensor | None, float]:
    """lm-head weight, bias and the logit multiplier read from the config."""
    inner = getattr(model, "module", model)  # DDP / accelerate wrappers
    head = inner.get_output_embeddings()
    if head is None:
        raise TypeError(f"{name}: has no output embeddings (lm head); is it a causal LM?")
    cfg = getattr(inner, "config", None)
    found = {
        k: getattr(cfg, k)
        for k in _UNSUPPORTED_HEAD
        if getattr(cfg, k, None) not in (None, 0, 0.0, False)
    }
    if found:
        raise UnsupportedHeadError(
            f"{name}: its head is not linear in the hidden state ({found}); the fused KD path "
            "cannot reproduce it: use the logits losses (kd_losses.forward_kl, ...) on the "
            "model's logits instead"
        )
    mult = 1.0
    for k, f in _LOGIT_MULTIPLIERS.items():
        v = getattr(cfg, k, None)
        if isinstance(v, int | float) and not isinstance(v, bool) and v not in (0, 1):
            mult *= float(f(v))
    return head.weight, getattr(head, "bias", None), mult


def _check_head(name, model, h_last, logits_last, w, b, mult, half=False) -> None:
    """The model's own last-position logits must equal ``mult * lm_head(h)``: any other head
    (a custom scaling, a cap) would make the fused loss silently wrong."""
    with torch.no_grad():
        want = torch.nn.functional.linear(
            h_last.float(), w.float(), None if b is None else b.float()
        )
        want = want * mult
        got = logits_last.float()
        # the model's own logits are as precise as their least precise input; under autocast
        # (Trainer's bf16/fp16) the head ran in half precision whatever the tensors' dtypes
        full = (torch.float32, torch.float64)
        precise = not half and all(t.dtype in full for t in (h_last, logits_last, w))
        precise = precise and not torch.is_autocast_enabled(h_last.device.type)
        tol = (1e-4 if precise else 3e-2) * want.abs().max().clamp_min(1.0)
        err = (got - want).abs().max()
    if err > tol:
        cfg = getattr(getattr(model, "module", model), "config", None)
        kind = getattr(cfg, "model_type", type(model).__name__)
        raise UnsupportedHeadError(
            f"{name}: its logits differ from lm_head(h) x {mult:g} by {float(err):.3g} "
            f"({kind}); the fused KD path supports a linear head with an optional bias and the "
            f"multipliers {sorted(_LOGIT_MULTIPLIERS)}; use the logits losses instead"
        )


def _kept_targets(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """(B, T - 1) mask of the next-token targets the loss averages over: labels not ``-100``
    (default: ``input_ids``) at positions the attention mask keeps."""
    labels = inputs.get("labels")
    labels = inputs["input_ids"] if labels is None else labels
    keep = labels[:, 1:] != -100
    if inputs.get("attention_mask") is not None:
        keep = keep & inputs["attention_mask"][:, 1:].bool()
    return keep


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
    mixed_precision: bool = False,
) -> torch.Tensor:
    """Distillation loss of ``student`` towards ``teacher`` on one batch of token ids.

    Parameters
    ----------
    student, teacher : transformers causal LMs
        Same vocabulary (the lm-head weights must have the same number of rows).
    inputs : dict
        ``input_ids`` (B, T), optionally ``attention_mask`` and ``labels`` (``-100`` ignored;
        default: ``input_ids``).
    mixed_precision : bool, default=False
        The models' forwards run under autocast (a wrapped forward, as accelerate's bf16/fp16
        does, returns float32 tensors that were computed in half precision): the check that
        each model's logits equal ``lm_head(h)`` allows half-precision rounding. Inside an
        active ``torch.autocast`` this is detected.

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
    labels = inputs.get("labels")
    labels = ids if labels is None else labels
    ws, bs, ms = _head(student, "student")
    wt, bt, mt = _head(teacher, "teacher")
    hs_all, zs_last = _body(student, inputs)
    with torch.no_grad():
        ht_all, zt_last = _body(teacher, inputs)
    _check_head("student", student, hs_all[:, -1], zs_last, ws, bs, ms, mixed_precision)
    _check_head("teacher", teacher, ht_all[:, -1], zt_last, wt, bt, mt, mixed_precision)
    # a logit multiplier m (Granite's 1 / logits_scaling, Cohere's logit_scale) is applied to
    # h: m (W h + b) = W (m h) + m b
    hs, ht = hs_all[:, :-1] * ms, ht_all[:, :-1] * mt
    bs = None if bs is None else bs * ms
    bt = None if bt is None else bt * mt
    if ws.shape[0] != wt.shape[0]:
        raise ValueError(
            f"teacher: vocabulary {wt.shape[0]} differs from the student's {ws.shape[0]}"
        )
    keep = _kept_targets(inputs)
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
        # compute_loss divides the token sum by Trainer's count of the whole accumulated batch
        # (counted on our own target mask below), so Trainer must not divide by the
        # accumulation steps again: the update equals one large batch's
        self.model_accepts_loss_kwargs = True
        self.teacher = teacher.eval().requires_grad_(False)
        self.kd_loss, self.kd_loss_kwargs = kd_loss, dict(kd_loss_kwargs or {})
        self.temperature, self.ce_weight, self.chunk_size = temperature, ce_weight, chunk_size

    def _get_num_items_in_batch(self, batch_samples: list, device: torch.device):
        # Trainer counts labels[..., 1:] != -100; the loss also drops positions the attention
        # mask removes, so count exactly the targets the loss averages over (then Trainer
        # gathers the count across processes as usual)
        counted = [
            {"labels": b["input_ids"], "shift_labels": torch.where(_kept_targets(b), 0, -100)}
            for b in batch_samples
        ]
        return super()._get_num_items_in_batch(counted, device)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """The KD loss of one batch (``return_outputs`` gives ``(loss, None)``).

        With ``num_items_in_batch`` (Trainer's count of the kept targets over all the
        micro-batches of one optimiser step) the loss is this micro-batch's token sum divided
        by it, so gradient accumulation gives the update of one large batch.
        """
        device = inputs["input_ids"].device
        if next(self.teacher.parameters()).device != device:
            self.teacher.to(device)
        loss = kd_loss_for_causal_lm(
            model, self.teacher, inputs, loss=self.kd_loss, loss_kwargs=self.kd_loss_kwargs,
            temperature=self.temperature, ce_weight=self.ce_weight, chunk_size=self.chunk_size,
            mixed_precision=bool(self.args.bf16 or self.args.fp16),
        )  # fmt: skip
        if num_items_in_batch is not None:
            n_kept = _kept_targets(inputs).sum()
            loss = loss * n_kept / num_items_in_batch
            if self.args.average_tokens_across_devices and self.accelerator.num_processes > 1:
                loss = loss * self.accelerator.num_processes  # DDP averages the gradients
        return (loss, None) if return_outputs else loss

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        """Evaluation: the KD loss (mean over the kept targets) and the student's logits.

        Returns
        -------
        (loss, logits (B, T, V) or None, labels (B, T) or None)
        """
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss = self.compute_loss(model, inputs).detach()
            if prediction_loss_only:
                return loss, None, None
            kwargs = {k: v for k, v in inputs.items() if k != "labels"}
            logits = model(**kwargs, use_cache=False).logits.detach()
        labels = inputs.get("labels")
        return loss, logits, inputs["input_ids"] if labels is None else labels
