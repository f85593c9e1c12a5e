"""LSQ weight quantization: functional op, fake-quant layers, model swap and integer export."""

from qat_dg.quant.export import (
    dequantize_export,
    export_quantized,
    model_size_bits,
    model_size_bytes,
)
from qat_dg.quant.int8 import Int8Conv2d, Int8Linear, saved_size_bytes, to_int8
from qat_dg.quant.layers import (
    FakeQuantConv2d,
    FakeQuantLinear,
    QuantConfig,
    is_quantized,
    quant_parameters,
    quantize_model,
    quantized_modules,
)
from qat_dg.quant.lsq import LSQQuantizer, init_step_size, lsq_fake_quant, quant_range

__all__ = [
    "FakeQuantConv2d",
    "FakeQuantLinear",
    "Int8Conv2d",
    "Int8Linear",
    "LSQQuantizer",
    "QuantConfig",
    "dequantize_export",
    "export_quantized",
    "init_step_size",
    "is_quantized",
    "lsq_fake_quant",
    "model_size_bits",
    "model_size_bytes",
    "quant_parameters",
    "quant_range",
    "quantize_model",
    "quantized_modules",
    "saved_size_bytes",
    "to_int8",
]
