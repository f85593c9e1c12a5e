"""Plot a learned Pareto front against baseline points (matplotlib is the optional ``plot`` extra)."""

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["plot_front"]


def plot_front(
    front: ArrayLike,
    baselines: Mapping[str, Sequence[float]] | None = None,
    *,
    labels: tuple[str, str] = ("task 1", "task 2"),
    path: str | None = None,
    title: str = "Pareto Merging",
    other_fronts: Mapping[str, ArrayLike] | None = None,
):
    """Scatter a two-task front (e.g. accuracies per preference) with baseline points.

    Parameters
    ----------
    front : array-like of shape (n, 2)
        Values of the merged models along the preference sweep, in sweep order.
    baselines : mapping of name -> (value_1, value_2), optional
    labels : axis labels
    path : str, optional
        Save the figure as PNG there.
    title : str
    other_fronts : mapping of name -> array-like of shape (m, 2), optional
        Further sweeps drawn as dashed lines (e.g. weighted task arithmetic).

    Returns
    -------
    matplotlib.figure.Figure
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plot_front needs matplotlib: pip install 'pareto-merge[plot]'") from exc
    F = np.asarray(front, dtype=float)
    if F.ndim != 2 or F.shape[1] != 2:
        raise ValueError(f"front: expected shape (n, 2), got {F.shape}")
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(F[:, 0], F[:, 1], "o-", color="tab:blue", label="Pareto Merging (preference sweep)")
    for name, other in (other_fronts or {}).items():
        pts = np.asarray(other, dtype=float)
        if pts.ndim != 2 or pts.shape[1] != 2:
            raise ValueError(f"other_fronts[{name!r}]: expected shape (m, 2), got {pts.shape}")
        ax.plot(pts[:, 0], pts[:, 1], ".--", label=name)
    markers = iter("s^vD<>pX*h")
    for name, (a, b) in (baselines or {}).items():
        ax.scatter([a], [b], marker=next(markers, "o"), s=60, label=name, zorder=3)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
