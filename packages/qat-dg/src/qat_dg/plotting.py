"""Plotting helpers (optional extra ``plot``: matplotlib is imported lazily)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["plot_flatness"]


def plot_flatness(
    curves: Mapping[str, Mapping[str, Sequence[float]]],
    xkey: str = "radius",
    title: str = "local flatness",
    ax: Any = None,
) -> Any:
    """Draw loss-increase-vs-radius curves (output of :func:`~qat_dg.flatness.local_flatness`).

    Parameters
    ----------
    curves : mapping
        ``{label: {"radius" or xkey: [...], "mean": [...], "std": [...]}}``.
    xkey : str, default="radius"
        Key of the x values.
    title : str
        Axes title.
    ax : matplotlib Axes or None
        Axes to draw on; None makes a new figure.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    for label, c in curves.items():
        x, m = list(c[xkey]), list(c["mean"])
        if len(x) != len(m):
            raise ValueError(f"curves[{label!r}]: {xkey} and mean lengths differ")
        ax.plot(x, m, marker="o", label=label)
    ax.set_xlabel(xkey)
    ax.set_ylabel("loss increase")
    ax.set_title(title)
    ax.legend()
    return ax
