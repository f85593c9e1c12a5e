"""Plots (optional extra ``plot``): predicted-class histograms and training curves."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["plot_class_balance"]


def plot_class_balance(counts: Mapping[str, np.ndarray], path: str | None = None, ax=None):
    """Bar chart of predicted-class counts per method (imbalance at a glance).

    Parameters
    ----------
    counts : mapping of method name -> ndarray (C,)
    path : str, optional
        Save as PNG.
    ax : matplotlib Axes, optional
    """
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not counts:
        raise ValueError("counts must not be empty")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    k = len(counts)
    for i, (name, c) in enumerate(counts.items()):
        c = np.asarray(c)
        ax.bar(np.arange(len(c)) + (i - (k - 1) / 2) * 0.8 / k, c, width=0.8 / k, label=name)
    ax.set_xlabel("class")
    ax.set_ylabel("predicted count")
    ax.legend(fontsize=8)
    if path is not None:
        ax.figure.tight_layout()
        ax.figure.savefig(path, dpi=110)
    return ax
