"""LoMAP manifold projection for diffusion planners on gymnasium mazes."""

from lomap_planner.demo import demo

__all__ = ["__version__", "demo"]

__version__ = "0.1.0"
