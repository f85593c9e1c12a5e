"""Symmetry-aware GFlowNets (automorphism reward correction)."""

from gfn_symmetry.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
