"""Seeded synthetic long-range tasks for tiny language models (no downloads).

``passkey_batch``: filler text made of repeating random 3-grams, a marker token followed by a
one-token key at a random depth, and the marker again at the end; the model must emit the key
(associative recall with one pair: an induction head solves it, and the filler's repeated
3-grams teach the model induction during ordinary next-token training).
"""

from __future__ import annotations

import torch

from sparse_attn.validation import check_positive_int

__all__ = ["associative_recall_batch", "passkey_batch"]


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

    Token layout: ids ``[0, num_keys)`` are keys, ``num_keys`` is the marker, ids from
    ``num_keys + 1`` on are filler.

    Parameters
    ----------
    batch_size : int
        B.
    length : int
        L >= 4 (including marker, key and the final marker).
    num_keys : int, default=64
        Number of possible keys.
    vocab_size : int, default=512
        Vocabulary size (>= num_keys + 5).
    depth : torch.Tensor, optional
        Long (B,) marker positions in ``[0, L - 3]``; default uniform.
    generator : torch.Generator, optional
        Seeded generator.

    Returns
    -------
    input_ids : torch.Tensor
        Long (B, L), ending with the marker token.
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
    marker, first_filler = num_keys, num_keys + 1
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
    ids[:, -1] = marker
    return ids, target, depth


def associative_recall_batch(
    batch_size: int,
    length: int,
    *,
    num_pairs: int = 8,
    num_queries: int = 4,
    num_keys: int = 32,
    num_values: int = 32,
    vocab_size: int = 128,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Multi-query associative recall (after Zoology, Arora et al. 2023) in random filler.

    ``num_pairs`` (key, value) bigrams sit at random positions of the context; the last
    ``2 num_queries`` tokens ask ``num_queries`` of the keys again, each followed by its value.
    Token ids: keys ``[0, num_keys)``, values ``[num_keys, num_keys + num_values)``, filler above.

    Parameters
    ----------
    batch_size, length : int
        B and L (L >= 2 num_pairs + 2 num_queries + 2).
    num_pairs : int, default=8
        Pairs in the context (distinct keys).
    num_queries : int, default=4
        Pairs asked again at the end (<= num_pairs).
    num_keys, num_values : int, default=32
        Key and value alphabet sizes.
    vocab_size : int, default=128
        Vocabulary size (> num_keys + num_values).
    generator : torch.Generator, optional
        Seeded generator.

    Returns
    -------
    input_ids : torch.Tensor
        Long (B, L).
    targets : torch.Tensor
        Long (B, L): the value expected as next token at each query-key position, -100 elsewhere
        (use ``F.cross_entropy(..., ignore_index=-100)``).
    distance : torch.Tensor
        Long (B, num_queries): tokens between each query key and its pair's key.
    """
    for name, val in (("batch_size", batch_size), ("length", length), ("num_pairs", num_pairs),
                      ("num_queries", num_queries), ("num_keys", num_keys),
                      ("num_values", num_values)):  # fmt: skip
        check_positive_int(val, name)
    if num_queries > num_pairs:
        raise ValueError(f"num_queries={num_queries} must be <= num_pairs={num_pairs}")
    if num_pairs > num_keys:
        raise ValueError(f"num_pairs={num_pairs} must be <= num_keys={num_keys}")
    slots = (length - 2 * num_queries) // 2
    if slots < num_pairs:
        raise ValueError(f"length={length} is too short for {num_pairs} pairs and the queries")
    if vocab_size <= num_keys + num_values:
        raise ValueError(f"vocab_size must be > num_keys + num_values, got {vocab_size}")
    gen, b = generator, batch_size
    ids = torch.randint(num_keys + num_values, vocab_size, (b, length), generator=gen)
    keys = torch.rand(b, num_keys, generator=gen).argsort(-1)[:, :num_pairs]
    values = torch.randint(num_keys, num_keys + num_values, (b, num_pairs), generator=gen)
    pos = 2 * torch.rand(b, slots, generator=gen).argsort(-1)[:, :num_pairs]
    rows = torch.arange(b)[:, None]
    ids[rows, pos], ids[rows, pos + 1] = keys, values
    asked = torch.rand(b, num_pairs, generator=gen).argsort(-1)[:, :num_queries]
    qpos = length - 2 * num_queries + 2 * torch.arange(num_queries)[None, :]
    ids[rows, qpos] = keys.gather(1, asked)
    ids[rows, qpos + 1] = values.gather(1, asked)
    targets = torch.full((b, length), -100, dtype=torch.long)
    targets[rows, qpos] = values.gather(1, asked)
    return ids, targets, qpos - pos.gather(1, asked)
