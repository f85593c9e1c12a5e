"""COGNATE-style transferable cost models for sparse kernels."""

from cost_model.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
