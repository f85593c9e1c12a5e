"""Exact gold reference on enumerable graph spaces.

``build_state_space`` enumerates every isomorphism class reachable in an
environment together with, for every state transition :math:`G \\to G'`, the
forward multiplicity :math:`M(G\\to G')` (actions of a representative of ``G``
whose result is isomorphic to ``G'``) and the backward multiplicity
:math:`B(G'\\to G)`.  On that DAG:

* ``exact_terminal_distribution`` is the exact terminal distribution of a policy
  network (state-level transition probability = sum over equivalent actions);
* ``target_distribution`` is :math:`R(x)/\\sum_y R(y)`;
* ``optimal_state_policy`` is the unique forward policy that samples a given
  target under the uniform backward policy (flows computed by dynamic
  programming, :math:`F(s) = \\tilde R(s) + \\sum_{s'} F(s') P_B(s|s')`);
* ``action_tb_residuals`` evaluates the *action-level* trajectory-balance
  residual of such a policy on every complete trajectory (by brute force over
  all state paths), which shows which training reward a policy is optimal for.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import torch

from gfn_symmetry.automorphisms import IsoClassCache
from gfn_symmetry.batching import featurize, segment_log_softmax
from gfn_symmetry.env import STOP, GraphEnv
from gfn_symmetry.rewards import log_reward

__all__ = [
    "StateSpace",
    "action_tb_residuals",
    "build_state_space",
    "exact_terminal_distribution",
    "optimal_state_policy",
    "state_policy_distribution",
    "target_distribution",
]


class NotInSpaceError(KeyError, ValueError):
    """A graph isomorphic to no state of the space (a KeyError, as documented, and a
    ValueError: the argument is a bad value)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass
class StateSpace:
    """Enumerated DAG of isomorphism classes of an environment.

    Attributes
    ----------
    env : GraphEnv
    cache : IsoClassCache
    graphs : list of networkx.Graph, length S
        One representative per state; index 0 is the empty start graph.
    level : ndarray of int, shape (S,)
        Number of forward steps from the start graph.
    children : list of dict
        ``children[s][c]`` = list of action indices of ``graphs[s]`` leading to state ``c``
        (its length is :math:`M(s \\to c)`).
    stop_action : ndarray of int, shape (S,)
        Index of the STOP action of each state (``-1`` for the start graph).
    backward : list of dict
        ``backward[c][s]`` = :math:`B(c \\to s)`.
    n_backward : ndarray of int, shape (S,)
        Number of backward actions of each state.
    log_aut : ndarray of float, shape (S,)
        :math:`\\log|\\mathrm{Aut}|` of each state (0 for the start graph).
    log_correction : ndarray of float, shape (S,)
        SA-GFN log-reward offset (``env.terminal_correction_log``); 0 for the start.
    """

    env: GraphEnv
    cache: IsoClassCache
    graphs: list[nx.Graph] = field(default_factory=list)
    level: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    children: list[dict[int, list[int]]] = field(default_factory=list)
    stop_action: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    backward: list[dict[int, int]] = field(default_factory=list)
    n_backward: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    log_aut: np.ndarray = field(default_factory=lambda: np.zeros(0))
    log_correction: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.graphs)

    @property
    def terminal(self) -> np.ndarray:
        """Boolean mask (S,) of states that can stop (all but the empty graph)."""
        return self.stop_action >= 0

    def index(self, graph: nx.Graph) -> int:
        """State index of ``graph`` (``KeyError`` if it is not in the space).

        In a one-kind environment edges without ``kind`` are read as ``kind=0`` (a hand-built
        path was "not in the space" before).
        """
        cid = self.cache.class_id(self.env.with_edge_kinds(graph))
        if cid not in self._by_class:
            raise NotInSpaceError(f"graph: no state of this space is isomorphic to it ({graph})")
        return self._by_class[cid]


def build_state_space(env: GraphEnv, max_states: int = 20000) -> StateSpace:
    """Enumerate all isomorphism classes reachable in ``env``.

    Parameters
    ----------
    env : GraphEnv
        Environment with a small state space.
    max_states : int, default=20000
        Safety limit; a larger space raises ``ValueError``.

    Returns
    -------
    StateSpace
    """
    if not isinstance(env, GraphEnv):
        raise TypeError(f"env must be a GraphEnv, got {type(env).__name__}")
    if isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1:
        raise ValueError(f"max_states must be a positive int, got {max_states!r}")
    cache = IsoClassCache(env.node_attrs, env.edge_attrs)
    space = StateSpace(env=env, cache=cache)
    by_class: dict[int, int] = {}
    graphs, level, children, stops = [], [], [], []

    def add(g: nx.Graph, lev: int) -> int:
        cid = cache.class_id(g)
        if cid not in by_class:
            if len(graphs) >= max_states:
                raise ValueError(f"state space exceeds max_states={max_states}")
            by_class[cid] = len(graphs)
            graphs.append(g)
            level.append(lev)
        return by_class[cid]

    add(env.initial_state(), 0)
    s = 0
    while s < len(graphs):  # states are appended level by level (BFS)
        g = graphs[s]
        kids: dict[int, list[int]] = {}
        stop = -1
        for i, a in enumerate(env.forward_actions(g)):
            if a.kind == STOP:
                stop = i
                continue
            kids.setdefault(add(env.step(g, a), level[s] + 1), []).append(i)
        children.append(kids)
        stops.append(stop)
        s += 1
    backward: list[dict[int, int]] = []
    n_back = []
    for g in graphs:
        counts: dict[int, int] = {}
        acts = env.backward_actions(g)
        for b in acts:
            p = by_class[cache.class_id(env.backward_step(g, b))]
            counts[p] = counts.get(p, 0) + 1
        backward.append(counts)
        n_back.append(len(acts))
    log_aut = np.array([math.log(cache.automorphisms(g)) for g in graphs])
    corr = np.array(
        [
            0.0 if g.number_of_nodes() == 0 else env.terminal_correction_log(g, la)
            for g, la in zip(graphs, log_aut, strict=True)
        ]
    )
    space.graphs, space.level, space.children = graphs, np.array(level), children
    space.stop_action, space.backward, space.n_backward = (
        np.array(stops),
        backward,
        np.array(n_back),
    )
    space.log_aut, space.log_correction = log_aut, corr
    space._by_class = by_class
    return space


def _topological(space: StateSpace) -> np.ndarray:
    return np.argsort(space.level, kind="stable")


def target_distribution(space: StateSpace, reward_fn: Callable[[nx.Graph], float]) -> np.ndarray:
    """:math:`R(x)/Z` over states, shape (S,) (0 for the start graph)."""
    logs = np.array(
        [
            log_reward(reward_fn, g) if t else -np.inf
            for g, t in zip(space.graphs, space.terminal, strict=True)
        ]
    )
    p = np.exp(logs - logs.max())
    return p / p.sum()


@torch.no_grad()
def exact_terminal_distribution(
    policy: torch.nn.Module, space: StateSpace, chunk: int = 512
) -> np.ndarray:
    """Exact terminal distribution of a policy network on an enumerated space.

    Parameters
    ----------
    policy : GraphPolicy
        Forward policy; action probabilities are summed over equivalent actions.
    space : StateSpace
    chunk : int, default=512
        States per forward pass.

    Returns
    -------
    ndarray, shape (S,)
        Probability of terminating in each state.
    """
    if isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral) or chunk < 1:
        raise ValueError(f"chunk must be a positive int, got {chunk!r}")
    probs: list[np.ndarray] = []
    for lo in range(0, len(space), chunk):
        batch = featurize(space.env, space.graphs[lo : lo + chunk], validate=False)
        with torch.no_grad():
            logits, _ = policy(batch)
            lp = segment_log_softmax(logits.double(), batch.act_graph, batch.n_graphs).exp()
        lp = lp.cpu().numpy()
        off = batch.act_offset.cpu().numpy()
        probs += [lp[off[j] : off[j + 1]] for j in range(batch.n_graphs)]
    pf_children = [
        {c: float(probs[s][idx].sum()) for c, idx in space.children[s].items()}
        for s in range(len(space))
    ]
    pf_stop = np.array([probs[s][a] if a >= 0 else 0.0 for s, a in enumerate(space.stop_action)])
    return state_policy_distribution(space, pf_children, pf_stop)


def state_policy_distribution(
    space: StateSpace, pf_children: list[dict[int, float]], pf_stop: np.ndarray
) -> np.ndarray:
    """Terminal distribution of a state-level forward policy (dynamic programming).

    Parameters
    ----------
    space : StateSpace
    pf_children : list of dict
        ``pf_children[s][c]`` = :math:`P_F(c \\mid s)`.
    pf_stop : ndarray, shape (S,)
        :math:`P_F(\\text{stop} \\mid s)`.

    Returns
    -------
    ndarray, shape (S,)
    """
    reach = np.zeros(len(space))
    reach[0] = 1.0
    for s in _topological(space):
        for c, p in pf_children[s].items():
            reach[c] += reach[s] * p
    return reach * np.asarray(pf_stop)


def optimal_state_policy(
    space: StateSpace, log_target: np.ndarray
) -> tuple[list[dict[int, float]], np.ndarray]:
    """Forward policy that samples ``exp(log_target)`` under the uniform backward policy.

    Parameters
    ----------
    space : StateSpace
    log_target : ndarray, shape (S,)
        Unnormalised log target over states (ignored for the start graph).

    Returns
    -------
    pf_children : list of dict
        State-level :math:`P_F(c \\mid s) = F(c) P_B(s \\mid c) / F(s)` with
        :math:`P_B(s \\mid c) = B(c \\to s) / n_B(c)`.
    pf_stop : ndarray, shape (S,)
        :math:`\\tilde R(s) / F(s)`.
    """
    log_target = np.asarray(log_target, dtype=float)
    if log_target.shape != (len(space),):
        raise ValueError(f"log_target must have shape ({len(space)},), got {log_target.shape}")
    r = np.where(space.terminal, np.exp(log_target - log_target[space.terminal].max()), 0.0)
    flow = r.copy()
    for c in _topological(space)[::-1]:
        for s, b in space.backward[c].items():
            flow[s] += flow[c] * b / space.n_backward[c]
    pf_children = [
        {
            c: flow[c] * space.backward[c][s] / space.n_backward[c] / flow[s]
            for c in space.children[s]
        }
        for s in range(len(space))
    ]
    return pf_children, r / flow


def action_tb_residuals(
    space: StateSpace,
    pf_children: list[dict[int, float]],
    pf_stop: np.ndarray,
    log_train_reward: np.ndarray,
) -> np.ndarray:
    """Action-level TB residuals of a state-level policy on every complete trajectory.

    The policy's state-level probability is spread equally over equivalent actions,
    :math:`\\pi(a \\mid G) = P_F(G' \\mid G) / M(G \\to G')`, and the backward policy is
    uniform over backward actions, as in a vanilla implementation.  For every path
    of states ``s_0 -> ... -> x -> stop`` (brute force), the residual is
    :math:`\\sum_t \\log\\pi(a_t) - \\log R_{train}(x) - \\sum_t \\log \\pi_B(b_t)`, centred
    by its mean (the optimal :math:`\\log Z`).  All-zero residuals mean the policy is
    a global minimiser of the action-level TB loss for ``log_train_reward``.

    Returns
    -------
    ndarray, shape (P,)
        One centred residual per state path (``P`` = number of paths).
    """
    out: list[float] = []
    stack = [(0, 0.0)]
    while stack:
        s, acc = stack.pop()
        if space.stop_action[s] >= 0:
            out.append(acc + math.log(pf_stop[s]) - log_train_reward[s])
        for c, idx in space.children[s].items():
            step = math.log(pf_children[s][c] / len(idx)) + math.log(space.n_backward[c])
            stack.append((c, acc + step))
    res = np.array(out)
    return res - res.mean()
