"""Meta-package for the aware-ml research libraries.

``aware-ml demo`` runs a short tour of every installed package's main job;
``aware-ml info`` lists which packages are installed and their versions.
"""

from aware_ml.registry import PACKAGES, installed_packages

__all__ = ["PACKAGES", "__version__", "installed_packages"]

__version__ = "0.1.0"
