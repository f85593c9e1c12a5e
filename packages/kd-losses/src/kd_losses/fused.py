"""A fused distillation head: the lm-head matmul inside the chunked loss, no full-vocab logits.

With a vocabulary of 128K, the logits of 1,024 tokens are 256 MB in bf16 per model, and their
float32 softmax temporaries several times that. :func:`fused_kd_loss` takes the *hidden
states* and lm-head weights instead and walks over blocks of tokens: for each block it forms the
student (and teacher) logits, the per-token loss and its gradient with respect to those logits
(:func:`kd_losses._kernels.loss_and_grad`), and immediately turns that gradient into the
gradients of the hidden states, weight and bias. Only one block of logits is ever alive; the
backward pass scales the stored gradients by the incoming scalar.

Memory. Two sizes bound the temporaries: ``chunk_size`` token rows per lm-head matmul (the
block's student and teacher logits, in the model's dtype; the logit gradient overwrites the
student's logits) and, inside a block, sub-blocks of rows for the float32 loss kernel (8-16
row-sized temporaries, measured per loss). Both default to what keeps the total near
:data:`MEMORY_BUDGET` (64 MB; see :func:`auto_block_sizes`): large matmul blocks keep the
passes over the ``(V, d)`` weights few (each block reads them), small kernel sub-blocks keep
the float32 temporaries small. Inputs are checked for NaN / inf without full-size masks
(``torch.isfinite`` allocates a weight-sized mask and an ``abs`` copy).

Half precision. With float16 / bfloat16 inputs the block logits, their gradient and every
accumulation are float32 (the weights are converted a vocabulary chunk of 1/8 of the budget at
a time), and the gradients are rounded to the inputs' dtypes once, after the incoming loss
scale is applied: a float16 weight gradient summed in float16 was 1% off and overflowed to NaN
under GradScaler's 2^16 scale. The price is a float32 weight-gradient accumulator during the
forward pass (``V x d`` float32; it is stored in the weight's dtype, scaled to its largest
entry, until the backward pass) and float32 block logits (the automatic block sizes count 4
bytes per logit).

One backward pass. The gradients are computed in the forward pass and scaled in place by the
incoming gradient in the backward pass, so a second backward through the same graph
(``retain_graph=True``, PCGrad-style code) raises a ``RuntimeError`` saying so: call
``fused_kd_loss`` again for each backward.

The teacher is a constant (its hidden states, weights or logits receive no gradient).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from kd_losses._kernels import KINDS, loss_and_grad
from kd_losses._validation import all_finite, check_reduction, check_temperature, resolve_mask

__all__ = ["MEMORY_BUDGET", "FusedKDLoss", "auto_block_sizes", "fused_kd_loss"]

MEMORY_BUDGET = 64 * 2**20  # bytes of block temporaries the automatic sizes aim at
# float32 row-sized temporaries alive at once inside the loss kernel, per loss: the peak
# resident memory of ``loss_and_grad`` on 128 rows of V = 128K, rounded up, plus one
_KERNEL_TEMPS = {
    "fkl": 8,
    "rkl": 8,
    "jsd": 9,
    "tvd": 8,
    "skl": 10,
    "srkl": 11,
    "akl": 16,
    "bdl": 11,
}
_PARAM = {"jsd": "beta", "skl": "alpha", "srkl": "alpha", "akl": "mu", "bdl": "lam"}
_DEFAULT = {"jsd": 0.5, "skl": 0.1, "srkl": 0.1, "akl": 0.5, "bdl": 0.1}


def _logits(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    return torch.addmm(b, h, w.T) if b is not None else h @ w.T


def auto_block_sizes(
    vocab: int, itemsize: int, budget: int = MEMORY_BUDGET, loss: str | None = None
) -> tuple[int, int]:
    """Token rows per lm-head matmul block and per float32 kernel sub-block.

    Half the budget holds a block's student and teacher logits (2 rows of ``vocab`` items
    each; the logit gradient overwrites the student's logits). A quarter holds the loss
    kernel's float32 temporaries (a measured count per loss; the largest when ``loss`` is
    None), the last quarter is left to the hidden-state gradient and the allocator's slack.
    The matmul blocks get the larger share because every block reads the ``(V, d)`` weights,
    while the kernel runs as fast on a few rows as on many.
    """
    if loss is not None and loss not in KINDS:
        raise ValueError(f"loss: must be one of {KINDS}, got {loss!r}")
    temps = _KERNEL_TEMPS[loss] if loss is not None else max(_KERNEL_TEMPS.values())
    rows = max(1, (budget // 2) // (2 * vocab * itemsize))
    sub = max(1, (budget // 4) // (temps * vocab * 4))
    return rows, min(sub, rows)


_HALF = (torch.float16, torch.bfloat16)


def _vocab_rows(d: int, budget: int = MEMORY_BUDGET) -> int:
    """Weight rows converted to float32 at a time in the half-precision path (1/8 budget)."""
    return max(1, (budget // 8) // (4 * max(d, 1)))


def _logits32(h32: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, vc: int):
    """float32 logits of float32 rows ``h32`` against a half-precision head, vocabulary-chunked
    (a (vc, d) float32 copy of the weight at a time, never the whole weight)."""
    out = torch.empty(h32.shape[0], w.shape[0], dtype=torch.float32, device=h32.device)
    for v in range(0, w.shape[0], vc):
        sl = slice(v, v + vc)
        out[:, sl] = h32 @ w[sl].float().T
        if b is not None:
            out[:, sl] += b[sl].float()
    return out


class _FusedHead(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hs, ws, bs, ht, wt, bt, tl, weights, kind, param, temperature, chunk, sub):
        n = hs.shape[0]
        want = ctx.needs_input_grad[0] or ctx.needs_input_grad[1] or ctx.needs_input_grad[2]
        acc = torch.float64 if hs.dtype == torch.float64 else torch.float32
        # half precision: logits, their gradient and every accumulation in float32 (a float16
        # weight gradient summed block by block lost 1% and overflowed to NaN under a 2^16
        # loss scale); float32 / float64 inputs keep the in-place path in their own dtype
        half = hs.dtype in _HALF
        vc = _vocab_rows(hs.shape[1]) if half else 0
        vct = _vocab_rows(ht.shape[1]) if half and ht is not None else 0
        total = torch.zeros((), dtype=acc, device=hs.device)
        gh = (
            torch.zeros(hs.shape, dtype=acc if half else hs.dtype, device=hs.device)
            if want
            else None
        )
        gw = (
            torch.zeros(ws.shape, dtype=acc if half else ws.dtype, device=hs.device)
            if want
            else None
        )
        gb = (
            torch.zeros(ws.shape[0], dtype=acc, device=hs.device)
            if want and bs is not None
            else None
        )
        with torch.no_grad():
            for a in range(0, n, chunk):
                c = slice(a, min(a + chunk, n))
                w_c = weights[c]
                if not bool((w_c != 0).any()):
                    continue  # a fully masked block contributes nothing
                if half:
                    h32 = hs[c].float()
                    zs = _logits32(h32, ws, bs, vc)
                    if tl is not None:
                        zt = tl[c].float()
                    else:
                        zt = _logits32(ht[c].float(), wt, bt, vct)
                else:
                    zs = _logits(hs[c], ws, bs)
                    # a half teacher with float32 weights (mixed precision) computes in float32
                    zt = tl[c] if tl is not None else _logits(ht[c].to(wt.dtype), wt, bt)
                for b in range(0, zs.shape[0], sub):  # the float32 kernel, a few rows at a time
                    r = slice(b, b + sub)
                    loss, g = loss_and_grad(kind, param, zs[r], zt[r], temperature, want)
                    total += (w_c[r].to(acc) * loss).sum()
                    if want:
                        g.mul_(w_c[r].to(acc)[:, None])
                        if gb is not None:
                            gb += g.sum(0)
                        zs[r] = g  # these logits are done with: hold their gradient instead
                    del loss, g
                del zt
                if want and half:
                    for v in range(0, ws.shape[0], vc):
                        sl = slice(v, v + vc)
                        w32 = ws[sl].float()
                        gh[c] += zs[:, sl] @ w32
                        gw[sl].addmm_(zs[:, sl].T, h32)
                    del w32
                elif want:
                    gh[c] = zs @ ws
                    gw.addmm_(zs.T, hs[c])
                del zs  # free this block before the next one is formed
        if want and half:  # keep the weight gradient in the weight's dtype until backward,
            # scaled by a power of two that puts its largest entry in [1, 2): float16's range
            # holds it, and a power-of-two loss scale (GradScaler's) later rescales it exactly,
            # so the float32 sum is rounded to the weight's dtype once
            amax = float(gw.abs().max())
            exp = math.frexp(amax)[1] if amax > 0 else 0
            gw = _to_dtype_chunked(gw, ws.dtype, 2.0 ** (1 - exp), vc)
            ctx.gw_scale = 2.0 ** (exp - 1)
        ctx.half, ctx.vc, ctx.out_dtype = half, vc, (hs.dtype, ws.dtype)
        ctx.grads = (gh, gw, gb)
        return total

    @staticmethod
    def backward(ctx, grad_total):
        gh, gw, gb = ctx.grads
        ctx.grads = None
        if gh is None:
            raise RuntimeError(
                "fused_kd_loss supports one backward pass per call: its gradients are computed "
                "in the forward pass and scaled in place (retain_graph=True cannot reuse them); "
                "call fused_kd_loss again for another backward"
            )
        if ctx.half:  # scale in float32, then round once to the inputs' dtypes
            g = grad_total.float()
            gh = (gh * g).to(ctx.out_dtype[0])
            gw = _to_dtype_chunked(gw, ctx.out_dtype[1], ctx.gw_scale * g, ctx.vc)
        else:
            g = grad_total.to(gh.dtype)
            gh.mul_(g)
            gw.mul_(g)
        if gb is not None:
            gb = (gb * grad_total).to(gw.dtype)
        ctx.grads = (None, None, None)
        return gh, gw, gb, None, None, None, None, None, None, None, None, None, None


def _to_dtype_chunked(x: torch.Tensor, dtype: torch.dtype, factor, rows: int) -> torch.Tensor:
    """``(x * factor).to(dtype)`` computed in float32 a block of rows at a time (in place when
    ``x`` is already ``dtype``), so no second full-size float32 temporary is formed."""
    out = x if x.dtype == dtype else torch.empty(x.shape, dtype=dtype, device=x.device)
    for v in range(0, x.shape[0], rows):
        sl = slice(v, v + rows)
        out[sl] = (x[sl].float() * factor).to(dtype)
    return out


def fused_kd_loss(
    student_hidden: torch.Tensor,
    student_weight: torch.Tensor,
    *,
    student_bias: torch.Tensor | None = None,
    teacher_hidden: torch.Tensor | None = None,
    teacher_weight: torch.Tensor | None = None,
    teacher_bias: torch.Tensor | None = None,
    teacher_logits: torch.Tensor | None = None,
    loss: str = "bdl",
    chunk_size: int | None = None,
    mask: torch.Tensor | None = None,
    labels: torch.Tensor | None = None,
    ignore_index: int = -100,
    temperature: float = 1.0,
    reduction: str = "mean",
    **loss_kwargs: float,
) -> torch.Tensor:
    """Distillation loss from hidden states and lm-head weights, never forming full logits.

    Parameters
    ----------
    student_hidden : torch.Tensor
        (N, d) student hidden states (any leading shape is flattened to N tokens).
    student_weight : torch.Tensor
        (V, d) student lm-head weight.
    student_bias : torch.Tensor, optional
        (V,) student lm-head bias.
    teacher_hidden, teacher_weight, teacher_bias : torch.Tensor, optional
        The teacher's hidden states (N, d_t), lm-head weight (V, d_t) and bias; or give
    teacher_logits : torch.Tensor, optional
        (N, V) precomputed teacher logits instead.
    loss : str, default="bdl"
        Any loss of the package: ``fkl, rkl, jsd, tvd, skl, srkl, akl, bdl``.
    chunk_size : int, optional
        Token rows per lm-head matmul block; default: :func:`auto_block_sizes` (the block
        temporaries near :data:`MEMORY_BUDGET`).
    mask, labels, ignore_index : optional
        Token selection, as in the logits losses ((N,) or the hidden states' leading shape).
    temperature : float, default=1.0
    reduction : {"mean", "sum"}, default="mean"
        Per-token losses cannot be returned (the gradients are reduced on the fly).
    **loss_kwargs : float
        The loss's parameter: ``beta`` (jsd), ``alpha`` (skl, srkl), ``mu`` (akl), ``lam`` (bdl).

    Returns
    -------
    torch.Tensor
        Scalar loss; its backward gives the gradients of the student hidden states, weight and
        bias (equal to the logits path's to float rounding; tested in float64).
    """
    if loss not in KINDS:
        raise ValueError(f"loss: must be one of {KINDS}, got {loss!r}")
    extra = set(loss_kwargs) - ({_PARAM[loss]} if loss in _PARAM else set())
    if extra:
        raise TypeError(f"loss_kwargs: unexpected {sorted(extra)} for loss={loss!r}")
    param = float(loss_kwargs.get(_PARAM.get(loss, ""), _DEFAULT.get(loss, 0.0)))
    if loss in _PARAM and not (0.0 < param < 1.0 or (loss == "akl" and param == 1.0)):
        raise ValueError(f"{_PARAM[loss]}: must be in (0, 1), got {param}")
    t = check_temperature(temperature)
    if check_reduction(reduction) == "none":
        raise ValueError("reduction: 'none' is not supported by the fused head (use 'mean'/'sum')")
    hs = _as_tokens(student_hidden, "student_hidden")
    lead = student_hidden.shape[:-1]
    _check_weight(student_weight, hs.shape[1], "student_weight")
    _check_dtypes(student_weight, hs, "student")
    vocab = student_weight.shape[0]
    if student_bias is not None and student_bias.shape != (vocab,):
        raise ValueError(
            f"student_bias: expected shape ({vocab},), got {tuple(student_bias.shape)}"
        )
    if student_bias is not None:
        _check_vector(student_bias, "student_bias")
    if (teacher_logits is None) == (teacher_hidden is None or teacher_weight is None):
        raise ValueError(
            "teacher_logits: give either teacher_logits or both teacher_hidden and teacher_weight"
        )
    ht = wt = tl = None
    if teacher_logits is not None:
        if not isinstance(teacher_logits, torch.Tensor) or not teacher_logits.is_floating_point():
            raise TypeError("teacher_logits: expected a floating-point tensor")
        tl = teacher_logits.reshape(-1, teacher_logits.shape[-1]).detach()
        if tl.shape != (hs.shape[0], vocab):
            raise ValueError(f"teacher_logits: expected shape ({hs.shape[0]}, {vocab})")
        # as the logits path: NaN / +inf raise; -inf (a masked vocabulary entry) cannot be
        # matched on the student's side here, whose logits come from the weights
        if not all_finite(tl):
            raise ValueError(
                "teacher_logits contains NaN or inf (the fused head has no vocabulary mask)"
            )
    else:
        ht = _as_tokens(teacher_hidden, "teacher_hidden").detach()
        if ht.shape[0] != hs.shape[0]:
            raise ValueError(f"teacher_hidden: {ht.shape[0]} tokens, student has {hs.shape[0]}")
        _check_weight(teacher_weight, ht.shape[1], "teacher_weight")
        _check_dtypes(teacher_weight, ht, "teacher")
        wt = teacher_weight.detach()
        if teacher_bias is not None:
            _check_vector(teacher_bias, "teacher_bias")
        if wt.shape[0] != vocab:
            raise ValueError(
                f"teacher_weight: vocab {wt.shape[0]} differs from the student's {vocab}"
            )
    # half-precision inputs form their block logits in float32 (see _FusedHead)
    itemsize = 4 if hs.dtype in _HALF else hs.element_size()
    auto_rows, sub = auto_block_sizes(vocab, itemsize, loss=loss)
    if chunk_size is None:
        chunk_size = auto_rows
    elif (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, int | np.integer)
        or chunk_size < 1
    ):
        raise ValueError(f"chunk_size: must be a positive int, got {chunk_size!r}")
    chunk_size = int(chunk_size)
    valid = resolve_mask(lead, hs.device, mask, labels, ignore_index)
    wdtype = torch.float64 if hs.dtype == torch.float64 else torch.float32
    weights = (
        torch.ones(hs.shape[0], device=hs.device, dtype=wdtype)
        if valid is None
        else valid.reshape(-1).to(wdtype)
    )
    if reduction == "mean":
        count = weights.sum()
        weights = weights / count.clamp_min(1.0)  # an all-masked batch gives 0
    bt = None if teacher_bias is None else teacher_bias.detach()
    # autocast would recast single matmuls inside the kernel (mixing bf16 blocks with its
    # float32 accumulators); the head computes in its inputs' dtype, accumulating in float32
    with torch.autocast(hs.device.type, enabled=False):
        return _FusedHead.apply(
            hs, student_weight, student_bias, ht, wt, bt, tl, weights, loss, param, t,
            chunk_size, min(sub, chunk_size),
        )  # fmt: skip


def _as_tokens(x: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"{name}: expected a floating-point tensor")
    if x.ndim < 2 or x.numel() == 0:
        raise ValueError(f"{name}: expected shape (..., d) with at least one token")
    if not all_finite(x):
        raise ValueError(f"{name}: contains NaN or inf")
    return x.reshape(-1, x.shape[-1])


def _check_weight(w: torch.Tensor, d: int, name: str) -> None:
    if not isinstance(w, torch.Tensor) or not w.is_floating_point() or w.ndim != 2:
        raise TypeError(f"{name}: expected a floating-point (V, d) tensor")
    if w.shape[1] != d:
        raise ValueError(f"{name}: expected {d} columns (the hidden width), got {w.shape[1]}")
    if not all_finite(w):
        raise ValueError(f"{name}: contains NaN or inf")


def _check_dtypes(w: torch.Tensor, h: torch.Tensor, who: str) -> None:
    """Same dtype, or mixed precision: half hidden states (autocast) with float32 weights."""
    if w.dtype == h.dtype or (h.dtype in _HALF and w.dtype == torch.float32):
        return
    raise TypeError(
        f"{who}_weight: dtype {w.dtype} differs from {who}_hidden's {h.dtype} (the head takes "
        "equal dtypes, or float16/bfloat16 hidden states with float32 weights)"
    )


def _check_vector(b: torch.Tensor, name: str) -> None:
    if not isinstance(b, torch.Tensor) or not b.is_floating_point() or b.ndim != 1:
        raise TypeError(f"{name}: expected a floating-point (V,) tensor")
    if not all_finite(b):
        raise ValueError(f"{name}: contains NaN or inf")


class FusedKDLoss(nn.Module):
    """Module form of :func:`fused_kd_loss` (its keyword arguments are fixed at construction).

    ``forward(student_hidden, student_weight, teacher_hidden=None, teacher_weight=None,
    teacher_logits=None, mask=None, labels=None)``.
    """

    def __init__(self, loss: str = "bdl", **kwargs: object) -> None:
        super().__init__()
        self.loss, self.kwargs = loss, kwargs

    def forward(
        self,
        student_hidden: torch.Tensor,
        student_weight: torch.Tensor,
        teacher_hidden: torch.Tensor | None = None,
        teacher_weight: torch.Tensor | None = None,
        teacher_logits: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Scalar distillation loss."""
        return fused_kd_loss(
            student_hidden, student_weight, teacher_hidden=teacher_hidden,
            teacher_weight=teacher_weight, teacher_logits=teacher_logits, loss=self.loss,
            mask=mask, labels=labels, **self.kwargs,
        )  # fmt: skip
