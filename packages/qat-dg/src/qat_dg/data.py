"""Domain-shifted digits built from scikit-learn's bundled ``load_digits`` (no downloads).

``RotatedDigits`` mirrors DomainBed's RotatedMNIST (disjoint shards, one rotation per shard);
``CorruptedDigits`` gives a PACS-like style shift (clean / noise / blur / invert, optional tint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy import ndimage
from sklearn.datasets import load_digits

__all__ = ["CorruptedDigits", "DomainDataset", "RotatedDigits", "split_domains"]

# one RGB tint per corrupted domain when color=True (why: a colour cue that shifts with style)
_TINTS = {
    "clean": (1.0, 1.0, 1.0),
    "noise": (1.0, 0.55, 0.55),
    "blur": (0.55, 1.0, 0.55),
    "invert": (0.55, 0.55, 1.0),
}


@dataclass
class DomainDataset:
    """A list of domains (environments), each an ``(X, y)`` pair of tensors.

    Attributes
    ----------
    envs : list of (Tensor, Tensor)
        ``X`` float32 of shape (n_e, C, H, W) in [0, 1], ``y`` int64 of shape (n_e,).
    env_names : list of str
        One name per domain.
    num_classes : int
        Number of classes (10).
    """

    envs: list[tuple[torch.Tensor, torch.Tensor]]
    env_names: list[str]
    num_classes: int = 10

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """(C, H, W) of one image."""
        return tuple(self.envs[0][0].shape[1:])  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self.envs)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.envs[i]


def _digits(size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(size, bool) or not isinstance(size, int) or size < 8:
        raise ValueError(f"size must be an int >= 8, got {size!r}")
    d = load_digits()
    x = d.images.astype(np.float64) / 16.0
    if size != 8:
        x = ndimage.zoom(x, (1, size / 8, size / 8), order=1)
    x = np.clip(x, 0.0, 1.0)
    perm = np.random.default_rng(seed).permutation(len(x))
    return x[perm], d.target[perm]


def _shards(n: int, k: int, disjoint: bool) -> list[np.ndarray]:
    idx = np.arange(n)
    return np.array_split(idx, k) if disjoint else [idx] * k


def _to_env(x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    if x.ndim == 3:
        x = x[:, None]
    return torch.as_tensor(x, dtype=torch.float32).contiguous(), torch.as_tensor(
        y, dtype=torch.int64
    )


def RotatedDigits(
    angles: Sequence[float] = (0, 15, 30, 45, 60, 75),
    size: int = 16,
    disjoint: bool = True,
    seed: int = 0,
) -> DomainDataset:
    """Rotated-MNIST analogue: shard the digits and rotate shard k by ``angles[k]`` degrees.

    Parameters
    ----------
    angles : sequence of float
        One domain per angle (at least 2).
    size : int, default=16
        Images are bilinearly upsampled from 8x8 to ``size x size``.
    disjoint : bool, default=True
        Disjoint shards (~1797/len(angles) images each) as in DomainBed; False uses all images
        in every domain.
    seed : int, default=0
        Shuffle seed.

    Returns
    -------
    DomainDataset
        Inputs of shape (n, 1, size, size).
    """
    angles = [float(a) for a in angles]
    if len(angles) < 2 or not all(np.isfinite(angles)):
        raise ValueError(f"angles must hold at least 2 finite values, got {angles}")
    x, y = _digits(size, seed)
    envs = []
    for a, idx in zip(angles, _shards(len(x), len(angles), disjoint), strict=True):
        xr = ndimage.rotate(x[idx], a, axes=(1, 2), reshape=False, order=1)
        envs.append(_to_env(np.clip(xr, 0.0, 1.0), y[idx]))
    return DomainDataset(envs, [f"rot{int(a) if a.is_integer() else a}" for a in angles])


def CorruptedDigits(
    domains: Sequence[str] = ("clean", "noise", "blur", "invert"),
    size: int = 16,
    color: bool = False,
    noise_std: float = 0.25,
    blur_sigma: float = 1.0,
    disjoint: bool = True,
    seed: int = 0,
) -> DomainDataset:
    """PACS-like style domains: clean, additive noise, Gaussian blur, inversion.

    Parameters
    ----------
    domains : sequence of {"clean", "noise", "blur", "invert"}
        One domain per entry (at least 2, no repeats).
    size : int, default=16
        Output side length.
    color : bool, default=False
        Render as RGB with a per-domain colour tint (3 channels).
    noise_std : float, default=0.25
        Std of the Gaussian noise of the ``"noise"`` domain (clipped to [0, 1] afterwards).
    blur_sigma : float, default=1.0
        Gaussian blur sigma (pixels) of the ``"blur"`` domain.
    disjoint : bool, default=True
        Disjoint shards per domain.
    seed : int, default=0
        Shuffle / noise seed.

    Returns
    -------
    DomainDataset
        Inputs of shape (n, 1 or 3, size, size).
    """
    domains = list(domains)
    if len(domains) < 2 or len(set(domains)) != len(domains) or set(domains) - set(_TINTS):
        raise ValueError(
            f"domains must be >= 2 distinct names from {sorted(_TINTS)}, got {domains}"
        )
    if not np.isfinite(noise_std) or noise_std < 0:
        raise ValueError(f"noise_std must be finite and >= 0, got {noise_std}")
    if not np.isfinite(blur_sigma) or blur_sigma < 0:
        raise ValueError(f"blur_sigma must be finite and >= 0, got {blur_sigma}")
    x, y = _digits(size, seed)
    rng = np.random.default_rng(seed + 1)
    envs = []
    for name, idx in zip(domains, _shards(len(x), len(domains), disjoint), strict=True):
        xd = x[idx]
        if name == "noise":
            xd = xd + rng.normal(0.0, noise_std, xd.shape)
        elif name == "blur":
            xd = ndimage.gaussian_filter(xd, sigma=(0, blur_sigma, blur_sigma))
        elif name == "invert":
            xd = 1.0 - xd
        xd = np.clip(xd, 0.0, 1.0)
        if color:
            xd = xd[:, None] * np.asarray(_TINTS[name])[None, :, None, None]
        envs.append(_to_env(xd, y[idx]))
    return DomainDataset(envs, domains)


def split_domains(
    dataset: DomainDataset, holdout_fraction: float = 0.2, seed: int = 0
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Seeded per-domain split into (train "in", validation "out") index tensors.

    Parameters
    ----------
    dataset : DomainDataset
        The domains.
    holdout_fraction : float, default=0.2
        Fraction of each domain held out, in (0, 1).
    seed : int, default=0
        Split seed.

    Returns
    -------
    list of (Tensor, Tensor)
        Per domain, int64 index tensors ``(in_idx, out_idx)``.
    """
    if not isinstance(dataset, DomainDataset):
        raise TypeError(f"dataset must be a DomainDataset, got {type(dataset).__name__}")
    if not 0.0 < float(holdout_fraction) < 1.0:
        raise ValueError(f"holdout_fraction must be in (0, 1), got {holdout_fraction}")
    rng = np.random.default_rng(seed)
    out = []
    for x, _ in dataset.envs:
        perm = torch.as_tensor(rng.permutation(len(x)), dtype=torch.int64)
        k = max(1, round(holdout_fraction * len(x)))
        out.append((perm[k:], perm[:k]))
    return out
