"""A tiny causal transformer LM (teacher and student for demos, tests and the benchmark)."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["TinyLM"]


class _Block(nn.Module):
    """Pre-LN block; attention written out because for T <= 128 on CPU the plain
    (B, H, T, T) softmax is several times faster than the fused CPU kernels."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, h: torch.Tensor, causal: torch.Tensor) -> torch.Tensor:
        b, t, d = h.shape
        q, k, v = self.qkv(self.ln1(h)).view(b, t, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        att = att.masked_fill(causal, float("-inf")).softmax(-1)
        h = h + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return h + self.mlp(self.ln2(h))


class TinyLM(nn.Module):
    """Decoder-only transformer: token + position embeddings, pre-LN blocks, tied head.

    Parameters
    ----------
    vocab_size : int
        Vocabulary size.
    d_model : int, default=64
        Width (divisible by ``n_heads``).
    n_layers : int, default=2
        Number of blocks.
    n_heads : int, default=4
        Attention heads.
    max_len : int, default=128
        Maximum sequence length.

    Shape
    -----
    input ids (batch, seq) -> logits (batch, seq, vocab_size)
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        max_len: int = 128,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, n_heads) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.max_len = max_len
        # small init: the tied head would otherwise start with logits of scale sqrt(d_model)
        for emb in (self.tok, self.pos):
            nn.init.normal_(emb.weight, std=0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Return next-token logits for every position."""
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"ids must be a torch.Tensor, got {type(ids).__name__}")
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            raise TypeError(f"ids must hold integer token ids, got {ids.dtype}")
        if ids.ndim != 2 or ids.numel() == 0:
            raise ValueError(
                f"ids must have a non-empty shape (batch, seq), got {tuple(ids.shape)}"
            )
        vocab = self.tok.num_embeddings
        if int(ids.min()) < 0 or int(ids.max()) >= vocab:
            raise ValueError(f"ids holds token ids outside [0, {vocab})")
        t = ids.shape[1]
        if t > self.max_len:
            raise ValueError(f"ids has length {t} > max_len {self.max_len}")
        h = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
        causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).triu(1)
        for block in self.blocks:
            h = block(h, causal)
        return self.norm(h) @ self.tok.weight.T
