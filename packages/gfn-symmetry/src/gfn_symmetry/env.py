"""Atom-based graph-building environment (node-by-node generation, paper Sec. 4.1).

States are node-labelled connected graphs stored as :class:`networkx.Graph`
objects with nodes ``0..n-1`` and a node attribute ``"label"`` (edges carry
``"kind"=0``).  The GFlowNet *state* is the isomorphism class of that graph; the
concrete graph is what the policy sees and what actions index into.

Forward actions (in this fixed order, which the policy reproduces):

* ``STOP`` - terminate (not allowed on the empty graph);
* ``FIRST(label)`` - place the first node (only on the empty graph);
* ``ADD_NODE(u, label)`` - add a new node with ``label`` bonded to node ``u``;
* ``ADD_EDGE(u, v)`` - bond two existing non-adjacent nodes ``u < v``.

Backward actions remove a leaf node (or the last node) or a non-bridge edge, so
every parent is again connected and reachable from the empty graph.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import networkx as nx
import numpy as np

__all__ = [
    "ADD_EDGE",
    "ADD_FRAGMENT",
    "ADD_NODE",
    "FIRST",
    "STOP",
    "BackwardAction",
    "GraphAction",
    "GraphEnv",
]

STOP, FIRST, ADD_NODE, ADD_EDGE, ADD_FRAGMENT = range(5)


class GraphAction(NamedTuple):
    """A forward action: ``kind`` in {STOP, FIRST, ADD_NODE, ADD_EDGE, ADD_FRAGMENT}.

    ``u``/``v`` are node indices and ``k`` a label (or fragment stem) index; unused
    fields are ``-1``.
    """

    kind: int
    u: int = -1
    v: int = -1
    k: int = -1


class BackwardAction(NamedTuple):
    """A backward action: remove node ``u`` (``v == -1``) or edge ``(u, v)``."""

    u: int
    v: int = -1


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def _bridges(graph: nx.Graph) -> set[tuple[int, int]]:
    """Bridges of a small connected graph (iterative Tarjan low-link; faster than nx here)."""
    adj = graph.adj
    disc: dict[int, int] = {}
    low: dict[int, int] = {}
    out: set[tuple[int, int]] = set()
    for root in adj:
        if root in disc:
            continue
        disc[root] = low[root] = len(disc)
        stack = [(root, -1, iter(adj[root]))]
        while stack:
            v, parent, it = stack[-1]
            for w in it:
                if w == parent:
                    continue
                if w in disc:
                    low[v] = min(low[v], disc[w])
                else:
                    disc[w] = low[w] = len(disc)
                    stack.append((w, v, iter(adj[w])))
                    break
            else:
                stack.pop()
                if parent >= 0:
                    low[parent] = min(low[parent], low[v])
                    if low[v] > disc[parent]:
                        out.add((min(v, parent), max(v, parent)))
    return out


class GraphEnv:
    """Node-by-node graph-building environment with node labels.

    Parameters
    ----------
    max_nodes : int, default=4
        Largest number of nodes of a generated graph (>= 1).
    n_labels : int, default=1
        Number of node labels (atom types), >= 1.
    max_edges : int or None, default=None
        Largest number of edges; ``None`` means no limit besides ``max_nodes``.

    Attributes
    ----------
    n_first : int
        Number of ``FIRST`` actions (one per label).
    n_stems : int
        Width of the per-node ``ADD_NODE`` head (one per label).
    node_attrs, edge_attrs : tuple of str
        Attributes that isomorphisms (states) preserve.
    """

    node_attrs: tuple[str, ...] = ("label",)
    edge_attrs: tuple[str, ...] = ("kind",)
    n_edge_kinds: int = 1  # the "kind" values the environment's steps write on edges

    def __init__(self, max_nodes: int = 4, n_labels: int = 1, max_edges: int | None = None):
        self.max_nodes = _check_int(max_nodes, "max_nodes", 1)
        self.n_labels = _check_int(n_labels, "n_labels", 1)
        if max_edges is not None:
            _check_int(max_edges, "max_edges", 0)
        self.max_edges = max_edges

    # -- sizes used by the policy -------------------------------------------------
    @property
    def n_first(self) -> int:
        return self.n_labels

    @property
    def n_stems(self) -> int:
        return self.n_labels

    @property
    def n_node_types(self) -> int:
        """Number of distinct node-type ids returned by :meth:`node_type`."""
        return self.n_labels

    def node_type(self, graph: nx.Graph, node: int) -> int:
        """Categorical node feature the policy embeds (the label)."""
        return graph.nodes[node]["label"]

    # -- states --------------------------------------------------------------------
    def initial_state(self) -> nx.Graph:
        """The empty graph :math:`s_0`."""
        return nx.Graph()

    def validate_state(self, graph: nx.Graph, name: str = "graph") -> None:
        """Raise if ``graph`` is not a state of this environment."""
        if not isinstance(graph, nx.Graph) or graph.is_directed() or graph.is_multigraph():
            raise TypeError(f"{name} must be a simple undirected networkx.Graph")
        n = graph.number_of_nodes()
        if sorted(graph.nodes) != list(range(n)):
            raise ValueError(f"{name} nodes must be 0..n-1")
        if n > self.max_nodes:
            raise ValueError(f"{name} has {n} nodes > max_nodes={self.max_nodes}")
        for v, d in graph.nodes(data=True):
            lab = d.get("label")
            if (
                isinstance(lab, bool)
                or not isinstance(lab, numbers.Integral)
                or not 0 <= lab < self.n_labels
            ):
                raise ValueError(f"{name} node {v} has label {lab!r} outside [0, {self.n_labels})")
        for u, v, d in graph.edges(data=True):
            kind = d.get("kind", 0 if self.n_edge_kinds == 1 else None)  # one kind: implied
            if isinstance(kind, np.generic):
                kind = kind.item()
            if (
                isinstance(kind, bool)
                or not isinstance(kind, int)
                or not 0 <= kind < self.n_edge_kinds
            ):
                # with several kinds a missing attribute is ambiguous, and it would match no
                # state of the environment (None != 0): every comparison would silently fail
                raise ValueError(
                    f"{name} edge ({u}, {v}) has kind {kind!r}; this environment's edges carry an "
                    f"int 'kind' in [0, {self.n_edge_kinds}) (0 for a plain bond), e.g. "
                    "graph.add_edge(u, v, kind=0)"
                )
        if n > 0 and not nx.is_connected(graph):
            raise ValueError(f"{name} must be connected")

    def with_edge_kinds(self, graph: nx.Graph) -> nx.Graph:
        """``graph`` with ``kind=0`` on edges that lack it, for a one-kind environment (a copy
        when any was missing): hand-built graphs then compare equal to the environment's."""
        missing = [(u, v) for u, v, d in graph.edges(data=True) if "kind" not in d]
        if not missing or self.n_edge_kinds != 1:
            return graph
        graph = graph.copy()
        for u, v in missing:
            graph.edges[u, v]["kind"] = 0
        return graph

    def n_steps(self, graph: nx.Graph) -> int:
        """Number of forward steps from :math:`s_0` to ``graph`` (its DAG level)."""
        # FIRST, then one step per further node (node + bond) and per extra edge.
        return 0 if graph.number_of_nodes() == 0 else 1 + graph.number_of_edges()

    def terminal_correction_log(self, graph: nx.Graph, log_aut: float) -> float:
        """SA-GFN log reward offset for a terminal graph (Eq. 9 setting, atom-based).

        ``log |Aut(x)| - log |Aut(s_0)|`` with :math:`|\\mathrm{Aut}(s_0)| = 1`.
        """
        return log_aut

    # -- forward -------------------------------------------------------------------
    def forward_actions(self, graph: nx.Graph) -> list[GraphAction]:
        """All valid forward actions of ``graph`` in the policy's order."""
        n = graph.number_of_nodes()
        if n == 0:
            return [GraphAction(FIRST, k=lab) for lab in range(self.n_labels)]
        acts = [GraphAction(STOP)]
        # ADD_NODE also adds a bond, so both growth actions respect max_edges.
        if self.max_edges is not None and graph.number_of_edges() >= self.max_edges:
            return acts
        if n < self.max_nodes:
            acts += [
                GraphAction(ADD_NODE, u, k=lab) for u in range(n) for lab in range(self.n_labels)
            ]
        acts += [
            GraphAction(ADD_EDGE, u, v)
            for u in range(n)
            for v in range(u + 1, n)
            if not graph.has_edge(u, v)
        ]
        return acts

    def check_action(self, graph: nx.Graph, action: object) -> GraphAction:
        """Raise unless ``action`` is one of ``forward_actions(graph)`` other than STOP.

        ``step`` would otherwise build non-states: a label past ``n_labels``, a node attached
        to a node that does not exist, a self-loop, a bond past an atom's valence.
        """
        if not isinstance(action, GraphAction):
            raise TypeError(f"action must be a GraphAction, got {type(action).__name__}")
        if action.kind == STOP:
            raise ValueError("action: STOP ends a trajectory; step cannot apply it")
        if action not in self.forward_actions(graph):
            raise ValueError(f"action {action} is not a valid forward action of this graph "
                             f"({graph.number_of_nodes()} nodes); see forward_actions(graph)")  # fmt: skip
        return action

    def step(self, graph: nx.Graph, action: GraphAction) -> nx.Graph:
        """Apply a non-stop forward action; returns a new graph (input untouched)."""
        self.check_action(graph, action)
        g = graph.copy()
        n = g.number_of_nodes()
        if action.kind == FIRST:
            g.add_node(0, label=action.k)
        elif action.kind == ADD_NODE:
            g.add_node(n, label=action.k)
            g.add_edge(action.u, n, kind=0)
        elif action.kind == ADD_EDGE:
            g.add_edge(action.u, action.v, kind=0)
        else:
            raise ValueError(f"action kind {action.kind} cannot be applied by step")
        return g

    # -- backward ------------------------------------------------------------------
    def backward_actions(self, graph: nx.Graph) -> list[BackwardAction]:
        """All backward actions (leaf-node or non-bridge-edge removals) of ``graph``."""
        n = graph.number_of_nodes()
        if n == 0:
            return []
        if n == 1:
            return [BackwardAction(0)]
        acts = [BackwardAction(v) for v in range(n) if graph.degree(v) == 1]
        bridges = _bridges(graph)
        acts += [
            BackwardAction(min(u, v), max(u, v))
            for u, v in graph.edges
            if (min(u, v), max(u, v)) not in bridges
        ]
        return acts

    def backward_anchor(self, graph: nx.Graph, action: BackwardAction) -> tuple[int, int]:
        """Node(s) a learned backward policy scores ``action`` by: ``(u, v)`` or ``(u, -1)``."""
        return action.u, action.v

    def backward_of(self, graph: nx.Graph, action: GraphAction) -> BackwardAction:
        """The backward action of ``step(graph, action)`` that undoes ``action`` exactly."""
        if action.kind == FIRST:
            return BackwardAction(0)
        if action.kind == ADD_NODE:
            return BackwardAction(graph.number_of_nodes())
        if action.kind == ADD_EDGE:
            return BackwardAction(action.u, action.v)
        raise ValueError(f"action kind {action.kind} has no backward action")

    def forward_of(self, child: nx.Graph, action: BackwardAction) -> GraphAction:
        """The forward action of ``backward_step(child, action)`` that re-creates ``child``.

        Its result is isomorphic to ``child`` through the order-preserving relabelling.
        """
        if child.number_of_nodes() == 1:
            return GraphAction(FIRST, k=child.nodes[0]["label"])
        if action.v != -1:
            return GraphAction(ADD_EDGE, action.u, action.v)
        (w,) = child.adj[action.u]
        return GraphAction(ADD_NODE, w - (w > action.u), k=child.nodes[action.u]["label"])

    def backward_step(self, graph: nx.Graph, action: BackwardAction) -> nx.Graph:
        """Apply a backward action; nodes are relabelled to ``0..n-2`` in order."""
        g = graph.copy()
        if action.v == -1:
            g.remove_node(action.u)
            return nx.relabel_nodes(g, {v: i for i, v in enumerate(sorted(g.nodes))})
        g.remove_edge(action.u, action.v)
        return g
