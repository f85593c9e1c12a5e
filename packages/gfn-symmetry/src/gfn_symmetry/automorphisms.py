"""Automorphism-group orders and isomorphism classes of small labelled graphs.

``count_automorphisms`` computes :math:`|\\mathrm{Aut}(G)|` exactly with the
orbit-stabiliser theorem: individualise vertices one at a time and multiply the
orbit sizes of the successive point stabilisers.  Each orbit test is one VF2
isomorphism test from :mod:`networkx`, so the cost is polynomial in the number
of vertices for the graphs met in practice (no enumeration of all automorphisms,
which would blow up on stars or cliques).

``IsoClassCache`` assigns every graph the id of its isomorphism class (a
canonical form computed lazily: a Weisfeiler-Lehman hash bucket refined by exact
VF2 tests) and caches the automorphism count per class.
"""

from __future__ import annotations

import math

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

__all__ = ["IsoClassCache", "count_automorphisms", "log_count_automorphisms"]

_MARK = "_individualised"


def _check_graph(graph: nx.Graph, name: str = "graph") -> None:
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"{name} must be a networkx.Graph, got {type(graph).__name__}")
    if graph.is_directed() or graph.is_multigraph():
        raise TypeError(f"{name} must be a simple undirected networkx.Graph")
    if graph.number_of_nodes() == 0:
        raise ValueError(f"{name} is empty: automorphisms are defined here for non-empty graphs")


def _node_match(attrs: tuple[str, ...]):
    keys = (*attrs, _MARK)
    return lambda a, b: all(a.get(k) == b.get(k) for k in keys)


def _edge_match(attrs: tuple[str, ...]):
    if not attrs:
        return None
    return lambda a, b: all(a.get(k) == b.get(k) for k in attrs)


def count_automorphisms(
    graph: nx.Graph,
    node_attrs: tuple[str, ...] = ("label",),
    edge_attrs: tuple[str, ...] = ("kind",),
) -> int:
    """Order of the automorphism group of a node/edge-labelled graph.

    Parameters
    ----------
    graph : networkx.Graph
        Non-empty simple undirected graph with ``n`` nodes.
    node_attrs : tuple of str, default=("label",)
        Node attributes an automorphism must preserve (missing attributes compare
        as ``None``).
    edge_attrs : tuple of str, default=("kind",)
        Edge attributes an automorphism must preserve.

    Returns
    -------
    int
        :math:`|\\mathrm{Aut}(G)|`, at least 1.

    Notes
    -----
    With :math:`G_0 = \\mathrm{Aut}(G)` and :math:`G_i` the pointwise stabiliser
    of the first ``i`` individualised vertices, :math:`|G_0| = \\prod_i
    |G_{i-1} \\cdot v_i|`.  Vertex ``w`` lies in the orbit of ``v_i`` under
    :math:`G_{i-1}` iff the graph with ``v_i`` marked is isomorphic (colours
    preserved, earlier vertices already uniquely marked) to the graph with ``w``
    marked.
    """
    _check_graph(graph)
    node_attrs, edge_attrs = tuple(node_attrs), tuple(edge_attrs)
    nm, em = _node_match(node_attrs), _edge_match(edge_attrs)
    work = nx.Graph()
    work.add_nodes_from((v, {k: d.get(k) for k in node_attrs}) for v, d in graph.nodes(data=True))
    work.add_edges_from(
        (u, v, {k: d.get(k) for k in edge_attrs}) for u, v, d in graph.edges(data=True)
    )
    degree = dict(work.degree())
    order = 1
    free = list(work.nodes)
    step = 0
    while len(free) > 1:
        v = free.pop(0)
        step += 1
        sig_v = (tuple(work.nodes[v].get(k) for k in node_attrs), degree[v])
        left = work.copy()
        left.nodes[v][_MARK] = step
        orbit = 1
        for w in free:
            if (tuple(work.nodes[w].get(k) for k in node_attrs), degree[w]) != sig_v:
                continue
            right = work.copy()
            right.nodes[w][_MARK] = step
            if GraphMatcher(left, right, node_match=nm, edge_match=em).is_isomorphic():
                orbit += 1
        order *= orbit
        work = left
    return order


def log_count_automorphisms(
    graph: nx.Graph,
    node_attrs: tuple[str, ...] = ("label",),
    edge_attrs: tuple[str, ...] = ("kind",),
) -> float:
    """Natural log of :func:`count_automorphisms` (same parameters)."""
    return math.log(count_automorphisms(graph, node_attrs, edge_attrs))


class IsoClassCache:
    """Map graphs to isomorphism-class ids and cache ``|Aut|`` per class.

    Parameters
    ----------
    node_attrs : tuple of str, default=("label",)
        Node attributes that isomorphisms must preserve.
    edge_attrs : tuple of str, default=("kind",)
        Edge attributes that isomorphisms must preserve.

    Notes
    -----
    The canonical form is the pair (Weisfeiler-Lehman hash, index within the
    hash bucket); distinct classes that collide on the hash are separated by
    exact VF2 tests, so class ids are exact.  The empty graph has its own class.
    """

    def __init__(
        self, node_attrs: tuple[str, ...] = ("label",), edge_attrs: tuple[str, ...] = ("kind",)
    ) -> None:
        self.node_attrs = tuple(node_attrs)
        self.edge_attrs = tuple(edge_attrs)
        self._nm = _node_match(self.node_attrs)
        self._em = _edge_match(self.edge_attrs)
        self._buckets: dict[str, list[int]] = {}
        self.representatives: list[nx.Graph] = []
        self._aut: dict[int, int] = {}
        self._concrete: dict[tuple, int] = {}

    def __len__(self) -> int:
        return len(self.representatives)

    def _hash(self, graph: nx.Graph) -> str:
        h = nx.Graph()
        h.add_nodes_from(
            (v, {"c": repr(tuple(d.get(k) for k in self.node_attrs))})
            for v, d in graph.nodes(data=True)
        )
        h.add_edges_from(
            (u, v, {"c": repr(tuple(d.get(k) for k in self.edge_attrs))})
            for u, v, d in graph.edges(data=True)
        )
        wl = nx.weisfeiler_lehman_graph_hash(h, node_attr="c", edge_attr="c", iterations=3)
        return f"{h.number_of_nodes()}:{h.number_of_edges()}:{wl}"

    def class_id(self, graph: nx.Graph) -> int:
        """Isomorphism-class id of ``graph`` (registers a new class if unseen).

        Parameters
        ----------
        graph : networkx.Graph
            Simple undirected graph (may be empty).

        Returns
        -------
        int
            Class id; isomorphic graphs get the same id.
        """
        if not isinstance(graph, nx.Graph):
            raise TypeError(f"graph must be a networkx.Graph, got {type(graph).__name__}")
        # Exact memo on the concrete (labelled-vertex) form: sampled graphs repeat often.
        concrete = self._concrete_key(graph)
        hit = self._concrete.get(concrete)
        if hit is not None:
            return hit
        cid = self._lookup(graph)
        self._concrete[concrete] = cid
        return cid

    def _concrete_key(self, graph: nx.Graph) -> tuple:
        nodes = tuple(
            sorted((v, tuple(d.get(k) for k in self.node_attrs)) for v, d in graph.nodes(data=True))
        )
        edges = tuple(
            sorted(
                ((u, v) if u <= v else (v, u), tuple(d.get(k) for k in self.edge_attrs))
                for u, v, d in graph.edges(data=True)
            )
        )
        return nodes, edges

    def _lookup(self, graph: nx.Graph) -> int:
        key = self._hash(graph)
        bucket = self._buckets.setdefault(key, [])
        for cid in bucket:
            rep = self.representatives[cid]
            if GraphMatcher(rep, graph, node_match=self._nm, edge_match=self._em).is_isomorphic():
                return cid
        cid = len(self.representatives)
        self.representatives.append(graph.copy())
        bucket.append(cid)
        return cid

    def automorphisms(self, graph: nx.Graph) -> int:
        """Cached :math:`|\\mathrm{Aut}(G)|` of ``graph``'s class (1 for the empty graph)."""
        cid = self.class_id(graph)
        if cid not in self._aut:
            rep = self.representatives[cid]
            self._aut[cid] = (
                1
                if rep.number_of_nodes() == 0
                else count_automorphisms(rep, self.node_attrs, self.edge_attrs)
            )
        return self._aut[cid]
