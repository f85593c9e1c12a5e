"""Exploration modes and the replay buffer."""

import pytest
import torch

from gfn_symmetry import GFlowNet, GraphEnv, GraphPolicy, cycle_reward


def _gfn(**kw):
    env = GraphEnv(max_nodes=3)
    return GFlowNet(GraphPolicy(env, hidden=8, n_layers=1, seed=0), seed=0, **kw)


def test_action_level_exploration_is_uniform_at_epsilon_one():
    gfn = _gfn(exploration="action")
    torch.manual_seed(0)
    trajs = gfn.sample_trajectories(200, epsilon=1.0)
    # first step from the empty graph has one action; second step: STOP vs add-node vs ...
    firsts = [t.actions[1] for t in trajs if len(t.actions) > 1]
    n_actions = len(gfn.env.forward_actions(trajs[0].states[1]))
    counts = torch.bincount(torch.tensor(firsts), minlength=n_actions).float()
    assert counts.min() > 0 and (counts / counts.sum() - 1 / n_actions).abs().max() < 0.15


def test_replay_buffer_fills_and_mixes():
    gfn = _gfn(replay_size=20, replay_fraction=0.5, batch_size=8)
    gfn.train(cycle_reward, steps=6)
    assert len(gfn.buffer_) == 20  # FIFO capacity
    assert all(isinstance(r, float) for _, r in gfn.buffer_)
    with pytest.raises(ValueError, match="replay_size"):
        _gfn(replay_size=-1)
    with pytest.raises(ValueError, match="replay_fraction"):
        _gfn(replay_fraction=1.0)
    with pytest.raises(ValueError, match="exploration"):
        _gfn(exploration="node")


def test_huge_rewards_warn_that_log_z_cannot_catch_up():
    import warnings

    from gfn_symmetry import DenseGFlowNet, DenseGraphEnv, DenseGraphPolicy

    def huge(g):
        return 1e30 * cycle_reward(g)  # log R ~ 69: TB spends ~690 steps moving log Z

    with pytest.warns(UserWarning, match="nats from"):
        _gfn(batch_size=4).train(huge, steps=3)
    dense = DenseGFlowNet(DenseGraphPolicy(DenseGraphEnv(3, 2), 8, 1), seed=0, batch_size=4)
    with pytest.warns(UserWarning, match="nats from"):
        dense.train(huge, steps=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ordinary rewards, and huge ones divided out: silent
        _gfn(batch_size=4).train(cycle_reward, steps=3)
        gfn = _gfn(batch_size=4)
        gfn.log_z.data.fill_(69.0)  # log Z started at the rewards' scale
        gfn.train(huge, steps=3)
