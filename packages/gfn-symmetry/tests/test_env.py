import math

import networkx as nx
import pytest

from gfn_symmetry import FragmentEnv, GraphEnv, build_state_space
from gfn_symmetry.env import STOP


@pytest.mark.parametrize(
    ("kwargs", "n_states"),
    [
        # 1 (empty) + connected unlabelled graphs on 1..n nodes: 1, 1, 2, 6, 21
        ({"max_nodes": 4}, 11),
        ({"max_nodes": 5}, 32),
        # 2 labels, <= 3 nodes: 2 + 3 + (6 paths + 4 triangles)
        ({"max_nodes": 3, "n_labels": 2}, 16),
    ],
)
def test_state_space_sizes(kwargs, n_states):
    assert len(build_state_space(GraphEnv(**kwargs))) == n_states


def _check_ratio_identity(space, fragment_aut=None):
    env = space.env
    checked = 0
    for s, kids in enumerate(space.children):
        for c, idx in kids.items():
            m, b = len(idx), space.backward[c][s]
            expected = math.exp(space.log_aut[s] - space.log_aut[c])
            if fragment_aut is not None:
                after = sorted(env.fragment_types(space.graphs[c]))
                for t in env.fragment_types(space.graphs[s]) if s else []:
                    after.remove(t)
                (new,) = after  # the fragment type this transition added
                expected *= fragment_aut[new]
            assert m / b == pytest.approx(expected), (s, c, m, b)
            checked += 1
    return checked


@pytest.mark.parametrize("kwargs", [{"max_nodes": 5}, {"max_nodes": 3, "n_labels": 2}])
def test_forward_backward_multiplicity_ratio_atom(kwargs):
    # Paper's key identity: M(G->G') / B(G'->G) = |Aut(G)| / |Aut(G')|, by brute force.
    assert _check_ratio_identity(build_state_space(GraphEnv(**kwargs))) > 10


def test_forward_backward_multiplicity_ratio_fragment(frag_env):
    # Fragment setting: M / B = |Aut(G)| |Aut(F)| / |Aut(G')| for the added fragment F.
    space = build_state_space(frag_env)
    assert frag_env.fragment_aut == [1, 2, 1]
    assert _check_ratio_identity(space, frag_env.fragment_aut) > 10


def test_actions_and_steps_do_not_mutate(atom_env):
    g = atom_env.step(atom_env.initial_state(), atom_env.forward_actions(nx.Graph())[0])
    acts = atom_env.forward_actions(g)
    assert acts[0].kind == STOP
    before = (list(g.nodes(data=True)), list(g.edges))
    for a in acts[1:]:
        child = atom_env.step(g, a)
        assert child.number_of_nodes() == 2
    assert (list(g.nodes(data=True)), list(g.edges)) == before
    with pytest.raises(ValueError, match="action"):
        atom_env.step(g, acts[0])


def test_max_nodes_and_max_edges_respected():
    env = GraphEnv(max_nodes=3, max_edges=2)
    space = build_state_space(env)
    assert all(g.number_of_nodes() <= 3 and g.number_of_edges() <= 2 for g in space.graphs)
    assert len(space) == 4  # empty, K1, K2, P3 (no triangle)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_nodes": 0}, "max_nodes"),
        ({"max_nodes": -3}, "max_nodes"),
        ({"n_labels": 0}, "n_labels"),
        ({"max_edges": -1}, "max_edges"),
    ],
)
def test_env_bad_hyperparameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GraphEnv(**kwargs)
    with pytest.raises(TypeError, match="max_nodes"):
        GraphEnv(max_nodes=2.5)


def test_validate_state(atom_env):
    g = nx.path_graph(3)
    nx.set_node_attributes(g, 0, "label")
    atom_env.validate_state(g)
    g.add_node(3, label=0)
    with pytest.raises(ValueError, match="connected"):
        atom_env.validate_state(g)
    g.nodes[3]["label"] = 5
    with pytest.raises(ValueError, match="label"):
        atom_env.validate_state(g)


def test_fragment_env_bad_inputs(frag_env):
    with pytest.raises(ValueError, match="fragments"):
        FragmentEnv([])
    with pytest.raises(ValueError, match=r"fragments\[0\]"):
        FragmentEnv([nx.Graph()])
    with pytest.raises(ValueError, match="isomorphic"):
        FragmentEnv([nx.path_graph(2), nx.path_graph(2)])
    with pytest.raises(ValueError, match="max_fragments"):
        FragmentEnv([nx.path_graph(2)], max_fragments=0)
    with pytest.raises(TypeError, match="fragments"):
        FragmentEnv(nx.path_graph(2))


def test_fragment_env_structure(frag_env):
    g = frag_env.initial_state()
    g = frag_env.step(g, frag_env.forward_actions(g)[1])  # first fragment: dimer
    assert frag_env.fragment_types(g) == [1]
    acts = frag_env.forward_actions(g)
    assert len(acts) == 1 + 2 * frag_env.n_stems
    child = frag_env.step(g, acts[1 + frag_env.n_stems + 2])
    assert frag_env.fragment_instances(child) == [[0, 1], [2, 3]]
    assert frag_env.n_steps(child) == 2
    (b,) = [a for a in frag_env.backward_actions(child) if a.u == 2]
    assert frag_env.fragment_types(frag_env.backward_step(child, b)) == [1]
