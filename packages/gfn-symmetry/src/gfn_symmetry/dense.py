"""Vectorised graph GFlowNet on padded adjacency tensors (small graphs, one core).

The reference trainer (:mod:`gfn_symmetry.gflownet`) keeps every state as a
:class:`networkx.Graph` and featurises it in Python, about 16 ms per step of 16
trajectories.  Here a batch of states is three tensors, for ``N = max_nodes``:

* ``adj`` (B, N, N) bool, symmetric, zero diagonal;
* ``types`` (B, N) long, the node labels (``-1`` past the ``n`` real nodes);
* ``n`` (B,) long, the number of nodes.

Masks, steps and the uniform backward policy's action counts (leaf removals plus
non-bridge edge removals, bridges found by a batched transitive closure) are tensor
operations, and the policy is a dense message-passing network.  After every step the
new state is put in its canonical labelling (igraph / bliss; the policy is
permutation-equivariant, so this does not change the distribution over isomorphism
classes).  Per-class quantities (``|Aut|``, rewards, the exact and PE equivalent-action
sets) are then computed once per class and cached, which is what makes the
corrections affordable.

Forward actions use one flat layout of ``A = 1 + L + N L + N (N - 1) / 2`` entries:
``STOP``, ``FIRST(k)``, ``ADD_NODE(u, k)`` at ``1 + L + u L + k`` and
``ADD_EDGE(u, v)`` (``u < v``, row-major pairs) after them; :meth:`DenseGraphEnv.
action_index` maps a :class:`~gfn_symmetry.env.GraphAction` of the equivalent
:class:`~gfn_symmetry.env.GraphEnv` onto it, so the two environments are the same MDP
(tested).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from gfn_symmetry.approximate import (
    node_pe,
    pe_backward_equivalent_indices,
    pe_equivalent_action_indices,
)
from gfn_symmetry.automorphisms import IsoClassCache
from gfn_symmetry.env import ADD_EDGE, ADD_NODE, FIRST, STOP, GraphAction, GraphEnv
from gfn_symmetry.exact import StateSpace, state_policy_distribution
from gfn_symmetry.losses import detailed_balance_loss, trajectory_balance_loss
from gfn_symmetry.molecule import MoleculeEnv
from gfn_symmetry.rewards import log_reward
from gfn_symmetry.symmetry import backward_equivalent_count, child_classes

__all__ = [
    "DenseBatch",
    "DenseGFlowNet",
    "DenseGraphEnv",
    "DenseGraphPolicy",
    "dense_terminal_distribution",
]

_CORRECTIONS = ("none", "reward_scaling", "flow_scaling", "exact", "pe")


class DenseGraphEnv:
    """Batched tensor form of :class:`~gfn_symmetry.env.GraphEnv` (atom-based, node labels).

    Parameters
    ----------
    max_nodes : int, default=7
        ``N``, the largest graph (the paper's synthetic setting uses 7).
    n_labels : int, default=2
        ``L``, the number of node types.
    max_edges : int or None, default=None
        Largest number of edges (``None``: no limit besides ``max_nodes``).
    valences : sequence of int or None, default=None
        Largest degree of a node of each label (the valence rules of
        :class:`~gfn_symmetry.molecule.MoleculeEnv`, which is then the equivalent env);
        ``None``: no degree limit.
    """

    def __init__(
        self,
        max_nodes: int = 7,
        n_labels: int = 2,
        max_edges: int | None = None,
        valences: Sequence[int] | None = None,
    ):
        if valences is None:
            self.graph_env = GraphEnv(max_nodes, n_labels, max_edges)  # validates the arguments
            self.valences = None
        else:
            if max_edges is not None:
                raise ValueError("max_edges and valences cannot be combined (MoleculeEnv has no max_edges)")  # fmt: skip
            if isinstance(valences, str) or not isinstance(valences, Sequence) or len(valences) != n_labels:  # fmt: skip
                raise ValueError(f"valences must be a sequence of {n_labels} ints (one per label), got {valences!r}")  # fmt: skip
            self.graph_env = MoleculeEnv(max_nodes, [f"X{k}" for k in range(n_labels)], list(valences))  # fmt: skip
            self.valences = torch.tensor(self.graph_env.valences, dtype=torch.long)
        self.N, self.L, self.max_edges = max_nodes, n_labels, max_edges
        iu, iv = torch.triu_indices(max_nodes, max_nodes, 1)
        self.pair_u, self.pair_v = iu, iv
        self.P = len(iu)
        self.off_first, self.off_node = 1, 1 + n_labels
        self.off_edge = 1 + n_labels + max_nodes * n_labels
        self.A = self.off_edge + self.P
        pair = -torch.ones(max_nodes, max_nodes, dtype=torch.long)
        pair[iu, iv] = torch.arange(self.P)
        self._pair = pair

    # -- layout --------------------------------------------------------------------
    def action_index(self, action: GraphAction) -> int:
        """Flat index of a :class:`GraphAction` of the equivalent :class:`GraphEnv`."""
        if action.kind == STOP:
            return 0
        if action.kind == FIRST:
            return self.off_first + action.k
        if action.kind == ADD_NODE:
            return self.off_node + action.u * self.L + action.k
        if action.kind == ADD_EDGE:
            return self.off_edge + int(self._pair[action.u, action.v])
        raise ValueError(f"action kind {action.kind} has no dense index")

    # -- conversion ----------------------------------------------------------------
    def empty(self, batch: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``batch`` copies of the empty start graph."""
        N = self.N
        return (
            torch.zeros(batch, N, N, dtype=torch.bool),
            torch.full((batch, N), -1, dtype=torch.long),
            torch.zeros(batch, dtype=torch.long),
        )

    def from_networkx(
        self, graphs: list[nx.Graph]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Stack states of the equivalent :class:`GraphEnv` (validated) into tensors."""
        if not isinstance(graphs, list | tuple) or len(graphs) == 0:
            raise ValueError("graphs must be a non-empty list of networkx graphs")
        adj, types, n = self.empty(len(graphs))
        for b, g in enumerate(graphs):
            self.graph_env.validate_state(g, f"graphs[{b}]")
            k = g.number_of_nodes()
            n[b] = k
            for v, d in g.nodes(data=True):
                types[b, v] = int(d["label"])
            for u, v in g.edges:
                adj[b, u, v] = adj[b, v, u] = True
        return adj, types, n

    def to_networkx(
        self, adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor
    ) -> list[nx.Graph]:
        """States as networkx graphs of the equivalent :class:`GraphEnv` (label / kind attrs)."""
        a, t, m = adj.numpy(), types.numpy(), n.numpy()
        out = []
        for b in range(len(m)):
            k = int(m[b])
            g = nx.Graph()
            g.add_nodes_from((v, {"label": int(t[b, v])}) for v in range(k))
            iu, iv = np.nonzero(np.triu(a[b, :k, :k]))
            g.add_edges_from((int(u), int(v), {"kind": 0}) for u, v in zip(iu, iv, strict=True))
            out.append(g)
        return out

    # -- dynamics ------------------------------------------------------------------
    def forward_mask(self, adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        """Valid forward actions, shape (B, A) bool."""
        B, N, L = n.shape[0], self.N, self.L
        empty = n == 0
        mask = torch.zeros(B, self.A, dtype=torch.bool)
        mask[:, 0] = ~empty
        mask[:, self.off_first : self.off_node] = empty.unsqueeze(1)
        grow = ~empty
        if self.max_edges is not None:
            grow = grow & (adj.sum((1, 2)) // 2 < self.max_edges)
        real = torch.arange(N).unsqueeze(0) < n.unsqueeze(1)  # (B, N)
        if self.valences is not None:  # a bond needs a free valence at both ends
            real = real & (adj.sum(2) < self.valences[types.clamp(min=0)])
        node_ok = real & (grow & (n < N)).unsqueeze(1)
        mask[:, self.off_node : self.off_edge] = node_ok.repeat_interleave(L, dim=1)
        iu, iv = self.pair_u, self.pair_v
        edge_ok = real[:, iu] & real[:, iv] & ~adj[:, iu, iv] & grow.unsqueeze(1)
        mask[:, self.off_edge :] = edge_ok
        return mask

    def step(
        self, adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Apply one action per row (STOP rows are returned unchanged); inputs untouched."""
        adj, types, n = adj.clone(), types.clone(), n.clone()
        rows = torch.arange(n.shape[0])
        first = (action >= self.off_first) & (action < self.off_node)
        if first.any():
            r = rows[first]
            types[r, 0] = action[first] - self.off_first
            n[r] = 1
        node = (action >= self.off_node) & (action < self.off_edge)
        if node.any():
            r, rel = rows[node], action[node] - self.off_node
            u, k, new = rel // self.L, rel % self.L, n[node]
            types[r, new] = k
            adj[r, u, new] = True
            adj[r, new, u] = True
            n[r] = new + 1
        edge = action >= self.off_edge
        if edge.any():
            r, p = rows[edge], action[edge] - self.off_edge
            u, v = self.pair_u[p], self.pair_v[p]
            adj[r, u, v] = True
            adj[r, v, u] = True
        return adj, types, n

    def n_backward(self, adj: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        """Number of backward actions (leaf removals + non-bridge edge removals), shape (B,)."""
        B, N = n.shape[0], self.N
        deg = adj.sum(2)
        leaves = (deg == 1).sum(1)
        iu, iv = self.pair_u, self.pair_v
        present = adj[:, iu, iv]  # (B, P)
        # reachability with each present edge removed: (I + A - e)^(2^k) by repeated squaring
        m = adj.unsqueeze(1).expand(B, self.P, N, N).clone()
        p = torch.arange(self.P)
        m[:, p, iu, iv] = False
        m[:, p, iv, iu] = False
        reach = (m | torch.eye(N, dtype=torch.bool)).float()
        for _ in range(max(1, math.ceil(math.log2(max(N - 1, 1))))):
            reach = (reach @ reach).clamp_(max=1.0)
        non_bridge = present & (reach[:, p, iu, iv] > 0)
        out = leaves + non_bridge.sum(1)
        out = torch.where(n == 1, torch.ones_like(out), out)
        return torch.where(n == 0, torch.zeros_like(out), out)

    def canonicalize(
        self, adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, list[bytes]]:
        """Relabel every state canonically (igraph/bliss); returns ``adj``, ``types`` and keys.

        Isomorphic states (labels preserved) get identical tensors and keys.
        """
        import igraph

        B, N = n.shape[0], self.N
        a, t, m = adj.numpy(), types.numpy(), n.numpy()
        inv = np.tile(np.arange(N), (B, 1))
        for b in range(B):
            k = int(m[b])
            if k <= 1:
                continue
            iu, iv = np.nonzero(np.triu(a[b, :k, :k]))
            g = igraph.Graph(n=k, edges=list(zip(iu.tolist(), iv.tolist(), strict=True)))
            perm = g.canonical_permutation(color=t[b, :k].tolist())
            inv[b, :k] = perm  # bliss: canonical position i holds vertex perm[i]
        idx = torch.from_numpy(inv)
        rows = torch.arange(B)[:, None, None]
        adj = adj[rows, idx[:, :, None], idx[:, None, :]]
        types = torch.gather(types, 1, idx)
        keys = [
            bytes([int(m[b])])
            + types[b].numpy().astype(np.int8).tobytes()
            + np.packbits(adj[b].numpy()).tobytes()
            for b in range(B)
        ]
        return adj, types, keys


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.SiLU(), nn.Linear(d_hidden, d_out))


class DenseGraphPolicy(nn.Module):
    """Permutation-equivariant dense message-passing policy for :class:`DenseGraphEnv`.

    Node inputs: label one-hot, degree one-hot and random-walk return probabilities
    (:math:`\\mathrm{diag}(P^k)`, ``k = 1..rw_steps``, as the official code's RWPE).
    ``n_layers`` residual rounds ``h <- LN(h + MLP([h, A h]))``; the graph embedding is
    ``[sum, mean]`` of node states plus a learned embedding of the empty graph.

    Parameters
    ----------
    env : DenseGraphEnv
    hidden : int, default=64
    n_layers : int, default=3
    rw_steps : int, default=4

    Notes
    -----
    ``forward(adj, types, n)`` returns masked logits (B, A) (``-inf`` on invalid actions)
    and :math:`\\log F(s)` (B,).
    """

    def __init__(self, env: DenseGraphEnv, hidden: int = 64, n_layers: int = 3, rw_steps: int = 4):
        super().__init__()
        if not isinstance(env, DenseGraphEnv):
            raise TypeError(f"env must be a DenseGraphEnv, got {type(env).__name__}")
        for name, val, low in (("hidden", hidden, 1), ("n_layers", n_layers, 0), ("rw_steps", rw_steps, 0)):  # fmt: skip
            if isinstance(val, bool) or not isinstance(val, int) or val < low:
                raise ValueError(f"{name} must be an int >= {low}, got {val!r}")
        self.env, self.rw_steps = env, rw_steps
        N, L = env.N, env.L
        self.embed = nn.Linear(L + N + rw_steps, hidden)
        self.layers = nn.ModuleList(_mlp(2 * hidden, hidden, hidden) for _ in range(n_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(n_layers))
        self.empty_graph = nn.Parameter(torch.zeros(2 * hidden))
        self.stop = _mlp(2 * hidden, hidden, 1)
        self.first = _mlp(2 * hidden, hidden, L)
        # pair and node heads: first layers split per node / per graph so that their cost
        # is O(N) rather than O(N^2) rows; the edge score is symmetric in (u, v)
        self.node_in, self.node_g = nn.Linear(hidden, hidden), nn.Linear(2 * hidden, hidden)
        self.node_out = nn.Linear(hidden, L)
        self.edge_in, self.edge_g = nn.Linear(hidden, hidden), nn.Linear(2 * hidden, hidden)
        self.edge_out = nn.Linear(hidden, 1)
        self.flow = _mlp(2 * hidden, hidden, 1)

    def node_features(
        self, adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor
    ) -> torch.Tensor:
        """Input node features, shape (B, N, L + N + rw_steps)."""
        N, L = self.env.N, self.env.L
        a = adj.float()
        deg = a.sum(2)
        feats = [
            nn.functional.one_hot(types.clamp(min=0), L).float() * (types >= 0).unsqueeze(2),
            nn.functional.one_hot(deg.long().clamp(max=N - 1), N).float(),
        ]
        if self.rw_steps:
            p = a / deg.clamp(min=1).unsqueeze(2)
            walk, diag = p, []
            for _ in range(self.rw_steps):
                diag.append(torch.diagonal(walk, dim1=1, dim2=2))
                walk = walk @ p
            feats.append(torch.stack(diag, 2))
        real = (torch.arange(N).unsqueeze(0) < n.unsqueeze(1)).float().unsqueeze(2)
        return torch.cat(feats, 2) * real

    def forward(
        self,
        adj: torch.Tensor,
        types: torch.Tensor,
        n: torch.Tensor,
        features: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits (B, A) and log-flows (B,); ``features``/``mask`` may be precomputed
        (:meth:`node_features`, :meth:`DenseGraphEnv.forward_mask`)."""
        env = self.env
        B, N = n.shape[0], env.N
        real = (torch.arange(N).unsqueeze(0) < n.unsqueeze(1)).float().unsqueeze(2)
        a = adj.float()
        if features is None:
            features = self.node_features(adj, types, n)
        if mask is None:
            mask = env.forward_mask(adj, types, n)
        h = self.embed(features) * real
        for mlp, norm in zip(self.layers, self.norms, strict=True):
            h = norm(h + mlp(torch.cat([h, a @ h], 2))) * real
        total = h.sum(1)
        mean = total / n.clamp(min=1).unsqueeze(1)
        g = torch.cat([total, mean], 1)
        g = torch.where((n == 0).unsqueeze(1), self.empty_graph.expand(B, -1), g)
        pre = self.node_in(h) + self.node_g(g).unsqueeze(1)
        node_logits = self.node_out(nn.functional.silu(pre)).reshape(B, N * env.L)
        z = self.edge_in(h)
        pre = z[:, env.pair_u] + z[:, env.pair_v] + self.edge_g(g).unsqueeze(1)
        edge_logits = self.edge_out(nn.functional.silu(pre)).squeeze(2)
        logits = torch.cat([self.stop(g), self.first(g), node_logits, edge_logits], 1)
        logits = logits.masked_fill(~mask, float("-inf"))
        return logits, self.flow(g).squeeze(1)


class _StateTable:
    """Canonical states met so far, by integer id, with everything that depends on the state
    only (tensors, mask, node features, backward-action count, |Aut|, reward) and the
    transition map ``(id, action) -> child id``: repeated states and steps cost a lookup."""

    def __init__(self, env: DenseGraphEnv, policy: DenseGraphPolicy, capacity: int = 1024):
        N, A = env.N, env.A
        F = policy.embed.in_features
        self.env, self.policy = env, policy
        self.ids: dict[bytes, int] = {}
        self.keys: list[bytes] = []
        self.next: dict[tuple[int, int], int] = {}
        self.adj = torch.zeros(capacity, N, N, dtype=torch.bool)
        self.types = torch.full((capacity, N), -1, dtype=torch.long)
        self.n = torch.zeros(capacity, dtype=torch.long)
        self.mask = torch.zeros(capacity, A, dtype=torch.bool)
        self.features = torch.zeros(capacity, N, F)
        self.n_back = torch.zeros(capacity, dtype=torch.long)
        self.log_aut = torch.full((capacity,), float("nan"))
        self.log_r = torch.full((capacity,), float("nan"))
        self.root = int(self.add(*env.empty(1), [b"\x00"])[0])

    def __len__(self) -> int:
        return len(self.keys)

    def _grow(self, size: int) -> None:
        cap = self.n.shape[0]
        if size <= cap:
            return
        new = max(size, 2 * cap)
        for name in ("adj", "types", "n", "mask", "features", "n_back", "log_aut", "log_r"):
            old = getattr(self, name)
            fill = {"types": -1, "log_aut": float("nan"), "log_r": float("nan")}.get(name, 0)
            t = torch.full((new, *old.shape[1:]), fill, dtype=old.dtype)
            t[:cap] = old
            setattr(self, name, t)

    @torch.no_grad()
    def add(self, adj, types, n, keys: list[bytes]) -> torch.Tensor:
        """Ids of canonical states (registering the new ones), shape (B,)."""
        out, new = [], []
        for b, key in enumerate(keys):
            i = self.ids.get(key)
            if i is None:
                i = self.ids[key] = len(self.keys)
                self.keys.append(key)
                new.append(b)
            out.append(i)
        if new:
            lo, rows = len(self.keys) - len(new), torch.tensor(new)
            self._grow(len(self.keys))
            a, t, m = adj[rows], types[rows], n[rows]
            sl = slice(lo, len(self.keys))
            self.adj[sl], self.types[sl], self.n[sl] = a, t, m
            self.mask[sl] = self.env.forward_mask(a, t, m)
            self.features[sl] = self.policy.node_features(a, t, m)
            self.n_back[sl] = self.env.n_backward(a, m)
        return torch.tensor(out, dtype=torch.long)

    def graph(self, i: int) -> nx.Graph:
        return self.env.to_networkx(self.adj[i : i + 1], self.types[i : i + 1], self.n[i : i + 1])[0]  # fmt: skip


@dataclass
class DenseBatch:
    """Complete trajectories as ids of canonical states, padded to ``T = max(lengths)``.

    Attributes
    ----------
    ids : LongTensor, shape (B, T)
        ``s_0 .. s_n`` of each trajectory (rows of the trainer's state table; past its length
        the last state repeats). :meth:`DenseGFlowNet.states` returns their tensors.
    actions : LongTensor, shape (B, T)
        Flat action taken in each state (STOP at ``t = lengths - 1``).
    lengths : LongTensor, shape (B,)
        Number of transitions including STOP (= number of states).
    log_pb : Tensor, shape (B, T)
        :math:`\\log P_B(s_t | s_{t+1})` under the uniform backward policy (summed over
        equivalent backward actions for ``exact`` / ``pe``); 0 for the STOP step.
    equivalents : BoolTensor (B, T, A) or None
        Forward actions equivalent to the taken one (``exact`` / ``pe``).
    """

    ids: torch.Tensor
    actions: torch.Tensor
    lengths: torch.Tensor
    log_pb: torch.Tensor
    equivalents: torch.Tensor | None

    @property
    def terminal_ids(self) -> torch.Tensor:
        """State id of each terminal graph, shape (B,)."""
        return self.ids.gather(1, (self.lengths - 1).unsqueeze(1)).squeeze(1)


class DenseGFlowNet:
    """Vectorised GFlowNet with the paper's symmetry corrections (uniform backward policy).

    Parameters
    ----------
    policy : DenseGraphPolicy
    loss : {"tb", "db"}, default="db"
        The official synthetic config trains detailed balance.
    symmetry_correction : bool or str, default=True
        ``True``/``"reward_scaling"`` (SA-GFN), ``False``/``"none"`` (vanilla),
        ``"flow_scaling"``, ``"exact"`` (equivalent-action sums from isomorphism classes),
        ``"pe"`` (Ma et al.'s positional-encoding approximation).
    lr, lr_logz : float
        Adam learning rates of the policy and of :math:`\\log Z` (TB).
    batch_size : int, default=64
        Trajectories per step.
    epsilon : float, default=0.1
        Per-step uniform exploration of the training rollouts (official config: 0.1).
    reward_floor : float, default=1e-8
    pe_length : int, default=8
        Walk length of the PE signatures (``"pe"``).
    seed : int or None
    verbose : bool, default=False
        tqdm bar in :meth:`train`.

    Attributes
    ----------
    history_ : list of float
        Loss per step.
    n_trajectories_ : int
        Trajectories sampled by :meth:`train` so far.
    n_states_ : int
        Distinct isomorphism classes met so far (the state table's size).
    """

    def __init__(
        self,
        policy: DenseGraphPolicy,
        loss: str = "db",
        symmetry_correction: bool | str = True,
        *,
        lr: float = 1e-3,
        lr_logz: float = 0.1,
        batch_size: int = 64,
        epsilon: float = 0.1,
        reward_floor: float = 1e-8,
        pe_length: int = 8,
        seed: int | None = None,
        verbose: bool = False,
    ):
        if not isinstance(policy, DenseGraphPolicy):
            raise TypeError(f"policy must be a DenseGraphPolicy, got {type(policy).__name__}")
        if loss not in ("tb", "db"):
            raise ValueError(f"loss must be 'tb' or 'db', got {loss!r}")
        corr = {True: "reward_scaling", False: "none", None: "none"}.get(symmetry_correction, symmetry_correction)  # fmt: skip
        if corr not in _CORRECTIONS:
            raise ValueError(
                f"symmetry_correction must be True, False or one of {_CORRECTIONS}, "
                f"got {symmetry_correction!r}"
            )
        for name, val in (("lr", lr), ("lr_logz", lr_logz), ("reward_floor", reward_floor)):
            if isinstance(val, bool) or not isinstance(val, int | float) or not math.isfinite(val) or val <= 0:  # fmt: skip
                raise ValueError(f"{name} must be a positive finite float, got {val!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not 0 <= epsilon <= 1:  # fmt: skip
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")
        if isinstance(pe_length, bool) or not isinstance(pe_length, int) or pe_length < 1:
            raise ValueError(f"pe_length must be a positive int, got {pe_length!r}")
        self.policy, self.env = policy, policy.env
        self.loss, self.symmetry_correction = loss, corr
        self.batch_size, self.epsilon = batch_size, float(epsilon)
        self.reward_floor, self.pe_length, self.verbose = float(reward_floor), pe_length, verbose
        self.log_z = nn.Parameter(torch.zeros(()))
        self.optimizer = torch.optim.Adam(
            [{"params": policy.parameters(), "lr": lr}, {"params": [self.log_z], "lr": lr_logz}]
        )
        self.generator = torch.Generator().manual_seed(0 if seed is None else seed)
        genv = self.env.graph_env
        self.cache = IsoClassCache(genv.node_attrs, genv.edge_attrs)
        self.table = _StateTable(self.env, policy)
        self._groups: dict[int, np.ndarray] = {}
        self._trans: dict[tuple[int, int], tuple[np.ndarray, float]] = {}
        self.history_: list[float] = []
        self.n_trajectories_ = 0

    @property
    def n_states_(self) -> int:
        return len(self.table)

    def states(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``adj``, ``types`` and ``n`` of state ids (any shape ``S``): (*S, N, N), (*S, N), S."""
        t = self.table
        return t.adj[ids], t.types[ids], t.n[ids]

    # -- per-class quantities (cached by state id) --------------------------------------
    def _log_aut(self, ids: torch.Tensor) -> torch.Tensor:
        t = self.table
        miss = ids[torch.isnan(t.log_aut[ids])].unique().tolist()
        for i in miss:
            t.log_aut[i] = 0.0 if int(t.n[i]) <= 1 else math.log(self.cache.automorphisms(t.graph(i)))  # fmt: skip
        return t.log_aut[ids]

    def _transition(self, i: int, a: int) -> tuple[np.ndarray, float]:
        """Equivalent forward actions (A,) bool and log P_B summed over equivalent backward
        actions, for action ``a`` of canonical state ``i`` (``exact`` / ``pe``)."""
        hit = self._trans.get((i, a))
        if hit is not None:
            return hit
        env, genv = self.env, self.env.graph_env
        g = self.table.graph(i)
        acts = genv.forward_actions(g)
        dense = np.array([env.action_index(x) for x in acts])
        k = int(np.nonzero(dense == a)[0][0])
        eq = np.zeros(env.A, dtype=bool)
        if self.symmetry_correction == "exact":
            if i not in self._groups:
                self._groups[i] = np.array(child_classes(genv, g, acts, self.cache))
            groups = self._groups[i]
            same = [k] if acts[k].kind == STOP else np.nonzero(groups == groups[k])[0]
            eq[dense[same]] = True
        else:
            pe = node_pe(genv, g, self.pe_length)
            eq[dense[pe_equivalent_action_indices(genv, g, acts, k, pe)]] = True
        log_pb = 0.0
        if acts[k].kind != STOP:
            child = genv.step(g, acts[k])
            n_back = len(genv.backward_actions(child))
            if self.symmetry_correction == "exact":
                count = backward_equivalent_count(genv, child, g, self.cache)
            else:
                undo = genv.backward_of(g, acts[k])
                count = len(pe_backward_equivalent_indices(genv, child, undo, node_pe(genv, child, self.pe_length)))  # fmt: skip
            log_pb = math.log(count / n_back)
        self._trans[(i, a)] = (eq, log_pb)
        return eq, log_pb

    def _children(self, ids: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Child state ids of non-STOP actions (steps computed and canonicalised once)."""
        t = self.table
        out = torch.empty_like(ids)
        miss = []
        for j, (i, a) in enumerate(zip(ids.tolist(), actions.tolist(), strict=True)):
            c = t.next.get((i, a))
            if c is None:
                miss.append(j)
            else:
                out[j] = c
        if miss:
            rows = torch.tensor(miss)
            adj, types, n = self.states(ids[rows])
            adj, types, n = self.env.step(adj, types, n, actions[rows])
            adj, types, keys = self.env.canonicalize(adj, types, n)
            new = t.add(adj, types, n, keys)
            out[rows] = new
            for j, c in zip(miss, new.tolist(), strict=True):
                t.next[(int(ids[j]), int(actions[j]))] = c
        return out

    # -- sampling ------------------------------------------------------------------------
    @torch.no_grad()
    def sample_batch(self, n: int, epsilon: float = 0.0) -> DenseBatch:
        """Roll out ``n`` complete trajectories (canonical states).

        Parameters
        ----------
        n : int
            Number of trajectories (>= 1).
        epsilon : float, default=0.0
            Probability of a uniform action at each step.

        Returns
        -------
        DenseBatch
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not 0 <= epsilon <= 1:  # fmt: skip
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")
        env, t = self.env, self.table
        sets = self.symmetry_correction in ("exact", "pe")
        ids = torch.full((n,), t.root, dtype=torch.long)
        all_ids, acts, log_pbs, eqs = [ids], [], [], []
        done = torch.zeros(n, dtype=torch.bool)
        while not bool(done.all()):
            live = torch.nonzero(~done).flatten()
            cur = ids[live]
            logits, _ = self.policy(*self.states(cur), t.features[cur], t.mask[cur])
            if epsilon > 0:
                explore = torch.rand(len(live), generator=self.generator) < epsilon
                uniform = torch.where(torch.isfinite(logits), 0.0, float("-inf"))
                logits = torch.where(explore.unsqueeze(1), uniform, logits)
            u = torch.rand(logits.shape, generator=self.generator).clamp_min(1e-20)
            a_live = (logits - torch.log(-torch.log(u))).argmax(1)  # Gumbel-max
            a = torch.zeros(n, dtype=torch.long)
            a[live] = a_live
            acts.append(a)
            lpb = torch.zeros(n)
            eq = torch.zeros(n, env.A, dtype=torch.bool) if sets else None
            if sets:
                for b, i, x in zip(live.tolist(), cur.tolist(), a_live.tolist(), strict=True):
                    e, lp = self._transition(i, x)
                    eq[b] = torch.from_numpy(e)
                    lpb[b] = lp
            eqs.append(eq)
            done = done | (a == 0)
            moving = torch.nonzero(~done).flatten()
            ids = ids.clone()
            if len(moving):
                child = self._children(ids[moving], a[moving])
                ids[moving] = child
                if not sets:
                    lpb[moving] = -torch.log(t.n_back[child].float())
            log_pbs.append(lpb)
            all_ids.append(ids)
        A = torch.stack(acts, 1)
        lengths = (A != 0).sum(1) + 1
        T = int(lengths.max())
        return DenseBatch(
            ids=torch.stack(all_ids[:T], 1),
            actions=A[:, :T],
            lengths=lengths,
            log_pb=torch.stack(log_pbs, 1)[:, :T],
            equivalents=torch.stack(eqs, 1)[:, :T] if sets else None,
        )

    def sample(self, n: int) -> list[nx.Graph]:
        """``n`` terminal graphs from the trained policy (no exploration)."""
        batch = self.sample_batch(n)
        return self.env.to_networkx(*self.states(batch.terminal_ids))

    # -- training ------------------------------------------------------------------------
    def log_rewards(
        self, batch: DenseBatch, reward_fn: Callable[[nx.Graph], float]
    ) -> torch.Tensor:
        """Training log-rewards (B,), SA-GFN-scaled for ``reward_scaling``; one call per class."""
        t, ids = self.table, batch.terminal_ids
        for i in ids[torch.isnan(t.log_r[ids])].unique().tolist():
            t.log_r[i] = log_reward(reward_fn, t.graph(i), self.reward_floor)
        out = t.log_r[ids].clone()
        if self.symmetry_correction == "reward_scaling":
            out += self._log_aut(ids)
        return out

    def compute_loss(self, batch: DenseBatch, log_reward: torch.Tensor) -> torch.Tensor:
        """Differentiable TB or DB loss of a batch (shape ())."""
        B, T = batch.actions.shape
        A, t = self.env.A, self.table
        live = torch.arange(T).unsqueeze(0) < batch.lengths.unsqueeze(1)
        flat = batch.ids.reshape(-1)
        rows = live.reshape(-1).nonzero().squeeze(1)  # only real states go through the network
        ids = flat[rows]
        logits, flow = self.policy(*self.states(ids), t.features[ids], t.mask[ids])
        # padding repeats the terminal state: a row where only STOP is finite
        pad = torch.full((B * T, A), float("-inf"))
        pad[:, 0] = 0.0
        lsm = pad.index_copy(0, rows, torch.log_softmax(logits, 1)).reshape(B, T, A)
        log_flow = torch.zeros(B * T).index_copy(0, rows, flow)
        if batch.equivalents is not None:
            eq = batch.equivalents.clone()
            eq[..., 0] |= ~live
            log_pf = torch.logsumexp(lsm.masked_fill(~eq, float("-inf")), 2)
        else:
            log_pf = lsm.gather(2, batch.actions.unsqueeze(2)).squeeze(2)
        log_pf = torch.where(live, log_pf, torch.zeros_like(log_pf))
        log_pb = batch.log_pb
        if self.symmetry_correction == "flow_scaling":  # P_B(s|s') * |Aut(s')| / |Aut(s)|
            c = self._log_aut(flat).reshape(B, T)
            step = torch.zeros_like(log_pb)
            step[:, :-1] = c[:, 1:] - c[:, :-1]
            stop = torch.arange(T).unsqueeze(0) >= (batch.lengths - 1).unsqueeze(1)
            log_pb = log_pb + torch.where(stop, torch.zeros_like(step), step)
        log_pb = torch.where(live, log_pb, torch.zeros_like(log_pb))
        if self.loss == "tb":
            return trajectory_balance_loss(self.log_z, log_pf, log_pb, log_reward, batch.lengths)
        flows = torch.where(live, log_flow.reshape(B, T), torch.zeros(B, T))
        return detailed_balance_loss(flows, log_pf, log_pb, log_reward, batch.lengths)

    def train(self, reward_fn: Callable[[nx.Graph], float], steps: int) -> DenseGFlowNet:
        """Train on-policy (with ``epsilon`` exploration) for ``steps`` gradient steps."""
        if not callable(reward_fn):
            raise TypeError("reward_fn must be callable")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive int, got {steps!r}")
        self.policy.train()
        for _ in tqdm(range(steps), disable=not self.verbose, desc=f"DenseGFlowNet[{self.loss}]"):
            batch = self.sample_batch(self.batch_size, self.epsilon)
            loss = self.compute_loss(batch, self.log_rewards(batch, reward_fn))
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), 10.0)
            self.optimizer.step()
            self.history_.append(float(loss.detach()))
            self.n_trajectories_ += self.batch_size
        self.policy.eval()
        return self


@torch.no_grad()
def dense_terminal_distribution(
    policy: DenseGraphPolicy, space: StateSpace, chunk: int = 4096
) -> np.ndarray:
    """Exact terminal distribution of a :class:`DenseGraphPolicy` on an enumerated space.

    Parameters
    ----------
    policy : DenseGraphPolicy
    space : StateSpace
        From :func:`~gfn_symmetry.exact.build_state_space` on the equivalent ``GraphEnv``.
    chunk : int, default=4096

    Returns
    -------
    ndarray, shape (S,)
    """
    env = policy.env
    genv = space.env
    same = (genv.max_nodes, genv.n_labels, genv.max_edges) == (env.N, env.L, env.max_edges)
    if not same or getattr(genv, "valences", None) != getattr(env.graph_env, "valences", None):
        raise ValueError("space and policy describe different environments")
    was = policy.training
    policy.eval()
    pf_children, pf_stop = [], np.zeros(len(space))
    for lo in range(0, len(space), chunk):
        graphs = space.graphs[lo : lo + chunk]
        adj, types, n = env.empty(len(graphs))
        for b, g in enumerate(graphs):
            n[b] = g.number_of_nodes()
            for v, d in g.nodes(data=True):
                types[b, v] = d["label"]
            for u, v in g.edges:
                adj[b, u, v] = adj[b, v, u] = True
        logits, _ = policy(adj, types, n)
        probs = torch.softmax(logits.double(), 1).numpy()
        for j, g in enumerate(graphs):
            s = lo + j
            dense = [env.action_index(x) for x in genv.forward_actions(g)]
            pf_children.append({c: float(probs[j, [dense[i] for i in idx]].sum()) for c, idx in space.children[s].items()})  # fmt: skip
            a = space.stop_action[s]
            pf_stop[s] = probs[j, dense[a]] if a >= 0 else 0.0
    policy.train(was)
    return state_policy_distribution(space, pf_children, pf_stop)
