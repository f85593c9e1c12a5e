"""Loaders for the real EDG datasets from a local path (no downloads; spec §5.1).

* :func:`load_image_domains` (Portraits, Caltran): ``root/<domain>/<class>/<image>``; domains in
  natural sort order of their folder names (e.g. years), classes in sorted order. Needs pillow
  (``pip install evolving-dg[images]``).
* :func:`load_onp`: the UCI Online News Popularity CSV, label 1[shares ≥ threshold], domains
  ordered by publication time (largest ``timedelta`` first), 58 predictive features.
* :func:`load_powersupply`: an ARFF file in time order, the last attribute is the class.
"""

from __future__ import annotations

import numbers
import re
from pathlib import Path

import numpy as np

from evolving_dg.data import EvolvingDataset

__all__ = ["load_caltran", "load_image_domains", "load_onp", "load_portraits", "load_powersupply"]

_IMG = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff"}


def _natural(s: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _dir(path, name: str) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"{name}={str(path)!r} is not a directory")
    return p


def _chunks(n: int, n_domains: int) -> list[np.ndarray]:
    if (
        isinstance(n_domains, bool)
        or not isinstance(n_domains, numbers.Integral)
        or not 3 <= n_domains <= n // 2
    ):
        raise ValueError(f"n_domains must be an int in [3, {n // 2}], got {n_domains!r}")
    return np.array_split(np.arange(n), n_domains)


def load_image_domains(root, size: int = 32, grayscale: bool = True, name: str = "images"):
    """Time-ordered image domains from ``root/<domain>/<class>/<image>``.

    Returns
    -------
    EvolvingDataset
        X: (n_t, C, size, size) in [0, 1], C = 1 if ``grayscale`` else 3;
        ``info["domains"]``, ``info["classes"]`` hold the folder names.
    """
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - optional dependency
        raise ImportError("image loaders need pillow: pip install 'evolving-dg[images]'") from e
    root = _dir(root, "root")
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 4:
        raise ValueError(f"size must be an int >= 4, got {size!r}")
    dom_dirs = sorted((d for d in root.iterdir() if d.is_dir()), key=lambda d: _natural(d.name))
    classes = sorted({c.name for d in dom_dirs for c in d.iterdir() if c.is_dir()})
    if len(dom_dirs) < 3 or len(classes) < 2:
        raise ValueError(f"{root} needs >= 3 domain folders holding >= 2 class folders")
    domains = []
    for d in dom_dirs:
        xs, ys = [], []
        for k, c in enumerate(classes):
            files = sorted(f for f in (d / c).glob("*") if f.suffix.lower() in _IMG) if (d / c).is_dir() else []  # fmt: skip
            for f in files:
                with Image.open(f) as im:
                    im = im.convert("L" if grayscale else "RGB").resize((size, size))
                    a = np.asarray(im, dtype=np.float32) / 255.0
                xs.append(a[None] if grayscale else a.transpose(2, 0, 1))
                ys.append(k)
        if len(xs) < 2:
            raise ValueError(f"domain folder {d} holds fewer than 2 images")
        domains.append((np.stack(xs), np.array(ys, dtype=np.int64)))
    T = len(domains)
    split = (T // 2, T // 6, T - T // 2 - T // 6)
    info = {"domains": [d.name for d in dom_dirs], "classes": classes, "split": split}
    return EvolvingDataset(domains, len(classes), name, info)


def load_portraits(root, size: int = 32) -> EvolvingDataset:
    """Portraits (yearbook faces by year; classes e.g. F / M) in the image-folder layout."""
    return load_image_domains(root, size, True, "portraits")


def load_caltran(root, size: int = 32) -> EvolvingDataset:
    """Caltran (time-ordered traffic-camera frames; classes car / no car), RGB."""
    return load_image_domains(root, size, False, "caltran")


def load_onp(path, n_domains: int = 24, threshold: float = 1400.0) -> EvolvingDataset:
    """UCI Online News Popularity: label 1[shares ≥ threshold], domains by publication time."""
    import csv

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not a file")
    with p.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise ValueError(f"{p.name}: the file is empty")
    header = [h.strip() for h in rows[0]]
    for col in ("timedelta", "shares"):
        if col not in header:
            raise ValueError(f"{p.name}: missing column {col!r}")
    data = [r for r in rows[1:] if any(c.strip() for c in r)]
    if not data:
        raise ValueError(f"{p.name}: no data rows after the header")
    keep = [i for i, h in enumerate(header) if h not in ("url", "timedelta", "shares")]
    values = np.empty((len(data), len(header)))
    for k, r in enumerate(data, start=2):
        if len(r) != len(header):
            raise ValueError(f"{p.name}: line {k} has {len(r)} fields, expected {len(header)}")
        for j, c in enumerate(r):
            if header[j] == "url":
                continue
            try:
                values[k - 2, j] = float(c)
            except ValueError:
                raise ValueError(
                    f"{p.name}: line {k}, column {header[j]!r}: {c!r} is not a number"
                ) from None
    if not np.isfinite(values[:, [j for j, h in enumerate(header) if h != "url"]]).all():
        raise ValueError(f"{p.name}: contains NaN or inf values")
    X = values[:, keep]
    td = values[:, header.index("timedelta")]
    shares = values[:, header.index("shares")]
    order = np.argsort(-td, kind="stable")  # oldest article first
    X, y = X[order], (shares[order] >= threshold).astype(np.int64)
    mu, sd = X.mean(0), X.std(0)
    X = (X - mu) / np.where(sd > 0, sd, 1.0)
    doms = [(X[i].astype(np.float32), y[i]) for i in _chunks(len(y), n_domains)]
    T = len(doms)
    return EvolvingDataset(doms, 2, "onp", {"features": [header[i] for i in keep],
                                            "split": (T // 2, T // 6, T - T // 2 - T // 6)})  # fmt: skip


def load_powersupply(path, n_domains: int = 30) -> EvolvingDataset:
    """PowerSupply ARFF in time order; the last attribute is the class (encoded 0..K-1)."""
    from scipy.io import arff

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not a file")
    data, meta = arff.loadarff(str(p))
    names = meta.names()
    X = np.column_stack([np.asarray(data[n], dtype=np.float64) for n in names[:-1]])
    raw = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in data[names[-1]]])
    classes, y = np.unique(raw, return_inverse=True)
    doms = [(X[i].astype(np.float32), y[i].astype(np.int64)) for i in _chunks(len(y), n_domains)]
    T = len(doms)
    return EvolvingDataset(doms, len(classes), "powersupply",
                           {"classes": list(classes), "split": (T // 2, T // 6, T - T // 2 - T // 6)})  # fmt: skip
