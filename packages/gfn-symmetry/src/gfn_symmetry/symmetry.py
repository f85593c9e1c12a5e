"""Symmetry corrections: SA-GFN reward scaling and exact equivalent-action sums.

Paper, Sec. 3-4.  Write :math:`M(G \\to G')` for the number of forward actions of a
concrete graph ``G`` whose result is isomorphic to ``G'`` and
:math:`B(G' \\to G)` for the backward count.  Counting (graph, action) pairs gives

.. math:: \\frac{M(G\\to G')}{B(G'\\to G)} = \\frac{|\\mathrm{Aut}(G)|}{|\\mathrm{Aut}(G')|}
   \\quad\\text{(atom-based)}, \\qquad
   \\frac{|\\mathrm{Aut}(G)|\\,|\\mathrm{Aut}(F)|}{|\\mathrm{Aut}(G')|}
   \\quad\\text{(adding fragment } F\\text{)}.

A sampler trained with action-level probabilities (vanilla) therefore satisfies
the balance conditions for the reward :math:`R(x)\\,|\\mathrm{Aut}(s_0)|/|\\mathrm{Aut}(x)|`
(atom) or :math:`R(x)\\prod_i |\\mathrm{Aut}(F_i)| / |\\mathrm{Aut}(x)|` (fragments).
SA-GFN cancels the telescoped ratio by training on
:math:`\\tilde R(x) = R(x)\\,|\\mathrm{Aut}(x)| / |\\mathrm{Aut}(s_0)|` (atom) or
:math:`R(x)\\,|\\mathrm{Aut}(x)| / \\prod_i |\\mathrm{Aut}(F_i)|` (fragments);
:math:`|\\mathrm{Aut}(s_0)| = 1` for the empty start graph.

The *exact* (transition) correction instead sums the policy's probabilities
over all equivalent actions at every step, which needs one isomorphism test per
candidate action.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from gfn_symmetry.automorphisms import IsoClassCache
from gfn_symmetry.env import STOP, GraphAction, GraphEnv

__all__ = [
    "backward_equivalent_count",
    "backward_equivalent_indices",
    "child_classes",
    "equivalent_action_indices",
    "log_symmetry_correction",
]


def _cache_for(env: GraphEnv, cache: IsoClassCache | None) -> IsoClassCache:
    if cache is None:
        return IsoClassCache(env.node_attrs, env.edge_attrs)
    if not isinstance(cache, IsoClassCache):
        raise TypeError(f"cache must be an IsoClassCache, got {type(cache).__name__}")
    return cache


def log_symmetry_correction(
    env: GraphEnv, graph: nx.Graph, cache: IsoClassCache | None = None
) -> float:
    """SA-GFN log-reward offset :math:`\\log \\tilde R(x) - \\log R(x)` of a terminal graph.

    Parameters
    ----------
    env : GraphEnv
        Atom-based :class:`GraphEnv` or :class:`FragmentEnv`.
    graph : networkx.Graph
        Non-empty terminal state of ``env``.
    cache : IsoClassCache or None
        Shared cache of automorphism counts.

    Returns
    -------
    float
        ``log|Aut(x)|`` (atom) or ``log|Aut(x)| - sum_i log|Aut(F_i)|`` (fragments).
    """
    if not isinstance(env, GraphEnv):
        raise TypeError(f"env must be a GraphEnv, got {type(env).__name__}")
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph must be a networkx.Graph, got {type(graph).__name__}")
    if graph.number_of_nodes() == 0:
        raise ValueError("graph is empty: the empty graph is not a terminal state")
    cache = _cache_for(env, cache)
    return env.terminal_correction_log(graph, math.log(cache.automorphisms(graph)))


def child_classes(
    env: GraphEnv,
    graph: nx.Graph,
    actions: list[GraphAction] | None = None,
    cache: IsoClassCache | None = None,
) -> list[int]:
    """Isomorphism-class id of the result of every forward action (``-1`` for STOP).

    Parameters
    ----------
    env : GraphEnv
    graph : networkx.Graph
    actions : list of GraphAction or None
        Defaults to ``env.forward_actions(graph)``.
    cache : IsoClassCache or None

    Returns
    -------
    list of int, one per action
    """
    cache = _cache_for(env, cache)
    acts = env.forward_actions(graph) if actions is None else actions
    return [-1 if a.kind == STOP else cache.class_id(env.step(graph, a)) for a in acts]


def equivalent_action_indices(
    env: GraphEnv,
    graph: nx.Graph,
    index: int,
    cache: IsoClassCache | None = None,
    classes: list[int] | None = None,
) -> list[int]:
    """Indices of the forward actions equivalent to action ``index`` (same result class).

    Parameters
    ----------
    env : GraphEnv
    graph : networkx.Graph
    index : int
        Position of the taken action in ``env.forward_actions(graph)``.
    cache : IsoClassCache or None
    classes : list of int or None
        Precomputed :func:`child_classes` output.

    Returns
    -------
    list of int
        Contains ``index``; its length is :math:`M(G \\to G')`.
    """
    if classes is None:
        env.validate_state(graph)
        classes = child_classes(env, env.with_edge_kinds(graph), cache=cache)
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise TypeError(f"index must be an int, got {type(index).__name__}")
    if not 0 <= index < len(classes):
        raise ValueError(f"index must lie in [0, {len(classes)}), got {index}")
    c = classes[index]
    if c == -1:
        return [index]
    return [i for i, ci in enumerate(classes) if ci == c]


def backward_equivalent_indices(
    env: GraphEnv, child: nx.Graph, parent: nx.Graph, cache: IsoClassCache | None = None
) -> list[int]:
    """Positions in ``env.backward_actions(child)`` of the actions whose result is isomorphic
    to ``parent`` (one isomorphism test each)."""
    cache = _cache_for(env, cache)
    target = cache.class_id(parent)
    return [
        i
        for i, b in enumerate(env.backward_actions(child))
        if cache.class_id(env.backward_step(child, b)) == target
    ]


def backward_equivalent_count(
    env: GraphEnv, child: nx.Graph, parent: nx.Graph, cache: IsoClassCache | None = None
) -> int:
    """:math:`B(G' \\to G)`: backward actions of ``child`` whose result is isomorphic to ``parent``.

    Both graphs must be states of ``env`` (``env.validate_state``); a hand-built graph without
    edge kinds, in a one-kind environment, is read with ``kind=0`` (it matched no state and gave
    0 before).
    """
    env.validate_state(child, "child")
    env.validate_state(parent, "parent")
    child, parent = env.with_edge_kinds(child), env.with_edge_kinds(parent)
    return len(backward_equivalent_indices(env, child, parent, cache))
