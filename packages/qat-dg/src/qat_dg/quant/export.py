"""Integer export of fake-quantized weights and model-size accounting (QT-DoG Table 1 "Size")."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from qat_dg.quant.layers import quantized_modules

__all__ = ["dequantize_export", "export_quantized", "model_size_bits", "model_size_bytes"]


def _as_module(model: nn.Module) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return model


@torch.no_grad()
def export_quantized(model: nn.Module) -> dict[str, tuple[Tensor, Tensor, int]]:
    """Integer codes and scales of every fake-quantized weight.

    Parameters
    ----------
    model : nn.Module
        A model quantized with :func:`~qat_dg.quant.quantize_model`.

    Returns
    -------
    dict
        ``{"<module>.weight": (codes, step, bits)}`` with ``codes`` an int8 (``bits <= 8``) or
        int16 tensor shaped like the weight and ``step`` of shape ``(C_out,)`` or ``()``.
        ``codes * step`` (broadcast over axis 0) equals the fake-quantized weight exactly.

    Raises
    ------
    ValueError
        If ``model`` holds no fake-quant layer.
    """
    out: dict[str, tuple[Tensor, Tensor, int]] = {}
    for name, m in quantized_modules(_as_module(model)):
        q = m.quantizer
        out[f"{name}.weight"] = (
            q.integers(m.weight),
            q.step.detach().clamp_min(1e-8).clone(),
            q.bits,
        )
    if not out:
        raise ValueError("model has no quantized layers; call quantize_model first")
    return out


def dequantize_export(exported: dict[str, tuple[Tensor, Tensor, int]]) -> dict[str, Tensor]:
    """Float weights ``codes * step`` from :func:`export_quantized` output.

    Parameters
    ----------
    exported : dict
        ``{name: (codes, step, bits)}``.

    Returns
    -------
    dict
        ``{name: weight}`` float32 tensors shaped like the codes.
    """
    if not isinstance(exported, dict):
        raise TypeError(f"exported must be a dict, got {type(exported).__name__}")
    out = {}
    for name, (codes, step, _) in exported.items():
        s = step.reshape(-1, *([1] * (codes.ndim - 1))) if step.ndim == 1 else step
        out[name] = codes.to(step.dtype) * s
    return out


def model_size_bits(model: nn.Module) -> int:
    """Storage of the parameters in bits: ``b`` per quantized weight, 32 per other value.

    Step sizes and every unquantized parameter (biases, BatchNorm affine, classifier) count
    32 bits each; buffers (BatchNorm running statistics) are not counted.

    Parameters
    ----------
    model : nn.Module
        Full-precision or quantized model.

    Returns
    -------
    int
        Size in bits.
    """
    model = _as_module(model)
    quant_ids = {}
    for _, m in quantized_modules(model):
        quant_ids[id(m.weight)] = m.quantizer.bits
    total = 0
    for p in model.parameters():
        total += p.numel() * quant_ids.get(id(p), 32)
    return int(total)


def model_size_bytes(model: nn.Module) -> float:
    """:func:`model_size_bits` divided by 8."""
    return model_size_bits(model) / 8.0
