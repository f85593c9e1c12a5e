"""Window encoder f and projector g of the contrastive stage (paper Fig. 1b).

The released code's default encoder is a one-layer LSTM whose last hidden state is the
embedding, followed by a two-layer projector (Linear -> BatchNorm -> GELU -> Linear).
GRU and a flattened-window MLP (a cheap option for CI) are offered too.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ContrastiveNet", "Projector", "WindowEncoder"]

ENCODERS = ("lstm", "gru", "mlp")


class WindowEncoder(nn.Module):
    """Encode windows (B, W, N) into vectors (B, H).

    Parameters
    ----------
    n_vars : int
        N.
    window : int
        W (used by the MLP only).
    hidden_dim : int
        H.
    kind : {"lstm", "gru", "mlp"}
    """

    def __init__(self, n_vars: int, window: int, hidden_dim: int = 64, kind: str = "lstm") -> None:
        super().__init__()
        if kind not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}; got {kind!r}")
        self.kind = kind
        if kind == "lstm":
            self.net = nn.LSTM(n_vars, hidden_dim, batch_first=True)
        elif kind == "gru":
            self.net = nn.GRU(n_vars, hidden_dim, batch_first=True)
        else:
            self.net = nn.Sequential(
                nn.Flatten(),
                nn.Linear(window * n_vars, hidden_dim),
                nn.GELU(),
                nn.Linear(hidden_dim, hidden_dim),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, W, N) -> (B, H): last hidden state (RNNs) or MLP output."""
        if self.kind == "mlp":
            return self.net(x)
        out, _ = self.net(x)
        return out[:, -1]


class Projector(nn.Module):
    """Projector g: Linear(H, 2H) -> BatchNorm1d -> GELU -> Linear(2H, D)."""

    def __init__(self, hidden_dim: int, proj_dim: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(hidden_dim, 2 * hidden_dim),
            nn.BatchNorm1d(2 * hidden_dim),
            nn.GELU(),
            nn.Linear(2 * hidden_dim, proj_dim),
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """(B, H) -> (B, D)."""
        return self.net(h)


class ContrastiveNet(nn.Module):
    """g(f(x)): windows (B, W, N) -> unnormalised projections (B, D)."""

    def __init__(
        self, n_vars: int, window: int, hidden_dim: int, proj_dim: int, kind: str = "lstm"
    ) -> None:
        super().__init__()
        self.encoder = WindowEncoder(n_vars, window, hidden_dim, kind)
        self.projector = Projector(hidden_dim, proj_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, W, N) -> (B, D)."""
        return self.projector(self.encoder(x))
