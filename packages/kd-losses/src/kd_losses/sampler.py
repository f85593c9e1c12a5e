"""DA-KD's difficulty-aware data updating as a ``torch.utils.data.Sampler``.

He et al. (ICML 2025), Algorithm 1 ("difficulty-aware data updating"): every few epochs the distillation set is shrunk
by dropping easy samples (low DDS), with stratified selection over DDS strata so that some
easier samples stay and the set remains diverse ("stratified data updating", SDU). The exact
quotas of the paper could not be verified here; this sampler allocates the kept budget to DDS
strata in proportion to each stratum's mean DDS (see the README).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sized

import numpy as np
import torch
from torch.utils.data import Sampler

__all__ = ["DifficultyAwareSampler", "stratified_select"]


def stratified_select(
    scores: np.ndarray, n_keep: int, *, n_strata: int = 4, rng: np.random.Generator
) -> np.ndarray:
    """Pick ``n_keep`` positions, stratified over score quantiles, favouring high scores.

    The positions are sorted by score and cut into ``n_strata`` equal-count strata; stratum j
    receives a share of ``n_keep`` proportional to (its size x its mean score), capped at its
    size (excess flows to the other strata); members are drawn uniformly within a stratum.

    Parameters
    ----------
    scores : np.ndarray, shape (n,)
        Non-negative difficulty scores.
    n_keep : int
        How many positions to return, 1 <= n_keep <= n.
    n_strata : int, default=4
        Number of quantile strata.
    rng : np.random.Generator
        Source of randomness.

    Returns
    -------
    np.ndarray, shape (n_keep,)
        Sorted positions into ``scores``.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array, got shape {scores.shape}")
    if not np.isfinite(scores).all() or (scores < 0).any():
        raise ValueError("scores must be finite and non-negative")
    n = scores.size
    for name, value in (("n_keep", n_keep), ("n_strata", n_strata)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 1 <= n_keep <= n:
        raise ValueError(f"n_keep must be in [1, {n}] (the length of scores), got {n_keep}")
    if n_strata < 1:
        raise ValueError(f"n_strata must be >= 1, got {n_strata}")
    order = np.argsort(scores, kind="stable")
    strata = [s for s in np.array_split(order, min(n_strata, n)) if s.size]
    sizes = np.array([s.size for s in strata], dtype=float)
    weight = sizes * np.array([max(scores[s].mean(), 1e-12) for s in strata])
    quota = np.zeros(len(strata), dtype=int)
    open_ = np.ones(len(strata), dtype=bool)
    left = n_keep
    # water-filling over strata (a handful of iterations): proportional shares, capped by size
    while left > 0:
        share = np.where(open_, weight, 0.0)
        share = share / share.sum() * left
        add = np.minimum(np.floor(share).astype(int), sizes.astype(int) - quota)
        if add.sum() == 0:  # distribute the remainder one by one to the largest shares
            for j in np.argsort(-share):
                if left == 0:
                    break
                if quota[j] < sizes[j]:
                    quota[j] += 1
                    left -= 1
            continue
        quota += add
        left -= int(add.sum())
        open_ = quota < sizes
    picked = [rng.choice(s, size=q, replace=False) for s, q in zip(strata, quota, strict=True)]
    return np.sort(np.concatenate(picked))


class DifficultyAwareSampler(Sampler[int]):
    """Yields the indices of the current distillation set; ``update`` prunes easy samples.

    Parameters
    ----------
    data_source : Sized or int
        The dataset (or its length).
    prune_ratio : float in [0, 1), default=0.3
        Fraction of the current set removed at each :meth:`update`.
    min_fraction : float in (0, 1], default=0.3
        The set never shrinks below ``ceil(min_fraction * n)`` samples.
    n_strata : int, default=4
        DDS strata used by the stratified selection.
    shuffle : bool, default=True
        Shuffle the active indices every epoch (seeded by ``seed`` and :meth:`set_epoch`).
    strategy : {"stratified", "random", "resample"}, default="stratified"
        ``"stratified"``: DA-KD's difficulty-stratified pruning. The other two are the
        equal-cost controls, with the same set sizes: ``"random"`` prunes uniformly at random
        (nested sets, scores ignored); ``"resample"`` draws a fresh uniform subset of the
        scheduled size from *all* samples at every update (training on all data for the same
        number of teacher passes).
    seed : int, default=0
        Seed for shuffling and stratified selection.

    Attributes
    ----------
    active_indices : torch.Tensor
        Sorted indices of the current distillation set.
    n_updates : int
        How many pruning updates have been applied.
    """

    def __init__(
        self,
        data_source: Sized | int,
        *,
        prune_ratio: float = 0.3,
        min_fraction: float = 0.3,
        n_strata: int = 4,
        shuffle: bool = True,
        strategy: str = "stratified",
        seed: int = 0,
    ) -> None:
        n = data_source if isinstance(data_source, int) else len(data_source)
        if n < 1:
            raise ValueError("data_source must hold at least one sample")
        if not 0.0 <= prune_ratio < 1.0:
            raise ValueError(f"prune_ratio must be in [0, 1), got {prune_ratio}")
        if not 0.0 < min_fraction <= 1.0:
            raise ValueError(f"min_fraction must be in (0, 1], got {min_fraction}")
        if not isinstance(n_strata, int) or n_strata < 1:
            raise ValueError(f"n_strata must be a positive int, got {n_strata}")
        if strategy not in ("stratified", "random", "resample"):
            raise ValueError(
                f"strategy must be 'stratified', 'random' or 'resample', got {strategy!r}"
            )
        self.strategy = strategy
        self.n = int(n)
        self.prune_ratio = float(prune_ratio)
        self.min_fraction = float(min_fraction)
        self.n_strata = n_strata
        self.shuffle = shuffle
        self.seed = int(seed)
        self.epoch = 0
        self.n_updates = 0
        self.active_indices = torch.arange(self.n, device="cpu")  # host indices for a DataLoader

    @property
    def fraction(self) -> float:
        """Current size of the distillation set as a fraction of the full dataset."""
        return len(self.active_indices) / self.n

    def next_size(self) -> int:
        """Size the set will have after the next :meth:`update`."""
        floor = math.ceil(self.min_fraction * self.n)
        cur = len(self.active_indices)
        return min(cur, max(floor, round((1.0 - self.prune_ratio) * cur)))

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch used to seed the shuffle (as ``DistributedSampler``)."""
        self.epoch = int(epoch)

    def update(self, scores: torch.Tensor) -> torch.Tensor:
        """Prune the active set using difficulty scores of its members.

        Parameters
        ----------
        scores : torch.Tensor, shape (len(active_indices),) or (n,)
            DDS of the active samples (in ``active_indices`` order) or of all samples.

        Returns
        -------
        torch.Tensor
            The new ``active_indices``.
        """
        if isinstance(scores, torch.Tensor):  # indices are drawn on the host
            scores = scores.detach().to("cpu", torch.float64)
        else:
            scores = torch.as_tensor(np.asarray(scores, dtype=np.float64), device="cpu")
        if scores.ndim != 1:
            raise ValueError("scores must be 1-D")
        if scores.numel() == self.n and self.n != len(self.active_indices):
            scores = scores[self.active_indices]
        if scores.numel() != len(self.active_indices):
            raise ValueError(
                f"scores must have length {len(self.active_indices)} (active set) or "
                f"{self.n} (all samples), got {scores.numel()}"
            )
        if not bool(torch.isfinite(scores).all()):
            raise ValueError("scores contains NaN or inf")
        if bool((scores < 0).any()):
            raise ValueError("scores must be non-negative")
        rng = np.random.default_rng([self.seed, self.n_updates])
        size = self.next_size()
        if self.strategy == "stratified":
            keep = stratified_select(scores.numpy(), size, n_strata=self.n_strata, rng=rng)
            self.active_indices = self.active_indices[torch.from_numpy(keep)]
        elif self.strategy == "random":
            keep = np.sort(rng.choice(len(self.active_indices), size, replace=False))
            self.active_indices = self.active_indices[torch.from_numpy(keep)]
        else:  # resample from all samples
            self.active_indices = torch.from_numpy(np.sort(rng.choice(self.n, size, replace=False)))
        self.n_updates += 1
        return self.active_indices

    def __iter__(self) -> Iterator[int]:
        idx = self.active_indices
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            idx = idx[torch.randperm(len(idx), generator=g, device="cpu")]
        return iter(idx.tolist())

    def __len__(self) -> int:
        return len(self.active_indices)
