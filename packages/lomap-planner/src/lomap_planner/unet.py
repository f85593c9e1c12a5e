"""Diffuser's temporal U-Net: 1-D convolutions over the planning horizon."""

from __future__ import annotations

import itertools
import math

import torch
from torch import nn

__all__ = ["ResidualTemporalBlock", "SinusoidalPosEmb", "TemporalUnet"]


class SinusoidalPosEmb(nn.Module):
    """Sinusoidal embedding of the diffusion step, shape (B,) -> (B, dim)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError(f"dim must be an even int >= 2, got {dim}")
        self.dim = dim

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freq = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / max(half - 1, 1))
        arg = t.float()[:, None] * freq[None]
        return torch.cat([arg.sin(), arg.cos()], dim=-1)


def _conv_block(c_in: int, c_out: int, kernel: int) -> nn.Sequential:
    groups = math.gcd(8, c_out)
    return nn.Sequential(
        nn.Conv1d(c_in, c_out, kernel, padding=kernel // 2), nn.GroupNorm(groups, c_out), nn.Mish()
    )


class ResidualTemporalBlock(nn.Module):
    """Two conv blocks with the step embedding added in between, plus a skip."""

    def __init__(self, c_in: int, c_out: int, embed_dim: int, kernel: int = 5) -> None:
        super().__init__()
        self.block1 = _conv_block(c_in, c_out, kernel)
        self.block2 = _conv_block(c_out, c_out, kernel)
        self.time_mlp = nn.Sequential(nn.Mish(), nn.Linear(embed_dim, c_out))
        self.skip = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        h = self.block1(x) + self.time_mlp(emb)[:, :, None]
        return self.block2(h) + self.skip(x)


class TemporalUnet(nn.Module):
    """Noise/data predictor of Diffuser (Janner et al., 2022, Sec. 3 and App. C).

    Parameters
    ----------
    horizon : int
        Planning horizon H; must be divisible by ``2 ** (len(dim_mults) - 1)``.
    transition_dim : int
        Features per step (``act_dim + obs_dim``).
    dim : int, default=32
        Base channel width.
    dim_mults : tuple of int, default=(1, 2, 4)
        Channel multipliers per resolution level.

    Notes
    -----
    ``forward(x, t)`` takes ``x`` of shape (B, H, transition_dim) and integer steps
    ``t`` of shape (B,), and returns a tensor shaped like ``x``.
    """

    def __init__(
        self,
        horizon: int,
        transition_dim: int,
        dim: int = 32,
        dim_mults: tuple[int, ...] = (1, 2, 4),
    ) -> None:
        super().__init__()
        if transition_dim < 1:
            raise ValueError(f"transition_dim must be >= 1, got {transition_dim}")
        if dim < 2 or dim % 2:
            raise ValueError(f"dim must be an even int >= 2, got {dim}")
        if not dim_mults or any(m < 1 for m in dim_mults):
            raise ValueError(f"dim_mults must be positive ints, got {dim_mults}")
        if horizon % (2 ** (len(dim_mults) - 1)):
            raise ValueError(
                f"horizon={horizon} must be divisible by 2**(len(dim_mults)-1)="
                f"{2 ** (len(dim_mults) - 1)}"
            )
        self.horizon, self.transition_dim = horizon, transition_dim
        dims = [transition_dim] + [dim * m for m in dim_mults]
        pairs = list(itertools.pairwise(dims))
        emb = dim
        self.time_mlp = nn.Sequential(
            SinusoidalPosEmb(dim), nn.Linear(dim, dim * 4), nn.Mish(), nn.Linear(dim * 4, emb)
        )
        self.downs = nn.ModuleList()
        for k, (a, b) in enumerate(pairs):
            last = k == len(pairs) - 1
            self.downs.append(
                nn.ModuleList(
                    [
                        ResidualTemporalBlock(a, b, emb),
                        ResidualTemporalBlock(b, b, emb),
                        nn.Conv1d(b, b, 3, 2, 1) if not last else nn.Identity(),
                    ]
                )
            )
        mid = dims[-1]
        self.mid1 = ResidualTemporalBlock(mid, mid, emb)
        self.mid2 = ResidualTemporalBlock(mid, mid, emb)
        self.ups = nn.ModuleList()
        # Every up level undoes one downsampling (there are len(pairs) - 1 of each).
        for a, b in reversed(pairs[1:]):
            self.ups.append(
                nn.ModuleList(
                    [
                        ResidualTemporalBlock(b * 2, a, emb),
                        ResidualTemporalBlock(a, a, emb),
                        nn.ConvTranspose1d(a, a, 4, 2, 1),
                    ]
                )
            )
        self.final = nn.Sequential(_conv_block(dim, dim, 5), nn.Conv1d(dim, transition_dim, 1))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h = x.transpose(1, 2)
        emb = self.time_mlp(t)
        skips = []
        for res1, res2, down in self.downs:
            h = res2(res1(h, emb), emb)
            skips.append(h)
            h = down(h)
        h = self.mid2(self.mid1(h, emb), emb)
        for res1, res2, up in self.ups:
            h = torch.cat([h, skips.pop()], dim=1)
            h = up(res2(res1(h, emb), emb))
        return self.final(h).transpose(1, 2)
