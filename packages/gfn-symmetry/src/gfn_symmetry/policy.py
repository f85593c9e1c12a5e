"""Permutation-equivariant message-passing policy for graph-building GFlowNets.

Node states are updated by ``n_layers`` rounds of sum-aggregated messages
(GIN-style, with edge-kind embeddings); a graph embedding is the concatenation
of the sum and mean of node states.  Heads score every forward action of
:func:`gfn_symmetry.batching.featurize`:

* ``STOP`` and ``FIRST(k)`` from the graph embedding;
* ``ADD_NODE(u, k)`` / ``ADD_FRAGMENT(u, k)`` from ``[h_u, graph]`` (one logit per
  label or per fragment stem ``k``);
* ``ADD_EDGE(u, v)`` from ``[h_u + h_v, graph]`` (symmetric in ``u, v``).

A flow head gives :math:`\\log F(s)` for detailed / sub-trajectory balance, and with
``backward=True`` two more heads score backward actions (remove node ``u``: ``[h_u, graph]``;
remove edge ``(u, v)``: ``[h_u + h_v, graph]``; remove a leaf fragment: its attachment atom).
Their output layers start at zero, so a learned backward policy starts uniform.
Because the network is equivariant, orbit-equivalent actions (related by an
automorphism of the state) always receive equal logits, which is the setting of
the paper's analysis (Sec. 3).
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from gfn_symmetry.batching import GraphBatch
from gfn_symmetry.env import ADD_EDGE, ADD_FRAGMENT, ADD_NODE, FIRST, STOP, GraphEnv

__all__ = ["GraphPolicy", "MessagePassingLayer"]


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.SiLU(), nn.Linear(d_hidden, d_out))


class MessagePassingLayer(nn.Module):
    """One residual sum-aggregation message-passing step.

    Parameters
    ----------
    hidden : int
        Node-state width.
    n_edge_kinds : int, default=2
        Number of edge kinds embedded into messages.
    """

    def __init__(self, hidden: int, n_edge_kinds: int = 2):
        super().__init__()
        self.message = nn.Linear(hidden, hidden)
        self.edge = nn.Embedding(n_edge_kinds, hidden)
        self.update = _mlp(2 * hidden, hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(
        self, h: torch.Tensor, edge_index: torch.Tensor, edge_kind: torch.Tensor
    ) -> torch.Tensor:
        """``h`` (N, hidden), ``edge_index`` (2, E), ``edge_kind`` (E,) -> (N, hidden)."""
        msg = torch.relu(self.message(h[edge_index[0]]) + self.edge(edge_kind))
        agg = torch.zeros_like(h).index_add(0, edge_index[1], msg)
        return self.norm(h + self.update(torch.cat([h, agg], dim=-1)))


class GraphPolicy(nn.Module):
    """Forward policy (and state flow) network for :class:`GraphEnv` environments.

    Parameters
    ----------
    env : GraphEnv
        Environment (atom- or fragment-based) whose actions are scored.
    hidden : int, default=64
        Width of node states and MLPs.
    n_layers : int, default=3
        Number of message-passing rounds.
    seed : int or None, default=None
        If given, parameters are initialised under ``torch.manual_seed(seed)``.
    backward : bool, default=False
        Add the backward-action heads (:meth:`forward_backward`).
    """

    def __init__(
        self,
        env: GraphEnv,
        hidden: int = 64,
        n_layers: int = 3,
        seed: int | None = None,
        backward: bool = False,
    ):
        super().__init__()
        if not isinstance(env, GraphEnv):
            raise TypeError(f"env must be a GraphEnv, got {type(env).__name__}")
        for name, val in (("hidden", hidden), ("n_layers", n_layers)):
            if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < 1:
                raise ValueError(f"{name} must be a positive int, got {val!r}")
        hidden, n_layers = int(hidden), int(n_layers)
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0
        ):
            raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
        if not isinstance(backward, bool):  # bool("no") is True
            raise TypeError(f"backward must be a bool, got {type(backward).__name__}")
        self.env = env
        state = torch.random.get_rng_state()
        if seed is not None:
            torch.manual_seed(seed)
        self.node_emb = nn.Embedding(env.n_node_types, hidden)
        self.layers = nn.ModuleList([MessagePassingLayer(hidden) for _ in range(n_layers)])
        self.empty = nn.Parameter(torch.zeros(2 * hidden))
        self.stop_head = _mlp(2 * hidden, hidden, 1)
        self.first_head = _mlp(2 * hidden, hidden, env.n_first)
        self.node_head = _mlp(3 * hidden, hidden, env.n_stems)
        self.edge_head = _mlp(3 * hidden, hidden, 1)
        self.flow_head = _mlp(2 * hidden, hidden, 1)
        self.backward = bool(backward)
        if self.backward:
            self.back_node_head = _mlp(3 * hidden, hidden, 1)
            self.back_edge_head = _mlp(3 * hidden, hidden, 1)
            for head in (self.back_node_head, self.back_edge_head):
                nn.init.zeros_(head[-1].weight)
                nn.init.zeros_(head[-1].bias)
        if seed is not None:
            torch.random.set_rng_state(state)
        self.hidden = hidden

    def _embed(self, batch: GraphBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Node states (N, hidden) and graph embeddings (G, 2 hidden)."""
        G = batch.n_graphs
        h = self.node_emb(batch.node_type)
        for layer in self.layers:
            h = layer(h, batch.edge_index, batch.edge_kind)
        pooled = torch.zeros(G, self.hidden, dtype=h.dtype, device=h.device).index_add(
            0, batch.node_graph, h
        )
        n = batch.n_nodes.clamp(min=1).unsqueeze(-1).to(h.dtype)
        g = torch.cat([pooled / self.env.max_nodes, pooled / n], dim=-1)
        g = torch.where((batch.n_nodes == 0).unsqueeze(-1), self.empty.expand_as(g), g)
        return h, g

    def forward_backward(
        self, batch: GraphBatch
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Forward logits (A,), log-flows (G,) and backward logits (A_B,) in one pass.

        ``batch`` must come from ``featurize(..., backward=True)`` and the policy must have
        been built with ``backward=True``.
        """
        if not self.backward:
            raise ValueError("this GraphPolicy has no backward heads: build it with backward=True")
        if batch.bwd_graph is None:
            raise ValueError("batch has no backward actions: use featurize(..., backward=True)")
        h, g = self._embed(batch)
        logits, flow = self._heads(batch, h, g)
        back = torch.zeros(len(batch.bwd_graph), dtype=h.dtype, device=h.device)
        if len(back):
            g_b = g[batch.bwd_graph]
            hu, hv = h[batch.bwd_u], h[batch.bwd_v]
            node = self.back_node_head(torch.cat([hu, g_b], -1))[:, 0]
            edge = self.back_edge_head(torch.cat([hu + hv, g_b], -1))[:, 0]
            back = torch.where(batch.bwd_edge.bool(), edge, node)
        return logits, flow, back

    def forward(self, batch: GraphBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Score the actions of a batch.

        Parameters
        ----------
        batch : GraphBatch
            Output of :func:`gfn_symmetry.batching.featurize`.

        Returns
        -------
        logits : Tensor, shape (A,)
            Unnormalised log-probability of every candidate action.
        log_flow : Tensor, shape (G,)
            :math:`\\log F(s)` of every graph.
        """
        if not isinstance(batch, GraphBatch):
            raise TypeError(f"batch must be a GraphBatch (featurize(env, graphs)), got "
                            f"{type(batch).__name__}")  # fmt: skip
        return self._heads(batch, *self._embed(batch))

    def _heads(
        self, batch: GraphBatch, h: torch.Tensor, g: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        kind, gid, k = batch.act_kind, batch.act_graph, batch.act_k
        g_a = g[gid]
        logits = torch.zeros(len(kind), dtype=h.dtype, device=h.device)
        if len(h) > 0:
            hu, hv = h[batch.act_u], h[batch.act_v]
            node_logits = self.node_head(torch.cat([hu, g_a], -1)).gather(
                1, k.clamp(max=self.env.n_stems - 1).unsqueeze(1)
            )[:, 0]
            edge_logits = self.edge_head(torch.cat([hu + hv, g_a], -1))[:, 0]
            is_node = (kind == ADD_NODE) | (kind == ADD_FRAGMENT)
            logits = torch.where(is_node, node_logits, logits)
            logits = torch.where(kind == ADD_EDGE, edge_logits, logits)
        first_logits = self.first_head(g_a).gather(
            1, k.clamp(max=self.env.n_first - 1).unsqueeze(1)
        )[:, 0]
        logits = torch.where(kind == FIRST, first_logits, logits)
        logits = torch.where(kind == STOP, self.stop_head(g_a)[:, 0], logits)
        return logits, self.flow_head(g)[:, 0]
