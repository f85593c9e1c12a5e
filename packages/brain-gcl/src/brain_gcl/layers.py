"""Dense graph layers for aligned brain graphs (every subject has the same n ROIs)."""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["DenseGCN", "DenseGIN", "GraphEncoder", "mlp"]


def mlp(sizes, dropout: float = 0.0) -> nn.Sequential:
    layers = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), nn.ReLU(), nn.Dropout(dropout)]
    return nn.Sequential(*layers[:-2])  # no activation after the last layer


class _NodeBN(nn.Module):
    """BatchNorm over all nodes of all graphs: (B, n, d)."""

    def __init__(self, d):
        super().__init__()
        self.bn = nn.BatchNorm1d(d)

    def forward(self, h):
        return self.bn(h.flatten(0, 1)).view_as(h)


class DenseGIN(nn.Module):
    """GIN layer on weighted dense adjacency: ``MLP((1 + eps) h + A h)``, learnable eps."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(()))
        self.mlp = nn.Sequential(nn.Linear(d_in, d_out), _NodeBN(d_out), nn.ReLU(),
                                 nn.Linear(d_out, d_out))  # fmt: skip

    def forward(self, h, A):
        return self.mlp((1 + self.eps) * h + A @ h)


class DenseGCN(nn.Module):
    """GCN layer: ``D^{-1/2} (A + I) D^{-1/2} h W``."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out)

    def forward(self, h, A):
        A = A + torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        d = A.sum(-1).clamp_min(1e-12).rsqrt()
        return self.lin((d[..., :, None] * A * d[..., None, :]) @ h)


class GraphEncoder(nn.Module):
    """``layers`` graph layers (BatchNorm, ReLU) + a learnable ROI embedding + mean‖max readout.

    forward(X (B, n, d), A (B, n, n)) -> z (B, 2 * hidden)
    """

    def __init__(self, n_rois, d_in, hidden=64, layers=3, conv="gin", roi_embedding=8, dropout=0.0):
        super().__init__()
        self.roi = nn.Parameter(0.1 * torch.randn(n_rois, roi_embedding)) if roi_embedding else None
        d = d_in + (roi_embedding or 0)
        cls = DenseGIN if conv == "gin" else DenseGCN
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for _ in range(layers):
            self.convs.append(cls(d, hidden))
            self.norms.append(_NodeBN(hidden))
            d = hidden
        self.dropout = dropout
        self.out_dim = 2 * hidden

    def forward(self, X, A):
        h = X
        if self.roi is not None:
            h = torch.cat([X, self.roi.expand(X.shape[0], -1, -1)], dim=-1)
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = F.dropout(F.relu(norm(conv(h, A))), self.dropout, self.training)
        return torch.cat([h.mean(dim=1), h.amax(dim=1)], dim=-1)
