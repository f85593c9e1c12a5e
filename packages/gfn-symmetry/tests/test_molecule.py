import math

import networkx as nx
import pytest

from gfn_symmetry import (
    FragmentEnv,
    GFlowNet,
    GraphPolicy,
    MoleculeEnv,
    build_state_space,
    count_automorphisms,
    molecule_fragments,
    molecule_reward,
)
from gfn_symmetry.env import STOP


def test_valence_rules_hold_in_every_state():
    env = MoleculeEnv(max_atoms=4)
    space = build_state_space(env)
    for g in space.graphs:
        env.validate_state(g)
        for a in env.forward_actions(g):
            if a.kind != STOP:
                env.validate_state(env.step(g, a))
    # O (valence 2) can never be a branch point; no atom exceeds 4 bonds
    assert all(g.degree(v) <= 2 for g in space.graphs for v in g if g.nodes[v]["label"] == 2)
    # fewer states than unconstrained labelled graphs with 3 labels
    from gfn_symmetry import GraphEnv

    assert len(space) < len(build_state_space(GraphEnv(max_nodes=4, n_labels=3)))


def test_oxygen_chain_cannot_grow_past_valence():
    env = MoleculeEnv(max_atoms=4, atoms=("O",))
    space = build_state_space(env)
    # only O, O-O, O-O-O, O-O-O-O paths and the rings O3, O4 (every O has 2 bonds)
    sizes = sorted((g.number_of_nodes(), g.number_of_edges()) for g in space.graphs[1:])
    assert sizes == [(1, 0), (2, 1), (3, 2), (3, 3), (4, 3), (4, 4)]


def test_molecule_reward_closed_forms():
    benzene = nx.cycle_graph(6)
    nx.set_node_attributes(benzene, 0, "label")
    assert molecule_reward(benzene) == pytest.approx(math.exp(0.3 * 6 + 1))
    pyridine = benzene.copy()
    pyridine.nodes[0]["label"] = 1
    assert molecule_reward(pyridine) == pytest.approx(math.exp(0.3 * 6 + 1 + 0.7))
    neo = nx.star_graph(4)
    nx.set_node_attributes(neo, 0, "label")
    assert molecule_reward(neo) == pytest.approx(math.exp(0.3 * 5 - 0.5))
    assert molecule_reward(benzene, beta=2.0) == pytest.approx(math.exp(2 * (0.3 * 6 + 1)))
    with pytest.raises(ValueError, match="beta"):
        molecule_reward(benzene, beta=0)
    with pytest.raises(TypeError, match="graph"):
        molecule_reward([1, 2])


def test_fragment_vocabulary_symmetries():
    frags = molecule_fragments()
    assert [count_automorphisms(f) for f in frags] == [1, 1, 1, 2, 1, 6, 12, 2]
    env = FragmentEnv(frags, max_fragments=3)
    assert env.fragment_aut == [1, 1, 1, 2, 1, 6, 12, 2]


def test_molecule_env_trains():
    env = MoleculeEnv(max_atoms=5)
    gfn = GFlowNet(GraphPolicy(env, hidden=16, n_layers=2, seed=0), seed=0)
    gfn.train(molecule_reward, 3)
    for g in gfn.sample(8):
        env.validate_state(g)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"atoms": ()}, "atoms"),
        ({"atoms": ("S",)}, "default valence"),
        ({"atoms": ("C",), "valences": (4, 2)}, "valences"),
        ({"atoms": ("C",), "valences": (0,)}, "valences"),
        ({"max_atoms": 0}, "max_atoms"),  # was reported as max_nodes
    ],
)
def test_molecule_env_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MoleculeEnv(**kwargs)
