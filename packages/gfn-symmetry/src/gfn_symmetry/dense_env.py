"""Batched tensor form of the atom-based graph environment (padded adjacency tensors).

A batch of states is three tensors, for ``N = max_nodes``: ``adj`` (B, N, N) bool, symmetric,
zero diagonal; ``types`` (B, N) long, the node labels (``-1`` past the ``n`` real nodes); ``n``
(B,) long, the number of nodes. Masks, steps and the uniform backward policy's action counts
(leaf removals plus non-bridge edge removals, bridges found by a batched transitive closure) are
tensor operations; :meth:`DenseGraphEnv.canonicalize` puts states in their canonical labelling
(igraph / bliss).

Forward actions use one flat layout of ``A = 1 + L + N L + N (N - 1) / 2`` entries: ``STOP``,
``FIRST(k)``, ``ADD_NODE(u, k)`` at ``1 + L + u L + k`` and ``ADD_EDGE(u, v)`` (``u < v``,
row-major pairs) after them; :meth:`DenseGraphEnv.action_index` maps a
:class:`~gfn_symmetry.env.GraphAction` of the equivalent :class:`~gfn_symmetry.env.GraphEnv`
(or :class:`~gfn_symmetry.molecule.MoleculeEnv` with ``valences``) onto it, so the two are the
same MDP (tested action by action).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx
import numpy as np
import torch

from gfn_symmetry.env import ADD_EDGE, ADD_NODE, FIRST, STOP, GraphAction, GraphEnv
from gfn_symmetry.molecule import MoleculeEnv

__all__ = ["DenseGraphEnv"]


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
        self._moved: dict[torch.device, tuple] = {}

    def constants(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """``pair_u``, ``pair_v`` and ``valences`` on ``device`` (moved once, then cached)."""
        device = torch.device(device)
        if device.type == "cpu":
            return self.pair_u, self.pair_v, self.valences
        if device not in self._moved:
            v = self.valences
            self._moved[device] = (self.pair_u.to(device), self.pair_v.to(device),
                                   None if v is None else v.to(device))  # fmt: skip
        return self._moved[device]

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
    def empty(
        self, batch: int, device: torch.device | str = "cpu"
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``batch`` copies of the empty start graph (on ``device``)."""
        N = self.N
        return (
            torch.zeros(batch, N, N, dtype=torch.bool, device=device),
            torch.full((batch, N), -1, dtype=torch.long, device=device),
            torch.zeros(batch, dtype=torch.long, device=device),
        )

    def from_networkx(
        self, graphs: list[nx.Graph], validate: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Stack states of the equivalent :class:`GraphEnv` into tensors (validated unless
        ``validate=False``, for states the environment itself enumerated)."""
        if not isinstance(graphs, list | tuple) or len(graphs) == 0:
            raise ValueError("graphs must be a non-empty list of networkx graphs")
        adj, types, n = self.empty(len(graphs))
        for b, g in enumerate(graphs):
            if validate:
                self.graph_env.validate_state(g, f"graphs[{b}]")
            n[b] = g.number_of_nodes()
            for v, d in g.nodes(data=True):
                types[b, v] = int(d["label"])
            for u, v in g.edges:
                adj[b, u, v] = adj[b, v, u] = True
        return adj, types, n

    def to_networkx(
        self, adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor
    ) -> list[nx.Graph]:
        """States as networkx graphs of the equivalent :class:`GraphEnv` (label / kind attrs)."""
        a, t, m = adj.cpu().numpy(), types.cpu().numpy(), n.cpu().numpy()
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
        dev = n.device
        iu, iv, valences = self.constants(dev)
        empty = n == 0
        mask = torch.zeros(B, self.A, dtype=torch.bool, device=dev)
        mask[:, 0] = ~empty
        mask[:, self.off_first : self.off_node] = empty.unsqueeze(1)
        grow = ~empty
        if self.max_edges is not None:
            grow = grow & (adj.sum((1, 2)) // 2 < self.max_edges)
        real = torch.arange(N, device=dev).unsqueeze(0) < n.unsqueeze(1)  # (B, N)
        if valences is not None:  # a bond needs a free valence at both ends
            real = real & (adj.sum(2) < valences[types.clamp(min=0)])
        node_ok = real & (grow & (n < N)).unsqueeze(1)
        mask[:, self.off_node : self.off_edge] = node_ok.repeat_interleave(L, dim=1)
        edge_ok = real[:, iu] & real[:, iv] & ~adj[:, iu, iv] & grow.unsqueeze(1)
        mask[:, self.off_edge :] = edge_ok
        return mask

    def step(
        self, adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Apply one action per row (STOP rows are returned unchanged); inputs untouched."""
        adj, types, n = adj.clone(), types.clone(), n.clone()
        rows = torch.arange(n.shape[0], device=n.device)
        pair_u, pair_v, _ = self.constants(n.device)
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
            u, v = pair_u[p], pair_v[p]
            adj[r, u, v] = True
            adj[r, v, u] = True
        return adj, types, n

    def n_backward(self, adj: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        """Number of backward actions (leaf removals + non-bridge edge removals), shape (B,)."""
        B, N = n.shape[0], self.N
        deg = adj.sum(2)
        leaves = (deg == 1).sum(1)
        dev = n.device
        iu, iv, _ = self.constants(dev)
        present = adj[:, iu, iv]  # (B, P)
        # reachability with each present edge removed: (I + A - e)^(2^k) by repeated squaring
        m = adj.unsqueeze(1).expand(B, self.P, N, N).clone()
        p = torch.arange(self.P, device=dev)
        m[:, p, iu, iv] = False
        m[:, p, iv, iu] = False
        reach = (m | torch.eye(N, dtype=torch.bool, device=dev)).float()
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
        B, N = n.shape[0], self.N
        a, t, m = adj.numpy(), types.numpy(), n.numpy()
        inv = np.tile(np.arange(N), (B, 1))
        for b in range(B):
            k = int(m[b])
            if k <= 1:
                continue
            perm = _igraph(a[b], k).canonical_permutation(color=t[b, :k].tolist())
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

    def log_automorphisms(
        self, adj: torch.Tensor, types: torch.Tensor, n: torch.Tensor
    ) -> torch.Tensor:
        """log |Aut| of every state, label-preserving (igraph/bliss), shape (B,) float64."""
        a, t = adj.numpy(), types.numpy()
        out = torch.zeros(n.shape[0], dtype=torch.float64)
        for b, k in enumerate(n.tolist()):
            if k > 1:
                out[b] = math.log(_igraph(a[b], k).count_automorphisms(color=t[b, :k].tolist()))
        return out


def _igraph(adj: np.ndarray, k: int):
    """The first ``k`` nodes of a dense adjacency (N, N) as an igraph graph."""
    import igraph

    iu, iv = np.nonzero(np.triu(adj[:k, :k]))
    return igraph.Graph(n=k, edges=list(zip(iu.tolist(), iv.tolist(), strict=True)))
