import math
import random

import networkx as nx
import pytest
from networkx.algorithms.isomorphism import GraphMatcher

from gfn_symmetry import IsoClassCache, count_automorphisms, log_count_automorphisms


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
def test_known_orders(graph, expected):
    assert count_automorphisms(_labelled(graph)) == expected
    assert log_count_automorphisms(_labelled(graph)) == pytest.approx(math.log(expected))


def test_labels_break_symmetry():
    assert count_automorphisms(_labelled(nx.path_graph(3), [0, 0, 1])) == 1
    assert count_automorphisms(_labelled(nx.cycle_graph(4), [0, 1, 0, 1])) == 4


def test_edge_kinds_break_symmetry():
    g = _labelled(nx.cycle_graph(4))
    nx.set_edge_attributes(g, 0, "kind")
    g.edges[0, 1]["kind"] = 1
    assert count_automorphisms(g) == 2


def test_matches_brute_force_on_random_graphs():
    rng = random.Random(0)
    for seed in range(25):
        n = rng.randint(1, 7)
        g = nx.gnp_random_graph(n, rng.random(), seed=seed)
        g = _labelled(g, [rng.randint(0, 1) for _ in range(n)])
        assert count_automorphisms(g) == _brute(g)


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
