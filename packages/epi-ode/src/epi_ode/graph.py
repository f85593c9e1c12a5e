"""Graph pieces of EARTH: the static normalisation and GLTG's continuous transmission graph."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GLTGraph", "sym_normalize"]


def sym_normalize(A: torch.Tensor) -> torch.Tensor:
    """``D^{-1/2} A D^{-1/2}`` with D the row sums (every row must have a positive sum)."""
    if not isinstance(A, torch.Tensor) or not A.is_floating_point():
        raise TypeError(f"A must be a floating-point tensor, got {getattr(A, 'dtype', type(A))}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2] or A.numel() == 0:
        raise ValueError(f"A must be a non-empty (..., N, N) adjacency, got {tuple(A.shape)}")
    if not bool(torch.isfinite(A).all()) or bool((A < 0).any()):
        raise ValueError("A must hold finite, non-negative weights")
    if bool((A.sum(dim=-1) <= 0).any()):  # a clamped zero degree would scale its column by 1e6
        raise ValueError("A has a row with no positive weight (an isolated region): add self-loops")
    d = A.sum(dim=-1).rsqrt()
    return d[..., :, None] * A * d[..., None, :]


class GLTGraph(nn.Module):
    """Global trend z -> transmission graph A_t (spec §2.2, reference code's construction).

    ``P = tanh(a W1 z)``, ``Q = tanh(a W2 z)``, ``Ahat = ReLU(tanh(a (P Q^T - Q P^T)))`` with
    columns scaled to unit norm; gate ``C = sigmoid(Ahat W_b + b_b)`` mixes it with the static
    normalised graph ``Abar``: ``A_t = softmax_rows(Abar * C + Ahat * (1 - C))``.
    W_b and b_b start at 0 (C = 1/2); the reference leaves them uninitialised.
    """

    def __init__(self, num_nodes: int, hidden: int, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha
        self.w1 = nn.Linear(hidden, hidden)
        self.w2 = nn.Linear(hidden, hidden)
        self.gate_weight = nn.Parameter(torch.zeros(num_nodes, num_nodes))
        self.gate_bias = nn.Parameter(torch.zeros(()))

    def learned(self, z: torch.Tensor) -> torch.Tensor:
        """Ahat (B, N, N) >= 0 from z (B, N, d)."""
        p = torch.tanh(self.alpha * self.w1(z))
        q = torch.tanh(self.alpha * self.w2(z))
        pq = p @ q.transpose(-1, -2)
        a = F.relu(torch.tanh(self.alpha * (pq - pq.transpose(-1, -2))))
        return F.normalize(a, dim=-2)

    def forward(self, z: torch.Tensor, a_bar: torch.Tensor) -> torch.Tensor:
        """A_t (B, N, N), rows summing to one."""
        a_hat = self.learned(z)
        gate = torch.sigmoid(a_hat @ self.gate_weight + self.gate_bias)
        return torch.softmax(a_bar * gate + a_hat * (1.0 - gate), dim=-1)
