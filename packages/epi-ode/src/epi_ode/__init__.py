"""EARTH: epidemiology-aware neural ODE with a continuous disease-transmission graph.

Wan, Liu, Shan, Lau, Prakash, Jin, "Epidemiology-Aware Neural ODE with Continuous Disease
Transmission Graph", ICML 2025 (arXiv 2410.00049).
"""

from epi_ode import baselines, data, metrics
from epi_ode.demo import demo
from epi_ode.forecaster import EARTHForecaster, NeuralCDEForecaster
from epi_ode.graph import GLTGraph, sym_normalize
from epi_ode.model import EARTH, EARTHField

__all__ = [
    "EARTH",
    "EARTHField",
    "EARTHForecaster",
    "GLTGraph",
    "NeuralCDEForecaster",
    "__version__",
    "baselines",
    "data",
    "demo",
    "metrics",
    "sym_normalize",
]

__version__ = "0.1.0"
