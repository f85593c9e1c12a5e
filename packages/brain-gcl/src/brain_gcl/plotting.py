"""Plots (optional extra ``plot``): mean edge scores next to the planted circuit."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_edge_scores"]


def plot_edge_scores(scores, truth=None, path: str | None = None):
    """Heat map of the subjects' mean edge score (m, n, n) and, if given, the planted edges (n, n)."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    S = np.asarray(scores, dtype=float)
    if S.ndim == 2:
        S = S[None]
    if S.ndim != 3 or S.shape[1] != S.shape[2]:
        raise ValueError(f"scores must be (m, n, n), got {S.shape}")
    panels = [("mean edge score", S.mean(axis=0))]
    if truth is not None:
        panels.append(("planted invariant edges", np.asarray(truth, dtype=float)))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3))
    for ax, (title, M) in zip(np.atleast_1d(axes), panels, strict=True):
        ax.imshow(M, cmap="viridis")
        ax.set_title(title, fontsize=9)
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig
