"""CCA-Attention and Querent-style query-aware region attention."""

from sparse_attn.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
