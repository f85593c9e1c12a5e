"""Batching of graph states and segment (ragged) softmax/sampling helpers.

A batch of ``G`` graphs is flattened into ``N`` nodes, ``2E`` directed edges and
``A`` candidate actions; ``*_graph`` tensors hold the graph id of each row, so
per-graph reductions are ``index_add``/``scatter_reduce`` calls instead of
Python loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import torch

from gfn_symmetry.env import GraphAction, GraphEnv

__all__ = [
    "GraphBatch",
    "featurize",
    "segment_log_softmax",
    "segment_logsumexp",
    "segment_sample",
]


@dataclass
class GraphBatch:
    """Flattened batch of graph states and their forward actions.

    Attributes
    ----------
    node_type : LongTensor, shape (N,)
    node_graph : LongTensor, shape (N,)
    edge_index : LongTensor, shape (2, 2E)
        Both directions of every edge, global node indices.
    edge_kind : LongTensor, shape (2E,)
    n_nodes : LongTensor, shape (G,)
    act_kind, act_graph, act_u, act_v, act_k : LongTensor, shape (A,)
        Action kind, graph id, global node indices (``-1`` -> 0 where unused)
        and label/stem index of each candidate action.
    act_offset : LongTensor, shape (G + 1,)
        Actions of graph ``g`` are rows ``act_offset[g]:act_offset[g+1]``.
    actions : list of list of GraphAction
        The env's action lists, for mapping sampled rows back to actions.
    bwd_edge, bwd_graph, bwd_u, bwd_v : LongTensor, shape (A_B,) or None
        Backward actions (``featurize(..., backward=True)``): whether it removes an edge,
        graph id, and the global node(s) that anchor it (``env.backward_anchor``).
    bwd_offset : LongTensor, shape (G + 1,) or None
        Backward actions of graph ``g`` are rows ``bwd_offset[g]:bwd_offset[g+1]``.
    """

    node_type: torch.Tensor
    node_graph: torch.Tensor
    edge_index: torch.Tensor
    edge_kind: torch.Tensor
    n_nodes: torch.Tensor
    act_kind: torch.Tensor
    act_graph: torch.Tensor
    act_u: torch.Tensor
    act_v: torch.Tensor
    act_k: torch.Tensor
    act_offset: torch.Tensor
    actions: list[list[GraphAction]]
    bwd_edge: torch.Tensor | None = None
    bwd_graph: torch.Tensor | None = None
    bwd_u: torch.Tensor | None = None
    bwd_v: torch.Tensor | None = None
    bwd_offset: torch.Tensor | None = None

    @property
    def n_graphs(self) -> int:
        return len(self.actions)


def featurize(
    env: GraphEnv, graphs: Sequence[nx.Graph], backward: bool = False, validate: bool = True
) -> GraphBatch:
    """Flatten ``graphs`` (states of ``env``) into a :class:`GraphBatch`.

    Parameters
    ----------
    env : GraphEnv
        Environment defining node types and forward actions.
    graphs : sequence of networkx.Graph, length G
        States (nodes ``0..n-1``).
    backward : bool, default=False
        Also list every graph's backward actions (for a learned backward policy).
    validate : bool, default=True
        Check every graph is a state of ``env`` (node ids, labels in ``[0, n_labels)``,
        connectivity); the trainer's own states skip it.

    Returns
    -------
    GraphBatch
    """
    if len(graphs) == 0:
        raise ValueError("graphs must not be empty")
    if validate:
        for i, g in enumerate(graphs):
            env.validate_state(g, f"graphs[{i}]")
    node_type, node_graph, src, dst, kind, n_nodes = [], [], [], [], [], []
    a_kind, a_graph, a_u, a_v, a_k, offsets, actions = [], [], [], [], [], [0], []
    b_edge, b_graph, b_u, b_v, b_off = [], [], [], [], [0]
    base = 0
    for gi, g in enumerate(graphs):
        n = g.number_of_nodes()
        n_nodes.append(n)
        node_type += [env.node_type(g, v) for v in range(n)]
        node_graph += [gi] * n
        for u, v, d in g.edges(data=True):
            src += [base + u, base + v]
            dst += [base + v, base + u]
            kind += [d.get("kind", 0)] * 2
        acts = env.forward_actions(g)
        actions.append(acts)
        for a in acts:
            a_kind.append(a.kind)
            a_graph.append(gi)
            a_u.append(base + a.u if a.u >= 0 else 0)
            a_v.append(base + a.v if a.v >= 0 else 0)
            a_k.append(max(a.k, 0))
        offsets.append(offsets[-1] + len(acts))
        if backward:
            back = env.backward_actions(g)
            for b in back:
                u, v = env.backward_anchor(g, b)
                b_edge.append(int(v >= 0))
                b_graph.append(gi)
                b_u.append(base + u)
                b_v.append(base + (v if v >= 0 else u))
            b_off.append(b_off[-1] + len(back))
        base += n
    long = torch.long
    extra = {}
    if backward:
        extra = {
            name: torch.tensor(vals, dtype=long)
            for name, vals in (
                ("bwd_edge", b_edge),
                ("bwd_graph", b_graph),
                ("bwd_u", b_u),
                ("bwd_v", b_v),
                ("bwd_offset", b_off),
            )
        }
    return GraphBatch(
        node_type=torch.tensor(node_type, dtype=long),
        node_graph=torch.tensor(node_graph, dtype=long),
        edge_index=torch.tensor([src, dst], dtype=long).reshape(2, -1),
        edge_kind=torch.tensor(kind, dtype=long),
        n_nodes=torch.tensor(n_nodes, dtype=long),
        act_kind=torch.tensor(a_kind, dtype=long),
        act_graph=torch.tensor(a_graph, dtype=long),
        act_u=torch.tensor(a_u, dtype=long),
        act_v=torch.tensor(a_v, dtype=long),
        act_k=torch.tensor(a_k, dtype=long),
        act_offset=torch.tensor(offsets, dtype=long),
        actions=actions,
        **extra,
    )


def segment_logsumexp(x: torch.Tensor, segment: torch.Tensor, n_segments: int) -> torch.Tensor:
    """Log-sum-exp of ``x`` (shape (A,)) within segments; returns shape (n_segments,).

    Empty segments give ``-inf``.
    """
    m = torch.full((n_segments,), -torch.inf, dtype=x.dtype, device=x.device)
    m = m.scatter_reduce(0, segment, x.detach(), reduce="amax", include_self=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    s = torch.zeros(n_segments, dtype=x.dtype, device=x.device)
    s = s.index_add(0, segment, torch.exp(x - m[segment]))
    return m + torch.log(s)


def segment_log_softmax(x: torch.Tensor, segment: torch.Tensor, n_segments: int) -> torch.Tensor:
    """Log-softmax of ``x`` (shape (A,)) within segments; returns shape (A,)."""
    return x - segment_logsumexp(x, segment, n_segments)[segment]


def segment_sample(
    logits: torch.Tensor,
    segment: torch.Tensor,
    n_segments: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draw one row per segment with probability ``softmax(logits)`` (Gumbel-max).

    Returns
    -------
    LongTensor, shape (n_segments,)
        Flat row index chosen in each segment.
    """
    u = torch.rand(logits.shape, generator=generator, dtype=logits.dtype).clamp_(1e-20, 1.0)
    z = logits - torch.log(-torch.log(u))
    best = torch.full((n_segments,), -torch.inf, dtype=z.dtype)
    best = best.scatter_reduce(0, segment, z, reduce="amax", include_self=True)
    rows = torch.arange(len(z))
    cand = torch.where(z == best[segment], rows, torch.full_like(rows, len(z)))
    pick = torch.full((n_segments,), len(z), dtype=torch.long)
    return pick.scatter_reduce(0, segment, cand, reduce="amin", include_self=True)
