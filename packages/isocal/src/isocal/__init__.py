"""NA-FIR and SCIR multi-class isotonic calibration."""

from isocal.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
