"""Graph pieces of EARTH: the static normalisation and GLTG's continuous transmission graph."""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F
from torch import nn

from epi_ode.validation import check_int

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


def _autocast_on(device_type: str) -> bool:
    """Whether autocast is on for ``device_type`` (torch < 2.4 takes no argument)."""
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # pragma: no cover - torch < 2.4
        return torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled()


class GLTGraph(nn.Module):
    """Global trend z -> transmission graph A_t (spec §2.2, reference code's construction).

    ``P = tanh(a W1 z)``, ``Q = tanh(a W2 z)``, ``Ahat = ReLU(tanh(a (P Q^T - Q P^T)))`` with
    columns scaled to unit norm; gate ``C = sigmoid(Ahat W_b + b_b)`` mixes it with the static
    normalised graph ``Abar``: ``A_t = softmax_rows(Abar * C + Ahat * (1 - C))``.
    W_b and b_b start at 0 (C = 1/2); the reference leaves them uninitialised.
    """

    def __init__(self, num_nodes: int, hidden: int, alpha: float = 1.0):
        super().__init__()
        num_nodes, hidden = check_int(num_nodes, "num_nodes", 1), check_int(hidden, "hidden", 1)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
            raise TypeError(f"alpha must be a real number, got {alpha!r}")
        if not 0 < alpha < math.inf:
            raise ValueError(f"alpha must be positive and finite, got {alpha}")
        self.num_nodes, self.hidden = int(num_nodes), int(hidden)
        self.alpha = float(alpha)
        self.w1 = nn.Linear(hidden, hidden)
        self.w2 = nn.Linear(hidden, hidden)
        self.gate_weight = nn.Parameter(torch.zeros(num_nodes, num_nodes))
        self.gate_bias = nn.Parameter(torch.zeros(()))

    def _check_z(self, z: torch.Tensor) -> None:
        if not isinstance(z, torch.Tensor) or not z.is_floating_point():
            raise TypeError(
                f"z must be a floating-point tensor, got {getattr(z, 'dtype', type(z))}"
            )
        if z.ndim != 3 or tuple(z.shape[1:]) != (self.num_nodes, self.hidden) or z.shape[0] == 0:
            raise ValueError(
                f"z must have shape (B, {self.num_nodes}, {self.hidden}), got {tuple(z.shape)}"
            )
        if z.dtype != self.w1.weight.dtype and not _autocast_on(z.device.type):
            raise TypeError(f"z is {z.dtype} but the module's weights are {self.w1.weight.dtype}")
        if not bool(torch.isfinite(z).all()):
            raise ValueError("z contains NaN or inf")

    def learned(self, z: torch.Tensor) -> torch.Tensor:
        """Ahat (B, N, N) >= 0 from z (B, N, d)."""
        self._check_z(z)
        p = torch.tanh(self.alpha * self.w1(z))
        q = torch.tanh(self.alpha * self.w2(z))
        pq = p @ q.transpose(-1, -2)
        a = F.relu(torch.tanh(self.alpha * (pq - pq.transpose(-1, -2))))
        return F.normalize(a, dim=-2)

    def forward(self, z: torch.Tensor, a_bar: torch.Tensor) -> torch.Tensor:
        """A_t (B, N, N), rows summing to one; ``a_bar`` is (N, N) or (B, N, N)."""
        self._check_z(z)
        n = self.num_nodes
        if not isinstance(a_bar, torch.Tensor) or not a_bar.is_floating_point():
            raise TypeError(
                f"a_bar must be a floating-point tensor, got {getattr(a_bar, 'dtype', type(a_bar))}"
            )
        if (
            a_bar.shape[-2:] != (n, n)
            or a_bar.ndim not in (2, 3)
            or (a_bar.ndim == 3 and a_bar.shape[0] not in (1, z.shape[0]))
        ):
            raise ValueError(
                f"a_bar must have shape ({n}, {n}) or (B, {n}, {n}), got {tuple(a_bar.shape)}"
            )
        if a_bar.device != z.device:
            raise ValueError(f"a_bar is on {a_bar.device} but z is on {z.device}")
        if not bool(torch.isfinite(a_bar).all()):
            raise ValueError("a_bar contains NaN or inf")
        a_hat = self.learned(z)
        gate = torch.sigmoid(a_hat @ self.gate_weight + self.gate_bias)
        return torch.softmax(a_bar * gate + a_hat * (1.0 - gate), dim=-1)
