"""Plots (``pip install evolving-dg[plot]``): per-target-domain accuracy and training curves."""

from __future__ import annotations

__all__ = ["plot_domain_accuracy", "plot_history"]


def plot_domain_accuracy(results: dict, path: str | None = None, title: str = ""):
    """Lines of accuracy per target domain, one per model. ``results``: name -> accuracies."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not isinstance(results, dict) or not results:
        raise ValueError("results must be a non-empty dict of name -> per-domain accuracies")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, accs in results.items():
        ax.plot(range(1, len(accs) + 1), accs, marker="o", label=name)
    ax.set_xlabel("target domain (time order)")
    ax.set_ylabel("accuracy")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def plot_history(history: list, keys=("loss", "mi", "val_acc"), path: str | None = None):
    """Per-epoch curves of a fitted model's ``history_`` (one panel per key present)."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not history:
        raise ValueError("history must be a non-empty list of per-epoch dicts")
    keys = [k for k in keys if k in history[0]]
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 3), squeeze=False)
    for ax, k in zip(axes[0], keys, strict=True):
        ax.plot([h["epoch"] for h in history], [h[k] for h in history])
        ax.set_title(k)
        ax.set_xlabel("epoch")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig
