"""Fake-quant Conv2d / Linear modules and ``quantize_model`` (QT-DoG Sec. 3, the switch to QAT).

Only weights are quantized (biases and activations stay in full precision), as in the released
QT-DoG code. The swap reuses the *same* ``Parameter`` objects so an optimiser keeps tracking them.
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch.nn.functional as F
from torch import Tensor, nn

from qat_dg.quant.lsq import LSQQuantizer, _check_bits

__all__ = [
    "FakeQuantConv2d",
    "FakeQuantLinear",
    "QuantConfig",
    "is_quantized",
    "quant_parameters",
    "quantize_model",
    "quantized_modules",
]


@dataclass(frozen=True)
class QuantConfig:
    """What to quantize and how.

    Parameters
    ----------
    bits : int, default=7
        Weight bit width in ``[2, 16]``.
    per_channel : bool, default=True
        One learned step per output channel.
    symmetric : bool, default=False
        Symmetric integer grid.
    targets : tuple of {"conv", "linear"}, default=("conv",)
        Layer types to quantize (the released code quantizes every Conv2d only).
    exclude : tuple of str, default=("classifier",)
        Module-name patterns (fnmatch, matched against the full dotted name and each of its
        components) left in full precision.
    quantize_activations : bool, default=False
        Must be False (activation quantization is bypassed in QT-DoG and not implemented).
    grad_scale : {"tensor", "channel"}, default="tensor"
        Step-size gradient scale, see :class:`~qat_dg.quant.lsq.LSQQuantizer`.
    """

    bits: int = 7
    per_channel: bool = True
    symmetric: bool = False
    targets: tuple[str, ...] = ("conv",)
    exclude: tuple[str, ...] = ("classifier",)
    quantize_activations: bool = False
    grad_scale: str = "tensor"

    def __post_init__(self) -> None:
        _check_bits(self.bits)
        object.__setattr__(self, "bits", int(self.bits))
        for name in ("per_channel", "symmetric", "quantize_activations"):
            v = getattr(self, name)
            if not isinstance(v, bool | np.bool_):  # "no" would read as True
                raise TypeError(f"{name} must be a bool, got {type(v).__name__}")
            object.__setattr__(self, name, bool(v))
        for name in ("targets", "exclude"):
            v = getattr(self, name)
            v = (v,) if isinstance(v, str) else v
            if not isinstance(v, Sequence) or not all(isinstance(p, str) for p in v):
                raise TypeError(f"{name} must be a str or a sequence of str, got {v!r}")
            object.__setattr__(self, name, tuple(v))
        targets = self.targets
        if not targets or any(t not in ("conv", "linear") for t in targets):
            raise ValueError(
                f"targets must be a non-empty subset of ('conv', 'linear'), got {targets}"
            )
        if self.quantize_activations:
            raise ValueError("quantize_activations=True is not supported (QT-DoG bypasses it)")
        if self.grad_scale not in ("tensor", "channel"):
            raise ValueError(f"grad_scale must be 'tensor' or 'channel', got {self.grad_scale!r}")


class _FakeQuantMixin:
    """Marks a module whose ``weight`` goes through ``self.quantizer`` in the forward pass."""

    quantizer: LSQQuantizer
    weight: nn.Parameter

    def quantized_weight(self) -> Tensor:
        """The deployed weight ``round(clip(w/s)) * s`` (differentiable, STE)."""
        return self.quantizer(self.weight)

    def _adopt(self, float_module: nn.Module, cfg: QuantConfig):
        """Share ``float_module``'s weight/bias ``Parameter`` objects and mode; LSQ-init steps."""
        self.weight = float_module.weight
        self.bias = float_module.bias
        self.training = float_module.training
        self.quantizer = _make_quantizer(float_module.weight, cfg)
        return self


def _make_quantizer(weight: Tensor, cfg: QuantConfig) -> LSQQuantizer:
    q = LSQQuantizer(weight.shape[0], cfg.bits, cfg.per_channel, cfg.symmetric, cfg.grad_scale)
    q = q.to(device=weight.device, dtype=weight.dtype)
    q.init_from(weight)
    return q


class FakeQuantConv2d(_FakeQuantMixin, nn.Conv2d):
    """``nn.Conv2d`` whose weight is LSQ fake-quantized; build it with :meth:`from_float`."""

    @classmethod
    def from_float(cls, conv: nn.Conv2d, cfg: QuantConfig) -> FakeQuantConv2d:
        """Wrap ``conv``, sharing its weight/bias ``Parameter`` objects; step sizes from LSQ init."""
        new = cls(
            conv.in_channels,
            conv.out_channels,
            conv.kernel_size,
            stride=conv.stride,
            padding=conv.padding,
            dilation=conv.dilation,
            groups=conv.groups,
            bias=conv.bias is not None,
            padding_mode=conv.padding_mode,
            device="meta",
        )
        return new._adopt(conv, cfg)

    def forward(self, x: Tensor) -> Tensor:
        """Convolution with the fake-quantized weight; x: (B, C_in, H, W)."""
        return self._conv_forward(x, self.quantized_weight(), self.bias)


class FakeQuantLinear(_FakeQuantMixin, nn.Linear):
    """``nn.Linear`` whose weight is LSQ fake-quantized; build it with :meth:`from_float`."""

    @classmethod
    def from_float(cls, linear: nn.Linear, cfg: QuantConfig) -> FakeQuantLinear:
        """Wrap ``linear``, sharing its weight/bias ``Parameter`` objects."""
        new = cls(
            linear.in_features, linear.out_features, bias=linear.bias is not None, device="meta"
        )
        return new._adopt(linear, cfg)

    def forward(self, x: Tensor) -> Tensor:
        """Affine map with the fake-quantized weight; x: (..., in_features)."""
        return F.linear(x, self.quantized_weight(), self.bias)


def _excluded(name: str, patterns: tuple[str, ...]) -> bool:
    parts = name.split(".")
    return any(fnmatch.fnmatchcase(p, pat) for pat in patterns for p in [name, *parts])


def quantized_modules(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """Yield ``(name, module)`` for every fake-quant module of ``model``."""
    for name, m in model.named_modules():
        if isinstance(m, _FakeQuantMixin):
            yield name, m


def is_quantized(model: nn.Module) -> bool:
    """True if ``model`` holds at least one fake-quant module."""
    return next(quantized_modules(model), None) is not None


def quant_parameters(model: nn.Module) -> Iterator[nn.Parameter]:
    """Yield the LSQ step-size parameters of ``model`` (to add them to an optimiser)."""
    for _, m in quantized_modules(model):
        yield m.quantizer.step


def quantize_model(
    model: nn.Module,
    config: QuantConfig | None = None,
    *,
    inplace: bool = False,
    **overrides: object,
) -> nn.Module:
    """Swap target layers of ``model`` for LSQ fake-quant layers.

    Parameters
    ----------
    model : nn.Module
        Any torch model.
    config : QuantConfig or None
        Settings; None uses ``QuantConfig(**overrides)``.
    inplace : bool, default=False
        Modify ``model`` itself (weights keep their ``Parameter`` identity, so an existing
        optimiser keeps training them). Otherwise a deep copy is quantized.
    **overrides
        ``QuantConfig`` fields, e.g. ``bits=7`` (applied on top of ``config``).

    Returns
    -------
    nn.Module
        The quantized model. Layers already quantized are left untouched (idempotent).

    Raises
    ------
    ValueError
        If ``bits`` is outside ``[2, 16]`` or ``model`` has no quantizable layer.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    names = {f.name for f in fields(QuantConfig)}
    bad = set(overrides) - names
    if bad:
        raise TypeError(f"unknown quantization option(s): {sorted(bad)}")
    base = asdict(config) if config is not None else {}
    cfg = QuantConfig(**{**base, **overrides})  # type: ignore[arg-type]
    if not inplace:
        model = copy.deepcopy(model)
    kinds = {"conv": nn.Conv2d, "linear": nn.Linear}
    wanted = tuple(kinds[t] for t in cfg.targets)
    swaps = []
    for name, m in model.named_modules():
        if not name or isinstance(m, _FakeQuantMixin) or not isinstance(m, wanted):
            continue
        if type(m) not in (nn.Conv2d, nn.Linear) or _excluded(name, cfg.exclude):
            continue
        swaps.append(name)
    if not swaps and not is_quantized(model):
        raise ValueError(
            f"model has no quantizable layers for targets={cfg.targets} exclude={cfg.exclude}"
        )
    for name in swaps:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        old = getattr(parent, child)
        cls = FakeQuantConv2d if isinstance(old, nn.Conv2d) else FakeQuantLinear
        setattr(parent, child, cls.from_float(old, cfg))
    return model
