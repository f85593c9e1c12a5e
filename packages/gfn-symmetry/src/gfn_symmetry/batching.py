"""Batching of graph states and segment (ragged) softmax/sampling helpers.

A batch of ``G`` graphs is flattened into ``N`` nodes, ``2E`` directed edges and
``A`` candidate actions; ``*_graph`` tensors hold the graph id of each row, so
per-graph reductions are ``index_add``/``scatter_reduce`` calls instead of
Python loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

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

    def __post_init__(self) -> None:
        # a hand-built batch with ragged or out-of-range indices would otherwise score the
        # wrong rows (index_add and gathers do not check) or fail deep inside the policy
        if not isinstance(self.actions, list) or not all(isinstance(a, list) for a in self.actions):
            raise TypeError("actions must be a list (one per graph) of lists of GraphAction")
        G = len(self.actions)
        bwd = [self.bwd_edge, self.bwd_graph, self.bwd_u, self.bwd_v, self.bwd_offset]
        if any(t is None for t in bwd) and any(t is not None for t in bwd):
            raise ValueError("bwd_edge, bwd_graph, bwd_u, bwd_v and bwd_offset must all be "
                             "given (featurize(..., backward=True)) or all be None")  # fmt: skip
        for f in fields(self):
            t = getattr(self, f.name)
            if f.name == "actions" or t is None:
                continue
            if not isinstance(t, torch.Tensor) or t.dtype != torch.long:
                got = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
                raise TypeError(f"{f.name} must be a LongTensor, got {got}")
        if self.n_nodes.ndim != 1 or len(self.n_nodes) != G:
            raise ValueError(f"actions must hold one list per graph of n_nodes: {G} lists for "
                             f"n_nodes of shape {tuple(self.n_nodes.shape)}")  # fmt: skip
        N, A = len(self.node_type), len(self.act_kind)
        shapes = {"node_graph": (N,), "n_nodes": (G,), "act_offset": (G + 1,),
                  **{k: (A,) for k in ("act_graph", "act_u", "act_v", "act_k")}}  # fmt: skip
        if self.edge_index.ndim != 2 or self.edge_index.shape[0] != 2:
            raise ValueError(f"edge_index must have shape (2, 2E), got {tuple(self.edge_index.shape)}")  # fmt: skip
        shapes["edge_kind"] = (self.edge_index.shape[1],)
        if self.bwd_edge is not None:
            n_b = len(self.bwd_edge)
            shapes.update({k: (n_b,) for k in ("bwd_graph", "bwd_u", "bwd_v")})
            shapes["bwd_offset"] = (G + 1,)
        for name, want in {"node_type": (N,), **shapes}.items():
            got = tuple(getattr(self, name).shape)
            if got != want:
                raise ValueError(f"{name} must have shape {want}, got {got}")
        if self.node_type.device.type != "cpu":
            return  # the index checks below read values: done where featurize builds batches
        n_acts = [len(a) for a in self.actions]
        if self.act_offset.tolist() != [sum(n_acts[:i]) for i in range(G + 1)]:
            raise ValueError("act_offset must be the running count of each graph's actions")
        if int(self.n_nodes.sum()) != N or (self.n_nodes < 0).any():
            raise ValueError("n_nodes must be non-negative and sum to the number of nodes")
        for name, idx, hi in (("node_graph", self.node_graph, G), ("act_graph", self.act_graph, G),
                              ("edge_index", self.edge_index, N), ("act_u", self.act_u, max(N, 1)),
                              ("act_v", self.act_v, max(N, 1))):  # fmt: skip
            if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= hi):
                raise ValueError(f"{name} holds indices outside [0, {hi})")

    @property
    def n_graphs(self) -> int:
        return len(self.actions)

    def to(self, device: torch.device | str) -> GraphBatch:
        """A copy with every tensor on ``device`` (the action lists are shared)."""
        out = object.__new__(GraphBatch)  # no re-validation: the values did not change
        for f in fields(self):
            t = getattr(self, f.name)
            setattr(out, f.name, t.to(device) if isinstance(t, torch.Tensor) else t)
        return out


def featurize(
    env: GraphEnv,
    graphs: Sequence[nx.Graph],
    backward: bool = False,
    validate: bool = True,
    device: torch.device | str | None = None,
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
    device : torch.device or str, optional
        Where the batch's tensors go (built on the CPU, then moved); default the CPU.

    Returns
    -------
    GraphBatch
    """
    if len(graphs) == 0:
        raise ValueError("graphs must not be empty")
    for name, flag in (("backward", backward), ("validate", validate)):
        if not isinstance(flag, bool):  # bool("no") is True
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
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
            name: torch.tensor(vals, dtype=long, device="cpu")
            for name, vals in (
                ("bwd_edge", b_edge),
                ("bwd_graph", b_graph),
                ("bwd_u", b_u),
                ("bwd_v", b_v),
                ("bwd_offset", b_off),
            )
        }
    batch = GraphBatch(
        node_type=torch.tensor(node_type, dtype=long, device="cpu"),
        node_graph=torch.tensor(node_graph, dtype=long, device="cpu"),
        edge_index=torch.tensor([src, dst], dtype=long, device="cpu").reshape(2, -1),
        edge_kind=torch.tensor(kind, dtype=long, device="cpu"),
        n_nodes=torch.tensor(n_nodes, dtype=long, device="cpu"),
        act_kind=torch.tensor(a_kind, dtype=long, device="cpu"),
        act_graph=torch.tensor(a_graph, dtype=long, device="cpu"),
        act_u=torch.tensor(a_u, dtype=long, device="cpu"),
        act_v=torch.tensor(a_v, dtype=long, device="cpu"),
        act_k=torch.tensor(a_k, dtype=long, device="cpu"),
        act_offset=torch.tensor(offsets, dtype=long, device="cpu"),
        actions=actions,
        **extra,
    )
    return batch if device is None else batch.to(device)


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
    # the uniforms come from the generator's device (a CPU generator gives the same draws
    # whatever device the logits are on)
    dev = logits.device
    gen_dev = generator.device if generator is not None else dev
    u = torch.rand(logits.shape, generator=generator, dtype=logits.dtype, device=gen_dev)
    z = logits - torch.log(-torch.log(u.to(dev).clamp_(1e-20, 1.0)))
    best = torch.full((n_segments,), -torch.inf, dtype=z.dtype, device=dev)
    best = best.scatter_reduce(0, segment, z, reduce="amax", include_self=True)
    rows = torch.arange(len(z), device=dev)
    cand = torch.where(z == best[segment], rows, torch.full_like(rows, len(z)))
    pick = torch.full((n_segments,), len(z), dtype=torch.long, device=dev)
    return pick.scatter_reduce(0, segment, cand, reduce="amin", include_self=True)
