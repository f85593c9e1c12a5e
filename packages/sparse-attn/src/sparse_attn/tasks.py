"""Seeded synthetic long-range tasks for tiny language models (no downloads).

``passkey_batch``: filler text made of repeating random 3-grams, a marker token followed by a
one-token key at a random depth, and a query token at the end; the model must emit the key.
"""

from __future__ import annotations

import torch

from sparse_attn.validation import check_positive_int

__all__ = ["passkey_batch"]


def passkey_batch(
    batch_size: int,
    length: int,
    *,
    num_keys: int = 64,
    vocab_size: int = 512,
    depth: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Passkey-retrieval sequences.

    Token layout: ids ``[0, num_keys)`` are keys, ``num_keys`` is the marker, ``num_keys + 1``
    the query, the rest are filler.

    Parameters
    ----------
    batch_size : int
        B.
    length : int
        L >= 4 (including marker, key and query).
    num_keys : int, default=64
        Number of possible keys.
    vocab_size : int, default=512
        Vocabulary size (> num_keys + 5).
    depth : torch.Tensor, optional
        Long (B,) marker positions in ``[0, L - 3]``; default uniform.
    generator : torch.Generator, optional
        Seeded generator.

    Returns
    -------
    input_ids : torch.Tensor
        Long (B, L), ending with the query token.
    target : torch.Tensor
        Long (B,) key to predict at the last position.
    depth : torch.Tensor
        Long (B,) marker positions (distance back from the query is ``L - 1 - depth``).
    """
    check_positive_int(batch_size, "batch_size")
    check_positive_int(length, "length")
    check_positive_int(num_keys, "num_keys")
    if length < 4:
        raise ValueError(f"length must be >= 4, got {length}")
    if vocab_size < num_keys + 5:
        raise ValueError(f"vocab_size must be >= num_keys + 5, got {vocab_size}")
    marker, query, first_filler = num_keys, num_keys + 1, num_keys + 2
    gen = generator
    # filler: each row repeats a random 3-gram pattern chosen from the filler ids
    grams = torch.randint(first_filler, vocab_size, (batch_size, 3), generator=gen)
    ids = grams.repeat(1, (length + 2) // 3)[:, :length].clone()
    if depth is None:
        depth = torch.randint(0, length - 2, (batch_size,), generator=gen)
    elif depth.shape != (batch_size,) or int(depth.min()) < 0 or int(depth.max()) > length - 3:
        raise ValueError(f"depth must be a (batch_size,) tensor with values in [0, {length - 3}]")
    target = torch.randint(0, num_keys, (batch_size,), generator=gen)
    rows = torch.arange(batch_size)
    ids[rows, depth] = marker
    ids[rows, depth + 1] = target
    ids[:, -1] = query
    return ids, target, depth
