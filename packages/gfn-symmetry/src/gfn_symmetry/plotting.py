"""Plot sampler-vs-target probabilities against graph symmetry (matplotlib, lazy import)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gfn_symmetry.exact import StateSpace

__all__ = ["plot_symmetry_bias"]


def plot_symmetry_bias(
    space: StateSpace, target: np.ndarray, dists: Mapping[str, np.ndarray], ax=None
):
    """Scatter ``p(x) / target(x)`` against ``|Aut(x)|`` for each sampler.

    Parameters
    ----------
    space : StateSpace
    target : ndarray, shape (S,)
    dists : mapping of str to ndarray of shape (S,)
        Terminal distributions to compare (e.g. vanilla, SA-GFN).
    ax : matplotlib Axes or None
        Axes to draw on; a new figure is made if ``None``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - optional extra
        raise ImportError("plotting needs matplotlib: pip install 'gfn-symmetry[plot]'") from err
    target = np.asarray(target, dtype=float)
    if target.shape != (len(space),):
        raise ValueError(f"target must have shape ({len(space)},), got {target.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    term = space.terminal
    aut = np.exp(space.log_aut[term])
    for k, (name, p) in enumerate(dists.items()):
        p = np.asarray(p, dtype=float)
        if p.shape != target.shape:
            raise ValueError(f"dists[{name!r}] must have shape {target.shape}, got {p.shape}")
        jitter = 1 + 0.04 * (k - (len(dists) - 1) / 2)
        ax.scatter(aut * jitter, p[term] / target[term], label=name, alpha=0.8)
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("|Aut(x)|")
    ax.set_ylabel("p(x) / target(x)")
    ax.legend()
    return ax
