import networkx as nx
import numpy as np
import pytest
import torch

from gfn_symmetry import GraphEnv, GraphPolicy, featurize
from gfn_symmetry.batching import segment_log_softmax, segment_logsumexp, segment_sample
from gfn_symmetry.env import ADD_NODE


def _star():
    g = nx.star_graph(3)
    nx.set_node_attributes(g, 0, "label")
    nx.set_edge_attributes(g, 0, "kind")
    return g


def test_orbit_equivalent_actions_get_equal_logits():
    env = GraphEnv(max_nodes=5)
    policy = GraphPolicy(env, hidden=16, seed=0)
    batch = featurize(env, [_star()])
    logits, flow = policy(batch)
    leaf = [i for i, a in enumerate(batch.actions[0]) if a.kind == ADD_NODE and a.u > 0]
    assert len(leaf) == 3
    np.testing.assert_allclose(
        logits[leaf].detach().numpy(), float(logits[leaf[0]].detach()), rtol=1e-6
    )
    assert flow.shape == (1,)


def test_permutation_invariance_of_action_distribution():
    env = GraphEnv(max_nodes=5, n_labels=2)
    g = nx.path_graph(4)
    nx.set_node_attributes(g, {0: 0, 1: 1, 2: 0, 3: 0}, "label")
    perm = {0: 2, 1: 0, 2: 3, 3: 1}
    h = nx.relabel_nodes(g, perm)
    policy = GraphPolicy(env, hidden=16, seed=1)
    batch = featurize(env, [g, h])
    logits, flow = policy(batch)
    off = batch.act_offset.tolist()
    la = dict(zip(batch.actions[0], logits[off[0] : off[1]].tolist(), strict=True))
    lb = dict(zip(batch.actions[1], logits[off[1] : off[2]].tolist(), strict=True))
    for a, v in la.items():
        u, w = perm.get(a.u, -1), perm.get(a.v, -1)
        if a.v >= 0 and u > w:
            u, w = w, u
        assert lb[a._replace(u=u, v=w)] == pytest.approx(v, abs=1e-5)
    assert float(flow[0].detach()) == pytest.approx(float(flow[1].detach()), abs=1e-5)


def test_segment_ops():
    x = torch.tensor([0.0, 1.0, 2.0, -1.0, 3.0])
    seg = torch.tensor([0, 0, 1, 1, 1])
    np.testing.assert_allclose(
        segment_logsumexp(x, seg, 2).numpy(),
        [float(x[:2].logsumexp(0)), float(x[2:].logsumexp(0))],
        rtol=1e-6,
    )
    lsm = segment_log_softmax(x, seg, 2)
    np.testing.assert_allclose(torch.zeros(2).index_add(0, seg, lsm.exp()).numpy(), 1.0, rtol=1e-6)
    g = torch.Generator().manual_seed(0)
    picks = torch.stack([segment_sample(x, seg, 2, g) for _ in range(4000)])
    assert set(picks[:, 0].tolist()) <= {0, 1} and set(picks[:, 1].tolist()) <= {2, 3, 4}
    freq = (picks[:, 0] == 1).float().mean()
    assert freq == pytest.approx(float(torch.softmax(x[:2], 0)[1]), abs=0.03)


def test_bad_inputs():
    with pytest.raises(TypeError, match="env"):
        GraphPolicy("env")
    with pytest.raises(ValueError, match="hidden"):
        GraphPolicy(GraphEnv(), hidden=0)
    with pytest.raises(ValueError, match="n_layers"):
        GraphPolicy(GraphEnv(), n_layers=-1)
    with pytest.raises(ValueError, match="graphs"):
        featurize(GraphEnv(), [])
