"""Distribution-matching and mode-discovery metrics on an enumerated state space."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import networkx as nx
import numpy as np

from gfn_symmetry.exact import StateSpace

__all__ = ["empirical_distribution", "l1_distance", "pearson_correlation", "top_k_discovered"]


def _pair(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p.ndim != 1 or p.shape != q.shape:
        raise ValueError(f"p and q must be 1-D of equal length, got {p.shape} and {q.shape}")
    if p.size == 0:
        raise ValueError("p is empty")
    for name, v in (("p", p), ("q", q)):
        if not np.isfinite(v).all():
            raise ValueError(f"{name} contains NaN or inf")
    return p, q


def l1_distance(p: np.ndarray, q: np.ndarray) -> float:
    """:math:`\\sum_x |p(x) - q(x)|` for distributions of shape (S,)."""
    p, q = _pair(p, q)
    return float(np.abs(p - q).sum())


def pearson_correlation(p: np.ndarray, q: np.ndarray) -> float:
    """Pearson correlation of two vectors of shape (S,); a constant vector raises (undefined)."""
    p, q = _pair(p, q)
    for name, v in (("p", p), ("q", q)):
        if v.std() == 0:
            raise ValueError(f"{name} is constant: the correlation is undefined")
    return float(np.corrcoef(p, q)[0, 1])


def empirical_distribution(graphs: Sequence[nx.Graph], space: StateSpace) -> np.ndarray:
    """Histogram of sampled graphs over the states of ``space``, shape (S,)."""
    if len(graphs) == 0:
        raise ValueError("graphs must not be empty")
    counts = np.zeros(len(space))
    for g in graphs:
        counts[space.index(g)] += 1
    return counts / counts.sum()


def top_k_discovered(
    graphs: Sequence[nx.Graph], space: StateSpace, target: np.ndarray, k: int
) -> int:
    """How many of the ``k`` highest-target states appear among ``graphs``."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    k = int(k)
    target = np.asarray(target, dtype=float)
    if target.shape != (len(space),):
        raise ValueError(f"target must have shape ({len(space)},), got {target.shape}")
    top = set(np.argsort(-target, kind="stable")[:k].tolist())
    seen = {space.index(g) for g in graphs}
    return len(top & seen)
