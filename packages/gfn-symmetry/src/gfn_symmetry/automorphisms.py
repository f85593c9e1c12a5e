"""Automorphism-group orders and isomorphism classes of small labelled graphs.

``count_automorphisms`` computes :math:`|\\mathrm{Aut}(G)|` exactly. The default backend is
python-igraph (bliss, exact integer group orders, ~40 µs for a 30-node graph); ``"nauty"``
uses pynauty (optional extra); ``"networkx"`` is the pure-Python fallback, an orbit-stabiliser
product over VF2 isomorphism tests. Edge labels are handled by the standard subdivision: each
edge becomes a vertex coloured by its label, which preserves the group order for simple graphs.

``IsoClassCache`` assigns every graph the id of its isomorphism class (a
canonical form computed lazily: a Weisfeiler-Lehman hash bucket refined by exact
VF2 tests) and caches the automorphism count per class.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from networkx.algorithms.isomorphism import GraphMatcher

__all__ = [
    "BACKENDS",
    "IsoClassCache",
    "canonical_form",
    "count_automorphisms",
    "log_count_automorphisms",
]

BACKENDS = ("auto", "igraph", "nauty", "networkx")

_MARK = "_individualised"


def _check_graph(graph: nx.Graph, name: str = "graph") -> None:
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"{name} must be a networkx.Graph, got {type(graph).__name__}")
    if graph.is_directed() or graph.is_multigraph():
        raise TypeError(f"{name} must be a simple undirected networkx.Graph")
    if graph.number_of_nodes() == 0:
        raise ValueError(f"{name} is empty: automorphisms are defined here for non-empty graphs")


def check_attrs(attrs: object, name: str) -> tuple[str, ...]:
    """``attrs`` as a tuple of attribute names; a bare string is refused, not iterated."""
    if isinstance(attrs, str | bytes):
        raise TypeError(
            f"{name} must be a tuple of attribute names, got the string {attrs!r} "
            f"(write ({attrs!r},): a string would be read as the attributes {tuple(attrs)!r})"
        )
    try:
        out = tuple(attrs)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of attribute names, got {attrs!r}") from None
    if not all(isinstance(a, str) for a in out):
        raise TypeError(f"{name} must hold strings, got {out!r}")
    return out


def _scalar_label(x, where: str):
    """A label as a plain Python scalar: NumPy scalars and one-element arrays or tensors become
    their value (a tensor hashes by identity, so every node would be its own colour); NaN and
    multi-element arrays raise."""
    if isinstance(x, np.ndarray) or (hasattr(x, "numel") and hasattr(x, "item")):
        size = x.size if isinstance(x, np.ndarray) else int(x.numel())
        if size != 1:
            raise TypeError(f"{where} is an array of {size} values; a label must be a scalar")
        x = x.item()
    elif isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and math.isnan(x):
        raise ValueError(f"{where} is NaN")
    return x


def check_label_values(
    graph: nx.Graph, node_attrs: tuple[str, ...], edge_attrs: tuple[str, ...], name="graph"
) -> nx.Graph:
    """``graph`` with its labels as plain scalars (a copy only when one had to change).

    NaN labels raise (NaN != NaN, so every such node would become its own colour), and so do
    array labels; NumPy scalars and one-element tensors are read as their value.
    """
    nodes, edges = {}, {}
    for v, d in graph.nodes(data=True):
        for k in node_attrs:
            if k in d:
                x = _scalar_label(d[k], f"{name}: node {v}'s {k!r} label")
                if x is not d[k]:
                    nodes[(v, k)] = x
    for u, v, d in graph.edges(data=True):
        for k in edge_attrs:
            if k in d:
                x = _scalar_label(d[k], f"{name}: edge ({u}, {v})'s {k!r} label")
                if x is not d[k]:
                    edges[(u, v, k)] = x
    if not nodes and not edges:
        return graph
    graph = graph.copy()
    for (v, k), x in nodes.items():
        graph.nodes[v][k] = x
    for (u, v, k), x in edges.items():
        graph.edges[u, v][k] = x
    return graph


def _node_match(attrs: tuple[str, ...]):
    keys = (*attrs, _MARK)
    return lambda a, b: all(a.get(k) == b.get(k) for k in keys)


def _edge_match(attrs: tuple[str, ...]):
    if not attrs:
        return None
    return lambda a, b: all(a.get(k) == b.get(k) for k in attrs)


def _coloured(
    graph: nx.Graph, node_attrs: tuple[str, ...], edge_attrs: tuple[str, ...]
) -> tuple[int, list[tuple[int, int]], list[int]]:
    """Vertex-coloured simple graph with the same automorphism-group order.

    Returns (n_vertices, edges, colour per vertex); edges carrying labels are subdivided.
    """
    index = {v: i for i, v in enumerate(graph.nodes)}
    palette: dict[tuple, int] = {}
    colours = [
        palette.setdefault(("v", *(d.get(k) for k in node_attrs)), len(palette))
        for _, d in graph.nodes(data=True)
    ]
    labels = [tuple(d.get(k) for k in edge_attrs) for _, _, d in graph.edges(data=True)]
    edges: list[tuple[int, int]] = []
    if len(set(labels)) <= 1:  # one edge class: no subdivision needed
        edges = [(index[u], index[v]) for u, v in graph.edges]
        return len(colours), edges, colours
    n = len(colours)
    for (u, v), lab in zip(graph.edges, labels, strict=True):
        colours.append(palette.setdefault(("e", *lab), len(palette)))
        edges += [(index[u], n), (n, index[v])]
        n += 1
    return n, edges, colours


def _count_igraph(n: int, edges: list[tuple[int, int]], colours: list[int]) -> int:
    import igraph

    return int(igraph.Graph(n=n, edges=edges).count_automorphisms(color=colours))


def _count_nauty(n: int, edges: list[tuple[int, int]], colours: list[int]) -> int:
    import pynauty

    adj: dict[int, list[int]] = {}
    for u, v in edges:
        adj.setdefault(u, []).append(v)
    cells: dict[int, set[int]] = {}
    for i, c in enumerate(colours):
        cells.setdefault(c, set()).add(i)
    g = pynauty.Graph(n, adjacency_dict=adj, vertex_coloring=[cells[c] for c in sorted(cells)])
    _, mantissa, exponent, _, _ = pynauty.autgrp(g)
    size = mantissa * 10.0**exponent
    if size < 2.0**52:  # nauty reports a double: exact only while it fits the mantissa
        return round(size)
    return _count_igraph(n, edges, colours)


def count_automorphisms(
    graph: nx.Graph,
    node_attrs: tuple[str, ...] = ("label",),
    edge_attrs: tuple[str, ...] = ("kind",),
    backend: str = "auto",
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
    backend : {"auto", "igraph", "nauty", "networkx"}, default="auto"
        ``"auto"`` is igraph (exact integers). ``"nauty"`` needs ``pip install
        gfn-symmetry[nauty]`` and falls back to igraph for groups beyond 2**52.

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
    node_attrs = check_attrs(node_attrs, "node_attrs")
    edge_attrs = check_attrs(edge_attrs, "edge_attrs")
    graph = check_label_values(graph, node_attrs, edge_attrs)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    node_attrs, edge_attrs = tuple(node_attrs), tuple(edge_attrs)
    if backend != "networkx":
        coloured = _coloured(graph, node_attrs, edge_attrs)
        return _count_nauty(*coloured) if backend == "nauty" else _count_igraph(*coloured)
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
    backend: str = "auto",
) -> float:
    """Natural log of :func:`count_automorphisms` (same parameters)."""
    return math.log(count_automorphisms(graph, node_attrs, edge_attrs, backend))


def canonical_form(
    graph: nx.Graph,
    node_attrs: tuple[str, ...] = ("label",),
    edge_attrs: tuple[str, ...] = ("kind",),
) -> tuple:
    """A hashable canonical form: equal iff the labelled graphs are isomorphic (igraph/bliss).

    Parameters
    ----------
    graph : networkx.Graph
        Simple undirected graph (may be empty).
    node_attrs, edge_attrs : tuple of str
        Attributes isomorphisms must preserve.

    Returns
    -------
    tuple
        (canonical vertex positions with their labels, canonical edge list, the edge label
        when all edges share one).
    """
    import igraph

    if not isinstance(graph, nx.Graph) or graph.is_directed() or graph.is_multigraph():
        raise TypeError("graph must be a simple undirected networkx.Graph")
    node_attrs = check_attrs(node_attrs, "node_attrs")
    edge_attrs = check_attrs(edge_attrs, "edge_attrs")
    graph = check_label_values(graph, node_attrs, edge_attrs)
    if graph.number_of_nodes() == 0:
        return ((), ())
    n, edges, colours = _coloured(graph, node_attrs, edge_attrs)
    # colours must be comparable across graphs: rank the actual label tuples, not local ids
    keys = [("v", *(d.get(k) for k in node_attrs)) for _, d in graph.nodes(data=True)]
    labels = [tuple(d.get(k) for k in edge_attrs) for _, _, d in graph.edges(data=True)]
    if len(edges) != graph.number_of_edges():  # subdivided
        keys += [("e", *lab) for lab in labels]
    order = sorted(set(keys), key=repr)
    rank = {k: i for i, k in enumerate(order)}
    colours = [rank[k] for k in keys]
    # without subdivision all edges share one label, which must still tell graphs apart
    uniform = repr(labels[0]) if labels and len(edges) == len(labels) else ""
    g = igraph.Graph(n=n, edges=edges)
    g.vs["key"] = [repr(k) for k in keys]
    canon = g.permute_vertices(g.canonical_permutation(color=colours))
    canon_edges = tuple(sorted(tuple(sorted(e)) for e in canon.get_edgelist()))
    canon_colours = tuple(canon.vs["key"])
    return canon_colours, canon_edges, uniform


class IsoClassCache:
    """Map graphs to isomorphism-class ids and cache ``|Aut|`` per class.

    Parameters
    ----------
    node_attrs : tuple of str, default=("label",)
        Node attributes that isomorphisms must preserve.
    edge_attrs : tuple of str, default=("kind",)
        Edge attributes that isomorphisms must preserve.

    backend : {"auto", "igraph", "nauty", "networkx"}, default="auto"
        Automorphism counting backend (:func:`count_automorphisms`) and, with
        ``"networkx"``, also the pure-Python class lookup.

    Notes
    -----
    Class ids come from :func:`canonical_form` (igraph's canonical labelling), so
    they are exact. The ``"networkx"`` backend instead buckets graphs by a
    Weisfeiler-Lehman hash and separates collisions by exact VF2 tests. The empty
    graph has its own class.
    """

    def __init__(
        self,
        node_attrs: tuple[str, ...] = ("label",),
        edge_attrs: tuple[str, ...] = ("kind",),
        backend: str = "auto",
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        self._canon: dict[tuple, int] = {}
        self.node_attrs = check_attrs(node_attrs, "node_attrs")
        self.edge_attrs = check_attrs(edge_attrs, "edge_attrs")
        self._nm = _node_match(self.node_attrs)
        self._em = _edge_match(self.edge_attrs)
        self._buckets: dict[str, list[int]] = {}
        self.representatives: list[nx.Graph] = []
        self._aut: dict[int, int] = {}
        self._concrete: dict[tuple, int] = {}

    def __len__(self) -> int:
        return len(self.representatives)

    def __getstate__(self) -> dict:
        # the VF2 matchers are closures; they are rebuilt from the attribute names
        return {k: v for k, v in self.__dict__.items() if k not in ("_nm", "_em")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._nm = _node_match(self.node_attrs)
        self._em = _edge_match(self.edge_attrs)

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
        graph = check_label_values(graph, self.node_attrs, self.edge_attrs)
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
        if self.backend != "networkx":
            canon = canonical_form(graph, self.node_attrs, self.edge_attrs)
            cid = self._canon.get(canon)
            if cid is None:
                cid = len(self.representatives)
                self.representatives.append(graph.copy())
                self._canon[canon] = cid
            return cid
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
                else count_automorphisms(rep, self.node_attrs, self.edge_attrs, self.backend)
            )
        return self._aut[cid]
