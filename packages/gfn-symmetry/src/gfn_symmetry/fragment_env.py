"""Fragment-based graph-building environment (paper Sec. 4.2).

A molecule is assembled from a vocabulary of fragments (small labelled graphs).
Each step attaches a new copy of fragment ``f`` by one bond between an existing
atom ``u`` and a stem ``v`` of the new fragment.  By default every atom is a stem;
``stems=`` designates attachment atoms per fragment.  The state is the isomorphism
class of the atom-level graph whose bonds are marked ``kind=0`` inside a fragment and ``kind=1`` between fragments,
so the fragment decomposition of a state is unique (the connected components of
the ``kind=0`` bonds).

As in fragment GFlowNets, the policy scores the new fragment's stems by their
index in the vocabulary, so stems that are equivalent under
:math:`\\mathrm{Aut}(F)` are distinct actions leading to isomorphic graphs: the
source of the fragment-based bias.  Backward actions remove a leaf fragment whose
attachment atom can be a stem (some automorphism of the fragment maps it onto one).

**Designated stems.**  For a transition ``G -> G'`` adding fragment ``F`` count pairs
(forward action, isomorphism onto ``G'``): each backward action ``b`` of ``G'`` whose
removed copy of ``F`` is attached at atom ``w_b`` is hit by
:math:`|\\mathrm{Aut}(G)|\\,X(w_b)` of them, with
:math:`X(w) = |\\mathrm{Stab}_F(w)|\\,|\\mathrm{Orb}_F(w) \\cap S_F|`, so

.. math:: M(G \\to G')\\,|\\mathrm{Aut}(G')| = |\\mathrm{Aut}(G)| \\sum_{b \\in B(G' \\to G)} X(w_b).

When the stems ``S_F`` are a union of :math:`\\mathrm{Aut}(F)` orbits, :math:`X = |\\mathrm{Aut}(F)|`
for every valid attachment and the terminal factor :math:`\\prod_i |\\mathrm{Aut}(F_i)|` of the
all-stems case holds unchanged.  Otherwise the factor depends on which atom each fragment was
attached by, i.e. on the trajectory, and no terminal reward scaling is exact:
:attr:`FragmentEnv.stems_orbit_closed` is ``False`` and the reward/flow-scaling corrections
refuse such an environment (the ``"exact"`` transition correction still applies).  Stems on
both sides (the existing molecule's attachment atoms restricted too) are not supported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

from gfn_symmetry.automorphisms import canonical_form, count_automorphisms
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


def _orbits(frag: nx.Graph) -> list[int]:
    """Orbit id of every atom under Aut(F): atoms ``v, w`` share an orbit iff marking ``v``
    or ``w`` gives isomorphic graphs (exact canonical forms)."""
    ids: dict[tuple, int] = {}
    out = []
    for v in frag.nodes:
        marked = frag.copy()
        for w in marked.nodes:
            marked.nodes[w]["mark"] = int(w == v)
        out.append(ids.setdefault(canonical_form(marked, ("label", "mark"), ("kind",)), len(ids)))
    return out


def _prepare_stems(stems: object, fragments: list[nx.Graph]) -> list[list[int]]:
    if stems is None:
        return [list(f.nodes) for f in fragments]
    if isinstance(stems, str) or not isinstance(stems, Sequence) or len(stems) != len(fragments):
        raise ValueError(f"stems must be None or a sequence of {len(fragments)} atom-index lists")
    out = []
    for i, (s, f) in enumerate(zip(stems, fragments, strict=True)):
        if isinstance(s, str) or not isinstance(s, Sequence) or len(s) == 0:
            raise ValueError(f"stems[{i}] must be a non-empty sequence of atom indices")
        for v in s:
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(f):
                raise ValueError(f"stems[{i}] holds {v!r}, not an atom index of fragments[{i}]")
        if len(set(s)) != len(s):
            raise ValueError(f"stems[{i}] has duplicates")
        out.append(sorted(s))
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
    stems : sequence of sequence of int or None, default=None
        Attachment atoms of each fragment (indices after sorting its nodes); ``None`` makes
        every atom a stem.

    Attributes
    ----------
    fragments : list of networkx.Graph
        Copies of the vocabulary with nodes relabelled ``0..m-1``.
    fragment_aut : list of int
        :math:`|\\mathrm{Aut}(F)|` of each fragment.
    stems : list of (int, int)
        ``(fragment, atom)`` pairs; the flat stem index is the ``k`` of an
        ``ADD_FRAGMENT`` action.
    orbits : list of list of int
        Aut(F) orbit id of every atom of every fragment.
    stems_orbit_closed : bool
        Whether every fragment's stems are a union of its orbits (then the SA-GFN factor
        :math:`\\prod_i|\\mathrm{Aut}(F_i)|` is exact).
    """

    n_edge_kinds = 2  # 0 inside a fragment, 1 between fragments

    def __init__(
        self,
        fragments: Sequence[nx.Graph],
        max_fragments: int = 3,
        stems: Sequence[Sequence[int]] | None = None,
    ):
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
        stem_sets = _prepare_stems(stems, self.fragments)
        self.stems = [(fi, v) for fi, s in enumerate(stem_sets) for v in s]
        self.orbits = [_orbits(f) for f in self.fragments]
        self._stem_sets = [set(s) for s in stem_sets]
        self.stems_orbit_closed = all(
            all(w in s for w in range(len(o)) if o[w] in {o[v] for v in s})
            for o, s in zip(self.orbits, stem_sets, strict=True)
        )

    def stem_factor(self, fragment: int, atom: int) -> int:
        r""":math:`X(w) = |\mathrm{Stab}_F(w)|\,|\mathrm{Orb}_F(w) \cap S_F|` (0: not attachable)."""
        orb = self.orbits[fragment]
        members = [w for w in range(len(orb)) if orb[w] == orb[atom]]
        hits = sum(w in self._stem_sets[fragment] for w in members)
        return self.fragment_aut[fragment] // len(members) * hits

    def _attachment(self, graph: nx.Graph, inst: list[int]) -> tuple[int, int]:
        """(fragment type, atom position) of the atom of leaf copy ``inst`` bonded outside it."""
        inside = set(inst)
        for a in inst:
            for w, d in graph.adj[a].items():
                if d["kind"] == 1 and w not in inside:
                    return graph.nodes[a]["frag_type"], inst.index(a)
        raise ValueError("fragment copy has no inter-fragment bond")

    def log_stem_factor(self, graph: nx.Graph, action: BackwardAction) -> float:
        r""":math:`\log X(w_b)` of backward action ``b`` (``log|Aut(F)|`` for the last fragment)."""
        inst = next(c for c in self.fragment_instances(graph) if c[0] == action.u)
        if len(inst) == graph.number_of_nodes():
            return math.log(self.fragment_aut[graph.nodes[inst[0]]["frag_type"]])
        return math.log(self.stem_factor(*self._attachment(graph, inst)))

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
        self.check_action(graph, action)
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
        return [
            BackwardAction(c[0])
            for i, c in enumerate(inst)
            if inter_deg[i] == 1 and self.stem_factor(*self._attachment(graph, c)) > 0
        ]

    def backward_anchor(self, graph: nx.Graph, action: BackwardAction) -> tuple[int, int]:
        """A leaf fragment is scored at its attachment atom (its first atom when alone)."""
        inst = next(c for c in self.fragment_instances(graph) if c[0] == action.u)
        if len(inst) == graph.number_of_nodes():
            return inst[0], -1
        return inst[self._attachment(graph, inst)[1]], -1

    def backward_of(self, graph: nx.Graph, action: GraphAction) -> BackwardAction:
        if action.kind not in (FIRST, ADD_FRAGMENT):
            raise ValueError(f"action kind {action.kind} has no backward action")
        return BackwardAction(graph.number_of_nodes())

    def forward_of(self, child: nx.Graph, action: BackwardAction) -> GraphAction:
        inst = next(c for c in self.fragment_instances(child) if c[0] == action.u)
        if len(inst) == child.number_of_nodes():
            return GraphAction(FIRST, k=child.nodes[inst[0]]["frag_type"])
        ftype, pos = self._attachment(child, inst)
        inside = set(inst)
        (w,) = (
            w for a in inst for w, d in child.adj[a].items() if d["kind"] == 1 and w not in inside
        )
        u = w - sum(x < w for x in inst)
        orb = self.orbits[ftype]
        # the stem itself, or (designated stems) the first stem automorphic to it
        stem = (
            min(v for v in self._stem_sets[ftype] if orb[v] == orb[pos])
            if pos not in self._stem_sets[ftype]
            else pos
        )
        return GraphAction(ADD_FRAGMENT, u, k=self.stems.index((ftype, stem)))

    def backward_step(self, graph: nx.Graph, action: BackwardAction) -> nx.Graph:
        inst = next(c for c in self.fragment_instances(graph) if c[0] == action.u)
        g = graph.copy()
        g.remove_nodes_from(inst)
        return nx.relabel_nodes(g, {v: i for i, v in enumerate(sorted(g.nodes))})
