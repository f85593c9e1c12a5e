"""QT-DoG quantization-aware training for domain generalization, with EoQ ensembles.

Javed, Le & Salzmann, "QT-DoG: Quantization-Aware Training for Domain Generalization",
ICML 2025.
"""

from qat_dg.algorithms import (
    ERM,
    ERM_SMA,
    PTQ,
    SAM,
    SWA,
    SWAD,
    Algorithm,
    FrozenFP,
    NoiseInjection,
    QTDoG,
    TorchQAT,
    default_hparams,
    get_algorithm_class,
)
from qat_dg.data import (
    STYLES,
    CorruptedDigits,
    DomainDataset,
    PretrainDigits,
    RotatedDigits,
    StyledDigits,
    split_domains,
)
from qat_dg.demo import demo
from qat_dg.ensemble import Ensemble, EoQ
from qat_dg.flatness import local_flatness
from qat_dg.folders import IMAGE_EXTENSIONS, IMAGENET_MEAN, IMAGENET_STD, ImageFiles, load_domainbed
from qat_dg.models import MLP, ResNet18, SmallCNN, build_model
from qat_dg.pretrain import pretrain_backbone
from qat_dg.quant import (
    FakeQuantConv2d,
    FakeQuantLinear,
    Int8Conv2d,
    Int8Linear,
    LSQQuantizer,
    QuantConfig,
    dequantize_export,
    export_quantized,
    init_step_size,
    is_quantized,
    lsq_fake_quant,
    model_size_bits,
    model_size_bytes,
    quant_parameters,
    quant_range,
    quantize_model,
    quantized_modules,
    saved_size_bytes,
    to_int8,
)
from qat_dg.theory import rounding_noise_stats
from qat_dg.train import TrainConfig, accuracy, train_domain, train_loo

__all__ = [
    "ERM",
    "ERM_SMA",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "IMAGE_EXTENSIONS",
    "MLP",
    "PTQ",
    "SAM",
    "STYLES",
    "SWA",
    "SWAD",
    "Algorithm",
    "CorruptedDigits",
    "DomainDataset",
    "Ensemble",
    "EoQ",
    "FakeQuantConv2d",
    "FakeQuantLinear",
    "FrozenFP",
    "ImageFiles",
    "Int8Conv2d",
    "Int8Linear",
    "LSQQuantizer",
    "NoiseInjection",
    "PretrainDigits",
    "QTDoG",
    "QuantConfig",
    "ResNet18",
    "RotatedDigits",
    "SmallCNN",
    "StyledDigits",
    "TorchQAT",
    "TrainConfig",
    "__version__",
    "accuracy",
    "build_model",
    "default_hparams",
    "demo",
    "dequantize_export",
    "export_quantized",
    "get_algorithm_class",
    "init_step_size",
    "is_quantized",
    "load_domainbed",
    "local_flatness",
    "lsq_fake_quant",
    "model_size_bits",
    "model_size_bytes",
    "pretrain_backbone",
    "quant_parameters",
    "quant_range",
    "quantize_model",
    "quantized_modules",
    "rounding_noise_stats",
    "saved_size_bytes",
    "split_domains",
    "to_int8",
    "train_domain",
    "train_loo",
]

__version__ = "0.1.0"
