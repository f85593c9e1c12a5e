"""Optional plots (matplotlib is imported lazily; install the ``plot`` extra)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["plot_tradeoff"]


def plot_tradeoff(rows: Sequence[Mapping[str, float | str]], path: str) -> None:
    """Scatter measured speedup vs. accuracy retained, one marker per method.

    Parameters
    ----------
    rows : sequence of mappings
        Each with ``method`` (str), ``speedup`` and ``acc_retained`` (floats) and optionally
        ``budget`` (float, fraction of parent runtime) used as the point label.
    path : str
        Output image file (PNG).
    """
    if not rows:
        raise ValueError("rows is empty")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the extra
        raise ImportError("plot_tradeoff needs matplotlib: pip install 'nas-puzzle[plot]'") from e
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for method in dict.fromkeys(r["method"] for r in rows):
        pts = [r for r in rows if r["method"] == method]
        ax.plot([r["speedup"] for r in pts], [100 * r["acc_retained"] for r in pts], "o-",
                label=str(method))  # fmt: skip
        for r in pts:
            if "budget" in r:
                ax.annotate(f"{float(r['budget']):.0%}", (r["speedup"], 100 * r["acc_retained"]),
                            fontsize=7)  # fmt: skip
    ax.set_xlabel("measured throughput speedup (x)")
    ax.set_ylabel("next-token accuracy retained (%)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
