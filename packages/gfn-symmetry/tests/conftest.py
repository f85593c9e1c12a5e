import networkx as nx
import pytest
import torch

from gfn_symmetry import FragmentEnv, GraphEnv


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def path(n: int, label: int = 0) -> nx.Graph:
    g = nx.path_graph(n)
    nx.set_node_attributes(g, label, "label")
    return g


@pytest.fixture
def atom_env() -> GraphEnv:
    return GraphEnv(max_nodes=4)


@pytest.fixture
def frag_env() -> FragmentEnv:
    # a single atom, a symmetric dimer and an asymmetric (two-label) dimer
    single = nx.Graph()
    single.add_node(0, label=0)
    dimer = path(2)
    hetero = path(2)
    hetero.nodes[1]["label"] = 1
    return FragmentEnv([single, dimer, hetero], max_fragments=3)
