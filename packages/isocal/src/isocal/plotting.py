"""Reliability diagrams (matplotlib is imported lazily; install the ``plot`` extra)."""

from __future__ import annotations

from typing import Any

import numpy as np

from isocal._validation import check_labels, check_positive_int, check_probs

__all__ = ["reliability_diagram"]


def reliability_diagram(
    y: object,
    probs: object,
    n_bins: int = 15,
    ax: Any = None,
    label: str | None = None,
    sum_tol: float = 1e-5,
) -> Any:
    """Top-label reliability diagram: accuracy vs mean confidence per bin.

    Parameters
    ----------
    y : array-like of shape (n,)
        Integer labels.
    probs : array-like of shape (n, K)
        Predicted probabilities.
    n_bins : int, default=15
        Number of equal-width confidence bins.
    ax : matplotlib Axes, optional
        Axes to draw on (a new figure is created if omitted).
    label : str, optional
        Legend label of the curve.
    sum_tol : float, default=1e-5
        Tolerance on row sums.

    Returns
    -------
    matplotlib Axes
    """
    P = check_probs(probs, "probs", sum_tol=sum_tol)
    labels = check_labels(y, P.shape[0], P.shape[1], "y", require_all=False)
    n_bins = check_positive_int(n_bins, "n_bins")
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reliability_diagram needs matplotlib: pip install 'isocal[plot]'"
        ) from exc
    pred = P.argmax(axis=1)
    conf = P[np.arange(len(labels)), pred]
    hit = (pred == labels).astype(float)
    b = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    count = np.bincount(b, minlength=n_bins)
    mean_conf = np.bincount(b, weights=conf, minlength=n_bins)
    mean_acc = np.bincount(b, weights=hit, minlength=n_bins)
    used = count > 0
    mean_conf[used] /= count[used]
    mean_acc[used] /= count[used]
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 4))
    ax.plot([0, 1], [0, 1], color="gray", linestyle="--", linewidth=1)
    ax.plot(mean_conf[used], mean_acc[used], marker="o", label=label)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    if label is not None:
        ax.legend(loc="upper left")
    return ax
