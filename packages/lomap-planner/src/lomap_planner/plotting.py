"""Plots of planned trajectories over a maze (matplotlib is imported lazily)."""

from __future__ import annotations

import os

import numpy as np

from lomap_planner.geometry import plan_is_infeasible

__all__ = ["plot_plans"]


def plot_plans(
    walls: np.ndarray,
    plan_sets: dict[str, np.ndarray],
    path: str | os.PathLike,
    max_plans: int = 12,
    pos_slice: slice = slice(2, 4),
) -> None:
    """Draw plans side by side, infeasible ones in red, and save a PNG.

    Parameters
    ----------
    walls : ndarray of bool, shape (n_rows, n_cols)
    plan_sets : dict[str, ndarray of shape (n_plans, horizon, features)]
        Panel title -> plans.
    path : str or PathLike
        Output PNG file.
    max_plans : int, default=12
        Plans drawn per panel.
    pos_slice : slice, default=slice(2, 4)
        Position columns (after the 2 action columns in Diffuser's layout).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - optional extra
        raise ImportError("plotting needs matplotlib: pip install lomap-planner[plot]") from exc
    if not plan_sets:
        raise ValueError("plan_sets is empty")
    n = len(plan_sets)
    fig, axes = plt.subplots(1, n, figsize=(4 * n, 4), squeeze=False)
    for ax, (title, plans) in zip(axes[0], plan_sets.items(), strict=True):
        # Rows are x (first coordinate), columns are y, as in D4RL's renderer.
        ax.imshow(
            walls,
            cmap="Greys",
            origin="upper",
            extent=(-0.5, walls.shape[1] - 0.5, walls.shape[0] - 0.5, -0.5),
        )
        pos = np.asarray(plans)[:max_plans, :, pos_slice]
        bad = plan_is_infeasible(pos, walls)
        for p, b in zip(pos, bad, strict=True):
            ax.plot(p[:, 1], p[:, 0], "-", color="tab:red" if b else "tab:blue", lw=1, alpha=0.8)
            ax.plot(p[0, 1], p[0, 0], "o", color="k", ms=3)
        ax.set_title(f"{title}: {bad.mean():.0%} infeasible")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
