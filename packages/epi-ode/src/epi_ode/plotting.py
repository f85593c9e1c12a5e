"""Plots (optional extra ``plot``): forecasts against the truth, and the graph along the solve."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_forecasts", "plot_graph_trace"]


def _plt(path, ax):
    import matplotlib

    if ax is None and path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_forecasts(y_true, predictions: dict, region: int = 0, path: str | None = None, ax=None):
    """Observed series of one region and each model's forecasts.

    Parameters
    ----------
    y_true : array (n, N)
    predictions : dict name -> array (n, N)
    """
    plt = _plt(path, ax)
    t = np.asarray(y_true, dtype=float)
    if t.ndim != 2 or not 0 <= region < t.shape[1]:
        raise ValueError(f"y_true must be (n, N) and region in [0, N), got {t.shape}, {region}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    ax.plot(t[:, region], color="k", lw=1.5, label="observed")
    for name, p in predictions.items():
        p = np.asarray(p, dtype=float)
        if p.shape != t.shape:
            raise ValueError(f"predictions[{name!r}] has shape {p.shape}, expected {t.shape}")
        ax.plot(p[:, region], lw=1, label=name)
    ax.set_xlabel("test window")
    ax.set_ylabel("cases")
    ax.legend(fontsize=7)
    if path is not None:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax


def plot_graph_trace(trace, path: str | None = None, steps=(0, -1)):
    """Heat maps of the transmission graph A_t at the given solve steps; trace (W, N, N)."""
    plt = _plt(path, None)
    tr = np.asarray(trace, dtype=float)
    if tr.ndim != 3 or tr.shape[1] != tr.shape[2]:
        raise ValueError(f"trace must be (W, N, N), got {tr.shape}")
    fig, axes = plt.subplots(1, len(steps), figsize=(3.2 * len(steps), 3))
    for ax, k in zip(np.atleast_1d(axes), steps, strict=True):
        im = ax.imshow(tr[k], vmin=0, vmax=tr.max(), cmap="viridis")
        ax.set_title(f"A_t at step {k % len(tr)}")
    fig.colorbar(im, ax=axes, shrink=0.8)
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig
