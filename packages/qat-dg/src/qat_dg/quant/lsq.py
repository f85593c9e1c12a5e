"""LSQ learned-step-size fake quantization of weights (Esser et al., ICLR 2020).

QT-DoG (Javed et al., ICML 2025, Sec. 3) quantizes weights with LSQ: a signed integer grid
``[-Q_N, Q_P]`` scaled by a learnable step size ``s`` (per output channel by default), rounding
with a straight-through estimator (STE) and a scaled step-size gradient.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor, nn

__all__ = [
    "LSQQuantizer",
    "init_step_size",
    "lsq_fake_quant",
    "quant_range",
]

_EPS = 1e-8


def quant_range(bits: int, symmetric: bool = False, all_positive: bool = False) -> tuple[int, int]:
    """Return the integer range ``(Q_N, Q_P)`` of a ``bits``-bit grid.

    Parameters
    ----------
    bits : int
        Bit width, in ``[2, 16]``.
    symmetric : bool, default=False
        If True, ``Q_N = Q_P = 2**(bits-1) - 1``; otherwise ``Q_N = 2**(bits-1)``.
    all_positive : bool, default=False
        Unsigned grid ``[0, 2**bits - 1]`` (for activations); overrides ``symmetric``.

    Returns
    -------
    (int, int)
        ``(Q_N, Q_P)``; the grid is ``{-Q_N, ..., Q_P}``.
    """
    _check_bits(bits)
    if all_positive:
        return 0, 2**bits - 1
    q_p = 2 ** (bits - 1) - 1
    q_n = q_p if symmetric else 2 ** (bits - 1)
    return q_n, q_p


def _check_bits(bits: int) -> None:
    if isinstance(bits, bool) or not isinstance(bits, numbers.Integral):
        raise TypeError(f"bits must be an int, got {type(bits).__name__}")
    if not 2 <= bits <= 16:
        raise ValueError(f"bits must be in [2, 16], got {bits}")


def init_step_size(weight: Tensor, bits: int, per_channel: bool = True, **kw: bool) -> Tensor:
    """LSQ initial step size ``s = 2 mean|w| / sqrt(Q_P)`` (per output channel or per tensor).

    Parameters
    ----------
    weight : Tensor, shape (C_out, ...)
        Weight tensor; axis 0 is the output-channel axis.
    bits : int
        Bit width in ``[2, 16]``.
    per_channel : bool, default=True
        One step per output channel (shape ``(C_out,)``) or a scalar (shape ``()``).
    **kw
        ``symmetric`` / ``all_positive`` forwarded to :func:`quant_range`.

    Returns
    -------
    Tensor, shape (C_out,) or ()
        Step sizes, floored at a tiny epsilon so all-zero channels give no NaN/inf.
    """
    if not isinstance(weight, Tensor):
        raise TypeError(f"weight must be a torch.Tensor, got {type(weight).__name__}")
    if weight.ndim < 1 or weight.numel() == 0:
        raise ValueError("weight must be a non-empty tensor with at least one dimension")
    if not weight.is_floating_point():
        raise TypeError(f"weight must be a floating tensor, got {weight.dtype}")
    if not torch.isfinite(weight).all():
        raise ValueError("weight contains NaN or inf")
    _, q_p = quant_range(bits, **kw)
    w = weight.detach().abs()
    mean = w.reshape(w.shape[0], -1).mean(dim=1) if per_channel else w.mean()
    return (2.0 * mean / math.sqrt(q_p)).clamp_min(_EPS).to(weight.dtype)


class _LSQFunction(torch.autograd.Function):
    """Fake quantization with STE rounding and the LSQ step-size gradient (closed form)."""

    @staticmethod
    def forward(ctx, w: Tensor, s: Tensor, q_n: int, q_p: int, g: float) -> Tensor:  # type: ignore[override]
        s_b = s.reshape(-1, *([1] * (w.ndim - 1))) if s.ndim == 1 else s
        v = w / s_b
        r = v.clamp(-q_n, q_p).round()
        ctx.save_for_backward(v, r, s)
        ctx.g = g
        ctx.bounds = (q_n, q_p)
        return r * s_b

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        v, r, s = ctx.saved_tensors
        q_n, q_p = ctx.bounds
        inside = (v >= -q_n) & (v <= q_p)
        grad_w = grad * inside
        # d(round(clip(w/s)) s)/ds = round(w/s) - w/s inside, the saturated bound outside
        ds = torch.where(inside, r - v, r) * grad
        grad_s = ds.reshape(ds.shape[0], -1).sum(dim=1) if s.ndim == 1 else ds.sum()
        return grad_w, grad_s * ctx.g, None, None, None


def lsq_fake_quant(
    weight: Tensor,
    step: Tensor,
    bits: int,
    symmetric: bool = False,
    grad_scale: float | None = None,
) -> Tensor:
    """Fake-quantize ``weight`` on the grid ``step * {-Q_N, ..., Q_P}`` (LSQ forward/backward).

    Forward: ``round(clip(w / s, -Q_N, Q_P)) * s``. Backward: identity for ``w`` inside the
    range and zero outside (STE); ``d/ds = (round(w/s) - w/s)`` inside, ``-Q_N`` / ``Q_P``
    outside, multiplied by ``grad_scale``.

    Parameters
    ----------
    weight : Tensor, shape (C_out, ...)
        Latent full-precision weights.
    step : Tensor, shape (C_out,) or ()
        Positive step sizes (per output channel or scalar).
    bits : int
        Bit width in ``[2, 16]``.
    symmetric : bool, default=False
        Symmetric grid ``[-(2^{b-1}-1), 2^{b-1}-1]`` instead of ``[-2^{b-1}, 2^{b-1}-1]``.
    grad_scale : float or None, default=None
        Multiplier of the step-size gradient; None uses LSQ's ``1/sqrt(Q_P * weight.numel())``.

    Returns
    -------
    Tensor, same shape as ``weight``
        Fake-quantized weights.
    """
    if not isinstance(weight, Tensor) or not isinstance(step, Tensor):
        raise TypeError("weight and step must be torch.Tensors")
    if weight.ndim < 1 or weight.numel() == 0:
        raise ValueError("weight must be a non-empty tensor with at least one dimension")
    if step.ndim > 1 or (step.ndim == 1 and step.shape[0] != weight.shape[0]):
        raise ValueError(
            f"step must have shape () or ({weight.shape[0]},), got {tuple(step.shape)}"
        )
    if not weight.is_floating_point():
        raise TypeError(f"weight must be a floating tensor, got {weight.dtype}")
    if not torch.isfinite(weight).all():
        raise ValueError("weight contains NaN or inf (training diverged?)")
    if not torch.isfinite(step).all():
        raise ValueError("step contains NaN or inf")
    q_n, q_p = quant_range(bits, symmetric=symmetric)
    g = 1.0 / math.sqrt(q_p * weight.numel()) if grad_scale is None else float(grad_scale)
    # a step driven to <= 0 by the optimiser would flip/blow up the grid: floor it
    return _LSQFunction.apply(weight, step.clamp_min(_EPS), q_n, q_p, g)


class LSQQuantizer(nn.Module):
    """Learnable-step weight quantizer (holds the step-size ``Parameter``).

    Parameters
    ----------
    num_channels : int
        Output channels of the weight it quantizes (ignored when ``per_channel=False``).
    bits : int, default=7
        Bit width in ``[2, 16]``; QT-DoG's main results use 7.
    per_channel : bool, default=True
        One step size per output channel.
    symmetric : bool, default=False
        Symmetric integer grid.
    grad_scale : {"tensor", "channel"}, default="tensor"
        Step-gradient scale ``1/sqrt(Q_P * n)`` with ``n`` the numel of the whole tensor (as
        the released code) or of one output channel.
    """

    def __init__(
        self,
        num_channels: int,
        bits: int = 7,
        per_channel: bool = True,
        symmetric: bool = False,
        grad_scale: str = "tensor",
    ) -> None:
        super().__init__()
        _check_bits(bits)
        bits = int(bits)
        if grad_scale not in ("tensor", "channel"):
            raise ValueError(f"grad_scale must be 'tensor' or 'channel', got {grad_scale!r}")
        if int(num_channels) < 1:
            raise ValueError(f"num_channels must be >= 1, got {num_channels}")
        self.bits = bits
        self.per_channel = per_channel
        self.symmetric = symmetric
        self.grad_scale = grad_scale
        shape = (int(num_channels),) if per_channel else ()
        self.step = nn.Parameter(torch.ones(shape))

    @property
    def qrange(self) -> tuple[int, int]:
        """The integer range ``(Q_N, Q_P)``."""
        return quant_range(self.bits, symmetric=self.symmetric)

    @torch.no_grad()
    def init_from(self, weight: Tensor) -> None:
        """Set the step sizes to LSQ's initialisation ``2 mean|w| / sqrt(Q_P)``."""
        s = init_step_size(weight, self.bits, self.per_channel, symmetric=self.symmetric)
        self.step.copy_(s.to(self.step.dtype))

    def forward(self, weight: Tensor) -> Tensor:
        """Fake-quantize ``weight`` (shape ``(C_out, ...)``); returns the same shape."""
        _, q_p = self.qrange
        n = weight.numel() if self.grad_scale == "tensor" or not self.per_channel else None
        n = n if n is not None else weight[0].numel()
        g = 1.0 / math.sqrt(q_p * n)
        return lsq_fake_quant(weight, self.step, self.bits, self.symmetric, grad_scale=g)

    @torch.no_grad()
    def integers(self, weight: Tensor) -> Tensor:
        """Integer codes ``round(clip(w / s))`` of ``weight`` (int8 for ``bits <= 8``)."""
        q_n, q_p = self.qrange
        s = self.step.clamp_min(_EPS)
        s_b = s.reshape(-1, *([1] * (weight.ndim - 1))) if s.ndim == 1 else s
        codes = (weight / s_b).clamp(-q_n, q_p).round()
        return codes.to(torch.int8 if self.bits <= 8 else torch.int16)

    def extra_repr(self) -> str:
        return (
            f"bits={self.bits}, per_channel={self.per_channel}, symmetric={self.symmetric}, "
            f"grad_scale={self.grad_scale!r}"
        )
