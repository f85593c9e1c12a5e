"""Plots (optional extra ``plot``): a series with its prominent periods marked."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_periods"]


def plot_periods(u: np.ndarray, periods, path: str | None = None, ax=None):
    """Periodogram of ``u`` (L,) with the chosen periods as vertical lines.

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib

    if ax is None and path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.signal import periodogram

    u = np.asarray(u, dtype=float)
    if u.ndim != 1 or not np.isfinite(u).all():
        raise ValueError("u must be a finite 1-D series")
    f, p = periodogram(u)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3))
    ax.semilogy(f[1:], p[1:] + 1e-12, lw=1)
    for q in periods:
        ax.axvline(1.0 / q, color="tab:red", alpha=0.3, lw=0.8)
    ax.set_xlabel("frequency (1/step)")
    ax.set_ylabel("power")
    ax.set_title(f"{len(list(periods))} periods")
    if path is not None:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax
