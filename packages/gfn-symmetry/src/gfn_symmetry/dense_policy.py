"""Permutation-equivariant dense message-passing policy for :class:`DenseGraphEnv`."""

from __future__ import annotations

import numbers

import torch
from torch import nn

from gfn_symmetry.dense_env import DenseGraphEnv

__all__ = ["DenseGraphPolicy"]


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.SiLU(), nn.Linear(d_hidden, d_out))


def _check_state(env: DenseGraphEnv, adj, types, n) -> None:
    """Shapes and dtypes of a batch of dense states (values are the env's to guarantee)."""
    for name, t in (("adj", adj), ("types", types), ("n", n)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a tensor (DenseGraphEnv.from_networkx), got {type(t).__name__}")  # fmt: skip
    for name, t in (("types", types), ("n", n)):
        if t.dtype.is_floating_point or t.dtype == torch.bool:
            raise TypeError(f"{name} must be an integer tensor, got {t.dtype}")
    if n.ndim != 1 or len(n) == 0:
        raise ValueError(f"n must have shape (B,) with B >= 1, got {tuple(n.shape)}")
    B, N = n.shape[0], env.N
    for name, t, want in (("adj", adj, (B, N, N)), ("types", types, (B, N))):
        if tuple(t.shape) != want:
            raise ValueError(f"{name} must have shape {want} for B >= 1 states of a {N}-node env, got {tuple(t.shape)}")  # fmt: skip


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
            if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < low:
                raise ValueError(f"{name} must be an int >= {low}, got {val!r}")
        hidden, n_layers, rw_steps = int(hidden), int(n_layers), int(rw_steps)
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
        real = (torch.arange(N, device=n.device).unsqueeze(0) < n.unsqueeze(1)).float().unsqueeze(2)
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
        _check_state(env, adj, types, n)
        B, N = n.shape[0], env.N
        real = (torch.arange(N, device=n.device).unsqueeze(0) < n.unsqueeze(1)).float().unsqueeze(2)
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
        pair_u, pair_v, _ = env.constants(z.device)
        pre = z[:, pair_u] + z[:, pair_v] + self.edge_g(g).unsqueeze(1)
        edge_logits = self.edge_out(nn.functional.silu(pre)).squeeze(2)
        logits = torch.cat([self.stop(g), self.first(g), node_logits, edge_logits], 1)
        logits = logits.masked_fill(~mask, float("-inf"))
        return logits, self.flow(g).squeeze(1)
