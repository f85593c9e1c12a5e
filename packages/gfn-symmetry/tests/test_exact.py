import math

import numpy as np
import pytest
import torch

from gfn_symmetry import (
    GraphEnv,
    GraphPolicy,
    action_tb_residuals,
    build_state_space,
    cycle_reward,
    exact_terminal_distribution,
    featurize,
    optimal_state_policy,
    state_policy_distribution,
    target_distribution,
    uniform_reward,
)
from gfn_symmetry.batching import segment_log_softmax
from gfn_symmetry.env import STOP


def _brute_force_distribution(env, policy, space):
    """Sum the policy's probability over every raw action sequence (no state merging)."""
    p = np.zeros(len(space))
    stack = [(env.initial_state(), 1.0)]
    while stack:
        g, prob = stack.pop()
        batch = featurize(env, [g])
        with torch.no_grad():
            logits, _ = policy(batch)
        probs = segment_log_softmax(logits.double(), batch.act_graph, 1).exp().numpy()
        for a, pa in zip(batch.actions[0], probs, strict=True):
            if a.kind == STOP:
                p[space.index(g)] += prob * pa
            else:
                stack.append((env.step(g, a), prob * pa))
    return p


@pytest.mark.parametrize("which", ["atom", "fragment"])
def test_dp_distribution_matches_brute_force_over_action_sequences(which, frag_env):
    env = GraphEnv(max_nodes=3, n_labels=2) if which == "atom" else frag_env
    if which == "fragment":
        env.max_fragments = 2
    space = build_state_space(env)
    policy = GraphPolicy(env, hidden=16, n_layers=2, seed=3)
    exact = exact_terminal_distribution(policy, space)
    assert exact.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(exact, _brute_force_distribution(env, policy, space), atol=1e-10)


def test_optimal_state_policy_samples_target(atom_env):
    space = build_state_space(atom_env)
    target = target_distribution(space, cycle_reward)
    pf, stop = optimal_state_policy(space, np.log(np.where(space.terminal, target, 1.0)))
    np.testing.assert_allclose(state_policy_distribution(space, pf, stop), target, atol=1e-12)
    for s, kids in enumerate(pf):  # a proper distribution in every state
        assert sum(kids.values()) + stop[s] == pytest.approx(1.0)


def _log(x):
    return np.log(np.where(x > 0, x, 1.0))


@pytest.mark.parametrize("env_kind", ["atom", "fragment"])
def test_vanilla_optimum_is_biased_and_sa_gfn_optimum_is_not(env_kind, frag_env):
    """Brute force over all trajectories: which sampler zeroes each action-level TB loss."""
    env = GraphEnv(max_nodes=4) if env_kind == "atom" else frag_env
    space = build_state_space(env)
    target = target_distribution(space, uniform_reward if env_kind == "atom" else cycle_reward)
    log_r = _log(target)
    sa_reward = log_r + space.log_correction
    # 1) the exact sampler of R is a global minimiser of the SA-GFN loss, not of vanilla's
    pf, stop = optimal_state_policy(space, log_r)
    assert np.abs(action_tb_residuals(space, pf, stop, sa_reward)).max() < 1e-9
    assert np.abs(action_tb_residuals(space, pf, stop, log_r)).max() > 0.1
    # 2) the sampler that zeroes vanilla's loss targets R / exp(correction): biased
    pf_v, stop_v = optimal_state_policy(space, log_r - space.log_correction)
    assert np.abs(action_tb_residuals(space, pf_v, stop_v, log_r)).max() < 1e-9
    vanilla = state_policy_distribution(space, pf_v, stop_v)
    term = space.terminal
    ratio = vanilla[term] / target[term]
    expected = np.exp(-space.log_correction[term])
    np.testing.assert_allclose(ratio, expected / (expected * target[term]).sum(), rtol=1e-9)
    if env_kind == "atom":
        # symmetric graphs are under-sampled: ratio falls with |Aut|
        aut = np.exp(space.log_aut[term])
        assert np.corrcoef(np.log(ratio), np.log(aut))[0, 1] == pytest.approx(-1.0)
        k4 = int(np.argmax(space.log_aut))
        assert vanilla[k4] < target[k4] / 5
    else:
        # graphs made of symmetric fragments (the dimer, |Aut| = 2) are over-sampled
        n_dimers = np.array([env.fragment_types(g).count(1) for g in space.graphs])[term]
        asym = np.exp(space.log_aut[term]) == 1
        assert (ratio[asym & (n_dimers == 2)] > ratio[asym & (n_dimers == 0)].max()).all()


def test_number_of_paths_matches_enumeration(atom_env):
    space = build_state_space(atom_env)
    pf, stop = optimal_state_policy(space, np.zeros(len(space)))
    n_paths = len(action_tb_residuals(space, pf, stop, np.zeros(len(space))))
    # count state paths independently by DP over the DAG
    ways = np.zeros(len(space))
    ways[0] = 1
    for s in np.argsort(space.level, kind="stable"):
        for c in space.children[s]:
            ways[c] += ways[s]
    assert n_paths == int(ways[space.terminal].sum())


def test_bad_inputs(atom_env):
    with pytest.raises(TypeError, match="env"):
        build_state_space("env")
    with pytest.raises(ValueError, match="max_states"):
        build_state_space(atom_env, max_states=3)
    space = build_state_space(atom_env)
    with pytest.raises(ValueError, match="log_target"):
        optimal_state_policy(space, np.zeros(3))
    with pytest.raises(ValueError, match="reward_fn"):
        target_distribution(space, lambda g: -1.0)
    with pytest.raises(ValueError, match="reward_fn"):
        target_distribution(space, lambda g: math.nan)


def test_state_space_pickles(atom_env):
    import pickle

    space = build_state_space(atom_env)
    back = pickle.loads(pickle.dumps(space))
    assert len(back) == len(space)
    np.testing.assert_array_equal(back.log_aut, space.log_aut)
    for g in space.graphs:  # the reloaded cache still maps every graph to its state
        assert back.index(g) == space.index(g)
