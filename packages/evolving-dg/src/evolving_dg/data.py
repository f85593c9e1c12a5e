"""Evolving-domain datasets: the EDG benchmarks' generators (spec §5.1) and the container type.

All generators are seeded and need no download. ``domains`` are time-ordered ``(X_t, y_t)`` pairs.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from evolving_dg._validation import check_domains

__all__ = [
    "EvolvingDataset",
    "make_circle",
    "make_rotated_digits",
    "make_sine",
    "make_spurious_circle",
]


@dataclass
class EvolvingDataset:
    """Time-ordered labelled domains.

    Attributes
    ----------
    domains : list of (ndarray, ndarray)
        ``X_t`` of shape (n_t, *input_shape) float32 and ``y_t`` of shape (n_t,) int64.
    n_classes : int
    name : str
    info : dict
        Generator parameters and extras (e.g. ``spurious_dims``, ``angles``).
    """

    domains: list
    n_classes: int
    name: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        nc = self.n_classes
        if isinstance(nc, bool) or not isinstance(nc, numbers.Integral):
            raise TypeError(f"n_classes must be an int, got {nc!r}")
        if nc < 2:
            raise ValueError(f"n_classes must be >= 2, got {nc}")
        self.n_classes = int(nc)
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        if not isinstance(self.info, dict):
            raise TypeError(f"info must be a dict, got {type(self.info).__name__}")
        self.domains = check_domains(self.domains, "domains", n_classes=self.n_classes, min_len=1)

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input."""
        return tuple(self.domains[0][0].shape[1:])

    def __len__(self) -> int:
        return len(self.domains)

    def split(self, n_source: int, n_val: int, n_target: int) -> tuple[list, list, list]:
        """Ordered (source, intermediate/validation, target) lists; sizes must sum to the total."""
        for name, v in (("n_source", n_source), ("n_val", n_val), ("n_target", n_target)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise ValueError(f"{name} must be a non-negative int, got {v!r}")
        if n_source + n_val + n_target != len(self.domains):
            raise ValueError(
                f"n_source + n_val + n_target = {n_source + n_val + n_target} != "
                f"{len(self.domains)} domains"
            )
        if n_source < 3 or n_target < 1:
            raise ValueError("need n_source >= 3 and n_target >= 1")
        d = self.domains
        return d[:n_source], d[n_source : n_source + n_val], d[n_source + n_val :]

    def default_split(self) -> tuple[list, list, list]:
        """The benchmark's split (≈ 1/2 : 1/6 : 1/3, spec §1), stored in ``info["split"]``."""
        if "split" not in self.info:
            raise ValueError(
                "this dataset has no default split (info['split'] is not set): call "
                "split(n_source, n_val, n_target)"
            )
        return self.split(*self.info["split"])


def _check_int(v, name: str, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    return int(v)


def _check_pos(v, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if v <= 0:
        raise ValueError(f"{name} must be positive, got {v!r}")
    return float(v)


def _disk_noise(rng: np.random.Generator, n: int, spread: float) -> np.ndarray:
    """N(0, I_2) draws conditioned on norm <= spread (rejection sampling, vectorised)."""
    out = np.empty((0, 2))
    while len(out) < n:
        e = rng.standard_normal((2 * (n - len(out)) + 8, 2))
        out = np.vstack([out, e[np.linalg.norm(e, axis=1) <= spread]])
    return out[:n]


def make_circle(
    n_domains: int = 30,
    n_per_domain: int = 100,
    radius: float = 5.0,
    spread: float = 1.0,
    seed: int = 0,
) -> EvolvingDataset:
    """Circle (CIDA half-circle): domain centres walk 0→180° along a circle of ``radius``.

    Domain t has centre ``radius * (cos θ_t, sin θ_t)``, θ_t = π t / (T − 1); points are the centre
    plus standard normal noise truncated to the disk of radius ``spread``; y = 1[‖x‖ > radius].
    Split 15/5/10 for 30 domains.
    """
    T = _check_int(n_domains, "n_domains", 3)
    n = _check_int(n_per_domain, "n_per_domain", 2)
    radius, spread = _check_pos(radius, "radius"), _check_pos(spread, "spread")
    rng = np.random.default_rng(seed)
    theta = np.pi * np.arange(T) / (T - 1)
    centres = radius * np.stack([np.cos(theta), np.sin(theta)], 1)
    X = centres[:, None, :] + _disk_noise(rng, T * n, spread).reshape(T, n, 2)
    y = (np.linalg.norm(X, axis=2) > radius).astype(np.int64)
    doms = [(X[t].astype(np.float32), y[t]) for t in range(T)]
    split = (T // 2, T // 6, T - T // 2 - T // 6)
    info = {"theta": theta, "centres": centres, "radius": radius, "spread": spread, "split": split}
    return EvolvingDataset(doms, 2, "circle", info)


def make_sine(
    n_domains: int = 24,
    n_per_domain: int = 190,
    width: float = np.pi / 9,
    seed: int = 0,
) -> EvolvingDataset:
    """Sine: x₀ ~ U[t·width, (t+1)·width), x₁ = sin(3x₀) + U(−1, 1) (|x₁| ≤ 2 by rejection),
    y = 1[x₁ > sin 3x₀]; both coordinates standardised with the pooled mean/std (LSSAE loader).

    ``info["raw"]`` keeps the unstandardised domains. Split 12/4/8 for 24 domains (a
    reconstruction of the 24-domain file from CIDA's 12-domain statistics).
    """
    T = _check_int(n_domains, "n_domains", 3)
    n = _check_int(n_per_domain, "n_per_domain", 2)
    width = _check_pos(width, "width")
    rng = np.random.default_rng(seed)
    x0 = (np.arange(T)[:, None] + rng.random((T, n))) * width
    u = rng.uniform(-1, 1, (T, n))
    x1 = np.sin(3 * x0) + u
    bad = np.abs(x1) > 2
    while bad.any():  # redraw the noise of rejected points
        u[bad] = rng.uniform(-1, 1, bad.sum())
        x1 = np.sin(3 * x0) + u
        bad = np.abs(x1) > 2
    y = (x1 > np.sin(3 * x0)).astype(np.int64)
    raw = np.stack([x0, x1], 2)
    flat = raw.reshape(-1, 2)
    Xs = (raw - flat.mean(0)) / flat.std(0)
    doms = [(Xs[t].astype(np.float32), y[t]) for t in range(T)]
    split = (T // 2, T // 6, T - T // 2 - T // 6)
    info = {"raw": [raw[t] for t in range(T)], "width": width, "split": split}
    return EvolvingDataset(doms, 2, "sine", info)


def make_rotated_digits(
    angles: Sequence[float] = tuple(range(0, 181, 10)),
    size: int = 16,
    seed: int = 0,
) -> EvolvingDataset:
    """Rotated digits: scikit-learn's 1797 8×8 digits, shuffled, domain i takes images
    i, i+T, i+2T, … (the reference's ``[i::T]`` split), zoomed to ``size`` (bilinear), scaled to
    [0, 1] and rotated by ``angles[i]`` degrees (``scipy.ndimage.rotate``, order 1, zeros
    outside). X has shape (n_t, 1, size, size). Split 10/3/6 for 19 domains.
    """
    from scipy import ndimage
    from sklearn.datasets import load_digits

    angles = np.asarray(angles, dtype=float)
    if angles.ndim != 1 or len(angles) < 3 or not np.isfinite(angles).all():
        raise ValueError("angles must be a finite 1-D sequence of at least 3 angles")
    size = _check_int(size, "size", 8)
    d = load_digits()
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(d.images))
    imgs = ndimage.zoom(d.images[perm] / 16.0, (1, size / 8, size / 8), order=1)
    imgs = np.clip(imgs, 0, 1)
    labels = d.target[perm].astype(np.int64)
    T = len(angles)
    doms = []
    for i, a in enumerate(angles):
        x = imgs[i::T]
        if a % 360:
            x = ndimage.rotate(x, a, axes=(2, 1), reshape=False, order=1, cval=0.0)
        doms.append((np.clip(x, 0, 1)[:, None].astype(np.float32), labels[i::T]))
    split = (round(T * 10 / 19), round(T * 3 / 19), T - round(T * 10 / 19) - round(T * 3 / 19))
    return EvolvingDataset(doms, 10, "rotated_digits", {"angles": angles, "split": split})


def make_spurious_circle(
    n_domains: int = 30,
    n_per_domain: int = 100,
    strength: float = 1.5,
    noise: float = 0.5,
    rho_source: tuple[float, float] = (0.7, 1.0),
    rho_val: float = 0.5,
    rho_target: float = 0.1,
    seed: int = 0,
) -> EvolvingDataset:
    """Circle plus a shortcut coordinate s = a·(2y − 1)·b + N(0, noise²), b = ±1 with
    P(b = +1) = ρ_t: ρ_t ~ U(rho_source) on source domains (a varying, unstable shortcut),
    ``rho_val`` on intermediate and ``rho_target`` on target domains (reversed).
    ``info["spurious_dims"] = [2]``; ``info["rho"]`` the per-domain ρ_t.
    """
    base = make_circle(n_domains, n_per_domain, seed=seed)
    for name, v in (("rho_val", rho_val), ("rho_target", rho_target)):
        if not 0 <= v <= 1:
            raise ValueError(f"{name} must lie in [0, 1], got {v!r}")
    lo, hi = rho_source
    if not 0 <= lo <= hi <= 1:
        raise ValueError(f"rho_source must satisfy 0 <= lo <= hi <= 1, got {rho_source!r}")
    _check_pos(strength, "strength"), _check_pos(noise, "noise")
    ns, nv, _ = base.info["split"]
    rng = np.random.default_rng(seed + 10_007)
    T = len(base.domains)
    rho = np.where(
        np.arange(T) < ns,
        rng.uniform(lo, hi, T),
        np.where(np.arange(T) < ns + nv, rho_val, rho_target),
    )
    doms = []
    for t, (X, y) in enumerate(base.domains):
        b = np.where(rng.random(len(y)) < rho[t], 1.0, -1.0)
        s = strength * (2 * y - 1) * b + noise * rng.standard_normal(len(y))
        doms.append((np.column_stack([X, s]).astype(np.float32), y))
    info = {**base.info, "rho": rho, "spurious_dims": [2], "strength": strength}
    return EvolvingDataset(doms, 2, "spurious_circle", info)
