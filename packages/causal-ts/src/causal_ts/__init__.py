"""CAROTS causality-aware contrastive anomaly detection for multivariate time series."""

from causal_ts.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
