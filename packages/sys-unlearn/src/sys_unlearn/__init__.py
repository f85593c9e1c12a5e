"""System-aware unlearning via selective sampling."""

from sys_unlearn.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
