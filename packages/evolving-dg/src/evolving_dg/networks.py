"""Building blocks of SYNC and the baselines (spec §2.2–2.5; sizes follow the official code)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["CNNBackbone", "MLPBackbone", "Masker", "affine_block", "make_backbone"]


class MLPBackbone(nn.Module):
    """φ for vector data: ``in → width → width → width → out`` with ReLU (reference: 512, 128)."""

    def __init__(self, in_dim: int, width: int = 128, out_dim: int = 128) -> None:
        super().__init__()
        in_dim, width, out_dim = int(in_dim), int(width), int(out_dim)
        self.n_outputs = out_dim
        self.net = nn.Sequential(
            nn.Linear(in_dim, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
            nn.Linear(width, width), nn.ReLU(), nn.Linear(width, out_dim),
        )  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        """x: (N, in_dim) -> (N, out_dim)."""
        return self.net(x.flatten(1))


class CNNBackbone(nn.Module):
    """φ for 1×H×W images: 4 conv layers (stride 2 after the first), GroupNorm(8), ReLU,
    global average pooling (reference channels 64/128/128/128; default 16/32/32/32 for CPU)."""

    def __init__(self, in_channels: int = 1, channels: tuple[int, ...] = (16, 32, 32, 32)) -> None:
        super().__init__()
        layers, c_in = [], in_channels
        for i, c in enumerate(channels):
            layers += [nn.Conv2d(c_in, c, 3, stride=1 if i == 0 else 2, padding=1),
                       nn.GroupNorm(min(8, c), c), nn.ReLU()]  # fmt: skip
            c_in = c
        self.net = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.n_outputs = c_in

    def forward(self, x: Tensor) -> Tensor:
        """x: (N, C, H, W) -> (N, channels[-1])."""
        return self.net(x)


def make_backbone(backbone, input_shape: tuple[int, ...], width: int) -> nn.Module:
    """``"mlp"``, ``"cnn"`` or an ``nn.Module`` with an ``n_outputs`` attribute (deep-copied)."""
    import copy

    if isinstance(backbone, nn.Module):
        if not isinstance(getattr(backbone, "n_outputs", None), int):
            raise TypeError("a backbone module needs an int attribute n_outputs")
        return copy.deepcopy(backbone)
    if backbone == "mlp":
        d = 1
        for s in input_shape:
            d *= s
        return MLPBackbone(d, width, width)
    if backbone == "cnn":
        if len(input_shape) != 3:
            raise ValueError(f"backbone='cnn' needs (C, H, W) inputs, got shape {input_shape}")
        return CNNBackbone(input_shape[0])
    raise ValueError(f"backbone must be 'mlp', 'cnn' or an nn.Module, got {backbone!r}")


def affine_block(d_in: int, d_out: int) -> nn.Sequential:
    """Linear + BatchNorm + LeakyReLU(0.02) (the reference's feature adaptor)."""
    return nn.Sequential(nn.Linear(d_in, d_out), nn.BatchNorm1d(d_out), nn.LeakyReLU(0.02))


class Masker(nn.Module):
    """Scores for the relaxed top-k causal mask (spec §2.5): input the detached posterior mean."""

    def __init__(self, d_z: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(d_z, 4 * d_z), nn.BatchNorm1d(4 * d_z), nn.ReLU(),
            nn.Dropout(0.5), nn.Linear(4 * d_z, 4 * d_z), nn.BatchNorm1d(4 * d_z), nn.ReLU(),
            nn.Linear(4 * d_z, d_z),
        )  # fmt: skip

    def forward(self, z: Tensor) -> Tensor:
        """z: (N, d_z) -> scores (N, d_z)."""
        return self.net(z)


def lstm_unroll(
    cell: nn.LSTMCell, head: nn.Linear, steps: int, d_out: int, state_grad: bool = True
) -> Tensor:
    """Unroll a prior LSTMCell whose input is its previous output (zeros first); (steps, d_out).

    ``state_grad=False`` (official code) detaches the LSTM state between steps: gradients reach
    earlier steps through the fed-back output only.
    """
    w = head.weight
    inp = torch.zeros(1, d_out, device=w.device, dtype=w.dtype)
    state, outs = None, []
    for _ in range(steps):  # over domains (time), not samples
        if state is not None and not state_grad:
            state = (state[0].detach(), state[1].detach())
        state = cell(inp, state)
        inp = head(state[0])
        outs.append(inp)
    return torch.cat(outs, 0)
