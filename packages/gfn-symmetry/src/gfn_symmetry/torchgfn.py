"""The package's graph-building MDP inside torchgfn (optional; ``pip install torchgfn``).

torchgfn's own ``GraphBuilding`` allows disconnected graphs and isolated-node actions, so its
state space is not this package's. :func:`make_env` wraps a
:class:`~gfn_symmetry.dense_env.DenseGraphEnv` as a torchgfn ``DiscreteEnv`` with the same
actions (the exit action moves from index 0 to torchgfn's last index), states in canonical
labelling (as :class:`~gfn_symmetry.dense.DenseGFlowNet` keeps them) and a reward cache per
isomorphism class; ``symmetry_aware=True`` is the SA-GFN wrapper ``R(x) |Aut(x)|``.

torchgfn scores a backward step with the backward policy *at the index of the forward action*,
which presumes that the inverse of a forward action has the same index. With canonical states
the removed node or edge has other indices in the child, so :func:`uniform_backward` is a
backward estimator whose log-probability is the uniform ``-log n_back(s')`` over the child's
parents (leaves and non-bridge edges), whatever the index: the same ``P_B`` as the package's
trainers. It cannot sample backward (no backward trajectories / replay of terminal states).

torchgfn 2.4 pins ``numpy<2``; it is not a dependency of this package. Run with an overlay::

    uv run --with torchgfn python tools/bench/gfn_bench.py --tables torchgfn
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import ClassVar

import networkx as nx
import numpy as np
import torch
from torch import nn

from gfn_symmetry.dense_env import DenseGraphEnv
from gfn_symmetry.exact import StateSpace, state_policy_distribution
from gfn_symmetry.rewards import log_reward as _log_reward

__all__ = [
    "decode",
    "encode",
    "make_env",
    "mlp_policy",
    "terminal_distribution",
    "uniform_backward",
]


def encode(adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Flat long state tensors (B, 1 + N + N (N - 1) / 2): size, node types (-1 pads), upper
    triangle of the adjacency."""
    N = adj.shape[-1]
    iu, ju = torch.triu_indices(N, N, offset=1)
    return torch.cat([n[:, None], types, adj[:, iu, ju].long()], 1)


def decode(x: torch.Tensor, N: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inverse of :func:`encode`: ``adj`` (B, N, N) bool, ``types`` (B, N), ``n`` (B,)."""
    iu, ju = torch.triu_indices(N, N, offset=1)
    adj = torch.zeros(x.shape[0], N, N, dtype=torch.bool)
    adj[:, iu, ju] = x[:, 1 + N :] > 0
    return adj | adj.transpose(1, 2), x[:, 1 : 1 + N].clone(), x[:, 0].clone()


def _require_torchgfn():
    try:
        import gfn  # noqa: F401
    except ImportError as e:  # pragma: no cover - exercised only without torchgfn
        raise ImportError(
            "gfn_symmetry.torchgfn needs torchgfn (`pip install torchgfn`; it pins numpy<2, "
            "so use a separate environment, e.g. `uv run --with torchgfn ...`)"
        ) from e


def make_env(
    dense_env: DenseGraphEnv,
    reward_fn: Callable[[nx.Graph], float],
    symmetry_aware: bool = False,
    reward_floor: float = 1e-8,
):
    """A torchgfn ``DiscreteEnv`` on ``dense_env``'s MDP (canonical states).

    Parameters
    ----------
    dense_env : DenseGraphEnv
    reward_fn : callable networkx.Graph -> float
        Reward of a terminal graph (the package's reward functions).
    symmetry_aware : bool, default=False
        Train on ``R(x) |Aut(x)|`` (SA-GFN's reward scaling).
    reward_floor : float
        Rewards below it are clipped (log of 0).

    Returns
    -------
    gfn.env.DiscreteEnv
        With ``n_actions = dense_env.A`` (exit last); attribute ``dense_env``.
    """
    _require_torchgfn()
    from gfn.env import DiscreteEnv
    from gfn.states import DiscreteStates

    if not isinstance(dense_env, DenseGraphEnv):
        raise TypeError(f"dense_env must be a DenseGraphEnv, got {type(dense_env).__name__}")
    if not callable(reward_fn):
        raise TypeError("reward_fn must be callable")
    N, A = dense_env.N, dense_env.A
    D = 1 + N + N * (N - 1) // 2
    s0 = encode(*dense_env.empty(1))[0]
    sf = torch.full((D,), -2, dtype=torch.long)

    def forward_masks(x):
        flat = x.reshape(-1, D)
        out = torch.zeros(flat.shape[0], A, dtype=torch.bool)
        real = flat[:, 0] >= 0  # the sink state has size -2
        if real.any():
            m = dense_env.forward_mask(*decode(flat[real], N))
            out[real] = torch.cat([m[:, 1:], m[:, :1]], 1)  # exit: index 0 -> last
        return out.reshape(*x.shape[:-1], A)

    def n_back(x):
        flat = x.reshape(-1, D)
        out = torch.zeros(flat.shape[0], dtype=torch.long)
        real = flat[:, 0] > 0
        if real.any():
            adj, _, n = decode(flat[real], N)
            out[real] = dense_env.n_backward(adj, n)
        return out.reshape(x.shape[:-1])

    class GraphStates(DiscreteStates):
        state_shape = (D,)
        n_actions = A

        def _compute_forward_masks(self):
            return forward_masks(self.tensor)

        def _compute_backward_masks(self):
            # the count of parents (indices are not the inverse actions; see module docstring)
            k = n_back(self.tensor)
            return torch.arange(A - 1) < k[..., None]

    GraphStates.s0, GraphStates.sf = s0, sf

    class GraphEnvTorchgfn(DiscreteEnv):
        def __init__(self):
            self.dense_env, self.symmetry_aware = dense_env, bool(symmetry_aware)
            self._log_r: dict[bytes, float] = {}
            super().__init__(n_actions=A, s0=s0, state_shape=(D,), sf=sf)

        def make_states_class(self):
            return GraphStates

        def step(self, states, actions):
            x = states.tensor
            a = actions.tensor.reshape(-1) + 1  # torchgfn index -> dense index
            adj, types, n = dense_env.step(*decode(x, N), a)
            adj, types, _ = dense_env.canonicalize(adj, types, n)
            return self.States(encode(adj, types, n))

        def backward_step(self, states, actions):
            raise NotImplementedError(
                "backward sampling is not supported: torchgfn's backward action indices do not "
                "invert canonical-state forward actions (see gfn_symmetry.torchgfn)"
            )

        def log_reward(self, states):
            x = states.tensor.reshape(-1, D)
            adj, types, n = decode(x, N)
            out = torch.empty(x.shape[0])
            for b in range(x.shape[0]):
                key = x[b].numpy().tobytes()
                v = self._log_r.get(key)
                if v is None:
                    g = dense_env.to_networkx(adj[b : b + 1], types[b : b + 1], n[b : b + 1])[0]
                    v = _log_reward(reward_fn, g, reward_floor)
                    if self.symmetry_aware:
                        sl = slice(b, b + 1)
                        v += float(dense_env.log_automorphisms(adj[sl], types[sl], n[sl])[0])
                    self._log_r[key] = v
                out[b] = v
            return out.reshape(states.batch_shape)

    return GraphEnvTorchgfn()


class _StateFeatures(nn.Module):
    """One-hot node types and the adjacency's upper triangle of flat states (float)."""

    def __init__(self, N: int, L: int):
        super().__init__()
        self.N, self.L = N, L

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N = self.N
        t = x[..., 1 : 1 + N]
        onehot = torch.nn.functional.one_hot((t + 1).clamp(min=0), self.L + 1).flatten(-2)
        return torch.cat([onehot.float(), x[..., 1 + N :].float().clamp(min=0)], -1)


def mlp_policy(env, hidden: int = 128, layers: int = 2):
    """torchgfn forward policy: an MLP on one-hot types and adjacency (``DiscretePolicyEstimator``).

    Returns
    -------
    gfn.estimators.DiscretePolicyEstimator
    """
    _require_torchgfn()
    from gfn.estimators import DiscretePolicyEstimator
    from gfn.preprocessors import Preprocessor

    de = env.dense_env
    feats = _StateFeatures(de.N, de.L)
    d_in = de.N * (de.L + 1) + de.N * (de.N - 1) // 2

    class _Pre(Preprocessor):
        def preprocess(self, states):
            return feats(states.tensor)

    dims = [d_in] + [hidden] * layers
    mods: list[nn.Module] = []
    for a, b in itertools.pairwise(dims):
        mods += [nn.Linear(a, b), nn.ReLU()]
    module = nn.Sequential(*mods, nn.Linear(dims[-1], env.n_actions))
    module.input_dim = d_in  # torchgfn reads it in repr
    return DiscretePolicyEstimator(module, env.n_actions, preprocessor=_Pre(d_in))


def uniform_backward(env):
    """torchgfn backward estimator with ``log P_B(s | s') = -log n_back(s')`` at any index."""
    _require_torchgfn()
    from gfn.estimators import DiscretePolicyEstimator
    from gfn.preprocessors import Preprocessor

    class _Parents(Preprocessor):  # the backward mask marks n_back(s') slots
        def preprocess(self, states):
            return states.backward_masks.float()

    class _Constant(torch.distributions.Distribution):
        arg_constraints: ClassVar[dict] = {}

        def __init__(self, log_p):
            self.log_p = log_p
            super().__init__(batch_shape=log_p.shape, validate_args=False)

        def log_prob(self, actions):
            return self.log_p.expand(actions.reshape(self.log_p.shape).shape)

        def sample(self, sample_shape=()):
            raise NotImplementedError("uniform_backward cannot sample backward actions")

    class _Uniform(DiscretePolicyEstimator):
        def to_probability_distribution(self, states, module_output, **kw):
            return _Constant(-torch.log(module_output.sum(-1).clamp(min=1.0)))

    return _Uniform(nn.Identity(), env.n_actions, preprocessor=_Parents(env.n_actions - 1),
                    is_backward=True)  # fmt: skip


@torch.no_grad()
def terminal_distribution(policy, env, space: StateSpace, chunk: int = 2048) -> np.ndarray:
    """Exact terminal distribution of a torchgfn forward policy on an enumerated space.

    Parameters
    ----------
    policy : gfn.estimators.DiscretePolicyEstimator
        From :func:`mlp_policy` (or any forward estimator on :func:`make_env`'s states).
    env : the environment from :func:`make_env`
    space : StateSpace
        :func:`~gfn_symmetry.exact.build_state_space` on the equivalent ``GraphEnv``.

    Returns
    -------
    ndarray, shape (S,), over ``space``'s states
    """
    de = env.dense_env
    genv = space.env
    if (genv.max_nodes, genv.n_labels, genv.max_edges) != (de.N, de.L, de.max_edges):
        raise ValueError("space and env describe different environments")
    adj, types, n = de.from_networkx(space.graphs, validate=False)
    adj, types, keys = de.canonicalize(adj, types, n)
    index = {k: i for i, k in enumerate(keys)}
    pf_children: list[dict[int, float]] = []
    pf_stop = np.zeros(len(space))
    was = policy.training
    policy.eval()
    for lo in range(0, len(space), chunk):
        sl = slice(lo, lo + chunk)
        states = env.States(encode(adj[sl], types[sl], n[sl]))
        dist = policy.to_probability_distribution(states, policy(states))
        p = dist.probs.reshape(states.tensor.shape[0], -1).double()
        p = torch.cat([p[:, -1:], p[:, :-1]], 1)  # back to the dense layout (STOP first)
        for j in range(p.shape[0]):
            s = lo + j
            acts = torch.nonzero(p[j] > 0).flatten()
            acts = acts[acts != 0]
            pf_stop[s] = float(p[j, 0])
            kids: dict[int, float] = {}
            if len(acts):
                rows = torch.full((len(acts),), s)
                ca, ct, cn = de.step(adj[rows], types[rows], n[rows], acts)
                _, _, ck = de.canonicalize(ca, ct, cn)
                for a, k in zip(acts.tolist(), ck, strict=True):
                    c = index[k]
                    kids[c] = kids.get(c, 0.0) + float(p[j, a])
            pf_children.append(kids)
    policy.train(was)
    return state_policy_distribution(space, pf_children, pf_stop)
