"""Cheap approximations of the symmetry quantities (paper's approximate baselines).

* :func:`wl_automorphism_bound` - colour refinement (1-WL) until the partition is stable,
  then :math:`\\prod_i |C_i|!` over the colour classes.  Every automorphism preserves the
  stable colouring, so the product is an **upper bound** on :math:`|\\mathrm{Aut}(G)|`; it is
  exact when the classes are orbits whose symmetric groups act (paths, stars) and loose on
  regular graphs (``C4``: 24 vs 8).  The official code multiplies factorials of the classes
  of a 3-iteration WL hash; ``iterations=None`` here refines to the fixed point.
* :func:`random_walk_pe` - random-walk positional encodings coloured by node type, the
  orbit detector of Ma et al. (2023, "Baking symmetry into GFlowNets") that the paper uses as
  its approximate transition-correction baseline: node ``v`` gets
  :math:`[c_v, (c^\\top P)_v, \\dots, (c^\\top P^{L-1})_v]` with :math:`c_u = \\log(\\text{type}_u
  + 2)` and :math:`P = D^{-1}A`.  Automorphic nodes get equal encodings; the converse can fail,
  which is the approximation.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter

import networkx as nx
import numpy as np

from gfn_symmetry.automorphisms import check_attrs, check_label_values
from gfn_symmetry.env import ADD_EDGE, ADD_FRAGMENT, ADD_NODE, BackwardAction, GraphAction, GraphEnv

__all__ = [
    "log_wl_automorphism_bound",
    "node_pe",
    "pe_backward_equivalent_count",
    "pe_backward_equivalent_indices",
    "pe_equivalent_action_indices",
    "random_walk_pe",
    "wl_automorphism_bound",
    "wl_colours",
]


def _check(graph: nx.Graph) -> None:
    if not isinstance(graph, nx.Graph) or graph.is_directed() or graph.is_multigraph():
        raise TypeError("graph must be a simple undirected networkx.Graph")


def wl_colours(
    graph: nx.Graph,
    node_attrs: tuple[str, ...] = ("label",),
    edge_attrs: tuple[str, ...] = ("kind",),
    iterations: int | None = None,
) -> dict:
    """Stable 1-WL colour of every node (edge labels enter the neighbour multisets).

    Parameters
    ----------
    graph : networkx.Graph
    node_attrs, edge_attrs : tuple of str
        Attributes the initial colours and messages use.
    iterations : int or None, default=None
        Refinement rounds; ``None`` refines until the number of classes stops growing.

    Returns
    -------
    dict
        Node -> int colour (colours are comparable within this graph only).
    """
    _check(graph)
    node_attrs = check_attrs(node_attrs, "node_attrs")
    edge_attrs = check_attrs(edge_attrs, "edge_attrs")
    graph = check_label_values(graph, node_attrs, edge_attrs)
    if iterations is not None and (
        isinstance(iterations, bool)
        or not isinstance(iterations, int | np.integer)
        or iterations < 0
    ):
        raise ValueError(f"iterations must be None or an int >= 0, got {iterations!r}")
    sig = {v: tuple(d.get(k) for k in node_attrs) for v, d in graph.nodes(data=True)}
    colour = _relabel(sig)
    rounds = 0
    while iterations is None or rounds < iterations:
        sig = {
            v: (
                colour[v],
                tuple(
                    sorted(
                        (tuple(graph.edges[v, w].get(k) for k in edge_attrs), colour[w])
                        for w in graph.adj[v]
                    )
                ),
            )
            for v in graph.nodes
        }
        new = _relabel(sig)
        rounds += 1
        stable = len(set(new.values())) == len(set(colour.values()))
        colour = new
        if stable:
            break
    return colour


def _relabel(sig: dict) -> dict:
    ranks = {s: i for i, s in enumerate(sorted(set(sig.values()), key=repr))}
    return {v: ranks[s] for v, s in sig.items()}


def _wl_class_sizes(graph, node_attrs, edge_attrs, iterations) -> list[int]:
    _check(graph)
    node_attrs = check_attrs(node_attrs, "node_attrs")
    edge_attrs = check_attrs(edge_attrs, "edge_attrs")
    graph = check_label_values(graph, node_attrs, edge_attrs)
    if graph.number_of_nodes() == 0:
        raise ValueError("graph is empty: automorphisms are defined here for non-empty graphs")
    return list(Counter(wl_colours(graph, node_attrs, edge_attrs, iterations).values()).values())


def log_wl_automorphism_bound(
    graph: nx.Graph,
    node_attrs: tuple[str, ...] = ("label",),
    edge_attrs: tuple[str, ...] = ("kind",),
    iterations: int | None = None,
) -> float:
    """:math:`\\log \\prod_i |C_i|!` over the stable WL colour classes (upper bound on log|Aut|)."""
    sizes = _wl_class_sizes(graph, node_attrs, edge_attrs, iterations)
    return float(sum(math.lgamma(s + 1) for s in sizes))


def wl_automorphism_bound(
    graph: nx.Graph,
    node_attrs: tuple[str, ...] = ("label",),
    edge_attrs: tuple[str, ...] = ("kind",),
    iterations: int | None = None,
) -> int:
    """:math:`\\prod_i |C_i|!` over the stable WL colour classes, an upper bound on |Aut(G)|.

    Parameters
    ----------
    graph : networkx.Graph
        Non-empty simple undirected graph.
    node_attrs, edge_attrs : tuple of str
    iterations : int or None, default=None
        See :func:`wl_colours`.

    Returns
    -------
    int
    """
    sizes = _wl_class_sizes(graph, node_attrs, edge_attrs, iterations)
    return math.prod(math.factorial(s) for s in sizes)


def random_walk_pe(
    graph: nx.Graph, node_type: np.ndarray, length: int = 8, start: int = 1
) -> np.ndarray:
    """Node-type-coloured random-walk positional encodings (Ma et al., 2023).

    Parameters
    ----------
    graph : networkx.Graph
        Graph with nodes ``0..n-1``.
    node_type : array of int, shape (n,)
        Categorical node type per node (the colour).
    length : int, default=8
        Number of columns ``L`` (>= 1); the official code uses 8.
    start : int, default=1
        First walk power after the colour column: columns are
        :math:`[c, c^\\top P^{s}, \\dots, c^\\top P^{s+L-2}]`. ``1`` follows PyG's
        ``AddRandomWalkPE`` (powers from 1), which the official SA-GFN code adapts; its loop
        starts at ``2`` (its second column is :math:`c^\\top P^2`).

    Returns
    -------
    ndarray, shape (n, L)
    """
    _check(graph)
    if isinstance(length, bool) or not isinstance(length, numbers.Integral) or length < 1:
        raise ValueError(f"length must be a positive int, got {length!r}")
    n = graph.number_of_nodes()
    types = np.asarray(node_type)
    if types.dtype.kind == "f":  # whole-number floats are type ids; NaN or fractions are not
        if not np.isfinite(types).all() or np.any(types != np.round(types)):
            raise ValueError("node_type must hold integer type ids")
        types = types.astype(np.int64)
    elif types.dtype.kind not in "iub":
        raise TypeError(f"node_type must hold integer type ids, got dtype {types.dtype}")
    if isinstance(start, bool) or not isinstance(start, numbers.Integral) or start < 1:
        raise ValueError(f"start must be a positive int, got {start!r}")
    if types.shape != (n,):
        raise ValueError(f"node_type must have shape ({n},), got {types.shape}")
    if n == 0:
        return np.zeros((0, length))
    colour = np.log(types.astype(float) + 2.0)
    adj = nx.to_numpy_array(graph, nodelist=range(n), weight=None)
    p = adj / np.maximum(adj.sum(1, keepdims=True), 1.0)
    out = np.empty((n, length))
    walk = colour
    out[:, 0] = walk
    for _ in range(start - 1):
        walk = walk @ p
    for i in range(1, length):
        walk = walk @ p
        out[:, i] = walk
    return out


def node_pe(env: GraphEnv, graph: nx.Graph, length: int = 8) -> np.ndarray:
    """:func:`random_walk_pe` of a state, coloured by ``env.node_type``; shape (n, length)."""
    env.validate_state(graph)
    types = np.array([env.node_type(graph, v) for v in range(graph.number_of_nodes())], dtype=int)
    return random_walk_pe(graph, types, length)


def _same(keys: list[tuple], vecs: np.ndarray, index: int) -> list[int]:
    close = np.isclose(vecs, vecs[index], rtol=1e-6, atol=1e-9).all(axis=1)
    return [i for i, k in enumerate(keys) if k == keys[index] and close[i]]


def pe_equivalent_action_indices(
    env: GraphEnv, graph: nx.Graph, actions: list[GraphAction], index: int, pe: np.ndarray
) -> list[int]:
    """Forward actions whose positional encodings match action ``index`` (Ma et al., 2023).

    ``ADD_NODE(u, k)`` compares ``(k, pe[u])``, ``ADD_EDGE(u, v)`` ``pe[u] + pe[v]`` and
    ``ADD_FRAGMENT(u, k)`` ``(fragment of k, pe[u], pe_F[stem])``; ``STOP`` and ``FIRST`` are
    never merged.

    Parameters
    ----------
    env : GraphEnv
    graph : networkx.Graph
    actions : list of GraphAction
        ``env.forward_actions(graph)``.
    index : int
        Taken action.
    pe : ndarray, shape (n, L)
        :func:`node_pe` of ``graph``.

    Returns
    -------
    list of int
        Contains ``index``; an approximation of the isomorphism-equivalent set.
    """
    if not 0 <= index < len(actions):
        raise ValueError(f"index must lie in [0, {len(actions)}), got {index}")
    L = pe.shape[1]
    frag_pe = {}  # encodings of the fragments these actions attach, computed once per call
    for a in actions:
        if a.kind == ADD_FRAGMENT and env.stems[a.k][0] not in frag_pe:
            f = env.fragments[env.stems[a.k][0]]
            labels = np.array([d["label"] for _, d in f.nodes(data=True)])
            frag_pe[env.stems[a.k][0]] = random_walk_pe(f, labels, L)
    keys, vecs = [], np.zeros((len(actions), 2 * L))
    for i, a in enumerate(actions):
        if a.kind == ADD_NODE:
            keys.append((a.kind, a.k))
            vecs[i, :L] = pe[a.u]
        elif a.kind == ADD_EDGE:
            keys.append((a.kind,))
            vecs[i, :L] = pe[a.u] + pe[a.v]
        elif a.kind == ADD_FRAGMENT:
            frag, stem = env.stems[a.k]
            keys.append((a.kind, frag))
            vecs[i, :L], vecs[i, L:] = pe[a.u], frag_pe[frag][stem]
        else:  # STOP / FIRST: unique actions
            keys.append((a.kind, a.k, i))
    return _same(keys, vecs, index)


def pe_backward_equivalent_count(
    env: GraphEnv, child: nx.Graph, action: BackwardAction, pe: np.ndarray
) -> int:
    """Number of backward actions of ``child`` whose encodings match ``action`` (PE estimate
    of B); see :func:`pe_backward_equivalent_indices`."""
    return len(pe_backward_equivalent_indices(env, child, action, pe))


def pe_backward_equivalent_indices(
    env: GraphEnv, child: nx.Graph, action: BackwardAction, pe: np.ndarray
) -> list[int]:
    """Backward actions of ``child`` whose encodings match ``action`` (PE estimate of B).

    Parameters
    ----------
    env : GraphEnv
    child : networkx.Graph
    action : BackwardAction
        The backward action undoing the taken forward step (``env.backward_of``).
    pe : ndarray, shape (n, L)
        :func:`node_pe` of ``child``.

    Returns
    -------
    list of int
        Positions in ``env.backward_actions(child)``; contains ``action``'s.
    """
    acts = env.backward_actions(child)
    if action not in acts:
        raise ValueError(f"action {action} is not a backward action of child")
    L = pe.shape[1]
    keys, vecs = [], np.zeros((len(acts), 2 * L))
    fragments = getattr(env, "fragment_instances", None)
    inst = {c[0]: c for c in fragments(child)} if fragments else {}
    for i, b in enumerate(acts):
        if b.u in inst:  # a leaf fragment: its type, summed encodings, attachment atom
            c = inst[b.u]
            keys.append(("frag", child.nodes[c[0]]["frag_type"]))
            vecs[i, :L] = pe[c].sum(0)
            ext = [a for a in c for w in child.adj[a] if w not in c]
            vecs[i, L:] = pe[ext[0]] if ext else 0.0
        elif b.v == -1:
            keys.append(("node",))
            vecs[i, :L] = pe[b.u]
        else:
            keys.append(("edge",))
            vecs[i, :L] = pe[b.u] + pe[b.v]
    return _same(keys, vecs, acts.index(action))
