"""Plotting helpers (optional extra ``plot``; matplotlib is imported lazily)."""

from __future__ import annotations

__all__ = ["plot_scaling"]


def plot_scaling(rows: list[dict], path: str) -> None:
    """Save a log-log plot of forward / forward+backward time against sequence length.

    Parameters
    ----------
    rows : list of dict
        Records with keys ``method``, ``L``, ``fwd`` and ``fwdbwd`` (seconds).
    path : str
        Output image path (e.g. ``scaling.png``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'sparse-attn[plot]'") from err
    if not rows:
        raise ValueError("rows must not be empty")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for ax, key, title in zip(axes, ("fwd", "fwdbwd"), ("forward", "forward + backward"),
                              strict=True):  # fmt: skip
        for method in dict.fromkeys(r["method"] for r in rows):
            pts = sorted((r["L"], r[key]) for r in rows if r["method"] == method)
            ax.loglog(*zip(*pts, strict=True), marker="o", label=method)
        ax.set_title(title)
        ax.set_xlabel("sequence length L")
        ax.set_ylabel("seconds")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
