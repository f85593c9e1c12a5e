"""Flow scaling, the PE approximation, approximate counting, designated stems, likelihood."""

import math

import networkx as nx
import numpy as np
import pytest
import torch

from gfn_symmetry import (
    FragmentEnv,
    GFlowNet,
    GraphEnv,
    GraphPolicy,
    action_tb_residuals,
    build_state_space,
    count_automorphisms,
    cycle_reward,
    estimate_log_likelihood,
    exact_terminal_distribution,
    log_symmetry_correction,
    optimal_state_policy,
    target_distribution,
    wl_automorphism_bound,
)
from gfn_symmetry.approximate import (
    node_pe,
    pe_backward_equivalent_count,
    pe_equivalent_action_indices,
    random_walk_pe,
)
from gfn_symmetry.env import STOP
from gfn_symmetry.symmetry import (
    backward_equivalent_count,
    child_classes,
    equivalent_action_indices,
)


def _gfn(env, **kw):
    return GFlowNet(GraphPolicy(env, hidden=16, n_layers=2, seed=0), seed=0, **kw)


def _labelled(g: nx.Graph) -> nx.Graph:
    g = nx.convert_node_labels_to_integers(g)
    nx.set_node_attributes(g, 0, "label")
    nx.set_edge_attributes(g, 0, "kind")
    return g


def _p3() -> nx.Graph:
    return _labelled(nx.path_graph(3))


def _single() -> nx.Graph:
    g = nx.Graph()
    g.add_node(0, label=0)
    return g


# -- flow scaling --------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["atom", "fragment"])
def test_flow_scaling_equals_reward_scaling_for_tb(kind, frag_env):
    env = GraphEnv(max_nodes=4) if kind == "atom" else frag_env
    flow = _gfn(env, symmetry_correction="flow_scaling")
    scaled = _gfn(env, symmetry_correction="reward_scaling")
    trajs = flow.sample_trajectories(8, epsilon=0.5)
    with torch.no_grad():
        a = float(flow.compute_loss(trajs, flow.log_rewards(trajs, cycle_reward)))
        b = float(scaled.compute_loss(trajs, scaled.log_rewards(trajs, cycle_reward)))
    assert a == pytest.approx(b, rel=1e-5)
    for t in trajs:  # the per-step factors telescope to the terminal correction
        steps = flow._correction_steps(t)
        assert sum(steps) == pytest.approx(log_symmetry_correction(env, t.graph))


@pytest.mark.parametrize("loss", ["db", "subtb"])
def test_flow_scaling_equals_exact_correction_per_transition(loss):
    """With an equivariant policy, log M(G->G') - log B(G'->G) = c(G') - c(G) on every step, so
    flow scaling reproduces the exact transition correction without isomorphism tests."""
    env = GraphEnv(max_nodes=4)
    exact = _gfn(env, loss=loss, symmetry_correction="exact")
    flow = _gfn(env, loss=loss, symmetry_correction="flow_scaling")
    trajs = exact.sample_trajectories(16, epsilon=0.5)
    log_r = exact.log_rewards(trajs, cycle_reward)
    with torch.no_grad():
        assert float(flow.compute_loss(trajs, log_r)) == pytest.approx(
            float(exact.compute_loss(trajs, log_r)), rel=1e-5
        )


def test_flow_scaling_changes_db_targets_per_step():
    env = GraphEnv(max_nodes=4)
    trajs = _gfn(env, symmetry_correction=False).sample_trajectories(16, epsilon=1.0)
    losses = {}
    for corr in ("none", "flow_scaling", "reward_scaling"):
        gfn = _gfn(env, loss="db", symmetry_correction=corr)
        with torch.no_grad():
            losses[corr] = float(gfn.compute_loss(trajs, gfn.log_rewards(trajs, cycle_reward)))
    assert len({round(v, 6) for v in losses.values()}) == 3


# -- positional-encoding approximation ----------------------------------------------
def test_random_walk_pe_closed_form():
    g = _labelled(nx.path_graph(3))
    pe = random_walk_pe(g, np.array([0, 1, 0]), length=3)
    c = np.log(np.array([2.0, 3.0, 2.0]))
    P = np.array([[0, 1, 0], [0.5, 0, 0.5], [0, 1, 0]])
    np.testing.assert_allclose(pe, np.stack([c, c @ P, c @ P @ P], axis=1))
    assert pe[0].tolist() == pe[2].tolist()  # automorphic ends share an encoding
    # start=2: the official SA-GFN code's powers, [c, cP^2, cP^3]
    pe2 = random_walk_pe(g, np.array([0, 1, 0]), length=3, start=2)
    np.testing.assert_allclose(pe2, np.stack([c, c @ P @ P, c @ P @ P @ P], axis=1))
    with pytest.raises(ValueError, match="start"):
        random_walk_pe(g, np.array([0, 1, 0]), length=3, start=0)


def test_pe_sets_contain_isomorphism_sets_on_small_graphs():
    """Automorphic nodes share encodings, so PE sets contain the exact sets; the official
    edge signature pe[u] + pe[v] occasionally merges more (the approximation's error)."""
    env = GraphEnv(max_nodes=4, n_labels=2)
    space = build_state_space(env)
    checked = over_f = over_b = 0
    for g in space.graphs:
        acts = env.forward_actions(g)
        classes = child_classes(env, g, acts, space.cache)
        pe = node_pe(env, g)
        for i, a in enumerate(acts):
            exact = equivalent_action_indices(env, g, i, classes=classes)
            got = pe_equivalent_action_indices(env, g, acts, i, pe)
            assert set(exact) <= set(got)
            over_f += got != exact
            if a.kind != STOP:
                child = env.step(g, a)
                got_b = pe_backward_equivalent_count(
                    env, child, env.backward_of(g, a), node_pe(env, child)
                )
                want_b = backward_equivalent_count(env, child, g, space.cache)
                assert got_b >= want_b
                over_b += got_b != want_b
            checked += 1
    assert checked > 100
    assert 0 < over_f < 0.05 * checked and over_b < 0.05 * checked


def test_pe_over_merges_on_a_regular_asymmetric_graph():
    # Frucht graph: 3-regular with a trivial automorphism group, so every node has the same
    # random-walk encoding although adding a leaf at different nodes gives different graphs.
    g = _labelled(nx.frucht_graph())
    env = GraphEnv(max_nodes=13)
    acts = env.forward_actions(g)
    i = next(i for i, a in enumerate(acts) if a.kind != STOP)
    assert len(pe_equivalent_action_indices(env, g, acts, i, node_pe(env, g))) == 12
    assert len(equivalent_action_indices(env, g, i)) < 12


def test_pe_correction_trains_and_matches_exact_sets(frag_env):
    env = GraphEnv(max_nodes=4)
    pe_gfn = _gfn(env, symmetry_correction="pe")
    exact = _gfn(env, symmetry_correction="exact")
    trajs = pe_gfn.sample_trajectories(8, epsilon=0.5)
    ref = exact.sample_trajectories(8, epsilon=0.5)  # same seed: same graphs
    assert [t.equivalents for t in trajs] == [t.equivalents for t in ref]
    assert [t.backward_equivalents for t in trajs] == [t.backward_equivalents for t in ref]
    frag_env.max_fragments = 2
    gfn = _gfn(frag_env, symmetry_correction="pe")
    gfn.train(cycle_reward, 2)
    assert all(math.isfinite(v) for v in gfn.history_)


# -- approximate counting -------------------------------------------------------------
def test_wl_bound_is_an_upper_bound_with_closed_forms():
    space = build_state_space(GraphEnv(max_nodes=6))
    n_exact = sum(wl_automorphism_bound(g) == count_automorphisms(g) for g in space.graphs[1:])
    assert all(wl_automorphism_bound(g) >= count_automorphisms(g) for g in space.graphs[1:])
    assert 0 < n_exact < len(space) - 1
    assert wl_automorphism_bound(_labelled(nx.path_graph(3))) == 2  # exact
    assert wl_automorphism_bound(_labelled(nx.path_graph(4))) == 4  # 2! 2!, |Aut(P4)| = 2
    assert wl_automorphism_bound(_labelled(nx.cycle_graph(4))) == 24  # |Aut(C4)| = 8
    assert count_automorphisms(_labelled(nx.cycle_graph(4))) == 8
    assert wl_automorphism_bound(_labelled(nx.star_graph(4))) == 24  # exact: 4!
    assert wl_automorphism_bound(_labelled(nx.path_graph(5)), iterations=0) == 120


def test_approximate_correction_uses_the_bound():
    env = GraphEnv(max_nodes=4)
    gfn = _gfn(env, symmetry_correction="approximate")
    trajs = gfn.sample_trajectories(16, epsilon=1.0)
    got = gfn.log_rewards(trajs, cycle_reward).numpy()
    want = [math.log(cycle_reward(t.graph) * wl_automorphism_bound(t.graph)) for t in trajs]
    np.testing.assert_allclose(got, want, rtol=1e-6)


# -- designated stems -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("stems", "closed"),
    [([[0], [1]], True), ([[0], [0, 2]], True), ([[0], [0]], False), ([[0], [0, 1]], False)],
)
def test_designated_stem_identity_by_enumeration(stems, closed):
    """M(G->G') |Aut(G')| = |Aut(G)| sum_b X(w_b), X(w) = |Stab(w)| |Orb(w) ∩ S|."""
    env = FragmentEnv([_single(), _p3()], max_fragments=3, stems=stems)
    assert env.stems_orbit_closed is closed
    space = build_state_space(env)
    checked = 0
    for s, kids in enumerate(space.children):
        for c, idx in kids.items():
            child = space.graphs[c]
            target = space.cache.class_id(space.graphs[s])
            xs = [
                math.exp(env.log_stem_factor(child, b))
                for b in env.backward_actions(child)
                if space.cache.class_id(env.backward_step(child, b)) == target
            ]
            assert len(xs) == space.backward[c][s]
            lhs = len(idx) * math.exp(space.log_aut[c])
            assert lhs == pytest.approx(math.exp(space.log_aut[s]) * sum(xs)), (s, c)
            checked += 1
    assert checked > 5
    # the terminal SA-GFN factor is exact iff the stems are orbit-closed
    log_r = np.log(np.maximum(target_distribution(space, cycle_reward), 1e-300))
    pf, stop = optimal_state_policy(space, log_r)
    res = action_tb_residuals(space, pf, stop, log_r + space.log_correction)
    assert bool(np.abs(res).max() < 1e-9) == closed


def test_reward_scaling_refuses_non_closed_stems():
    env = FragmentEnv([_single(), _p3()], max_fragments=2, stems=[[0], [0]])
    for corr in (True, "flow_scaling", "approximate"):
        with pytest.raises(ValueError, match="symmetry_correction"):
            _gfn(env, symmetry_correction=corr)
    _gfn(env, symmetry_correction="exact").train(cycle_reward, 1)  # still supported


@pytest.mark.parametrize(
    ("stems", "match"),
    [
        ([[0]], "stems"),
        ([[0], []], r"stems\[1\]"),
        ([[0], [3]], r"stems\[1\]"),
        ([[0], [1, 1]], "duplicates"),
        ("ab", "stems"),
    ],
)
def test_stems_bad_inputs(stems, match):
    with pytest.raises(ValueError, match=match):
        FragmentEnv([_single(), _p3()], stems=stems)


def test_forward_of_and_backward_of_invert_each_other(frag_env):
    for env in (GraphEnv(max_nodes=4, n_labels=2), frag_env):
        space = build_state_space(env)
        for g in space.graphs:
            for a in env.forward_actions(g):
                if a.kind == STOP:
                    continue
                child = env.step(g, a)
                b = env.backward_of(g, a)
                assert b in env.backward_actions(child)
                assert nx.utils.graphs_equal(env.backward_step(child, b), g)
            for b in env.backward_actions(g):
                parent = env.backward_step(g, b)
                a = env.forward_of(g, b)
                assert a in env.forward_actions(parent)
                assert space.cache.class_id(env.step(parent, a)) == space.cache.class_id(g)


# -- likelihood estimator ---------------------------------------------------------------
def test_likelihood_estimator_matches_exact_distribution():
    env = GraphEnv(max_nodes=4)
    space = build_state_space(env)
    policy = GraphPolicy(env, hidden=16, n_layers=2, seed=3)
    p = exact_terminal_distribution(policy, space)
    graphs = space.graphs[1:]
    est = estimate_log_likelihood(policy, graphs, n_samples=400, seed=0)
    np.testing.assert_allclose(np.exp(est), p[1:], rtol=0.06)
    naive = estimate_log_likelihood(policy, graphs, n_samples=400, seed=0, correction="none")
    np.testing.assert_allclose(naive - est, space.log_aut[1:], atol=1e-9)
    approx = estimate_log_likelihood(
        policy, graphs, n_samples=400, seed=0, correction="approximate"
    )
    assert np.all(approx <= est + 1e-9)


def test_likelihood_bad_inputs(frag_env):
    env = GraphEnv(max_nodes=3)
    policy = GraphPolicy(env, hidden=8, n_layers=1, seed=0)
    g = _labelled(nx.path_graph(2))
    with pytest.raises(ValueError, match="correction"):
        estimate_log_likelihood(policy, [g], correction="bogus")
    with pytest.raises(ValueError, match="n_samples"):
        estimate_log_likelihood(policy, [g], n_samples=0)
    with pytest.raises(ValueError, match="graphs"):
        estimate_log_likelihood(policy, [])
    with pytest.raises(ValueError, match="max_nodes"):
        estimate_log_likelihood(policy, [_labelled(nx.path_graph(5))])
    with pytest.raises(TypeError, match="atom-based"):
        estimate_log_likelihood(GraphPolicy(frag_env, hidden=8, n_layers=1), [g])
    before = nx.to_dict_of_dicts(g)
    estimate_log_likelihood(policy, [g], n_samples=4)
    assert nx.to_dict_of_dicts(g) == before


def test_new_options_bad_inputs():
    env = GraphEnv(max_nodes=3)
    with pytest.raises(ValueError, match="pe_length"):
        _gfn(env, pe_length=0)
    with pytest.raises(ValueError, match="symmetry_correction"):
        _gfn(env, symmetry_correction="flow")
    with pytest.raises(ValueError, match="length"):
        random_walk_pe(_labelled(nx.path_graph(2)), np.zeros(2), length=0)
    with pytest.raises(ValueError, match="node_type"):
        random_walk_pe(_labelled(nx.path_graph(2)), np.zeros(3))
    with pytest.raises(ValueError, match="empty"):
        wl_automorphism_bound(nx.Graph())
    with pytest.raises(ValueError, match="iterations"):
        wl_automorphism_bound(_labelled(nx.path_graph(2)), iterations=-1)


# -- learned backward policy ------------------------------------------------------------
@pytest.mark.parametrize("corr", ["none", "reward_scaling", "flow_scaling", "exact", "pe"])
@pytest.mark.parametrize("loss", ["tb", "db"])
def test_learned_backward_policy_starts_uniform(corr, loss, frag_env):
    """Zero-initialised backward heads give exactly the uniform backward policy's loss."""
    for env in (GraphEnv(max_nodes=4), frag_env):
        uni = GFlowNet(
            GraphPolicy(env, hidden=16, n_layers=2, seed=0, backward=True),
            loss=loss,
            symmetry_correction=corr,
            seed=0,
        )
        learned = GFlowNet(
            uni.policy, loss=loss, symmetry_correction=corr, backward_policy="learned"
        )
        trajs = uni.sample_trajectories(8, epsilon=0.5)
        log_r = uni.log_rewards(trajs, cycle_reward)
        with torch.no_grad():
            a, b = float(uni.compute_loss(trajs, log_r)), float(learned.compute_loss(trajs, log_r))
        assert a == pytest.approx(b, rel=1e-5, abs=1e-6)


def test_learned_backward_policy_trains(frag_env):
    frag_env.max_fragments = 2
    for env in (GraphEnv(max_nodes=4), frag_env):
        policy = GraphPolicy(env, hidden=16, n_layers=2, seed=0, backward=True)
        gfn = GFlowNet(policy, loss="tb", backward_policy="learned", lr=1e-2, seed=0)
        gfn.train(cycle_reward, 5)
        assert all(math.isfinite(v) for v in gfn.history_)
        w = policy.back_node_head[-1].weight
        assert float(w.detach().abs().sum()) > 0  # the backward heads received gradients


def test_learned_backward_policy_bad_inputs():
    env = GraphEnv(max_nodes=3)
    with pytest.raises(ValueError, match="backward=True"):
        _gfn(env, backward_policy="learned")
    with pytest.raises(ValueError, match="backward_policy"):
        _gfn(env, backward_policy="random")
    from gfn_symmetry import featurize

    policy = GraphPolicy(env, hidden=8, n_layers=1, backward=True)
    with pytest.raises(ValueError, match="featurize"):
        policy.forward_backward(featurize(env, [_labelled(nx.path_graph(2))]))
    with pytest.raises(ValueError, match="backward heads"):
        GraphPolicy(env, hidden=8, n_layers=1).forward_backward(
            featurize(env, [_labelled(nx.path_graph(2))], backward=True)
        )


def test_hand_built_graphs_without_edge_kinds_compare_as_states():
    # a networkx graph built by hand has no "kind" on its edges; the environment's states
    # carry kind=0, so the comparison failed silently: B(triangle -> path) was 0, not 3, and
    # the path was "not in the space"
    import networkx as nx

    from gfn_symmetry import (
        FragmentEnv,
        GraphEnv,
        backward_equivalent_count,
        build_state_space,
        molecule_fragments,
    )

    env = GraphEnv(max_nodes=3, n_labels=1)
    path, tri = nx.path_graph(3), nx.cycle_graph(3)
    for g in (path, tri):
        nx.set_node_attributes(g, 0, "label")
    assert backward_equivalent_count(env, tri, path) == 3
    space = build_state_space(env)
    assert space.graphs[space.index(path)].number_of_edges() == 2
    with pytest.raises(ValueError, match="kind"):
        bad = nx.Graph([(0, 1, {"kind": 5}), (1, 2, {"kind": 0})])
        nx.set_node_attributes(bad, 0, "label")
        backward_equivalent_count(env, tri, bad)
    frag = FragmentEnv(molecule_fragments()[:2], max_fragments=2)
    g = frag.step(frag.initial_state(), frag.forward_actions(frag.initial_state())[0])
    plain = nx.Graph(g)
    for e in plain.edges:
        del plain.edges[e]["kind"]
    if plain.number_of_edges():
        with pytest.raises(ValueError, match="kind"):  # two kinds: a missing one is ambiguous
            frag.validate_state(plain)
