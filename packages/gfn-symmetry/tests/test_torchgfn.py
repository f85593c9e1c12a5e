"""The torchgfn adapter: the package's MDP as a torchgfn DiscreteEnv (skipped without torchgfn,
which pins numpy<2: `uv run --with torchgfn pytest packages/gfn-symmetry/tests/test_torchgfn.py`)."""

import math

import numpy as np
import pytest
import torch

from gfn_symmetry import (
    DenseGraphEnv,
    GraphEnv,
    build_state_space,
    count_automorphisms,
    cycle_reward,
)
from gfn_symmetry.torchgfn import decode, encode


def _states(env: DenseGraphEnv, n: int, seed: int):
    """Random reachable states (canonical) of ``env``."""
    g = torch.Generator().manual_seed(seed)
    adj, types, k = env.empty(n)
    out = []
    for _ in range(env.N + 3):
        m = env.forward_mask(adj, types, k)
        m[:, 0] &= ~(m[:, 1:].any(1))  # keep growing while possible
        a = torch.multinomial(m.float(), 1, generator=g).squeeze(1)
        adj, types, k = env.step(adj, types, k, a)
        adj, types, _ = env.canonicalize(adj, types, k)
        out.append((adj, types, k))
    return out


def test_encode_decode_round_trip():
    env = DenseGraphEnv(5, 2)
    for adj, types, n in _states(env, 16, 0):
        a2, t2, n2 = decode(encode(adj, types, n), env.N)
        assert torch.equal(a2, adj) and torch.equal(t2, types) and torch.equal(n2, n)


def test_missing_torchgfn_is_a_named_error(monkeypatch):
    import builtins

    from gfn_symmetry import torchgfn

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "gfn" or name.startswith("gfn."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match="pip install torchgfn"):
        torchgfn.make_env(DenseGraphEnv(3, 1), cycle_reward)


@pytest.fixture(scope="module")
def tg():
    pytest.importorskip("gfn")
    from gfn_symmetry import torchgfn

    return torchgfn


def test_env_is_the_dense_mdp(tg):
    de = DenseGraphEnv(5, 2)
    env = tg.make_env(de, cycle_reward, symmetry_aware=True)
    assert env.n_actions == de.A
    for adj, types, n in _states(de, 8, 1):
        states = env.States(encode(adj, types, n))
        m = de.forward_mask(adj, types, n)
        assert torch.equal(states.forward_masks, torch.cat([m[:, 1:], m[:, :1]], 1))
        assert torch.equal(states.backward_masks.sum(1), de.n_backward(adj, n))
        ok = m[:, 1:].any(1)
        if not ok.any():
            continue
        a = torch.multinomial(m[ok, 1:].float(), 1).squeeze(1)  # a non-exit action, dense - 1
        nxt = env.step(
            env.States(encode(adj[ok], types[ok], n[ok])), env.actions_from_tensor(a[:, None])
        )
        wa, wt, wn = de.step(adj[ok], types[ok], n[ok], a + 1)
        wa, wt, _ = de.canonicalize(wa, wt, wn)
        assert torch.equal(nxt.tensor, encode(wa, wt, wn))
        # SA-GFN's reward wrapper: log R + log |Aut|
        lr = env.log_reward(nxt)
        graphs = de.to_networkx(wa, wt, wn)
        want = [
            math.log(cycle_reward(g)) + math.log(count_automorphisms(g, ("label",))) for g in graphs
        ]
        np.testing.assert_allclose(lr.numpy(), want, rtol=1e-5)


def test_uniform_backward_is_one_over_the_parent_count(tg):
    de = DenseGraphEnv(5, 2)
    env = tg.make_env(de, cycle_reward)
    pb = tg.uniform_backward(env)
    adj, types, n = _states(de, 16, 2)[-1]
    states = env.States(encode(adj, types, n))
    dist = pb.to_probability_distribution(states, pb(states))
    lp = dist.log_prob(torch.zeros(16, 1, dtype=torch.long))
    np.testing.assert_allclose(lp.numpy(), -np.log(de.n_backward(adj, n).numpy()), rtol=1e-6)


def test_terminal_distribution_matches_sampling(tg):
    from gfn.gflownet import TBGFlowNet

    torch.manual_seed(0)
    de = DenseGraphEnv(4, 1)
    env = tg.make_env(de, cycle_reward)
    pf = tg.mlp_policy(env, hidden=16)
    gfn = TBGFlowNet(pf=pf, pb=tg.uniform_backward(env), init_logZ=0.0)
    space = build_state_space(GraphEnv(4, 1))
    p = tg.terminal_distribution(pf, env, space)
    assert p.sum() == pytest.approx(1.0, abs=1e-6)  # float32 policy
    x = gfn.sample_terminating_states(env, 4000).tensor
    adj, types, n = decode(x, de.N)
    _, _, keys = de.canonicalize(adj, types, n)
    sa, st, sn = de.from_networkx(space.graphs, validate=False)
    index = {k: i for i, k in enumerate(de.canonicalize(sa, st, sn)[2])}
    freq = np.bincount([index[k] for k in keys], minlength=len(space)) / len(keys)
    assert np.abs(freq - p).sum() < 0.08
