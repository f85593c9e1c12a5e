"""Per-token divergences and their gradients with respect to the student logits, in one pass.

For ``q = softmax(z / T)`` and any per-token loss ``L(q)``, the gradient with respect to the
student logits is ``dL/dz = (1/T) q * (g - <g, q>)`` with ``g = dL/dq``. Writing ``p`` for the
teacher and ``m`` for a mixture, the ``q * g`` terms are (all finite, masked entries give 0):

=======  ==========================================================================
loss      q * dL/dq
=======  ==========================================================================
fkl       -p                                            (so dL/dz = (q - p) / T)
rkl       q (log q - log p + 1)
jsd       (1 - beta) q (log q - log m),        m = beta p + (1 - beta) q
tvd       q sign(q - p) / 2
skl       -(1 - alpha) p q / m,                m = alpha p + (1 - alpha) q
srkl      q (log q - log m + 1) - alpha q^2 / m,  m = alpha q + (1 - alpha) p
bdl       skl(lam) + srkl(lam)
akl       w * fkl + (1 - w) * rkl, with the head weight w detached (as the AKL reference code)
=======  ==========================================================================

Everything is computed in float32 (float64 stays float64) from the logits of one block of
tokens at a time, so the caller bounds the temporaries by the block size. ``-inf`` logits
(masked vocabulary entries) are allowed where both models mask the same tokens: every term
is ``where(prob > 0, ..., 0)``.
"""

from __future__ import annotations

import math

import torch

__all__ = ["KINDS", "loss_and_grad"]

KINDS = ("fkl", "rkl", "jsd", "tvd", "skl", "srkl", "akl", "bdl")


def _where(cond: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.where(cond, x, torch.zeros((), dtype=x.dtype, device=x.device))


def _log_mix(la: torch.Tensor, lb: torch.Tensor, w: float) -> torch.Tensor:
    """log(w exp(la) + (1 - w) exp(lb)); w in [0, 1)."""
    if w == 0.0:
        return lb
    return torch.logaddexp(la + math.log(w), lb + math.log1p(-w))


def _kl(a: torch.Tensor, la: torch.Tensor, lb: torch.Tensor) -> torch.Tensor:
    """KL(a || b) per row, 0 * log 0 = 0."""
    return _where(a > 0, a * (la - lb)).sum(-1)


def loss_and_grad(
    kind: str,
    param: float,
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    temperature: float,
    want_grad: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token loss and, optionally, its gradient with respect to the student logits.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    param : float
        beta (jsd), alpha (skl, srkl), mu (akl) or lam (bdl); ignored otherwise.
    student_logits, teacher_logits : torch.Tensor
        (n, V) logits of one block of tokens.
    temperature : float
        Softmax temperature.
    want_grad : bool
        Also return ``dL/dz`` (n, V) in float32 (float64 for float64 inputs).

    Returns
    -------
    loss : torch.Tensor
        (n,) per-token loss.
    grad : torch.Tensor or None
        (n, V) gradient of each token's loss with respect to its student logits.
    """
    dtype = torch.float64 if student_logits.dtype == torch.float64 else torch.float32
    zs = student_logits.to(dtype)
    zt = teacher_logits.to(dtype)
    if temperature != 1.0:
        zs, zt = zs / temperature, zt / temperature
    ls = torch.log_softmax(zs, dim=-1)
    lt = torch.log_softmax(zt, dim=-1)
    q, p = ls.exp(), lt.exp()
    qg = None  # q * dL/dq
    if kind == "fkl":
        loss = _kl(p, lt, ls)
        if want_grad:
            return loss, (q - p) / temperature
    elif kind in ("rkl", "akl"):
        rkl = _kl(q, ls, lt)
        if kind == "rkl":
            loss = rkl
            if want_grad:
                qg = _where(q > 0, q * (ls - lt + 1.0))
        else:
            fkl = _kl(p, lt, ls)
            # head: the teacher's top tokens whose cumulative mass first reaches mu
            p_sorted, order = p.sort(dim=-1, descending=True)
            before = p_sorted.cumsum(-1) - p_sorted
            head = torch.zeros_like(p, dtype=torch.bool).scatter(-1, order, before < param)
            gap = (p - q).abs()
            w = (gap * head).sum(-1) / gap.sum(-1).clamp_min(torch.finfo(dtype).tiny)
            loss = w * fkl + (1.0 - w) * rkl
            if want_grad:
                g_f = q - p
                g_r = _where(q > 0, q * (ls - lt - rkl[:, None]))
                return loss, (w[:, None] * g_f + (1.0 - w[:, None]) * g_r) / temperature
    elif kind == "jsd":
        lm = _log_mix(lt, ls, param)
        loss = param * _kl(p, lt, lm) + (1.0 - param) * _kl(q, ls, lm)
        if want_grad:
            qg = _where(q > 0, (1.0 - param) * q * (ls - lm))
    elif kind == "tvd":
        loss = 0.5 * (p - q).abs().sum(-1)
        if want_grad:
            qg = 0.5 * q * torch.sign(q - p)
    elif kind in ("skl", "srkl", "bdl"):
        loss = torch.zeros(zs.shape[0], dtype=dtype, device=zs.device)
        qg = torch.zeros_like(q) if want_grad else None
        if kind in ("skl", "bdl"):
            lm = _log_mix(lt, ls, param)
            loss = loss + _kl(p, lt, lm)
            if want_grad:
                qg = qg - _where(p > 0, (1.0 - param) * p * q * torch.exp(-lm))
        if kind in ("srkl", "bdl"):
            lm = _log_mix(ls, lt, param)
            loss = loss + _kl(q, ls, lm)
            if want_grad:
                qg = qg + _where(q > 0, q * (ls - lm + 1.0) - param * q * q * torch.exp(-lm))
    else:  # pragma: no cover - validated by the callers
        raise ValueError(f"unknown loss kind {kind!r}")
    if not want_grad:
        return loss, None
    return loss, (qg - q * qg.sum(-1, keepdim=True)) / temperature
