"""Reward functions (plain callables on networkx graphs) and their validation.

A reward function maps a non-empty :class:`networkx.Graph` (node attribute
``"label"``) to a finite, non-negative float.  :func:`log_reward` checks the
returned value and applies a floor to zero rewards so that :math:`\\log R` is
finite.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable

import networkx as nx

__all__ = [
    "cliques_log_reward",
    "cliques_reward",
    "cycle_reward",
    "density_reward",
    "log_reward",
    "uniform_reward",
]

RewardFn = Callable[[nx.Graph], float]


def log_reward(reward_fn: RewardFn, graph: nx.Graph, floor: float = 1e-8) -> float:
    """Validated :math:`\\log R(x)` of a terminal graph.

    Parameters
    ----------
    reward_fn : callable
        ``reward_fn(graph) -> float``; receives a copy of ``graph``.
    graph : networkx.Graph
        Non-empty terminal graph.
    floor : float, default=1e-8
        Zero rewards are raised to ``floor`` before taking the log.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the reward is negative, NaN or infinite, or ``graph`` is empty.
    TypeError
        If the reward is not a real number.
    """
    if not callable(reward_fn):
        raise TypeError("reward_fn must be callable")
    if graph.number_of_nodes() == 0:
        raise ValueError("graph is empty: rewards are defined for non-empty graphs")
    r = reward_fn(graph.copy())
    try:
        r = float(r)
    except (TypeError, ValueError):
        raise TypeError(f"reward_fn must return a real number, got {type(r).__name__}") from None
    if math.isnan(r) or math.isinf(r):
        raise ValueError(f"reward_fn returned a non-finite reward ({r})")
    if r < 0:
        raise ValueError(f"reward_fn returned a negative reward ({r}); rewards must be >= 0")
    return math.log(max(r, floor))


def _warn_reward_scale(log_r: object, start: float, rate: float, steps: int, what: str) -> bool:
    """Warn when the fitted log-flow cannot reach the rewards' scale within a training run.

    Trajectory balance fits log Z to the log-rewards, detailed balance the state flows (a
    network whose outputs start near 0); Adam moves either by about ``rate`` per step, so a
    batch whose mean log-reward sits ``gap`` away needs about ``gap / rate`` steps before the
    policy sees a residual that is not dominated by the offset. Scaling a reward by a constant
    does not change the GFlowNet's target distribution, so dividing it out (or, for TB,
    starting log Z at the batch's mean log-reward) fixes this.

    Parameters
    ----------
    log_r : array-like, shape (B,)
        The first batch's training log-rewards.
    start : float
        Where the fitted quantity starts (log Z, or 0 for the flows).
    rate : float
        Its learning rate.
    steps : int
        Steps in this training call.
    what : str
        Its name in the message.

    Returns
    -------
    bool
        Whether it warned (offset beyond 20 nats and beyond half of what ``steps`` can move).
    """
    vals = [float(v) for v in log_r]
    gap = abs(sum(vals) / len(vals) - float(start))
    if gap <= max(20.0, 0.5 * rate * steps):
        return False
    warnings.warn(
        f"reward_fn: the batch's mean log-reward is {gap:.1f} nats from {what} "
        f"({float(start):.2f}), which Adam moves by about lr={rate:g} per step: this run of "
        f"{steps} steps spends most of them catching up (about {gap / rate:.0f} are needed). "
        "Divide the reward by a constant (the target distribution is unchanged), or with "
        "loss='tb' set log_z to the mean log-reward before training",
        UserWarning,
        stacklevel=3,
    )
    return True


def uniform_reward(graph: nx.Graph) -> float:
    """:math:`R(x) = 1`: the target is uniform over isomorphism classes."""
    return 1.0


def cycle_reward(graph: nx.Graph) -> float:
    """:math:`R(x) = 1 + \\#\\text{independent cycles}` (the paper's illustrative reward)."""
    return (
        1.0
        + graph.number_of_edges()
        - graph.number_of_nodes()
        + nx.number_connected_components(graph)
    )


def density_reward(graph: nx.Graph, beta: float = 2.0) -> float:
    """:math:`R(x) = \\exp(\\beta\\,(e - n + 1))`: sharply favours dense graphs (few modes)."""
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not math.isfinite(beta):
        raise ValueError(f"beta must be a finite number, got {beta!r}")
    return math.exp(beta * (graph.number_of_edges() - graph.number_of_nodes() + 1))


def cliques_log_reward(graph: nx.Graph, clique_size: int = 4) -> float:
    """:math:`\\log R(x)` of the paper's synthetic "cliques" task (2-coloured graphs, 7 nodes).

    The official synthetic config (``reward_name: cliques``, taken there from the
    recursionpharma ``cliques_env`` branch): over the maximal cliques :math:`C` of the graph,
    :math:`\\sum_C [|C| = k]\\,(1 \\text{ if at least } k-1 \\text{ of its nodes share a label
    else } 0.5) - \\sum_C |C| + n - 1`, floored at -10.

    Parameters
    ----------
    graph : networkx.Graph
        Non-empty graph with integer node attribute ``"label"``.
    clique_size : int, default=4
        :math:`k`.

    Returns
    -------
    float
        In [-10, ...]; :func:`cliques_reward` is its exponential.
    """
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph must be a networkx.Graph, got {type(graph).__name__}")
    if graph.number_of_nodes() == 0:
        raise ValueError("graph is empty: rewards are defined for non-empty graphs")
    if isinstance(clique_size, bool) or not isinstance(clique_size, numbers.Integral):
        raise TypeError(f"clique_size must be an int, got {type(clique_size).__name__}")
    if clique_size < 2:
        raise ValueError(f"clique_size must be an int >= 2, got {clique_size!r}")
    for v, d in graph.nodes(data=True):  # the task's graphs are 2-coloured
        lab = d.get("label")
        if isinstance(lab, bool) or not isinstance(lab, numbers.Integral) or lab not in (0, 1):
            raise ValueError(
                f"graph: node {v} has label {lab!r}; the cliques task colours nodes 0 or 1"
            )
    matched = 0.0
    members = 0
    for clique in nx.find_cliques(graph):
        members += len(clique)
        if len(clique) == clique_size:
            counts: dict = {}
            for v in clique:
                lab = graph.nodes[v]["label"]
                counts[lab] = counts.get(lab, 0) + 1
            matched += 1.0 if max(counts.values()) >= clique_size - 1 else 0.5
    return float(max(matched - members + graph.number_of_nodes() - 1, -10.0))


def cliques_reward(graph: nx.Graph, clique_size: int = 4) -> float:
    """:math:`R(x) = \\exp(` :func:`cliques_log_reward` :math:`)` (the paper's synthetic task)."""
    return math.exp(cliques_log_reward(graph, clique_size))
