"""Routing diagnostics against planted interaction types."""

from __future__ import annotations

import numpy as np

__all__ = ["routing_report"]


def routing_report(weights: np.ndarray, types: np.ndarray) -> dict:
    """Type-conditional mean weights and per-type routing accuracy.

    Parameters
    ----------
    weights : ndarray (n, n_E)
    types : ndarray (n,) of int in [0, n_E)

    Returns
    -------
    dict
        ``W`` (n_E, n_E): row t = mean weights of samples of type t; ``routing_accuracy`` (n_E,):
        fraction of type-t samples whose largest weight is expert t; ``global`` (n_E,).
    """
    w = np.asarray(weights, dtype=float)
    t = np.asarray(types)
    if w.ndim != 2 or t.shape != (len(w),):
        raise ValueError("weights must be (n, n_E) and types (n,)")
    k = w.shape[1]
    if t.min() < 0 or t.max() >= k:
        raise ValueError(f"types must lie in [0, {k})")
    W = np.full((k, k), np.nan)
    acc = np.full(k, np.nan)
    top = w.argmax(1)
    for i in range(k):
        sel = t == i
        if sel.any():
            W[i] = w[sel].mean(0)
            acc[i] = float((top[sel] == i).mean())
    return {"W": W, "routing_accuracy": acc, "global": w.mean(0)}
