"""Pareto Merging: preference-conditioned model merging."""

from pareto_merge.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
