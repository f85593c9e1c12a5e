"""Real int8 models from a QT-DoG / LSQ fake-quantized model (``to_int8``).

Two deployments of the same integer weights:

``mode="weight_only"``
    Every fake-quant layer becomes an :class:`Int8Conv2d` / :class:`Int8Linear` holding its
    codes as an ``int8`` buffer and its per-channel steps in float32; activations stay in float,
    as in QT-DoG (which quantizes weights only). The outputs equal the fake-quant model's (the
    weight is ``codes · step``, exactly the fake-quant weight), and the state dict stores one byte
    per weight. On CPU it is no faster than float32: the weight is expanded before each call.
``mode="static"``
    torch.ao FX static quantization on the x86 backend: conv–BN–ReLU fused, activations
    quantized to uint8 with scales calibrated on ``calibration`` images, int8 kernels. The LSQ
    codes are written into the fused kernels exactly (a BatchNorm fold multiplies each output
    channel by ``γ/σ``, which scales the step and keeps the codes, up to a sign). Faster, but the
    activation quantization changes the outputs: measure the accuracy (the benchmark does).
    torch.ao's quantized tensors are deprecated in recent PyTorch; their warnings are silenced
    here and the mode raises a named error if the API is gone.
"""

from __future__ import annotations

import copy
import io
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qat_dg.quant.layers import FakeQuantConv2d, FakeQuantLinear, is_quantized, quantized_modules

__all__ = ["Int8Conv2d", "Int8Linear", "saved_size_bytes", "to_int8"]


class _Int8Mixin:
    codes: Tensor
    scale: Tensor

    def dequantized_weight(self) -> Tensor:
        """``codes · scale`` (broadcast over the output-channel axis), float32."""
        s = self.scale.reshape(-1, *([1] * (self.codes.ndim - 1)))
        return self.codes.to(s.dtype) * s

    def _adopt(self, m: nn.Module) -> None:
        q = m.quantizer
        if q.bits > 8:
            raise ValueError(f"bits={q.bits}: codes wider than 8 bits do not fit an int8 tensor")
        self.register_buffer("codes", q.integers(m.weight).to(torch.int8))
        step = q.step.detach().clamp_min(1e-8).float()
        if step.ndim == 0:
            step = step.expand(m.weight.shape[0])
        self.register_buffer("scale", step.clone())
        self.bias = None if m.bias is None else nn.Parameter(m.bias.detach().float().clone())


class Int8Conv2d(_Int8Mixin, nn.Module):
    """Weight-only int8 convolution: ``int8`` codes, float32 per-channel scales, float bias."""

    def __init__(self, m: FakeQuantConv2d) -> None:
        super().__init__()
        if m.padding_mode != "zeros":
            raise ValueError(f"padding_mode={m.padding_mode!r} is not supported (only 'zeros')")
        self.stride, self.padding, self.dilation, self.groups = (
            m.stride, m.padding, m.dilation, m.groups,
        )  # fmt: skip
        self._adopt(m)

    def forward(self, x: Tensor) -> Tensor:
        w = self.dequantized_weight().to(x.dtype)
        b = None if self.bias is None else self.bias.to(x.dtype)
        return F.conv2d(x, w, b, self.stride, self.padding, self.dilation, self.groups)


class Int8Linear(_Int8Mixin, nn.Module):
    """Weight-only int8 affine map: ``int8`` codes, float32 per-row scales, float bias."""

    def __init__(self, m: FakeQuantLinear) -> None:
        super().__init__()
        self._adopt(m)

    def forward(self, x: Tensor) -> Tensor:
        b = None if self.bias is None else self.bias.to(x.dtype)
        return F.linear(x, self.dequantized_weight().to(x.dtype), b)


def saved_size_bytes(model: nn.Module) -> int:
    """Bytes of ``torch.save(model.state_dict())``: the size of the checkpoint on disk."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    return buf.getbuffer().nbytes


def _swap(model: nn.Module, make) -> nn.Module:
    for name, m in list(quantized_modules(model)):
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, make(m))
    return model


def _plain(m: nn.Module) -> nn.Module:
    """A plain float layer holding the fake-quant weight ``codes · step``."""
    with torch.no_grad():
        w = m.quantized_weight().detach().clone()
    if isinstance(m, FakeQuantConv2d):
        new = nn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding,
                        m.dilation, m.groups, m.bias is not None, m.padding_mode)  # fmt: skip
    else:
        new = nn.Linear(m.in_features, m.out_features, m.bias is not None)
    new.weight = nn.Parameter(w)
    if m.bias is not None:
        new.bias = nn.Parameter(m.bias.detach().clone())
    return new


def _bn_after(fp: nn.Module) -> dict[str, nn.BatchNorm2d]:
    """``{conv name: the BatchNorm2d that consumes it alone}`` (what FX fusion folds)."""
    import torch.fx

    gm = torch.fx.symbolic_trace(fp)
    mods = dict(gm.named_modules())
    out = {}
    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(mods.get(node.target), nn.Conv2d):
            users = list(node.users)
            if (
                len(users) == 1
                and users[0].op == "call_module"
                and isinstance(mods.get(users[0].target), nn.BatchNorm2d)
            ):
                out[node.target] = mods[users[0].target]
    return out


def _static(model: nn.Module, calibration: Tensor, batch_size: int) -> nn.Module:
    try:
        from torch.ao.quantization import get_default_qconfig_mapping
        from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    except ImportError as e:  # pragma: no cover - depends on the torch version
        raise ValueError("mode='static' needs torch.ao.quantization's FX API, absent here") from e
    quant = {name: m for name, m in quantized_modules(model)}
    # torch.ao's int8 kernels take float32 inputs: a float64 (or half) model is cast first
    fp = _swap(copy.deepcopy(model), _plain).eval().float()
    mapping = get_default_qconfig_mapping("x86")
    for name, m in fp.named_modules():  # layers QT-DoG left in float stay float
        if isinstance(m, nn.Conv2d | nn.Linear) and name not in quant:
            mapping.set_module_name(name, None)
    bns = _bn_after(fp)
    old = torch.backends.quantized.engine
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.ao")
        warnings.filterwarnings("ignore", message=".*deprecated.*")
        torch.backends.quantized.engine = "x86"
        try:
            prepared = prepare_fx(fp, mapping, example_inputs=(calibration[:1],))
            with torch.no_grad():
                for i in range(0, len(calibration), batch_size):
                    prepared(calibration[i : i + batch_size])
            q = convert_fx(prepared)
            mods = dict(q.named_modules())
            for name, m in quant.items():
                qm = mods.get(name)
                if qm is None or not hasattr(qm, "set_weight_bias"):
                    raise ValueError(f"static conversion left layer {name!r} unquantized")
                codes = m.quantizer.integers(m.weight).float()
                step = m.quantizer.step.detach().clamp_min(1e-8).float()
                step = step.expand(codes.shape[0]) if step.ndim == 0 else step
                if name in bns:  # fused: weight · γ/σ per output channel
                    bn = bns[name]
                    g = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach().float()
                    codes = codes * torch.sign(g).reshape(-1, *([1] * (codes.ndim - 1)))
                    step = step * g.abs().clamp_min(1e-12)
                w = torch.quantize_per_channel(
                    codes * step.reshape(-1, *([1] * (codes.ndim - 1))),
                    step.double(), torch.zeros(len(step), dtype=torch.int64), 0, torch.qint8,
                )  # fmt: skip
                qm.set_weight_bias(w, qm.bias())
        finally:
            torch.backends.quantized.engine = old
    return q


def to_int8(
    model: nn.Module,
    mode: str = "weight_only",
    calibration: Tensor | None = None,
    *,
    batch_size: int = 256,
) -> nn.Module:
    """A real int8 model from a fake-quantized one (``model`` itself is not modified).

    Parameters
    ----------
    model : nn.Module
        Quantized with :func:`~qat_dg.quant.quantize_model` (weights of at most 8 bits).
    mode : {"weight_only", "static"}
        See the module docstring.
    calibration : Tensor (n, ...) or None
        Inputs that calibrate the activation scales (``mode="static"`` only; a few hundred
        source-domain images).
    batch_size : int
        Calibration batch size.

    Returns
    -------
    nn.Module
        In eval mode. ``weight_only``: the same module tree with int8 layers (its state dict
        reloads into ``to_int8`` of the same architecture). ``static``: a torch.ao
        ``GraphModule``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not is_quantized(model):
        raise ValueError("model has no fake-quant layers; call quantize_model (and train) first")
    if mode not in ("weight_only", "static"):
        raise ValueError(f"mode must be 'weight_only' or 'static', got {mode!r}")
    for name, m in quantized_modules(model):
        if m.quantizer.bits > 8:
            raise ValueError(f"bits: layer {name!r} has {m.quantizer.bits}-bit codes (> 8)")
    if mode == "weight_only":
        if calibration is not None:
            raise ValueError("calibration is only used by mode='static'")
        out = _swap(copy.deepcopy(model), lambda m: Int8Conv2d(m) if isinstance(m, nn.Conv2d)
                    else Int8Linear(m))  # fmt: skip
        return out.eval()
    if not isinstance(calibration, Tensor) or not calibration.is_floating_point():
        raise TypeError("calibration must be a floating torch.Tensor of inputs for mode='static'")
    if len(calibration) == 0 or not torch.isfinite(calibration).all():
        raise ValueError("calibration must be non-empty and finite")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    return _static(model, calibration.float(), batch_size)
