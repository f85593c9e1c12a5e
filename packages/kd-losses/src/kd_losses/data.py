"""Generated token corpus with samples of graded difficulty (for demos, tests and the benchmark).

Every sequence starts with a topic marker and then follows one of three kinds of process:

* ``"markov"``: a first-order Markov chain whose rows are Dirichlet(conc) draws; a small
  concentration gives peaky, easy rows, a large one gives near-uniform, hard-for-everyone rows.
* ``"stride"``: ``x_{i+1} = x_i + step (mod V)`` with a little noise; easy for any model.
* ``"copy"``: a random segment followed by its exact copy; needs attention over the context,
  so a big teacher predicts the second half well and a small student does not — exactly the
  "easy for the teacher, hard for the student" samples DA-KD's difficulty score looks for.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

__all__ = ["make_corpus"]


def make_corpus(
    n_seqs: int,
    seq_len: int = 48,
    vocab_size: int = 64,
    *,
    n_markov: int = 4,
    copy_frac: float = 0.25,
    stride_frac: float = 0.15,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generate a token corpus.

    Parameters
    ----------
    n_seqs : int
        Number of sequences.
    seq_len : int, default=48
        Tokens per sequence (including the topic marker), >= 8.
    vocab_size : int, default=64
        Vocabulary size, >= n_markov + 2 + 8.
    n_markov : int, default=4
        Number of Markov topics (concentrations spread log-uniformly over [0.03, 3]).
    copy_frac, stride_frac : float
        Fractions of copy and stride sequences; the rest are Markov.
    seed : int, default=0
        Seed; the same seed gives the same processes (topics) and samples.

    Returns
    -------
    tokens : torch.Tensor of int64, shape (n_seqs, seq_len)
    topic : torch.Tensor of int64, shape (n_seqs,)
        0..n_markov-1 for Markov topics, n_markov for stride, n_markov + 1 for copy.
    """
    for name, v in (("n_seqs", n_seqs), ("seq_len", seq_len), ("vocab_size", vocab_size)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {v!r}")
    if n_seqs < 1:
        raise ValueError(f"n_seqs must be >= 1, got {n_seqs}")
    if seq_len < 8:
        raise ValueError(f"seq_len must be >= 8, got {seq_len}")
    n_topics = n_markov + 2
    if vocab_size < n_topics + 8:
        raise ValueError(f"vocab_size must be >= {n_topics + 8}, got {vocab_size}")
    if not (0 <= copy_frac and 0 <= stride_frac and copy_frac + stride_frac <= 1):
        raise ValueError("copy_frac and stride_frac must be >= 0 and sum to <= 1")
    # the processes depend on the seed's first stream only, the samples on the second
    proc_rng = np.random.default_rng([seed, 0])
    rng = np.random.default_rng([seed, 1])
    body = vocab_size - n_topics  # content ids are n_topics .. vocab_size - 1
    conc = np.geomspace(0.03, 3.0, n_markov)
    trans = np.stack([proc_rng.dirichlet(np.full(body, c), size=body) for c in conc])
    cum = trans.cumsum(-1)

    kind = rng.choice(
        n_topics,
        size=n_seqs,
        p=[(1 - copy_frac - stride_frac) / n_markov] * n_markov + [stride_frac, copy_frac],
    )
    out = np.empty((n_seqs, seq_len), dtype=np.int64)
    out[:, 0] = kind
    x = rng.integers(0, body, size=n_seqs)
    step = rng.integers(1, 6, size=n_seqs)
    u = rng.random((n_seqs, seq_len))
    is_markov = kind < n_markov
    k_idx = np.where(is_markov, kind, 0)
    seq = np.empty((n_seqs, seq_len - 1), dtype=np.int64)
    for i in range(seq_len - 1):  # loop over positions only; all sequences advance together
        seq[:, i] = x
        nxt_markov = (cum[k_idx, x] < u[:, i : i + 1]).sum(-1).clip(max=body - 1)
        nxt_stride = np.where(u[:, i] < 0.05, rng.integers(0, body, n_seqs), (x + step) % body)
        x = np.where(is_markov, nxt_markov, nxt_stride)
    # copy sequences: first half random, second half a copy of it
    half = (seq_len - 1) // 2
    cp = kind == n_markov + 1
    seg = rng.integers(0, body, size=(int(cp.sum()), half))
    seq[cp, :half] = seg
    seq[cp, half : 2 * half] = seg
    if (seq_len - 1) % 2:
        seq[cp, -1] = seg[:, 0]
    out[:, 1:] = seq + n_topics
    return torch.from_numpy(out), torch.from_numpy(kind.astype(np.int64))
