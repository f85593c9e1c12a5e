"""Optional plots (needs the ``plot`` extra: matplotlib, imported lazily)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plot_history", "plot_scores"]


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(7, 3))[1]


def plot_history(history: list[dict[str, float]], ax: Any = None) -> Any:
    """Training curves of :attr:`CAROTS.history_`: losses and the unfiltered-pair ratio.

    Parameters
    ----------
    history : list of dict
        ``CAROTS.history_``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    if not history:
        raise ValueError("history is empty; fit the detector first")
    ax = _axes(ax)
    ep = [h["epoch"] for h in history]
    ax.plot(ep, [h["train_loss"] for h in history], label="train SOC loss")
    ax.plot(ep, [h["val_loss"] for h in history], label="val SOC loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    twin = ax.twinx()
    twin.plot(ep, [h["unfiltered_ratio"] for h in history], "k--", label="unfiltered pairs")
    twin.plot(ep, [h["alpha"] for h in history], "k:", label="alpha")
    twin.set_ylim(0, 1.05)
    ax.legend(loc="upper left")
    twin.legend(loc="upper right")
    return ax


def plot_scores(
    scores: Any, labels: Any = None, threshold: float | None = None, ax: Any = None
) -> Any:
    """Anomaly scores over time with shaded true anomalies.

    Parameters
    ----------
    scores : array-like of shape (n,)
    labels : array-like of shape (n,), optional
        0/1; anomalous stretches are shaded.
    threshold : float, optional
        Drawn as a horizontal line.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D; got shape {s.shape}")
    ax = _axes(ax)
    ax.plot(s, lw=0.8, label="score")
    if labels is not None:
        y = np.asarray(labels)
        if y.shape != s.shape:
            raise ValueError(f"labels must have shape {s.shape}; got {y.shape}")
        lo, hi = np.nanmin(s), np.nanmax(s)
        ax.fill_between(np.arange(s.size), lo, hi, where=y > 0, color="red", alpha=0.2,
                        label="anomaly")  # fmt: skip
    if threshold is not None:
        ax.axhline(threshold, color="k", ls="--", lw=0.8, label="threshold")
    ax.set_xlabel("window")
    ax.legend(loc="upper right")
    return ax
