"""Fusion backbones with the MultiBench-style signature ``F(list of M embeddings) -> (B, K)``.

Embeddings are (B, D) vectors or (B, T, D) token sets (pooled by the mean where a backbone needs
vectors). Any ``nn.Module`` with this signature can be wrapped by ``I2MoE``.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ConcatMLPFusion", "LateFusion", "LowRankTensorFusion", "TransformerFusion", "pool"]


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


class LowRankTensorFusion(nn.Module):
    """Low-rank multimodal tensor fusion (Liu et al., ACL 2018; a MultiBench backbone).

    Each pooled embedding gets a constant 1 appended, ``z_m' = [z_m; 1]``; the fused vector is
    ``sum_r prod_m (z_m' W_m^(r))`` -- the rank-``r`` factorisation of the outer-product tensor
    of all modalities -- followed by a linear head.
    """

    def __init__(self, num_modalities: int, dim: int, num_outputs: int, rank: int = 4,
                 fused: int = 32) -> None:  # fmt: skip
        super().__init__()
        if rank < 1 or fused < 1:
            raise ValueError(f"rank and fused must be >= 1, got {rank}, {fused}")
        self.factors = nn.ParameterList(
            nn.Parameter(torch.randn(rank, dim + 1, fused) * (dim + 1) ** -0.5)
            for _ in range(num_modalities)
        )
        self.rank_weights = nn.Parameter(torch.full((rank,), 1.0 / rank))
        self.head = nn.Linear(fused, num_outputs)

    def forward(self, embs: list[torch.Tensor]) -> torch.Tensor:
        prod = None
        for f, e in zip(self.factors, embs, strict=True):
            z = pool(e)
            z1 = torch.cat([z, torch.ones(len(z), 1, dtype=z.dtype, device=z.device)], dim=-1)
            part = torch.einsum("bd,rdf->brf", z1, f)  # (B, rank, fused)
            prod = part if prod is None else prod * part
        fused = torch.einsum("r,brf->bf", self.rank_weights, prod)
        return self.head(torch.relu(fused))
