"""Puzzle: blockwise local distillation and MIP architecture search."""

from nas_puzzle.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
