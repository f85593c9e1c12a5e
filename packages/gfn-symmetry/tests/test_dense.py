"""The vectorised trainer is the same MDP as GraphEnv, and its corrections are exact."""

import itertools
import random

import networkx as nx
import numpy as np
import pytest
import torch

from gfn_symmetry import (
    GraphEnv,
    MoleculeEnv,
    build_state_space,
    cliques_log_reward,
    cycle_reward,
    target_distribution,
)
from gfn_symmetry.dense import (
    DenseBatch,
    DenseGFlowNet,
    DenseGraphEnv,
    DenseGraphPolicy,
    dense_terminal_distribution,
)


def _random_states(env: GraphEnv, n: int, seed: int) -> list[nx.Graph]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        g = env.initial_state()
        while True:
            acts = env.forward_actions(g)
            out.append(g)
            a = rng.choice(acts)
            if a.kind == 0:
                break
            g = env.step(g, a)
    return out


def test_masks_steps_and_backward_counts_match_graph_env():
    genv = GraphEnv(max_nodes=6, n_labels=2)
    env = DenseGraphEnv(6, 2)
    graphs = _random_states(genv, 60, 0)
    adj, types, n = env.from_networkx(graphs)
    mask = env.forward_mask(adj, types, n)
    nback = env.n_backward(adj, n)
    for b, g in enumerate(graphs):
        acts = genv.forward_actions(g)
        idx = [env.action_index(a) for a in acts]
        assert sorted(idx) == torch.nonzero(mask[b]).flatten().tolist()
        assert int(nback[b]) == len(genv.backward_actions(g))
        a = acts[len(acts) // 2]
        if a.kind == 0:
            continue
        a2, t2, n2 = env.step(adj[b : b + 1], types[b : b + 1], n[b : b + 1], torch.tensor([idx[len(acts) // 2]]))  # fmt: skip
        got = env.to_networkx(a2, t2, n2)[0]
        want = genv.step(g, a)
        assert sorted(got.edges) == sorted(tuple(sorted(e)) for e in want.edges)
        assert [got.nodes[v]["label"] for v in got] == [want.nodes[v]["label"] for v in want]


def test_max_edges_blocks_growth():
    genv, env = GraphEnv(5, 1, max_edges=3), DenseGraphEnv(5, 1, max_edges=3)
    for g in _random_states(genv, 30, 1):
        adj, types, n = env.from_networkx([g])
        got = torch.nonzero(env.forward_mask(adj, types, n)[0]).flatten().tolist()
        assert got == sorted(env.action_index(a) for a in genv.forward_actions(g))


def test_valences_give_the_molecule_env():
    genv = MoleculeEnv(5)
    env = DenseGraphEnv(5, 3, valences=(4, 3, 2))
    for g in _random_states(genv, 40, 3):
        adj, types, n = env.from_networkx([g])
        got = torch.nonzero(env.forward_mask(adj, types, n)[0]).flatten().tolist()
        assert got == sorted(env.action_index(a) for a in genv.forward_actions(g))
        assert int(env.n_backward(adj, n)[0]) == len(genv.backward_actions(g))
    with pytest.raises(ValueError, match="valences"):
        DenseGraphEnv(5, 3, valences=(4, 3))
    with pytest.raises(ValueError, match="different environments"):
        dense_terminal_distribution(DenseGraphPolicy(DenseGraphEnv(3, 3), 8, 1), build_state_space(MoleculeEnv(3)))  # fmt: skip


def test_canonical_form_identifies_exactly_the_isomorphic_states():
    env = DenseGraphEnv(6, 2)
    graphs = _random_states(GraphEnv(6, 2), 40, 2)
    rng = np.random.default_rng(0)
    perm = []
    for g in graphs:
        p = rng.permutation(g.number_of_nodes())
        perm.append(nx.relabel_nodes(g, {v: int(p[v]) for v in g}))
    a1, t1, k1 = env.canonicalize(*env.from_networkx(graphs))
    a2, t2, k2 = env.canonicalize(*env.from_networkx(perm))
    assert torch.equal(a1, a2) and torch.equal(t1, t2) and k1 == k2
    match = lambda x, y: x["label"] == y["label"]  # noqa: E731
    for (i, g), (j, h) in itertools.combinations(enumerate(graphs), 2):
        assert (k1[i] == k1[j]) == nx.is_isomorphic(g, h, node_match=match)
    n = env.from_networkx(graphs)[2]
    for g, c in zip(graphs, env.to_networkx(a1, t1, n), strict=True):
        assert nx.is_isomorphic(g, c, node_match=match)


def test_policy_is_permutation_equivariant():
    env = DenseGraphEnv(5, 2)
    torch.manual_seed(0)
    pol = DenseGraphPolicy(env, hidden=16, n_layers=2)
    g = nx.Graph([(0, 1), (1, 2), (2, 3), (3, 0), (3, 4)])
    nx.set_node_attributes(g, {0: 0, 1: 1, 2: 0, 3: 1, 4: 1}, "label")
    p = [3, 0, 4, 1, 2]
    h = nx.relabel_nodes(g, dict(enumerate(p)))
    (l1, f1), (l2, f2) = (pol(*env.from_networkx([x])) for x in (g, h))
    genv = GraphEnv(5, 2)
    for a in genv.forward_actions(g):
        b = a._replace(u=p[a.u] if a.u >= 0 else -1, v=p[a.v] if a.v >= 0 else -1)
        if b.kind == 3 and b.u > b.v:
            b = b._replace(u=b.v, v=b.u)
        torch.testing.assert_close(l1[0, env.action_index(a)], l2[0, env.action_index(b)])
    torch.testing.assert_close(f1, f2)


def test_exact_distribution_matches_sampling_frequencies():
    genv = GraphEnv(3, 2)
    env = DenseGraphEnv(3, 2)
    space = build_state_space(genv)
    torch.manual_seed(1)
    gfn = DenseGFlowNet(DenseGraphPolicy(env, 16, 1), seed=0)
    p = dense_terminal_distribution(gfn.policy, space)
    assert p.sum() == pytest.approx(1.0)
    counts = np.zeros(len(space))
    for g in gfn.sample(6000):
        counts[space.index(g)] += 1
    assert np.abs(counts / counts.sum() - p).sum() < 0.05


@pytest.mark.parametrize(
    ("correction", "loss"),
    [("reward_scaling", "tb"), ("flow_scaling", "db"), ("exact", "db"), ("pe", "tb")],
)
def test_corrections_reach_the_target(correction, loss):
    genv, env = GraphEnv(4, 1), DenseGraphEnv(4, 1)
    space = build_state_space(genv)
    target = target_distribution(space, cycle_reward)
    torch.manual_seed(0)
    gfn = DenseGFlowNet(DenseGraphPolicy(env, 32, 2), loss, correction, seed=0, batch_size=32)
    steps = 150 if loss == "tb" else 300  # DB propagates the reward one step at a time
    gfn.train(cycle_reward, steps)
    assert np.abs(dense_terminal_distribution(gfn.policy, space) - target).sum() < 0.06
    assert gfn.n_trajectories_ == steps * 32


def test_vanilla_keeps_the_symmetry_bias():
    genv, env = GraphEnv(4, 1), DenseGraphEnv(4, 1)
    space = build_state_space(genv)
    target = target_distribution(space, cycle_reward)
    torch.manual_seed(0)
    gfn = DenseGFlowNet(DenseGraphPolicy(env, 32, 2), "tb", False, seed=0, batch_size=32)
    gfn.train(cycle_reward, 150)
    p = dense_terminal_distribution(gfn.policy, space)
    # the vanilla optimum is p ∝ R / |Aut|: symmetric graphs are under-sampled
    biased = target * np.exp(-space.log_aut)
    biased /= biased.sum()
    assert np.abs(p - target).sum() > 0.5
    assert np.abs(p - biased).sum() < 0.06


def test_cliques_reward_closed_forms():
    def graph(edges, labels):
        g = nx.Graph(edges)
        nx.set_node_attributes(g, dict(enumerate(labels)), "label")
        return g

    k4 = list(itertools.combinations(range(4), 2))
    assert cliques_log_reward(graph(k4, [0, 0, 0, 0])) == 0.0  # 1 - 4 + 3
    assert cliques_log_reward(graph(k4, [0, 0, 1, 1])) == -0.5  # half credit: 2/2 colours
    assert cliques_log_reward(graph(k4, [0, 0, 0, 1])) == 0.0  # 3 of 4 share a colour
    one = nx.Graph()
    one.add_node(0, label=1)
    assert cliques_log_reward(one) == -1.0
    path = graph([(i, i + 1) for i in range(6)], [0] * 7)
    assert cliques_log_reward(path) == -6.0  # 6 edges, 12 memberships, n - 1 = 6
    k34 = [(i, j) for i in range(3) for j in range(3, 7)]
    assert cliques_log_reward(graph(k34, [0] * 7)) == -10.0  # -18 floored
    with pytest.raises(ValueError, match="clique_size"):
        cliques_log_reward(path, clique_size=1)
    with pytest.raises(ValueError, match="empty"):
        cliques_log_reward(nx.Graph())


def test_validation_names_the_argument():
    env = DenseGraphEnv(4, 1)
    with pytest.raises(ValueError, match="max_nodes"):
        DenseGraphEnv(0, 1)
    with pytest.raises(TypeError, match="env"):
        DenseGraphPolicy(GraphEnv(4, 1))
    with pytest.raises(ValueError, match="hidden"):
        DenseGraphPolicy(env, hidden=0)
    pol = DenseGraphPolicy(env, 8, 1)
    with pytest.raises(TypeError, match="policy"):
        DenseGFlowNet(object())
    with pytest.raises(ValueError, match="loss"):
        DenseGFlowNet(pol, loss="subtb")
    with pytest.raises(ValueError, match="symmetry_correction"):
        DenseGFlowNet(pol, symmetry_correction="approximate")
    with pytest.raises(ValueError, match="epsilon"):
        DenseGFlowNet(pol, epsilon=1.5)
    with pytest.raises(ValueError, match="batch_size"):
        DenseGFlowNet(pol, batch_size=0)
    gfn = DenseGFlowNet(pol)
    with pytest.raises(ValueError, match="steps"):
        gfn.train(cycle_reward, 0)
    with pytest.raises(TypeError, match="reward_fn"):
        gfn.train("cycles", 1)
    two = nx.disjoint_union(nx.path_graph(2), nx.path_graph(2))
    nx.set_node_attributes(two, 0, "label")
    with pytest.raises(ValueError, match=r"graphs\[0\]"):
        env.from_networkx([two])
    space = build_state_space(GraphEnv(3, 1))
    with pytest.raises(ValueError, match="different environments"):
        dense_terminal_distribution(pol, space)


def test_tb_exact_and_flow_scaling_equal_reward_scaling_on_the_same_trajectories():
    env = DenseGraphEnv(5, 2)
    torch.manual_seed(0)
    pol = DenseGraphPolicy(env, 16, 2)
    ex = DenseGFlowNet(pol, "tb", "exact", seed=0)
    batch = ex.sample_batch(32, 0.3)
    # the same trajectories scored one action at a time (the uniform P_B of vanilla)
    nb = ex.table.n_back[batch.ids].float()
    T = batch.ids.shape[1]
    log_pb = torch.zeros_like(batch.log_pb)
    log_pb[:, : T - 1] = -torch.log(nb[:, 1:].clamp(min=1))
    stop = torch.arange(T).unsqueeze(0) >= (batch.lengths - 1).unsqueeze(1)
    plain = DenseBatch(batch.ids, batch.actions, batch.lengths, log_pb.masked_fill(stop, 0.0), None)
    losses = {}
    for corr in ("reward_scaling", "flow_scaling"):
        other = DenseGFlowNet(pol, "tb", corr, seed=0)
        other.table = ex.table  # ids index the same canonical states
        losses[corr] = other.compute_loss(plain, other.log_rewards(plain, cycle_reward))
    losses["exact"] = ex.compute_loss(batch, ex.log_rewards(batch, cycle_reward))
    torch.testing.assert_close(losses["exact"], losses["reward_scaling"], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(losses["flow_scaling"], losses["reward_scaling"], rtol=1e-4, atol=1e-4)  # fmt: skip


@pytest.mark.parametrize(
    "dense_env",
    [DenseGraphEnv(5, 2), DenseGraphEnv(5, 3, valences=(4, 3, 2))],
    ids=["graphs", "molecules"],
)
def test_exact_sets_equal_the_isomorphism_test_path(dense_env):
    # the trainer's equivalent forward actions (equal canonical children) and backward counts
    # (F |Aut(child)| / |Aut(parent)|) against explicit isomorphism tests on networkx graphs
    from gfn_symmetry.automorphisms import IsoClassCache
    from gfn_symmetry.symmetry import backward_equivalent_count, child_classes

    torch.manual_seed(0)
    gfn = DenseGFlowNet(DenseGraphPolicy(dense_env, 8, 1), "db", "exact", seed=1)
    for _ in range(4):
        gfn.sample_batch(32, epsilon=1.0)
    genv, env = dense_env.graph_env, dense_env
    cache = IsoClassCache(genv.node_attrs, genv.edge_attrs)
    assert len(gfn._trans) > 50
    for (i, a), (eq, log_pb) in gfn._trans.items():
        g = gfn.table.graph(i)
        acts = genv.forward_actions(g)
        dense = np.array([env.action_index(x) for x in acts])
        k = int(np.nonzero(dense == a)[0][0])
        classes = np.array(child_classes(genv, g, acts, cache))
        want = np.zeros(env.A, dtype=bool)
        want[dense[[k] if a == 0 else np.nonzero(classes == classes[k])[0]]] = True
        np.testing.assert_array_equal(eq, want)
        if a == 0:
            assert log_pb == 0.0
            continue
        child = genv.step(g, acts[k])
        count = backward_equivalent_count(genv, child, g, cache)
        assert log_pb == pytest.approx(np.log(count / len(genv.backward_actions(child))))


def test_log_automorphisms_equal_the_reference_count():
    from gfn_symmetry import count_automorphisms

    genv = GraphEnv(6, 2)
    env = DenseGraphEnv(6, 2)
    graphs = _random_states(genv, 40, 3)
    got = env.log_automorphisms(*env.from_networkx(graphs))
    want = [
        0.0 if g.number_of_nodes() <= 1 else np.log(count_automorphisms(g, ("label",)))
        for g in graphs
    ]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
