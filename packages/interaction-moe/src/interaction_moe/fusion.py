"""Fusion backbones with the MultiBench-style signature ``F(list of M embeddings) -> (B, K)``.

Embeddings are (B, D) vectors or (B, T, D) token sets (pooled by the mean where a backbone needs
vectors). Any ``nn.Module`` with this signature can be wrapped by ``I2MoE``.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ConcatMLPFusion", "LateFusion", "TransformerFusion", "pool"]


def pool(e: torch.Tensor) -> torch.Tensor:
    """(B, D) unchanged; (B, T, D) -> mean over tokens."""
    return e.mean(1) if e.dim() == 3 else e


class ConcatMLPFusion(nn.Module):
    """Concatenate the pooled embeddings, then an MLP (early / intermediate fusion)."""

    def __init__(
        self,
        num_modalities: int,
        dim: int,
        num_outputs: int,
        hidden: int = 64,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(num_modalities * dim, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, num_outputs),
        )

    def forward(self, embs: list[torch.Tensor]) -> torch.Tensor:
        return self.net(torch.cat([pool(e) for e in embs], dim=-1))


class LateFusion(nn.Module):
    """One linear head per modality, logits summed (late fusion)."""

    def __init__(self, num_modalities: int, dim: int, num_outputs: int) -> None:
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(dim, num_outputs) for _ in range(num_modalities))

    def forward(self, embs: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack([h(pool(e)) for h, e in zip(self.heads, embs, strict=True)]).sum(0)


class TransformerFusion(nn.Module):
    """All tokens (vectors become one token) + learned modality embeddings -> TransformerEncoder
    -> mean per modality -> concatenate -> Linear (a MulT-style backbone)."""

    def __init__(
        self,
        num_modalities: int,
        dim: int,
        num_outputs: int,
        num_layers: int = 1,
        num_heads: int = 2,
    ) -> None:
        super().__init__()
        self.modality = nn.Parameter(torch.zeros(num_modalities, dim))
        layer = nn.TransformerEncoderLayer(dim, num_heads, 2 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.head = nn.Linear(num_modalities * dim, num_outputs)

    def forward(self, embs: list[torch.Tensor]) -> torch.Tensor:
        toks = [(e if e.dim() == 3 else e[:, None]) + self.modality[m] for m, e in enumerate(embs)]
        sizes = [t.shape[1] for t in toks]
        h = self.encoder(torch.cat(toks, dim=1))
        parts = torch.split(h, sizes, dim=1)
        return self.head(torch.cat([p.mean(1) for p in parts], dim=-1))
