import math
import random

import networkx as nx
import pytest
from networkx.algorithms.isomorphism import GraphMatcher

from gfn_symmetry import IsoClassCache, count_automorphisms, log_count_automorphisms
from gfn_symmetry.automorphisms import canonical_form

BACKENDS = ["igraph", "nauty", "networkx"]


def _labelled(g, labels=None):
    g = nx.convert_node_labels_to_integers(g)
    for v in g.nodes:
        g.nodes[v]["label"] = 0 if labels is None else labels[v]
    return g


def _brute(g):
    nm = lambda a, b: a.get("label") == b.get("label")  # noqa: E731
    return sum(1 for _ in GraphMatcher(g, g, node_match=nm).isomorphisms_iter())


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        (nx.complete_graph(5), 120),
        (nx.cycle_graph(7), 14),
        (nx.star_graph(6), math.factorial(6)),
        (nx.path_graph(5), 2),
        (nx.petersen_graph(), 120),
        (nx.hypercube_graph(3), 48),
        (nx.empty_graph(4), 24),
    ],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_known_orders(graph, expected, backend):
    if backend == "nauty":
        pytest.importorskip("pynauty")
    assert count_automorphisms(_labelled(graph), backend=backend) == expected
    assert log_count_automorphisms(_labelled(graph), backend=backend) == pytest.approx(
        math.log(expected)
    )


def test_huge_groups_are_exact():
    star = _labelled(nx.star_graph(29))
    assert count_automorphisms(star) == math.factorial(29)
    if pytest.importorskip("pynauty"):
        assert count_automorphisms(star, backend="nauty") == math.factorial(29)


def test_labels_break_symmetry():
    assert count_automorphisms(_labelled(nx.path_graph(3), [0, 0, 1])) == 1
    assert count_automorphisms(_labelled(nx.cycle_graph(4), [0, 1, 0, 1])) == 4


def test_edge_kinds_break_symmetry():
    g = _labelled(nx.cycle_graph(4))
    nx.set_edge_attributes(g, 0, "kind")
    g.edges[0, 1]["kind"] = 1
    assert count_automorphisms(g) == 2


def _brute_edges(g):
    nm = lambda a, b: a.get("label") == b.get("label")  # noqa: E731
    em = lambda a, b: a.get("kind") == b.get("kind")  # noqa: E731
    return sum(1 for _ in GraphMatcher(g, g, node_match=nm, edge_match=em).isomorphisms_iter())


@pytest.mark.parametrize("backend", BACKENDS)
def test_matches_brute_force_on_random_graphs(backend):
    if backend == "nauty":
        pytest.importorskip("pynauty")
    rng = random.Random(0)
    for seed in range(40):
        n = rng.randint(1, 7)
        g = nx.gnp_random_graph(n, rng.random(), seed=seed)
        g = _labelled(g, [rng.randint(0, 1) for _ in range(n)])
        if seed % 2:  # edge labels too (bond orders)
            for u, v in g.edges:
                g.edges[u, v]["kind"] = rng.randint(1, 2)
        assert count_automorphisms(g, backend=backend) == _brute_edges(g)


def test_canonical_form_is_an_isomorphism_invariant():
    rng = random.Random(1)
    for seed in range(30):
        n = rng.randint(1, 7)
        g = _labelled(nx.gnp_random_graph(n, 0.5, seed=seed), [rng.randint(0, 1) for _ in range(n)])
        for u, v in g.edges:
            g.edges[u, v]["kind"] = rng.randint(1, 2)
        perm = list(range(n))
        rng.shuffle(perm)
        h = nx.relabel_nodes(g, dict(enumerate(perm)))
        assert canonical_form(g) == canonical_form(h)
        h2 = nx.Graph(h)
        if h2.number_of_edges():
            u, v = next(iter(h2.edges))
            h2.edges[u, v]["kind"] = 3  # a new bond order: no longer isomorphic
            assert canonical_form(h2) != canonical_form(g)
    a, b = _labelled(nx.path_graph(3)), _labelled(nx.path_graph(3))
    nx.set_edge_attributes(a, 1, "kind")
    nx.set_edge_attributes(b, 2, "kind")
    assert canonical_form(a) != canonical_form(b)


def test_thirty_atom_graphs_are_fast():
    import time

    g = _labelled(
        nx.random_labeled_tree(30, seed=3)
        if hasattr(nx, "random_labeled_tree")
        else nx.random_tree(30, seed=3)
    )
    count_automorphisms(g)
    t0 = time.perf_counter()
    for _ in range(200):
        count_automorphisms(g)
    per_graph = (time.perf_counter() - t0) / 200
    assert per_graph < 5e-3  # target 1 ms; slack for loaded CI machines


def test_bad_inputs():
    with pytest.raises(ValueError, match="graph"):
        count_automorphisms(nx.Graph())
    with pytest.raises(TypeError, match="graph"):
        count_automorphisms([[0, 1]])
    with pytest.raises(TypeError, match="graph"):
        count_automorphisms(nx.DiGraph([(0, 1)]))


def test_cache_classes_and_counts():
    cache = IsoClassCache()
    a = _labelled(nx.path_graph(4))
    b = nx.relabel_nodes(a, {0: 2, 1: 0, 2: 3, 3: 1})
    c = _labelled(nx.star_graph(3))
    assert cache.class_id(a) == cache.class_id(b) != cache.class_id(c)
    assert cache.automorphisms(b) == 2 and cache.automorphisms(c) == 6
    assert cache.automorphisms(nx.Graph()) == 1
    assert len(cache) == 3
    with pytest.raises(TypeError, match="graph"):
        cache.class_id("abc")


def test_numpy_and_torch_labels_are_read_as_their_values():
    # a torch label vector once gave |Aut| = 1 for a 4-cycle (tensors hash by identity), and
    # NaN labels given as np.float32 or a tensor passed the NaN check
    import numpy as np
    import torch

    from gfn_symmetry import count_automorphisms

    def cycle(labels):
        g = nx.cycle_graph(4)
        nx.set_node_attributes(g, dict(enumerate(labels)), "label")
        return g

    for labels in (torch.tensor([0, 0, 0, 0]), np.zeros(4, np.int32), np.zeros(4, np.float32)):
        for backend in ("igraph", "networkx"):
            assert count_automorphisms(cycle(list(labels)), backend=backend) == 8
    assert count_automorphisms(cycle(list(torch.tensor([0, 1, 0, 1])))) == 4
    for nan in (np.float32("nan"), torch.tensor(float("nan"))):
        with pytest.raises(ValueError, match="NaN"):
            count_automorphisms(cycle([0, nan, 0, 0]))
    with pytest.raises(TypeError, match="a label must be a scalar"):
        count_automorphisms(cycle([0, np.zeros(2), 0, 0]))
    g = cycle(list(torch.tensor([0, 0, 0, 0])))
    before = dict(g.nodes(data="label"))
    count_automorphisms(g)
    assert dict(g.nodes(data="label")) == before  # the caller's graph is not rewritten


def test_cliques_reward_and_node_pe_refuse_foreign_labels():
    from gfn_symmetry import GraphEnv, cliques_log_reward
    from gfn_symmetry.approximate import node_pe

    g = nx.complete_graph(4)
    nx.set_node_attributes(g, {0: 0, 1: 1, 2: 2, 3: 0}, "label")
    with pytest.raises(ValueError, match="colours nodes 0 or 1"):
        cliques_log_reward(g)
    with pytest.raises(ValueError, match="outside"):
        node_pe(GraphEnv(max_nodes=4, n_labels=2), g)
