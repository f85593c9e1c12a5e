"""Invariant-subgraph extractor I(.): edge probabilities from a 2-layer GIN and a top-r mask
with a straight-through gradient (spec §2.2; the paper's Eqs. (3)-(5), form reconstructed)."""

from __future__ import annotations

import math

import torch
from torch import nn

from brain_gcl.layers import DenseGIN, mlp

__all__ = ["EXTRACTORS", "EdgeScorer", "top_ratio_mask"]


def top_ratio_mask(scores: torch.Tensor, edges: torch.Tensor, ratio: float) -> torch.Tensor:
    """Keep the ``ceil(ratio * |E_k|)`` highest-scoring existing edges of each graph.

    Parameters
    ----------
    scores : (B, n, n) symmetric
    edges : (B, n, n) bool, symmetric, zero diagonal
    ratio : float in (0, 1]

    Returns
    -------
    (B, n, n) bool, symmetric, a subset of ``edges`` (ties broken by pair index)
    """
    B, n, _ = scores.shape
    iu, ju = torch.triu_indices(n, n, offset=1, device=scores.device)
    s = scores[:, iu, ju].masked_fill(~edges[:, iu, ju], -math.inf)
    k = torch.ceil(ratio * edges[:, iu, ju].sum(dim=1).float()).long()  # (B,)
    order = torch.argsort(s, dim=1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(len(iu), device=order.device).expand(B, -1))
    keep = (rank < k[:, None]) & edges[:, iu, ju]
    M = torch.zeros(B, n, n, dtype=torch.bool, device=scores.device)
    M[:, iu, ju] = keep
    return M | M.transpose(1, 2)


EXTRACTORS = ("gnn", "roi", "gnn+roi")


class EdgeScorer(nn.Module):
    """Edge probabilities of the invariant-subgraph extractor, symmetric, zero off-graph.

    ``mode="gnn"`` (the paper's form, reconstructed): ``p_ij = sigmoid(MLP([h_i + h_j, h_i * h_j,
    A_ij]))`` from a 2-layer GIN. Its logits are a function of node features only, so with
    topological features it cannot single out a fixed set of ROI pairs.

    ``mode="roi"``: one learnable logit per ROI pair, ``p_ij = sigmoid(W_ij)`` with ``W``
    symmetric -- possible because brain graphs are aligned (ROI i is the same region in every
    subject). The mask is then a population-level circuit intersected with each subject's edges.

    ``mode="gnn+roi"``: the sum of both logits.
    """

    def __init__(self, d_in, hidden=32, n_rois: int | None = None, mode: str = "gnn"):
        super().__init__()
        if mode not in EXTRACTORS:
            raise ValueError(f"mode must be one of {EXTRACTORS}, got {mode!r}")
        if mode != "gnn" and (n_rois is None or n_rois < 2):
            raise ValueError(f"mode={mode!r} needs n_rois >= 2, got {n_rois!r}")
        self.mode = mode
        if mode != "roi":
            self.gin1, self.gin2 = DenseGIN(d_in, hidden), DenseGIN(hidden, hidden)
            self.head = mlp([2 * hidden + 1, hidden, 1])
        if mode != "gnn":
            self.edge_logits = nn.Parameter(torch.zeros(n_rois, n_rois))

    def logits(self, X, A):
        """Symmetric edge logits (B, n, n) (not masked)."""
        out = 0.0
        if self.mode != "roi":
            h = self.gin2(torch.relu(self.gin1(X, A)), A)
            hi, hj = h[:, :, None, :], h[:, None, :, :]
            feats = torch.cat([(hi + hj).expand(-1, -1, h.shape[1], -1),
                               hi * hj, A[..., None]], dim=-1)  # fmt: skip
            out = self.head(feats).squeeze(-1)
        if self.mode != "gnn":
            W = self.edge_logits
            out = out + ((W + W.T) / 2).expand(A.shape[0], -1, -1)
        return out

    def forward(self, X, A):
        """Edge probabilities (B, n, n), zero where A has no edge."""
        return torch.sigmoid(self.logits(X, A)) * (A > 0)
