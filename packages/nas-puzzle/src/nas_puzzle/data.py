"""Deterministic generated text for training and evaluating the toy parent (no downloads).

``toy_corpus`` mixes three sources (spec §5):

* English-like sentences from a small probabilistic grammar,
* algorithmic strings (copy, reverse, digit addition, balanced brackets) that reward attention,
* excerpts of CPython standard-library source read offline with :mod:`inspect`
  (content differs across Python versions, so tests never hard-code loss values).
"""

from __future__ import annotations

import importlib
import inspect
import numbers
from collections.abc import Iterator

import numpy as np
import torch
from torch import Tensor

from nas_puzzle.config import _check_seed

__all__ = [
    "ByteTokenizer",
    "as_tokens",
    "batch_iter",
    "eval_windows",
    "sample_batch",
    "split_tokens",
    "toy_corpus",
]

_SUBJ = ["the cat", "a dog", "my friend", "the old man", "a small bird", "the teacher",
         "our team", "the robot", "a child", "the river"]  # fmt: skip
_VERB = ["sees", "likes", "follows", "builds", "finds", "paints", "carries", "remembers",
         "crosses", "answers"]  # fmt: skip
_OBJ = ["the ball", "a red house", "the long road", "a quiet song", "the blue sky",
        "an open door", "the last train", "a warm meal", "the green field", "a new book"]  # fmt: skip
_ADV = ["today", "slowly", "again", "at night", "every morning", "with care", "in the rain"]
_CONJ = ["and", "but", "because", "while", "so"]
_MODULES = ["textwrap", "heapq", "bisect", "fractions", "statistics", "string", "colorsys",
            "shlex", "difflib", "calendar", "queue", "graphlib"]  # fmt: skip
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


class ByteTokenizer:
    """Byte-level tokenizer (vocabulary 256): UTF-8 bytes are the token ids."""

    vocab_size = 256

    def encode(self, text: str) -> Tensor:
        """Text -> (n,) int64 tensor of byte values."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return torch.frombuffer(bytearray(text.encode("utf-8")), dtype=torch.uint8).long()

    def decode(self, tokens: Tensor) -> str:
        """(n,) integer tensor -> text (invalid UTF-8 replaced)."""
        t = torch.as_tensor(np.asarray(tokens) if not isinstance(tokens, Tensor) else tokens)
        if t.ndim != 1:
            raise ValueError(f"tokens must be 1-D, got shape {tuple(t.shape)}")
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
            raise TypeError(f"tokens must hold integer byte ids, got {t.dtype}")
        # ids outside a byte used to wrap modulo 256 into other characters
        if t.numel() and (int(t.min()) < 0 or int(t.max()) > 255):
            raise ValueError("tokens must lie in [0, 256): byte ids")
        return bytes(t.to(torch.uint8).tolist()).decode("utf-8", errors="replace")


def _sentence(rng: np.random.Generator) -> str:
    s = f"{rng.choice(_SUBJ)} {rng.choice(_VERB)} {rng.choice(_OBJ)}"
    if rng.random() < 0.5:
        s += f" {rng.choice(_ADV)}"
    if rng.random() < 0.3:
        s += f" {rng.choice(_CONJ)} {rng.choice(_SUBJ)} {rng.choice(_VERB)} {rng.choice(_OBJ)}"
    return s[0].upper() + s[1:] + ". "


def _algorithmic(rng: np.random.Generator) -> str:
    task = rng.integers(4)
    if task == 0:
        w = "".join(rng.choice(_LETTERS, size=rng.integers(3, 9)))
        return f"copy {w} = {w}\n"
    if task == 1:
        w = "".join(rng.choice(_LETTERS, size=rng.integers(3, 9)))
        return f"reverse {w} = {w[::-1]}\n"
    if task == 2:
        a, b = rng.integers(0, 1000, size=2)
        return f"add {a} + {b} = {a + b}\n"
    depth, out, stack = rng.integers(2, 7), [], []
    pairs = {"(": ")", "[": "]", "{": "}"}
    for _ in range(2 * depth):
        if stack and (len(stack) >= depth or rng.random() < 0.5):
            out.append(pairs[stack.pop()])
        else:
            stack.append(rng.choice(list(pairs)))
            out.append(stack[-1])
    out.extend(pairs[c] for c in reversed(stack))
    return f"brackets {''.join(out)}\n"


def _stdlib_text() -> str:
    parts = []
    for name in _MODULES:
        try:
            src = inspect.getsource(importlib.import_module(name))
        except (ImportError, OSError, TypeError):  # source not shipped on this interpreter
            continue
        parts.append(src.encode("ascii", errors="ignore").decode("ascii"))
    return "\n".join(parts)


def toy_corpus(
    n_bytes: int = 2_000_000,
    seed: int = 0,
    mix: tuple[float, float, float] = (0.4, 0.3, 0.3),
) -> str:
    """Generate a deterministic ASCII training corpus.

    Parameters
    ----------
    n_bytes : int, default=2_000_000
        Length of the returned text.
    seed : int, default=0
        Seed of the sentence/algorithmic generators and of the code excerpt offsets.
    mix : tuple of 3 floats, default=(0.4, 0.3, 0.3)
        Probabilities of (grammar sentence, algorithmic string, code excerpt) per piece.

    Returns
    -------
    str
        Exactly ``n_bytes`` ASCII characters.
    """
    n_bytes = _positive_int("n_bytes", n_bytes)
    seed = _check_seed(seed)
    p = np.asarray(mix, dtype=float)
    if p.shape != (3,) or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
        raise ValueError(f"mix must be 3 non-negative finite weights, got {mix}")
    p = p / p.sum()
    rng = np.random.default_rng(seed)
    code = _stdlib_text() if p[2] > 0 else ""
    if not code:
        p = np.array([p[0], p[1], 0.0]) / (p[0] + p[1])
    pieces, total = [], 0
    while total < n_bytes:
        kind = rng.choice(3, p=p)
        if kind == 0:
            piece = "".join(_sentence(rng) for _ in range(rng.integers(2, 6))) + "\n"
        elif kind == 1:
            piece = "".join(_algorithmic(rng) for _ in range(rng.integers(2, 6)))
        else:
            start = int(rng.integers(0, max(1, len(code) - 400)))
            piece = code[start : start + int(rng.integers(100, 400))] + "\n"
        pieces.append(piece)
        total += len(piece)
    return "".join(pieces)[:n_bytes]


def as_tokens(data: str | Tensor, name: str = "data") -> Tensor:
    """Text or a 1-D token tensor -> 1-D int64 tensor (copied, never a view of the input)."""
    if isinstance(data, str):
        toks = ByteTokenizer().encode(data)
    elif isinstance(data, Tensor):
        if data.is_floating_point() or data.is_complex() or data.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer tokens, got {data.dtype}")
        if data.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {tuple(data.shape)}")
        toks = data.long().clone()
    else:
        raise TypeError(f"{name} must be a str or a 1-D token tensor, got {type(data).__name__}")
    if toks.numel() == 0:
        raise ValueError(f"{name} is empty")
    return toks


def split_tokens(
    data: str | Tensor, fractions: tuple[float, ...] = (0.9, 0.05, 0.05)
) -> list[Tensor]:
    """Split into contiguous train/val/test (...) token ranges by ``fractions``."""
    toks = as_tokens(data)
    f = np.asarray(fractions, dtype=float)
    if f.ndim != 1 or f.size == 0 or np.any(f <= 0) or not np.isclose(f.sum(), 1.0):
        raise ValueError(f"fractions must be positive and sum to 1, got {fractions}")
    cuts = np.round(np.cumsum(f)[:-1] * toks.numel()).astype(int)
    parts = list(torch.tensor_split(toks, cuts.tolist()))
    if any(p.numel() == 0 for p in parts):
        raise ValueError(
            f"data: {toks.numel()} tokens leave an empty part at fractions {tuple(fractions)}"
        )
    return parts


def sample_batch(
    tokens: Tensor, batch_size: int, seq_len: int, generator: torch.Generator | None = None
) -> Tensor:
    """Random windows of ``seq_len + 1`` tokens (inputs + next-token targets).

    Returns
    -------
    Tensor, shape (batch_size, seq_len + 1), int64
    """
    if tokens.ndim != 1:
        raise ValueError(f"tokens must be 1-D, got shape {tuple(tokens.shape)}")
    batch_size = _positive_int("batch_size", batch_size)
    seq_len = _positive_int("seq_len", seq_len)
    if tokens.numel() < seq_len + 1:
        raise ValueError(f"seq_len={seq_len} needs at least seq_len + 1 tokens")
    # draws on the generator's device (CPU by default), gathers on the tokens' device
    where = generator.device if generator is not None else tokens.device
    starts = torch.randint(
        0, tokens.numel() - seq_len, (batch_size,), generator=generator, device=where
    )
    idx = starts[:, None] + torch.arange(seq_len + 1, device=where)
    return tokens[idx.to(tokens.device)]


def batch_iter(
    data: str | Tensor, batch_size: int, seq_len: int, seed: int = 0
) -> Iterator[Tensor]:
    """Endless iterator of :func:`sample_batch` windows, seeded.

    Arguments are checked when it is called, not at the first ``next``.

    Yields
    ------
    Tensor, shape (batch_size, seq_len + 1), int64
        Contiguous windows of ``data`` on its device.
    """
    toks = as_tokens(data)
    batch_size = _positive_int("batch_size", batch_size)
    seq_len = _positive_int("seq_len", seq_len)
    if toks.numel() < seq_len + 1:
        raise ValueError(f"data has {toks.numel()} tokens, fewer than seq_len + 1 = {seq_len + 1}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {seed!r}")
    return _windows(toks, batch_size, seq_len, torch.Generator().manual_seed(int(seed)))


def _windows(toks: Tensor, batch_size: int, seq_len: int, g: torch.Generator) -> Iterator[Tensor]:
    while True:
        yield sample_batch(toks, batch_size, seq_len, g)


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return int(value)


def eval_windows(data: str | Tensor, seq_len: int, max_windows: int | None = None) -> Tensor:
    """Non-overlapping windows of ``seq_len + 1`` tokens for deterministic evaluation.

    Returns
    -------
    Tensor, shape (n_windows, seq_len + 1)
    """
    toks = as_tokens(data)
    if isinstance(seq_len, bool) or not isinstance(seq_len, numbers.Integral):
        raise TypeError(f"seq_len must be an int, got {seq_len!r}")
    if seq_len <= 0:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    if max_windows is not None and (
        isinstance(max_windows, bool)
        or not isinstance(max_windows, numbers.Integral)
        or max_windows < 1
    ):
        raise ValueError(f"max_windows must be a positive int or None, got {max_windows!r}")
    n = (toks.numel() - 1) // seq_len
    if n == 0:
        raise ValueError(f"data has {toks.numel()} tokens, fewer than seq_len + 1 = {seq_len + 1}")
    if max_windows is not None:
        n = min(n, max_windows)
    idx = torch.arange(n, device=toks.device)[:, None] * seq_len
    return toks[idx + torch.arange(seq_len + 1, device=toks.device)]
