"""EDG report: per-domain, average and worst-domain accuracy (the paper's Avg / Wst columns)."""

from __future__ import annotations

import numpy as np

__all__ = ["evolving_report"]


def evolving_report(accs) -> dict:
    """``{"per_domain", "avg", "worst"}`` of a sequence of per-domain accuracies in [0, 1]."""
    a = np.asarray(accs, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"accs must be a non-empty 1-D sequence, got shape {a.shape}")
    if not np.isfinite(a).all() or (a < 0).any() or (a > 1).any():
        raise ValueError("accs must be finite accuracies in [0, 1]")
    return {"per_domain": a.copy(), "avg": float(a.mean()), "worst": float(a.min())}
