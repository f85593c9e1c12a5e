"""Reward functions (plain callables on networkx graphs) and their validation.

A reward function maps a non-empty :class:`networkx.Graph` (node attribute
``"label"``) to a finite, non-negative float.  :func:`log_reward` checks the
returned value and applies a floor to zero rewards so that :math:`\\log R` is
finite.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import networkx as nx

__all__ = ["cycle_reward", "density_reward", "log_reward", "uniform_reward"]

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
    return math.exp(beta * (graph.number_of_edges() - graph.number_of_nodes() + 1))
