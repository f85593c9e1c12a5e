"""Train the toy parent LM (plain next-token cross-entropy, AdamW, cosine schedule)."""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm.auto import tqdm

from nas_puzzle.config import (
    DecoderConfig,
    _check_positive_float,
    _check_positive_int,
    _check_seed,
)
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


def _check_steps_lr(
    steps: object, lr: object, batch_size: object, seq_len: object, seed: object = 0
) -> tuple[int, float, int, int, int]:
    """Validated (steps, lr, batch_size, seq_len, seed) as Python numbers."""
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    seed = _check_seed(seed)
    return (
        int(steps),
        _check_positive_float(lr, "lr"),
        _check_positive_int(batch_size, "batch_size"),
        _check_positive_int(seq_len, "seq_len"),
        seed,
    )


def _training_tokens(data: object, cfg: DecoderConfig, seq_len: int) -> Tensor:
    """``data`` as tokens of the vocabulary, long enough for one training window."""
    toks = as_tokens(data)
    if int(toks.min()) < 0 or int(toks.max()) >= cfg.vocab_size:
        raise ValueError(f"data token ids must lie in [0, {cfg.vocab_size}) (the vocabulary)")
    if toks.numel() <= seq_len:
        raise ValueError(f"data has {toks.numel()} tokens; seq_len={seq_len} windows need more")
    return toks


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
    device: str | torch.device | None = None,
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
    device : str or torch.device, optional
        Where the model is trained (default: the device of ``data`` when it is a tensor, else
        the CPU). The initial weights are drawn on the CPU, so a seed gives one parent.

    Returns
    -------
    HeteroDecoder
        The trained parent in eval mode.
    """
    if not isinstance(cfg, DecoderConfig):
        raise TypeError(f"cfg must be a DecoderConfig, got {type(cfg).__name__}")
    seq_len = cfg.max_seq_len if seq_len is None else seq_len
    steps, lr, batch_size, seq_len, seed = _check_steps_lr(steps, lr, batch_size, seq_len, seed)
    if seq_len > cfg.max_seq_len:
        raise ValueError(f"seq_len={seq_len} exceeds max_seq_len={cfg.max_seq_len}")
    wd = weight_decay
    if isinstance(wd, bool) or not isinstance(wd, numbers.Real) or not 0 <= wd < math.inf:
        raise ValueError(f"weight_decay must be a finite number >= 0, got {wd!r}")
    if not isinstance(verbose, bool):
        raise TypeError(f"verbose must be a bool, got {type(verbose).__name__}")
    toks = _training_tokens(data, cfg, seq_len)
    torch.manual_seed(seed)
    if device is None:  # follow a token tensor's device
        device = data.device if isinstance(data, Tensor) else torch.device("cpu")
    with torch.device("cpu"):
        model = HeteroDecoder(cfg)  # initialised on the CPU RNG stream: one seed, one parent
    model = model.to(device)
    toks = toks.to(model.embed.weight.device)
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
