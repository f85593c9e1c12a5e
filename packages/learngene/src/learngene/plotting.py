"""Plots (``pip install learngene[plot]``): fine-tuning curves and the PCA of learngene outputs."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_finetune_curves", "plot_task_pca"]


def _plt(path):
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_finetune_curves(curves: dict, path: str | None = None, title: str = ""):
    """Accuracy vs fine-tuning epoch, one line per initialisation.

    ``curves``: name -> accuracies at epochs 0, 1, ... (epoch 0 = untrained).
    """
    if not isinstance(curves, dict) or not curves:
        raise ValueError("curves must be a non-empty dict of name -> accuracies")
    plt = _plt(path)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, acc in curves.items():
        acc = np.asarray(acc, float)
        ax.plot(np.arange(len(acc)), acc, marker="o", label=name)
    ax.set_xlabel("fine-tuning epochs")
    ax.set_ylabel("test accuracy")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def plot_task_pca(embeddings: dict, path: str | None = None, title: str = ""):
    """2-D PCA of node embeddings of one architecture under several tasks (paper Fig. 5).

    ``embeddings``: task name -> (N, hid) array from ``TAL.encode(arch, e_task)``.
    """
    if not isinstance(embeddings, dict) or not embeddings:
        raise ValueError("embeddings must be a non-empty dict of task -> (N, hid) arrays")
    Z = [np.asarray(v, float) for v in embeddings.values()]
    if any(z.ndim != 2 or z.shape[1] != Z[0].shape[1] for z in Z):
        raise ValueError("every embedding must be 2-D with the same width")
    allz = np.concatenate(Z)
    allz = allz - allz.mean(0)
    _, _, vt = np.linalg.svd(allz, full_matrices=False)
    plt = _plt(path)
    fig, ax = plt.subplots(figsize=(5, 4))
    for name, z in zip(embeddings, Z, strict=True):
        p = (z - np.concatenate(Z).mean(0)) @ vt[:2].T
        ax.scatter(p[:, 0], p[:, 1], s=12, label=name, alpha=0.7)
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig
