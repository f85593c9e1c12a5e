"""TRL's GKD trainer with any loss of the package.

``trl``'s ``GKDTrainer`` (``trl.experimental.gkd`` in TRL 1.x) computes its loss with the static
method ``generalized_jsd_loss(student_logits, teacher_logits, labels=None, beta=0.5,
temperature=1.0, reduction="batchmean", num_items_in_batch=None)`` on the shifted logits.
:func:`gkd_loss` returns a function with that signature and TRL's reductions, computed with
one of this package's losses, so the recipe is one line (TRL is not a dependency)::

    from trl.experimental.gkd import GKDTrainer
    from kd_losses.gkd import gkd_loss

    class BDLGKDTrainer(GKDTrainer):
        generalized_jsd_loss = staticmethod(gkd_loss("bdl", lam=0.1))

With ``loss="jsd"`` the trainer's ``beta`` is used (``beta`` 0 and 1 are TRL's forward and
reverse KL) and the result equals TRL's own ``generalized_jsd_loss`` (tested where ``trl``
imports); for the other losses ``beta`` is ignored and their own parameter is fixed here.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kd_losses.functional import LOSS_NAMES, distill_loss

__all__ = ["gkd_loss"]

_REDUCTIONS = ("batchmean", "sum", "mean")


def gkd_loss(loss: str = "jsd", **loss_kwargs: float) -> Callable[..., torch.Tensor]:
    """A drop-in for ``GKDTrainer.generalized_jsd_loss`` computing ``loss``.

    Parameters
    ----------
    loss : str, default="jsd"
        One of ``fkl, rkl, jsd, tvd, skl, srkl, akl, bdl``.
    **loss_kwargs : float
        The loss's parameter (``lam`` for bdl, ``alpha`` for skl/srkl, ``mu`` for akl); for
        ``"jsd"`` the trainer's ``beta`` is used instead.

    Returns
    -------
    callable
        ``f(student_logits, teacher_logits, labels=None, beta=0.5, temperature=1.0,
        reduction="batchmean", num_items_in_batch=None) -> scalar``. ``student_logits`` and
        ``teacher_logits`` are (B, T, V), ``labels`` (B, T) with ``-100`` ignored. Reductions as
        TRL's: with ``num_items_in_batch`` the token sum over it; ``"batchmean"`` the token sum
        over the kept tokens (over B without labels); ``"sum"``; ``"mean"`` over tokens *and*
        vocabulary entries (TRL's elementwise mean). ``"none"`` (TRL's elementwise losses) has
        no per-entry form for every loss and raises.
    """
    if loss not in LOSS_NAMES:
        raise ValueError(f"loss: must be one of {LOSS_NAMES}, got {loss!r}")
    if loss == "jsd" and "beta" in loss_kwargs:
        raise TypeError("loss_kwargs: with loss='jsd' the trainer's beta is used; drop beta=")
    fixed = dict(loss_kwargs)

    def generalized_jsd_loss(
        student_logits: torch.Tensor,
        teacher_logits: torch.Tensor,
        labels: torch.Tensor | None = None,
        beta: float = 0.5,
        temperature: float = 1.0,
        reduction: str = "batchmean",
        num_items_in_batch: int | torch.Tensor | None = None,
    ) -> torch.Tensor:
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction: must be one of {_REDUCTIONS}, got {reduction!r}")
        for name, z in (("student_logits", student_logits), ("teacher_logits", teacher_logits)):
            if not isinstance(z, torch.Tensor) or z.ndim != 3:
                raise ValueError(f"{name}: expected a (B, T, V) tensor (TRL's shifted logits)")
        if labels is not None and (
            not isinstance(labels, torch.Tensor) or labels.shape != student_logits.shape[:2]
        ):
            raise ValueError(f"labels: expected shape {tuple(student_logits.shape[:2])}")
        b = float(beta)
        if not 0.0 <= b <= 1.0:  # also checked where a loss ignores it: a trainer's mistake
            raise ValueError(f"beta: must be in [0, 1], got {beta!r}")
        name, kw = loss, dict(fixed)
        if loss == "jsd":
            # TRL: beta = 0 is KL(teacher || student), beta = 1 is KL(student || teacher)
            name = "fkl" if b == 0.0 else "rkl" if b == 1.0 else "jsd"
            if name == "jsd":
                kw["beta"] = b
        mask = None if labels is None else labels != -100
        per_token = distill_loss(name, student_logits, teacher_logits, mask=mask,
                                 temperature=temperature, reduction="none", **kw)  # fmt: skip
        total = per_token.sum() if mask is None else per_token[mask].sum()
        if num_items_in_batch is not None:
            if isinstance(num_items_in_batch, torch.Tensor):
                num_items_in_batch = num_items_in_batch.to(total.device)
            return total / num_items_in_batch
        if reduction == "sum":
            return total
        kept = student_logits.shape[0] if mask is None else mask.sum().clamp_min(1)
        if reduction == "batchmean":
            return total / kept
        n = per_token.numel() if mask is None else mask.sum().clamp_min(1)
        return total / (n * student_logits.shape[-1])  # TRL's elementwise mean

    generalized_jsd_loss.__doc__ = f"TRL-compatible generalized_jsd_loss computing {loss!r}."
    return generalized_jsd_loss
