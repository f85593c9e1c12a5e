"""Fragment-based graph-building environment (paper Sec. 4.2).

A molecule is assembled from a vocabulary of fragments (small labelled graphs).
Each step attaches a new copy of fragment ``f`` by one bond between an existing
atom ``u`` and atom ``v`` of the new fragment (every atom is an attachment
point / stem).  The state is the isomorphism class of the atom-level graph whose
bonds are marked ``kind=0`` inside a fragment and ``kind=1`` between fragments,
so the fragment decomposition of a state is unique (the connected components of
the ``kind=0`` bonds).

As in fragment GFlowNets, the policy scores the new fragment's stems by their
index in the vocabulary, so stems that are equivalent under
:math:`\\mathrm{Aut}(F)` are distinct actions leading to isomorphic graphs: the
source of the fragment-based bias.  Backward actions remove a leaf fragment.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

from gfn_symmetry.automorphisms import count_automorphisms
from gfn_symmetry.env import (
    ADD_FRAGMENT,
    FIRST,
    STOP,
    BackwardAction,
    GraphAction,
    GraphEnv,
    _check_int,
)

__all__ = ["FragmentEnv"]


def _prepare_fragment(frag: object, i: int) -> nx.Graph:
    if not isinstance(frag, nx.Graph) or frag.is_directed() or frag.is_multigraph():
        raise TypeError(f"fragments[{i}] must be a simple undirected networkx.Graph")
    if frag.number_of_nodes() == 0:
        raise ValueError(f"fragments[{i}] is empty")
    if not nx.is_connected(frag):
        raise ValueError(f"fragments[{i}] must be connected")
    g = nx.convert_node_labels_to_integers(frag, ordering="sorted")
    out = nx.Graph()
    for v in range(g.number_of_nodes()):
        lab = g.nodes[v].get("label", 0)
        if not isinstance(lab, int) or lab < 0:
            raise ValueError(f"fragments[{i}] node labels must be non-negative ints")
        out.add_node(v, label=lab)
    out.add_edges_from(g.edges, kind=0)
    return out


class FragmentEnv(GraphEnv):
    """Fragment-by-fragment graph-building environment.

    Parameters
    ----------
    fragments : sequence of networkx.Graph
        Vocabulary of connected, pairwise non-isomorphic fragments; node attribute
        ``"label"`` (int, default 0) is the atom type.
    max_fragments : int, default=3
        Largest number of fragments in a generated graph (>= 1).

    Attributes
    ----------
    fragments : list of networkx.Graph
        Copies of the vocabulary with nodes relabelled ``0..m-1``.
    fragment_aut : list of int
        :math:`|\\mathrm{Aut}(F)|` of each fragment.
    stems : list of (int, int)
        ``(fragment, atom)`` pairs; the flat stem index is the ``k`` of an
        ``ADD_FRAGMENT`` action.
    """

    def __init__(self, fragments: Sequence[nx.Graph], max_fragments: int = 3):
        if isinstance(fragments, nx.Graph) or not isinstance(fragments, Sequence):
            raise TypeError("fragments must be a sequence of networkx.Graph")
        if len(fragments) == 0:
            raise ValueError("fragments must not be empty")
        self.max_fragments = _check_int(max_fragments, "max_fragments", 1)
        self.fragments = [_prepare_fragment(f, i) for i, f in enumerate(fragments)]
        for i in range(len(self.fragments)):
            for j in range(i):
                if GraphMatcher(
                    self.fragments[i],
                    self.fragments[j],
                    node_match=lambda a, b: a["label"] == b["label"],
                ).is_isomorphic():
                    raise ValueError(f"fragments[{i}] is isomorphic to fragments[{j}]")
        n_labels = 1 + max(d["label"] for f in self.fragments for _, d in f.nodes(data=True))
        max_nodes = max_fragments * max(f.number_of_nodes() for f in self.fragments)
        super().__init__(max_nodes=max_nodes, n_labels=n_labels)
        self.fragment_aut = [count_automorphisms(f) for f in self.fragments]
        self.stems = [(fi, v) for fi, f in enumerate(self.fragments) for v in f.nodes]

    @property
    def n_first(self) -> int:
        return len(self.fragments)

    @property
    def n_stems(self) -> int:
        return len(self.stems)

    @property
    def n_node_types(self) -> int:
        # (atom label, fragment type) pairs, so the policy knows which fragment an atom is in
        return self.n_labels * len(self.fragments)

    def node_type(self, graph: nx.Graph, node: int) -> int:
        d = graph.nodes[node]
        return d["frag_type"] * self.n_labels + d["label"]

    # -- helpers -------------------------------------------------------------------
    def fragment_instances(self, graph: nx.Graph) -> list[list[int]]:
        """Atom sets of the fragment copies in ``graph`` (components of intra bonds)."""
        intra = nx.Graph()
        intra.add_nodes_from(graph.nodes)
        intra.add_edges_from((u, v) for u, v, d in graph.edges(data=True) if d["kind"] == 0)
        return sorted(sorted(c) for c in nx.connected_components(intra))

    def fragment_types(self, graph: nx.Graph) -> list[int]:
        """Vocabulary index of each fragment copy in ``graph``."""
        return [graph.nodes[c[0]]["frag_type"] for c in self.fragment_instances(graph)]

    def validate_state(self, graph: nx.Graph, name: str = "graph") -> None:
        super().validate_state(graph, name)
        for v, d in graph.nodes(data=True):
            if not 0 <= d.get("frag_type", -1) < len(self.fragments):
                raise ValueError(f"{name} node {v} has no valid 'frag_type'")
        if len(self.fragment_instances(graph)) > self.max_fragments:
            raise ValueError(f"{name} has more than max_fragments={self.max_fragments} fragments")

    def n_steps(self, graph: nx.Graph) -> int:
        return len(self.fragment_instances(graph)) if graph.number_of_nodes() else 0

    def terminal_correction_log(self, graph: nx.Graph, log_aut: float) -> float:
        """SA-GFN log reward offset, fragment setting: ``log|Aut(x)| - sum_i log|Aut(F_i)|``."""
        import math

        return log_aut - sum(math.log(self.fragment_aut[t]) for t in self.fragment_types(graph))

    # -- forward -------------------------------------------------------------------
    def forward_actions(self, graph: nx.Graph) -> list[GraphAction]:
        n = graph.number_of_nodes()
        if n == 0:
            return [GraphAction(FIRST, k=f) for f in range(len(self.fragments))]
        acts = [GraphAction(STOP)]
        if len(self.fragment_instances(graph)) < self.max_fragments:
            acts += [
                GraphAction(ADD_FRAGMENT, u, k=k) for u in range(n) for k in range(self.n_stems)
            ]
        return acts

    def step(self, graph: nx.Graph, action: GraphAction) -> nx.Graph:
        g = graph.copy()
        n = g.number_of_nodes()
        if action.kind == FIRST:
            frag_type, attach = action.k, None
        elif action.kind == ADD_FRAGMENT:
            frag_type, v = self.stems[action.k]
            attach = (action.u, n + v)
        else:
            raise ValueError(f"action kind {action.kind} cannot be applied by step")
        frag = self.fragments[frag_type]
        g.add_nodes_from(
            (n + v, {"label": d["label"], "frag_type": frag_type}) for v, d in frag.nodes(data=True)
        )
        g.add_edges_from((n + a, n + b, {"kind": 0}) for a, b in frag.edges)
        if attach is not None:
            g.add_edge(*attach, kind=1)
        return g

    # -- backward ------------------------------------------------------------------
    def backward_actions(self, graph: nx.Graph) -> list[BackwardAction]:
        """Remove one leaf fragment (``u`` = its smallest atom index)."""
        inst = self.fragment_instances(graph)
        if len(inst) <= 1:
            return [BackwardAction(c[0]) for c in inst]
        where = {v: i for i, c in enumerate(inst) for v in c}
        inter_deg = [0] * len(inst)
        for u, v, d in graph.edges(data=True):
            if d["kind"] == 1:
                inter_deg[where[u]] += 1
                inter_deg[where[v]] += 1
        return [BackwardAction(c[0]) for i, c in enumerate(inst) if inter_deg[i] == 1]

    def backward_step(self, graph: nx.Graph, action: BackwardAction) -> nx.Graph:
        inst = next(c for c in self.fragment_instances(graph) if c[0] == action.u)
        g = graph.copy()
        g.remove_nodes_from(inst)
        return nx.relabel_nodes(g, {v: i for i, v in enumerate(sorted(g.nodes))})
