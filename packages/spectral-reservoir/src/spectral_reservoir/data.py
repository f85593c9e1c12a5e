"""Synthetic tasks with known periodic structure, the UCR/UEA sets bundled in aeon, and a local
copy of the archive."""

from __future__ import annotations

import numbers
import os
import warnings
from pathlib import Path

import numpy as np

__all__ = [
    "BUNDLED",
    "archive_names",
    "load_archive",
    "load_bundled",
    "make_lag_sign",
    "make_periodic_motifs",
]

# UCR / UEA sets shipped inside the aeon wheel (aeon/datasets/data); no downloads
BUNDLED = (
    "ArrowHead",
    "GunPoint",
    "ItalyPowerDemand",
    "OSULeaf",
    "ACSF1",
    "PickupGestureWiimoteZ",
    "BasicMotions",
    "JapaneseVowels",
)


def make_lag_sign(
    n: int,
    L: int = 400,
    period: int = 40,
    rho: float = 0.5,
    s: float = 0.8,
    noise: float = 0.1,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Two classes that differ only in the sign of the correlation one period apart.

    ``u_t`` is AR(1) with coefficient ``rho`` and unit innovations; ``x_t = u_t + y s u_{t-P} +
    noise e_t`` with ``y = +1`` or ``-1``. Marginals and short-lag statistics are the same for
    both classes, so a classifier needs a memory of ``P`` steps.

    Returns
    -------
    X : ndarray (n, 1, L)
    y : ndarray (n,) of int in {0, 1} (0 = negative sign)
    """
    for name, v in (("n", n), ("L", L), ("period", period)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {v!r}")  # True would read as 1
    if n < 2 or L < 3 or not (1 <= period < L):
        raise ValueError("need n >= 2, L >= 3 and 1 <= period < L")
    if not -1 < rho < 1:
        raise ValueError(f"rho must be in (-1, 1), got {rho}")
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    rng.shuffle(y)
    burn = period + 50
    e = rng.standard_normal((n, L + burn))
    # AR(1) by a scan over time, vectorised over series
    u = np.empty_like(e)
    u[:, 0] = e[:, 0] / np.sqrt(1 - rho**2)
    for t in range(1, L + burn):
        u[:, t] = rho * u[:, t - 1] + e[:, t]
    sign = np.where(y == 1, 1.0, -1.0)[:, None]
    x = u[:, burn:] + sign * s * u[:, burn - period : L + burn - period]
    x = x + noise * rng.standard_normal(x.shape)
    return x[:, None, :], y


def make_periodic_motifs(
    n: int, L: int = 300, periods: tuple[int, int] = (24, 36), noise: float = 0.3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Class ``k`` repeats a random two-harmonic motif of period ``periods[k]`` at a random phase.

    Returns
    -------
    X : ndarray (n, 1, L)
    y : ndarray (n,) of int
    """
    if (
        isinstance(noise, bool)
        or not isinstance(noise, numbers.Real)
        or not (np.isfinite(noise) and noise >= 0)
    ):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    if n < 2 or L < 3 or len(periods) < 2 or min(periods) < 2:
        raise ValueError("need n >= 2, L >= 3 and at least two periods >= 2")
    rng = np.random.default_rng(seed)
    k = len(periods)
    y = np.arange(n) % k
    rng.shuffle(y)
    P = np.asarray(periods, dtype=float)[y][:, None]
    t = np.arange(L)[None, :]
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    a = rng.uniform(0.5, 1.5, (n, 2))
    x = a[:, :1] * np.sin(2 * np.pi * t / P + phase) + a[:, 1:] * np.sin(
        4 * np.pi * t / P + 2 * phase
    )
    x = x + noise * rng.standard_normal(x.shape)
    return x[:, None, :], y


def load_bundled(name: str, split: str = "train"):
    """A UCR/UEA set from the aeon wheel (needs ``pip install aeon``; nothing is downloaded).

    Returns
    -------
    X : ndarray (n, C, L) or list of (C, L_i) arrays (unequal lengths)
    y : ndarray (n,)
    """
    if name not in BUNDLED:
        raise ValueError(f"name must be one of {BUNDLED}, got {name!r}")
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    try:
        from aeon.datasets import load_classification
    except ImportError as err:  # pragma: no cover - optional extra
        raise ImportError("load_bundled needs aeon: pip install aeon") from err
    import os

    import aeon.datasets

    path = os.path.join(os.path.dirname(aeon.datasets.__file__), "data")
    return load_classification(name, split=split, extract_path=path)


def _archive_file(root: Path, name: str, split: str) -> Path | None:
    for ext in (".ts", ".tsv"):
        f = root / name / f"{name}_{split.upper()}{ext}"
        if f.is_file():
            return f
    return None


def archive_names(root: str | Path) -> list[str]:
    """Problems of a local UCR/UEA archive copy, sorted.

    The archive layout is ``root/<Name>/<Name>_TRAIN.ts`` and ``<Name>_TEST.ts`` (UEA and the
    ``.ts`` release of UCR) or ``.tsv`` (UCR 2018); folders with only one split are skipped
    with a warning naming them, and a root holding no problem is an error.

    Parameters
    ----------
    root : str or Path
        The archive folder (e.g. ``Univariate_ts`` after unzipping).

    Returns
    -------
    list of str
    """
    if not isinstance(root, str | os.PathLike):
        raise TypeError(f"root must be a str or Path, got {type(root).__name__}")
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"root {str(root)!r} is not a folder")
    names, half = [], []
    for d in sorted(root.iterdir()):
        if d.is_dir():
            splits = [_archive_file(root, d.name, s) is not None for s in ("train", "test")]
            (names if all(splits) else half if any(splits) else []).append(d.name)
    if half:  # one split only: a cut download, so say what is left out
        warnings.warn(
            f"archive_names: skipped {half} (only one of {{Name}}_TRAIN / {{Name}}_TEST)",
            stacklevel=2,
        )
    if not names:
        raise ValueError(
            f"root {str(root)!r} holds no <Name>/<Name>_TRAIN and _TEST .ts/.tsv problems"
        )
    return names


def _check_archive_text(f: Path, y) -> None:
    """What aeon's readers let through: ragged .tsv rows (a cut file) and .ts labels outside
    the header's ``@classLabel`` list (a cut last row leaves its values as the label)."""
    text = f.read_text(errors="replace")
    if f.suffix == ".tsv":
        counts = {line.count("\t") for line in text.splitlines() if line.strip()}
        if len(counts) > 1:
            raise ValueError(
                f"{f.name}: rows with different numbers of fields {sorted(c + 1 for c in counts)} "
                "(UCR .tsv rows are NaN-padded to one length: truncated?)"
            )
        return
    for line in text.splitlines():
        words = line.strip().split()
        if len(words) > 2 and words[0].lower() == "@classlabel" and words[1].lower() == "true":
            bad = sorted({str(v) for v in np.asarray(y)} - set(words[2:]))
            if bad:
                raise ValueError(
                    f"{f.name}: labels {bad[:5]} are not among @classLabel {words[2:]} (truncated?)"
                )
            return
        if words and words[0].lower() == "@data":
            return


def load_archive(root: str | Path, name: str, split: str = "train"):
    """One split of a problem from a local UCR/UEA archive copy (aeon's readers; no download).

    Parameters
    ----------
    root : str or Path
        The archive folder (see :func:`archive_names`).
    name : str
        Problem name (its folder).
    split : {"train", "test"}

    Returns
    -------
    X : ndarray (n, C, L) or list of (C, L_i) arrays (unequal lengths)
    y : ndarray (n,)
        Class labels as stored (strings).
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"root {str(root)!r} is not a folder")
    f = _archive_file(root, str(name), split)
    if f is None:
        raise ValueError(
            f"name {name!r}: no {name}_{split.upper()}.ts or .tsv under {str(root / str(name))!r}"
        )
    try:
        from aeon.datasets import load_from_ts_file, load_from_tsv_file
    except ImportError as err:  # pragma: no cover - optional extra
        raise ImportError("load_archive needs aeon: pip install aeon") from err
    X, y = (load_from_ts_file if f.suffix == ".ts" else load_from_tsv_file)(str(f))
    if len(X) == 0 or len(X) != len(y):
        raise ValueError(f"{f.name}: {len(X)} series for {len(y)} labels")
    _check_archive_text(f, y)
    lengths = {np.shape(x)[-1] for x in X}
    if (
        min(lengths) == 0 or min(np.size(x) for x in X) == 0
    ):  # e.g. a .tsv whose separator is not a tab: all in the label column
        raise ValueError(f"{f.name}: series with no values (is it {f.suffix[1:]}-formatted?)")
    if f.suffix == ".tsv" and len(lengths) > 1:
        # the UCR 2018 .tsv layout pads unequal lengths with NaN: ragged rows are a cut file
        raise ValueError(f"{f.name}: rows of different lengths {sorted(lengths)} (truncated?)")
    y = np.asarray(y)
    if y.dtype.kind == "f":
        # .tsv class labels written "1.0" come back as floats: whole numbers are class labels,
        # anything else is a regression target (@targetLabel)
        if not (np.isfinite(y).all() and np.array_equal(y, np.round(y))):
            raise ValueError(f"name {name!r} is a regression problem ({f.name} has real targets)")
        y = y.astype(np.int64)
    return X, y
