import math

import networkx as nx
import numpy as np
import pytest
import torch

from gfn_symmetry import (
    GFlowNet,
    GraphEnv,
    GraphPolicy,
    build_state_space,
    cycle_reward,
    exact_terminal_distribution,
    l1_distance,
    log_symmetry_correction,
    target_distribution,
    uniform_reward,
)


def _gfn(env, **kw):
    return GFlowNet(GraphPolicy(env, hidden=16, n_layers=2, seed=0), seed=0, **kw)


def test_exact_transition_correction_equals_reward_scaling_for_tb():
    """For TB with an equivariant policy, summing equivalent actions at every step
    telescopes to the |Aut(x)| reward scaling (paper Sec. 4), trajectory by trajectory."""
    env = GraphEnv(max_nodes=4)
    exact = _gfn(env, symmetry_correction="exact")
    scaled = _gfn(env, symmetry_correction=True)
    trajs = exact.sample_trajectories(8, epsilon=0.5)
    log_r = exact.log_rewards(trajs, cycle_reward)
    with torch.no_grad():
        loss_exact = float(exact.compute_loss(trajs, log_r))
        loss_scaled = float(scaled.compute_loss(trajs, scaled.log_rewards(trajs, cycle_reward)))
        loss_vanilla = float(_gfn(env, symmetry_correction=False).compute_loss(trajs, log_r))
    assert loss_exact == pytest.approx(loss_scaled, rel=1e-5)
    assert loss_vanilla != pytest.approx(loss_scaled, rel=1e-3)


def test_fragment_env_trains_with_every_correction(frag_env):
    frag_env.max_fragments = 2
    for corr in (False, True, "exact"):
        gfn = _gfn(frag_env, symmetry_correction=corr)
        gfn.train(cycle_reward, 2)
        assert all(math.isfinite(v) for v in gfn.history_)


def test_training_removes_symmetry_bias():
    env = GraphEnv(max_nodes=3)
    space = build_state_space(env)
    target = target_distribution(space, uniform_reward)
    dists = {}
    for corr in (False, True):
        gfn = _gfn(env, symmetry_correction=corr, lr=1e-2, batch_size=16)
        gfn.train(uniform_reward, 60)
        dists[corr] = exact_terminal_distribution(gfn.policy, space)
    tri = int(np.argmax(space.log_aut))  # K3, |Aut| = 6
    # vanilla converges towards the paper's biased fixed point p ∝ R / |Aut| (K3: 1/13, not 1/4)
    biased = np.where(space.terminal, target / np.exp(space.log_aut), 0.0)
    assert l1_distance(dists[False], biased / biased.sum()) < 0.1
    assert dists[False][tri] < 0.15
    assert l1_distance(dists[True], target) < 0.15
    assert l1_distance(dists[True], target) < l1_distance(dists[False], target) / 2


@pytest.mark.parametrize("loss", ["db", "subtb"])
def test_other_losses_train_and_sample(loss):
    env = GraphEnv(max_nodes=3)
    gfn = _gfn(env, loss=loss, symmetry_correction=True, lr=1e-2)
    gfn.train(cycle_reward, 5)
    assert len(gfn.history_) == 5 and all(math.isfinite(v) for v in gfn.history_)
    graphs = gfn.sample(7)
    assert len(graphs) == 7
    for g in graphs:
        env.validate_state(g)
        assert g.number_of_nodes() >= 1


def test_log_symmetry_correction_values(frag_env):
    env = GraphEnv(max_nodes=4)
    k3 = nx.complete_graph(3)
    nx.set_node_attributes(k3, 0, "label")
    assert log_symmetry_correction(env, k3) == pytest.approx(math.log(6))
    g = frag_env.initial_state()
    g = frag_env.step(g, frag_env.forward_actions(g)[1])  # one dimer: |Aut(x)| = |Aut(F)| = 2
    assert log_symmetry_correction(frag_env, g) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="empty"):
        log_symmetry_correction(env, nx.Graph())


def test_reward_fn_receives_a_copy():
    env = GraphEnv(max_nodes=3)
    gfn = _gfn(env)

    def destructive(g):
        g.clear()
        return 1.0

    trajs = gfn.sample_trajectories(4)
    gfn.log_rewards(trajs, destructive)
    assert all(t.graph.number_of_nodes() > 0 for t in trajs)


@pytest.mark.parametrize(
    ("reward", "exc", "match"),
    [
        (lambda g: -1.0, ValueError, "negative"),
        (lambda g: float("nan"), ValueError, "non-finite"),
        (lambda g: float("inf"), ValueError, "non-finite"),
        (lambda g: "high", TypeError, "real number"),
    ],
)
def test_bad_rewards(reward, exc, match):
    gfn = _gfn(GraphEnv(max_nodes=3))
    with pytest.raises(exc, match=match) as info:
        gfn.train(reward, 1)
    assert "reward_fn" in str(info.value)


def test_zero_reward_is_floored():
    gfn = _gfn(GraphEnv(max_nodes=3), reward_floor=1e-4)
    trajs = gfn.sample_trajectories(3)
    vals = gfn.log_rewards(trajs, lambda g: 0.0) - torch.tensor(
        [log_symmetry_correction(gfn.env, t.graph) for t in trajs]
    )
    np.testing.assert_allclose(vals.numpy(), math.log(1e-4), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"loss": "fm"}, "loss"),
        ({"symmetry_correction": "sometimes"}, "symmetry_correction"),
        ({"lr": -1.0}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"batch_size": 0}, "batch_size"),
        ({"epsilon": 1.5}, "epsilon"),
        ({"subtb_lambda": 0}, "subtb_lambda"),
    ],
)
def test_bad_hyperparameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _gfn(GraphEnv(max_nodes=3), **kwargs)


def test_bad_call_arguments():
    gfn = _gfn(GraphEnv(max_nodes=3))
    with pytest.raises(TypeError, match="policy"):
        GFlowNet("policy")
    with pytest.raises(ValueError, match="steps"):
        gfn.train(uniform_reward, 0)
    with pytest.raises(TypeError, match="reward_fn"):
        gfn.train(3.0, 2)
    with pytest.raises(ValueError, match="n"):
        gfn.sample(0)
    with pytest.raises(ValueError, match="trajectories"):
        gfn.compute_loss([], torch.zeros(0))
