"""Train the toy parent LM (plain next-token cross-entropy, AdamW, cosine schedule)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm.auto import tqdm

from nas_puzzle.config import DecoderConfig
from nas_puzzle.data import as_tokens, sample_batch
from nas_puzzle.model import HeteroDecoder

__all__ = ["cosine_lr", "lm_loss", "train_parent"]


def cosine_lr(step: int, steps: int, lr: float, warmup: int = 0) -> float:
    """Linear warm-up then cosine decay to 10% of ``lr``."""
    if step < warmup:
        return lr * (step + 1) / warmup
    frac = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(frac, 1.0))))


def lm_loss(model: HeteroDecoder, windows: Tensor) -> Tensor:
    """Mean next-token cross-entropy on (B, T + 1) windows."""
    logits, _ = model(windows[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())


def _check_steps_lr(steps: int, lr: float, batch_size: int, seq_len: int) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps}")
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if seq_len <= 0:
        raise ValueError(f"seq_len must be positive, got {seq_len}")


def train_parent(
    cfg: DecoderConfig,
    data: str | Tensor,
    steps: int = 2000,
    lr: float = 3e-3,
    batch_size: int = 16,
    seq_len: int | None = None,
    weight_decay: float = 0.01,
    seed: int = 0,
    verbose: bool = False,
) -> HeteroDecoder:
    """Train a parent :class:`HeteroDecoder` from scratch on ``data``.

    Parameters
    ----------
    cfg : DecoderConfig
    data : str or Tensor of shape (n,)
        Training text or byte tokens.
    steps, lr, batch_size, weight_decay : training hyper-parameters.
    seq_len : int, optional
        Window length; defaults to ``cfg.max_seq_len``.
    seed : int
        Seeds initialization and batch sampling.
    verbose : bool
        Show a progress bar.

    Returns
    -------
    HeteroDecoder
        The trained parent in eval mode.
    """
    seq_len = cfg.max_seq_len if seq_len is None else seq_len
    _check_steps_lr(steps, lr, batch_size, seq_len)
    if seq_len > cfg.max_seq_len:
        raise ValueError(f"seq_len={seq_len} exceeds max_seq_len={cfg.max_seq_len}")
    toks = as_tokens(data)
    torch.manual_seed(seed)
    model = HeteroDecoder(cfg)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    for step in tqdm(range(steps), disable=not verbose, desc="parent"):
        for group in opt.param_groups:
            group["lr"] = cosine_lr(step, steps, lr, warmup=min(100, steps // 10))
        loss = lm_loss(model, sample_batch(toks, batch_size, seq_len, gen))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return model.eval()
