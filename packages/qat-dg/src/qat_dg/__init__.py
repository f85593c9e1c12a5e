"""QT-DoG quantization-aware training for domain generalization, with EoQ ensembles."""

from qat_dg.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
