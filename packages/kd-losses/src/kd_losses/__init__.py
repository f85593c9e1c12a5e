"""KD losses for LLM distillation, incl. DA-KD's bidirectional discrepancy loss and difficulty-aware data selection."""

from kd_losses.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
