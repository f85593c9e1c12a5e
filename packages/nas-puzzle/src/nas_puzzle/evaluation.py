"""Held-out quality of a child relative to its parent, and measured generation throughput."""

from __future__ import annotations

import numbers
import time

import torch
import torch.nn.functional as F
from torch import Tensor

from nas_puzzle.config import _check_positive_int, _check_seed
from nas_puzzle.data import as_tokens, eval_windows
from nas_puzzle.losses import kl_to_parent
from nas_puzzle.model import HeteroDecoder

__all__ = ["evaluate", "measure_throughput"]


@torch.no_grad()
def evaluate(
    child: HeteroDecoder,
    parent: HeteroDecoder,
    val_data: str | Tensor,
    seq_len: int | None = None,
    max_windows: int = 64,
    batch_size: int = 32,
) -> dict[str, float]:
    """LM loss, next-token accuracy and KL to the parent on held-out windows.

    Returns
    -------
    dict
        ``lm_loss``, ``top1_acc``, ``kl_to_parent``, ``parent_lm_loss``, ``parent_top1_acc``,
        ``acc_retained`` (child accuracy / parent accuracy).
    """
    if not isinstance(child, HeteroDecoder) or not isinstance(parent, HeteroDecoder):
        raise TypeError("child and parent must be HeteroDecoder instances")
    if child.cfg.vocab_size != parent.cfg.vocab_size:
        raise ValueError("child and parent vocabularies differ")
    seq_len = child.cfg.max_seq_len if seq_len is None else seq_len
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
        raise TypeError(f"batch_size must be an int, got {batch_size!r}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    toks = as_tokens(val_data, "val_data")
    if isinstance(seq_len, numbers.Integral) and toks.numel() < seq_len + 1:
        raise ValueError(
            f"val_data has {toks.numel()} tokens, fewer than seq_len + 1 = {seq_len + 1}"
        )
    windows = eval_windows(toks, seq_len, max_windows)
    sums = dict.fromkeys(("lm_loss", "top1_acc", "kl_to_parent", "parent_lm_loss",
                          "parent_top1_acc"), 0.0)  # fmt: skip
    n = 0
    modes = child.training, parent.training
    child.eval(), parent.eval()
    try:
        for w in windows.split(int(batch_size)):
            _accumulate(sums, child, parent, w)
            n += w[:, 1:].numel()
    finally:  # the caller's models keep their train/eval mode
        child.train(modes[0])
        parent.train(modes[1])
    out = {key: v / n for key, v in sums.items()}
    out["acc_retained"] = out["top1_acc"] / max(out["parent_top1_acc"], 1e-12)
    return out


@torch.no_grad()
def _accumulate(sums: dict, child: HeteroDecoder, parent: HeteroDecoder, w: Tensor) -> None:
    """Add one batch of windows' summed losses, hits and KL (each model on its own device)."""
    x, y = w[:, :-1], w[:, 1:]
    dev = next(child.parameters()).device
    lc, _ = child(x.to(dev))
    lp, _ = parent(x.to(next(parent.parameters()).device))
    lp, y = lp.to(dev), y.to(dev)
    k = y.numel()
    sums["lm_loss"] += float(F.cross_entropy(lc.flatten(0, 1), y.flatten())) * k
    sums["parent_lm_loss"] += float(F.cross_entropy(lp.flatten(0, 1), y.flatten())) * k
    sums["top1_acc"] += float((lc.argmax(-1) == y).float().sum())
    sums["parent_top1_acc"] += float((lp.argmax(-1) == y).float().sum())
    sums["kl_to_parent"] += float(kl_to_parent(lc, lp)) * k


@torch.inference_mode()
def measure_throughput(
    model: HeteroDecoder,
    batch_size: int = 8,
    prefill_len: int = 64,
    decode_len: int = 64,
    repeats: int = 3,
    threads: int | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """Wall-clock prefill + cached decode of one batch (minimum over ``repeats``).

    Returns
    -------
    dict
        ``seconds``, ``tokens_per_s`` (prefill + generated tokens), ``kv_cache_bytes``,
        ``param_bytes``.
    """
    if not isinstance(model, HeteroDecoder):
        raise TypeError(f"model must be a HeteroDecoder, got {type(model).__name__}")
    cfg = model.cfg
    batch_size = _check_positive_int(batch_size, "batch_size")
    prefill_len = _check_positive_int(prefill_len, "prefill_len")
    repeats = _check_positive_int(repeats, "repeats")
    if isinstance(decode_len, bool) or not isinstance(decode_len, numbers.Integral):
        raise TypeError(f"decode_len must be an int, got {type(decode_len).__name__}")
    if decode_len < 0:
        raise ValueError(f"decode_len must be >= 0, got {decode_len}")
    decode_len = int(decode_len)
    if threads is not None:
        threads = _check_positive_int(threads, "threads")
    seed = _check_seed(seed)
    if prefill_len + decode_len > cfg.max_seq_len:
        raise ValueError(
            f"prefill_len + decode_len = {prefill_len + decode_len} exceeds max_seq_len"
        )
    old = torch.get_num_threads()
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, cfg.vocab_size, (batch_size, prefill_len), generator=g)
    prompt = prompt.to(model.embed.weight.device)  # the model may sit on a GPU
    was_training = model.training
    model.eval()

    def run():
        logits, cache = model.prefill(prompt)
        for _ in range(decode_len):
            logits, cache = model.decode_step(logits.argmax(-1), cache)
        return cache

    try:
        if threads is not None:
            torch.set_num_threads(threads)
        cache = run()  # warm-up
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run()
            ts.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(old)
        model.train(was_training)  # the caller's module keeps its mode
    sec = min(ts)  # least-disturbed run
    return {
        "seconds": sec,
        "tokens_per_s": batch_size * (prefill_len + decode_len) / sec,
        "kv_cache_bytes": float(cache.nbytes()),
        "param_bytes": float(sum(p.nbytes for p in model.parameters())),
    }
