"""Plots (optional extra ``plot``): expert weights by planted type."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_type_weights"]


def plot_type_weights(W: np.ndarray, names, path: str | None = None, ax=None):
    """Heat map of a type-conditional mean-weight matrix (rows: types, columns: experts).

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib

    if ax is None and path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    W = np.asarray(W, dtype=float)
    names = list(names)
    if W.ndim != 2 or W.shape != (len(names), len(names)):
        raise ValueError(
            f"W must be ({len(names)}, {len(names)}) for {len(names)} names, got {W.shape}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3.5))
    im = ax.imshow(W, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(names)), names)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("expert")
    ax.set_ylabel("planted type")
    for i in range(W.shape[0]):
        for j in range(W.shape[1]):
            ax.text(j, i, f"{W[i, j]:.2f}", ha="center", va="center", color="w", fontsize=8)
    ax.figure.colorbar(im, ax=ax)
    if path is not None:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax
