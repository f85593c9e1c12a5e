"""Domain-shifted digits built from scikit-learn's bundled ``load_digits`` (no downloads).

``RotatedDigits`` mirrors DomainBed's RotatedMNIST (disjoint shards, one rotation per shard);
``CorruptedDigits`` gives a PACS-like style shift (clean / noise / blur / invert, optional tint);
``StyledDigits`` renders PACS-like colour / texture / style domains (photo, art, cartoon, sketch)
from one half of the digits, and ``PretrainDigits`` a different 40-class task on the other half
(digit x quarter-turn) for pre-training a backbone, the stand-in for ImageNet pre-training.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy import ndimage
from sklearn.datasets import load_digits

__all__ = [
    "STYLES",
    "CorruptedDigits",
    "DomainDataset",
    "PretrainDigits",
    "RotatedDigits",
    "StyledDigits",
    "split_domains",
]

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
        ``X`` float32 of shape (n_e, C, H, W) (the synthetic sets: in [0, 1]; image folders:
        normalised, and with ``stream=True`` an :class:`~qat_dg.folders.ImageFiles` standing
        for that tensor), ``y`` int64 of shape (n_e,).
    env_names : list of str
        One name per domain.
    num_classes : int
        Number of classes (10).
    class_names : list of str or None
        Class names in label order (set by :func:`~qat_dg.folders.load_domainbed`).
    """

    envs: list[tuple[torch.Tensor, torch.Tensor]]
    env_names: list[str]
    num_classes: int = 10
    class_names: list[str] | None = None

    def __post_init__(self) -> None:
        # a hand-built dataset is checked like a loaded one: a label >= num_classes would
        # only fail in cross_entropy, mismatched image shapes at the first mixed minibatch
        k = self.num_classes
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 2:
            raise ValueError(f"num_classes must be an int >= 2, got {k!r}")
        self.num_classes = int(k)
        if isinstance(self.envs, str) or not isinstance(self.envs, Sequence) or not self.envs:
            raise TypeError("envs must be a non-empty list of (X, y) pairs")
        names = self.env_names
        if isinstance(names, str) or not isinstance(names, Sequence):
            raise TypeError(f"env_names must be a list of str, got {names!r}")
        if len(names) != len(self.envs) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"env_names must hold one str per domain ({len(self.envs)})")
        if len(set(names)) != len(names):
            raise ValueError(f"env_names has duplicates: {list(names)}")
        shape = None
        for i, pair in enumerate(self.envs):
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(f"envs[{i}] must be an (X, y) pair")
            x, y = pair
            if not hasattr(x, "shape") or len(x.shape) != 4:
                raise ValueError(f"envs[{i}]: X must be (n, C, H, W), got {getattr(x, 'shape', x)}")
            if isinstance(x, torch.Tensor) and not (
                x.is_floating_point() and bool(torch.isfinite(x).all())
            ):
                raise ValueError(f"envs[{i}]: X must hold finite floats")
            if not isinstance(y, torch.Tensor) or y.dtype != torch.int64 or y.ndim != 1:
                raise TypeError(f"envs[{i}]: y must be an int64 tensor of shape (n,)")
            if len(y) != len(x) or len(y) == 0:
                raise ValueError(f"envs[{i}]: X has {len(x)} images, y {len(y)} labels")
            if int(y.min()) < 0 or int(y.max()) >= self.num_classes:
                raise ValueError(f"envs[{i}]: labels must lie in [0, num_classes={k})")
            if shape is not None and tuple(x.shape[1:]) != shape:
                raise ValueError(f"envs[{i}]: images {tuple(x.shape[1:])}, envs[0]: {shape}")
            shape = tuple(x.shape[1:])
        self.envs = [tuple(p) for p in self.envs]
        self.env_names = list(names)
        c = self.class_names
        if c is not None and (isinstance(c, str) or len(c) != self.num_classes
                              or not all(isinstance(n, str) for n in c)):  # fmt: skip
            raise ValueError(f"class_names must hold num_classes={k} str, got {c!r}")

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """(C, H, W) of one image."""
        return tuple(self.envs[0][0].shape[1:])  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self.envs)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.envs[i]


def _digits(size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(size, bool | np.bool_) or not isinstance(size, int | np.integer) or size < 8:
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


# ---------------------------------------------------------------------------------------------
# PACS-like styled digits and the pre-training task
# ---------------------------------------------------------------------------------------------

STYLES = ("photo", "art", "cartoon", "sketch")
_CONTENT_SPLIT = 0.5  # first half of the shuffled digits: pre-training; second half: DG domains


def _content(size: int, part: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Digits upsampled to ``size``; ``part`` "pretrain" or "dg" (disjoint halves, fixed seed)."""
    x, y = _digits(size, seed=12345)
    k = int(len(x) * _CONTENT_SPLIT)
    sl = slice(0, k) if part == "pretrain" else slice(k, None)
    return torch.as_tensor(x[sl], dtype=torch.float32), torch.as_tensor(y[sl], dtype=torch.int64)


def _random_affine(x: torch.Tensor, gen: torch.Generator, max_deg: float) -> torch.Tensor:
    """Per-image random rotation, scale and shift of (n, C, H, W) by one ``grid_sample``."""
    n = x.shape[0]
    u = torch.rand(n, 4, generator=gen)
    ang = (u[:, 0] * 2 - 1) * np.deg2rad(max_deg)
    scale = 0.85 + 0.3 * u[:, 1]
    shift = (u[:, 2:] * 2 - 1) * 0.12
    cos, sin = torch.cos(ang) / scale, torch.sin(ang) / scale
    theta = torch.stack(
        [torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1
    )
    grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
    return torch.nn.functional.grid_sample(x, grid, align_corners=False, padding_mode="zeros")


def _colours(n: int, gen: torch.Generator, lo: float = 0.0, hi: float = 1.0) -> torch.Tensor:
    return (lo + (hi - lo) * torch.rand(n, 3, 1, 1, generator=gen)).clamp(0, 1)


def _contrasting(bg: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random ink colours whose brightness is far from the background's mean (visible ink)."""
    n = bg.shape[0]
    lum = bg.mean(dim=(1, 2, 3), keepdim=True)
    target = torch.where(lum > 0.5, 0.15, 0.85) + 0.1 * (
        torch.rand(n, 1, 1, 1, generator=gen) - 0.5
    )
    hue = torch.rand(n, 3, 1, 1, generator=gen) - 0.5
    return (target + 0.6 * (hue - hue.mean(dim=1, keepdim=True))).clamp(0, 1)


def _render(style: str, m: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Render ink masks m (n, 1, H, W) in [0, 1] as RGB images (n, 3, H, W) of one style."""
    n, _, h, w = m.shape
    if style == "photo":  # coloured ink on a smooth colour gradient, sensor noise
        a, b = _colours(n, gen), _colours(n, gen)
        ramp = torch.linspace(0, 1, w).view(1, 1, 1, w)
        bg = a * (1 - ramp) + b * ramp
        ink = _contrasting(bg, gen)
        img = bg * (1 - m) + ink * m + 0.06 * torch.randn(n, 3, h, w, generator=gen)
    elif style == "art":  # painted strokes over a coloured sinusoidal texture
        yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        f = 0.4 + 0.8 * torch.rand(n, 2, 1, 1, generator=gen)
        o = torch.rand(n, 2, 1, 1, generator=gen) * np.pi
        wave = torch.sin(f[:, :1] * (xx * torch.cos(o[:, :1]) + yy * torch.sin(o[:, :1])))
        wave = wave * torch.sin(f[:, 1:] * (xx * torch.cos(o[:, 1:]) - yy * torch.sin(o[:, 1:])))
        t = 0.5 + 0.3 * wave
        bg = _colours(n, gen) * t + _colours(n, gen) * (1 - t)
        ink = _contrasting(bg, gen)
        alpha = 0.75 + 0.25 * torch.rand(n, 1, 1, 1, generator=gen)
        img = bg * (1 - alpha * m) + ink * alpha * m
    elif style == "cartoon":  # thick flat saturated ink with a dark outline on a flat colour
        thick = torch.nn.functional.max_pool2d(m, 3, stride=1, padding=1)
        outline = (torch.nn.functional.max_pool2d(thick, 3, stride=1, padding=1) - thick).clamp(0)
        prim = torch.eye(3)[torch.randint(3, (n,), generator=gen)].view(n, 3, 1, 1)
        ink = (prim + 0.25 * torch.rand(n, 3, 1, 1, generator=gen)).clamp(0, 1)
        bg = 0.6 + 0.4 * _colours(n, gen)
        img = bg * (1 - thick) + ink * thick
        img = img * (1 - outline)
    elif style == "sketch":  # grey pencil edges of the strokes on white paper
        gx = m[..., :, 1:] - m[..., :, :-1]
        gy = m[..., 1:, :] - m[..., :-1, :]
        edge = torch.zeros_like(m)
        edge[..., :, 1:] += gx.abs()
        edge[..., 1:, :] += gy.abs()
        edge = edge.clamp(0, 1)
        img = (1 - 0.9 * edge).expand(n, 3, h, w) + 0.04 * torch.randn(n, 1, h, w, generator=gen)
    else:  # pragma: no cover - validated by the callers
        raise ValueError(style)
    return img.clamp(0, 1).contiguous()


def StyledDigits(
    domains: Sequence[str] = STYLES,
    size: int = 16,
    n_per_domain: int = 500,
    max_rotation: float = 15.0,
    seed: int = 0,
) -> DomainDataset:
    """PACS-like domains: the same 10 digit classes drawn in four styles (colour, texture, style).

    The content comes from the second half of scikit-learn's digits (the first half is reserved
    for :func:`PretrainDigits`), split into disjoint shards, one per domain (as DomainBed's
    datasets hold different images per domain). Each image is the ink mask of one digit under a
    random rotation (``±max_rotation``), scale (0.85–1.15) and shift, rendered in the domain's
    style:

    * ``"photo"``: random-colour ink on a random two-colour gradient, Gaussian sensor noise;
    * ``"art"``: semi-transparent random-colour ink over a coloured sinusoidal texture;
    * ``"cartoon"``: dilated, flat, saturated primary-colour ink with a dark outline;
    * ``"sketch"``: grey edges of the strokes on white (no colour, no filled strokes).

    Parameters
    ----------
    domains : sequence of str, default=("photo", "art", "cartoon", "sketch")
        Distinct names from :data:`STYLES` (at least 2).
    size : int, default=16
        Side length (>= 8).
    n_per_domain : int, default=500
        Images per domain; shard images are reused with fresh random transforms when
        ``n_per_domain`` exceeds the shard (~225 digits per domain for 4 domains).
    max_rotation : float, default=15.0
        Maximum absolute rotation in degrees.
    seed : int, default=0
        Seed of the shards, transforms and styles.

    Returns
    -------
    DomainDataset
        Inputs (n_per_domain, 3, size, size) in [0, 1].
    """
    domains = list(domains)
    if len(domains) < 2 or len(set(domains)) != len(domains) or set(domains) - set(STYLES):
        raise ValueError(f"domains must be >= 2 distinct names from {STYLES}, got {domains}")
    if (
        isinstance(n_per_domain, bool | np.bool_)
        or not isinstance(n_per_domain, int | np.integer)
        or n_per_domain < 10
    ):
        raise ValueError(f"n_per_domain must be an int >= 10, got {n_per_domain!r}")
    if not (np.isfinite(max_rotation) and 0 <= max_rotation <= 180):
        raise ValueError(f"max_rotation must be in [0, 180], got {max_rotation}")
    x, y = _content(size, "dg")
    gen = torch.Generator().manual_seed(int(seed))
    perm = torch.randperm(len(x), generator=gen)
    envs = []
    for name, idx in zip(domains, torch.tensor_split(perm, len(domains)), strict=True):
        pick = idx[torch.randint(len(idx), (n_per_domain,), generator=gen)]
        pick[: min(len(idx), n_per_domain)] = idx[:n_per_domain]  # every shard digit at least once
        m = _random_affine(x[pick, None], gen, max_rotation).clamp(0, 1)
        envs.append((_render(name, m, gen), y[pick].clone()))
    return DomainDataset(envs, domains)


def PretrainDigits(
    size: int = 16, n: int = 6000, seed: int = 0, styles: Sequence[str] = ("photo",)
) -> tuple[torch.Tensor, torch.Tensor]:
    """The pre-training task: 20 classes (digit x upright/turned) on the other half of the digits.

    The stand-in for ImageNet: a different label space (which of 10 digits, upright or turned
    by 90 degrees; no 180-degree turns, which would confuse 6 and 9) on different images (the first half of the shuffled digits, disjoint
    from :func:`StyledDigits`' content), drawn as natural-photo-like renderings (random ink and
    background colours and gradients, noise, random small affine transforms, 30 % bold strokes,
    20 % black-and-white). With the default ``styles`` none of the DG styles' texture, outline or
    edge-only cues occur; ``styles=STYLES`` draws each image in a random one of the four styles,
    the stand-in for ImageNet's own variety (photographs, paintings, cartoons, drawings) on
    content and labels still disjoint from the DG domains.

    Parameters
    ----------
    size : int, default=16
        Side length (>= 8).
    n : int, default=6000
        Number of images (>= 40).
    seed : int, default=0
        Seed.
    styles : sequence of str, default=("photo",)
        Distinct names from :data:`STYLES`; each image is rendered in one drawn uniformly.

    Returns
    -------
    (Tensor, Tensor)
        X float32 (n, 3, size, size) in [0, 1]; y int64 (n,) in [0, 20).
    """
    if isinstance(n, bool | np.bool_) or not isinstance(n, int | np.integer) or n < 40:
        raise ValueError(f"n must be an int >= 40, got {n!r}")
    styles = [styles] if isinstance(styles, str) else list(styles)
    if not styles or len(set(styles)) != len(styles) or set(styles) - set(STYLES):
        raise ValueError(f"styles must be distinct names from {STYLES}, got {styles}")
    x, y = _content(size, "pretrain")
    gen = torch.Generator().manual_seed(int(seed) + 7)
    pick = torch.randint(len(x), (n,), generator=gen)
    turn = torch.randint(2, (n,), generator=gen)
    m = x[pick, None]
    m[turn == 1] = torch.rot90(m[turn == 1], 1, dims=(2, 3))
    m = _random_affine(m, gen, 10.0).clamp(0, 1)
    bold = torch.rand(n, generator=gen) < 0.3  # natural stroke-width variation
    m[bold] = torch.nn.functional.max_pool2d(m[bold], 3, stride=1, padding=1)
    if styles == ["photo"]:  # the original draw order, so seeds give the same images as before
        img = _render("photo", m, gen)
    else:
        which = torch.randint(len(styles), (n,), generator=gen)
        img = torch.empty(n, 3, m.shape[2], m.shape[3])
        for k, style in enumerate(styles):
            img[which == k] = _render(style, m[which == k], gen)
    grey = torch.rand(n, generator=gen) < 0.2  # some black-and-white photographs
    img[grey] = img[grey].mean(dim=1, keepdim=True).expand(-1, 3, -1, -1)
    return img, y[pick] * 2 + turn
