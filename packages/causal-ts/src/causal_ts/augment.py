"""The two CAROTS augmentors (paper method section, Fig. 2a).

* :class:`CausalityPreservingAugmentor` (positives, group G2): perturb one cause variable
  and let the frozen forecaster regenerate its effects, so the sample stays consistent with
  the learned causal mechanism.
* :class:`CausalityDisturbingAugmentor` (synthetic anomalies, groups G3/G4): add random
  biases to a causally connected subgraph (found by a randomly cut depth-first search) at
  random time steps, so the relations among those variables are broken.

Windows are arrays of shape (B, W, N) (batch, time, variable); graphs follow
``graph[c, e]`` = c causes e. Neither augmentor modifies its input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from causal_ts._validation import (
    check_fraction,
    check_graph,
    check_int,
    check_positive,
    check_rng,
    check_windows,
)

__all__ = [
    "CausalityDisturbingAugmentor",
    "CausalityPreservingAugmentor",
    "DisturbanceInfo",
    "dfs_subgraph",
]


class CausalityPreservingAugmentor:
    """Causality-preserving augmentation: noise on a cause, forecasted effects.

    For a start variable ``c`` (uniform), Gaussian noise ``N(0, noise_level^2)`` is added to
    ``x[:, t_n, c]``; then the effects ``E = {e != c : graph[c, e]}`` at the last step are
    replaced by the discoverer's forecast from the perturbed prefix ``x[:, :W-1]``.

    Parameters
    ----------
    discoverer : fitted discoverer
        Needs ``graph_`` (N, N) and ``predict_next(prefix) -> (B, N)``.
    noise_level : float, default=0.1
        Noise standard deviation (standardised units).
    noise_step : {"last_input", "last"}, default="last_input"
        ``"last_input"``: ``t_n = W - 2`` (the noise feeds the forecaster; our reading of
        the paper's figure); ``"last"``: ``t_n = W - 1``.
    per_sample : bool, default=False
        Draw one start variable per sample instead of one per call.
    rng : None, int or numpy.random.Generator
    """

    def __init__(
        self,
        discoverer: Any,
        noise_level: float = 0.1,
        noise_step: str = "last_input",
        per_sample: bool = False,
        rng: Any = None,
    ) -> None:
        if not hasattr(discoverer, "graph_") or not hasattr(discoverer, "predict_next"):
            raise TypeError("discoverer must be fitted and provide graph_ and predict_next")
        if noise_step not in ("last_input", "last"):
            raise ValueError(f"noise_step must be 'last_input' or 'last'; got {noise_step!r}")
        self.discoverer = discoverer
        self.noise_level = check_positive(noise_level, "noise_level", allow_zero=True)
        self.noise_step = noise_step
        self.per_sample = bool(per_sample)
        self.rng = check_rng(rng)
        n = discoverer.graph_.shape[0]
        self._effects = np.asarray(discoverer.graph_, dtype=bool) & ~np.eye(n, dtype=bool)

    def __call__(self, x: Any, start: int | np.ndarray | None = None) -> np.ndarray:
        """Augment a batch of windows.

        Parameters
        ----------
        x : array-like of shape (B, W, N)
        start : int or array of shape (B,), optional
            Start (cause) variable(s); drawn at random when None.

        Returns
        -------
        numpy.ndarray of shape (B, W, N)
        """
        x = check_windows(x, "x")
        B, W, N = x.shape
        if N != self._effects.shape[0]:
            raise ValueError(f"x has {N} variables; the graph has {self._effects.shape[0]}")
        lag = getattr(self.discoverer, "lag_", 1)
        if W - 1 < lag:
            raise ValueError(f"x has window {W}; need W - 1 >= the forecaster lag ({lag})")
        if start is None:
            start = self.rng.integers(N, size=B if self.per_sample else 1)
        else:
            arr = np.asarray(start)
            if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"start must be an int or an integer array, got {start!r}")
            if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] not in (1, B)):
                raise ValueError(f"start must be an int or have shape ({B},); got {arr.shape}")
        c = np.broadcast_to(np.asarray(start, dtype=int), (B,))
        if c.min() < 0 or c.max() >= N:
            raise ValueError(f"start must lie in [0, {N}); got {start}")
        t_n = W - 2 if self.noise_step == "last_input" else W - 1
        out = x.copy()
        rows = np.arange(B)
        out[rows, t_n, c] += self.rng.normal(scale=self.noise_level, size=B) if B else 0.0
        mask = self._effects[c]  # (B, N): effects of each sample's start variable
        if mask.any():
            forecast = self.discoverer.predict_next(out[:, : W - 1])
            out[:, W - 1] = np.where(mask, forecast, out[:, W - 1])
        return out


@dataclass(frozen=True)
class DisturbanceInfo:
    """What a :class:`CausalityDisturbingAugmentor` call changed.

    Attributes
    ----------
    subgraph : numpy.ndarray of int
        Disturbed variables S (sorted).
    steps : numpy.ndarray of int
        Disturbed time indices T (sorted).
    start : int
        Start variable of the depth-first search (-1 for ``subgraph="all"``).
    """

    subgraph: np.ndarray
    steps: np.ndarray
    start: int


def dfs_subgraph(graph: Any, start: int, cutoff_prob: float = 0.1, rng: Any = None) -> np.ndarray:
    """Randomly cut depth-first search along outgoing edges.

    From ``start``, visit each not-yet-visited child ``u`` of the current node (in index
    order); before each child, with probability ``cutoff_prob`` stop expanding the current
    node's remaining children, otherwise recurse into ``u``.

    Parameters
    ----------
    graph : array-like of shape (N, N), ``graph[c, e]`` = c causes e
    start : int
    cutoff_prob : float in [0, 1]
    rng : None, int or numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int
        Sorted visited variables (``start`` included).
    """
    g = check_graph(graph)
    n = g.shape[0]
    start = check_int(start, "start")  # True would index variable 1
    if not 0 <= start < n:
        raise ValueError(f"start must lie in [0, {n}); got {start}")
    q = check_fraction(cutoff_prob, "cutoff_prob")
    rng = check_rng(rng)
    visited = np.zeros(n, dtype=bool)
    visited[start] = True
    # explicit stack of (node, iterator over its children) = recursive DFS without recursion
    stack = [(start, iter(np.flatnonzero(g[start])))]
    while stack:
        _node, children = stack[-1]
        advanced = False
        for u in children:
            if visited[u]:
                continue
            if rng.random() < q:
                break  # stop expanding this node's remaining children
            visited[u] = True
            stack.append((u, iter(np.flatnonzero(g[u]))))
            advanced = True
            break
        if not advanced:
            stack.pop()
    return np.flatnonzero(visited)


class CausalityDisturbingAugmentor:
    """Causality-disturbing augmentation: biases on a causal subgraph at random steps.

    Parameters
    ----------
    graph : array-like of shape (N, N)
        ``graph[c, e]`` = c causes e.
    cutoff_prob : float, default=0.1
        DFS cut probability (see :func:`dfs_subgraph`).
    bias_candidates : sequence of float, default=(0.1, 0.2, 0.3, 0.4, 0.5)
        Magnitudes; each bias is drawn uniformly from ``±bias_candidates``.
    bias_fraction : float, default=0.5
        Fraction rho of time steps disturbed: ``max(1, floor(rho * W))`` distinct steps.
    subgraph : {"dfs", "random", "all"}, default="dfs"
        ``"dfs"``: the paper's causal subgraph; ``"random"``: a uniformly random variable
        subset ignoring the graph (ablation / non-causal baseline); ``"all"``: every variable.
    rng : None, int or numpy.random.Generator
    scale : array-like of shape (N,), optional
        Per-variable unit of the biases (e.g. each variable's one-step residual std); the bias
        on variable v is ``candidate * scale[v]``. Default: 1 (standardised units).

    Notes
    -----
    The subgraph S and steps T are shared by the whole call; biases are i.i.d. per element.
    """

    def __init__(
        self,
        graph: Any,
        cutoff_prob: float = 0.1,
        bias_candidates: Any = (0.1, 0.2, 0.3, 0.4, 0.5),
        bias_fraction: float = 0.5,
        subgraph: str = "dfs",
        rng: Any = None,
        scale: Any = None,
    ) -> None:
        self.graph = check_graph(graph)
        n = self.graph.shape[0]
        self.scale = np.ones(n) if scale is None else np.asarray(scale, dtype=float).ravel()
        if self.scale.shape != (n,) or not np.isfinite(self.scale).all() or (self.scale <= 0).any():
            raise ValueError(f"scale must hold {n} positive finite numbers")
        self.cutoff_prob = check_fraction(cutoff_prob, "cutoff_prob")
        cands = np.asarray(bias_candidates, dtype=float).ravel()
        if cands.size == 0 or not np.isfinite(cands).all() or (cands <= 0).any():
            raise ValueError("bias_candidates must be a non-empty sequence of positive numbers")
        self.bias_candidates = np.concatenate([-cands, cands])
        self.bias_fraction = check_fraction(bias_fraction, "bias_fraction", low_open=True)
        if subgraph not in ("dfs", "random", "all"):
            raise ValueError(f"subgraph must be 'dfs', 'random' or 'all'; got {subgraph!r}")
        self.subgraph = subgraph
        self.rng = check_rng(rng)

    def __call__(self, x: Any, start: int | None = None) -> tuple[np.ndarray, DisturbanceInfo]:
        """Disturb a batch of windows.

        Parameters
        ----------
        x : array-like of shape (B, W, N)
        start : int, optional
            DFS start variable; drawn uniformly when None.

        Returns
        -------
        x_neg : numpy.ndarray of shape (B, W, N)
        info : DisturbanceInfo
        """
        x = check_windows(x, "x")
        B, W, N = x.shape
        if N != self.graph.shape[0]:
            raise ValueError(f"x has {N} variables; the graph has {self.graph.shape[0]}")
        if start is not None:
            start = check_int(start, "start")  # a float or a bool would index silently
            if not 0 <= start < N:
                raise ValueError(f"start must lie in [0, {N}); got {start}")
        if self.subgraph == "all":
            nodes, start = np.arange(N), -1
        elif self.subgraph == "random":
            size = int(self.rng.integers(1, N + 1))
            nodes = np.sort(self.rng.choice(N, size=size, replace=False))
            start = int(nodes[0]) if start is None else int(start)
        else:
            start = int(self.rng.integers(N)) if start is None else int(start)
            nodes = dfs_subgraph(self.graph, start, self.cutoff_prob, self.rng)
        n_steps = max(1, int(np.floor(self.bias_fraction * W)))
        steps = np.sort(self.rng.choice(W, size=n_steps, replace=False))
        bias = self.rng.choice(self.bias_candidates, size=(B, n_steps, nodes.size))
        bias = bias * self.scale[nodes]
        out = x.copy()
        out[:, steps[:, None], nodes[None, :]] += bias
        return out, DisturbanceInfo(subgraph=nodes, steps=steps, start=start)
