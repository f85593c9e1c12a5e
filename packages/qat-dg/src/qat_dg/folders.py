"""DomainBed image folders (PACS, VLCS, OfficeHome, TerraIncognita, DomainNet layout).

``root/<domain>/<class>/<image>``: one folder per domain, one sub-folder per class. Labels are
the class folders' sorted order over *all* domains, and every domain must hold every class: a
per-domain ``ImageFolder`` would number classes per folder, so a domain missing one class would
silently shift every label after it.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

import numpy as np
import torch

from qat_dg.data import DomainDataset

__all__ = ["IMAGE_EXTENSIONS", "load_domainbed"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def _visible(p: pathlib.Path) -> bool:
    # .DS_Store, ._resource forks, .ipynb_checkpoints: file-system litter, not data
    return not p.name.startswith(".")


def _read_image(path: pathlib.Path, size: int) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            if im.mode in ("I;16", "I;16B", "I;16L", "I"):
                # 16-bit greyscale: Pillow's convert("RGB") clips every value above 255 to white
                a = np.asarray(im, dtype=np.float64)
                if a.min() < 0 or a.max() > 65535:
                    raise ValueError(f"root: {path} holds values outside 16 bits")
                im = Image.fromarray(np.round(a / 257.0).astype(np.uint8), mode="L")
            elif im.mode == "F":
                raise ValueError(f"root: {path} is a float image; save it as 8- or 16-bit")
            im = im.convert("RGB")
            if im.size != (size, size):
                im = im.resize((size, size), Image.BILINEAR)
            return np.asarray(im, dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as e:
        raise ValueError(f"root: {path} is not a readable image ({e})") from e


def load_domainbed(
    root: str | os.PathLike,
    image_size: int = 64,
    domains: Sequence[str] | None = None,
) -> DomainDataset:
    """Read a DomainBed-format image-folder data set into a :class:`DomainDataset`.

    Parameters
    ----------
    root : str or PathLike
        Folder holding one sub-folder per domain (e.g. ``PACS/`` with ``art_painting``,
        ``cartoon``, ``photo``, ``sketch``).
    image_size : int, default=64
        Images are converted to RGB and resized (bilinear) to ``image_size`` squared.
    domains : sequence of str, optional
        Domain folders to read, in this order (default: all, sorted).

    Returns
    -------
    DomainDataset
        ``envs[i] = (X, y)`` with ``X`` float32 (n_i, 3, image_size, image_size) in [0, 1] and
        ``y`` int64; ``class_names`` in label order.

    Raises
    ------
    ValueError
        If ``root`` is not a folder, a domain or class folder is empty, domains hold different
        classes, a file is not an image (hidden files are ignored), a file sits outside a class
        folder, or an image cannot be decoded. Nothing is dropped silently.
    ImportError
        If Pillow is not installed (``pip install qat-dg[images]``).
    """
    try:
        import PIL  # noqa: F401
    except ImportError as e:  # pragma: no cover - Pillow ships with the dev environment
        raise ImportError("load_domainbed needs Pillow: pip install 'qat-dg[images]'") from e
    if (
        isinstance(image_size, bool)
        or not isinstance(image_size, int | np.integer)
        or image_size < 1
    ):
        raise ValueError(f"image_size: expected a positive int, got {image_size!r}")
    root = pathlib.Path(root)
    if not root.is_dir():
        raise ValueError(f"root: {str(root)!r} is not a folder")
    found = sorted(p.name for p in root.iterdir() if p.is_dir() and _visible(p))
    stray = sorted(p.name for p in root.iterdir() if p.is_file() and _visible(p))
    if stray:
        raise ValueError(f"root: files outside any domain folder: {stray[:5]}")
    if domains is None:
        names = found
    else:
        if isinstance(domains, str) or not len(domains):
            raise ValueError("domains: expected a non-empty sequence of domain folder names")
        missing = [d for d in domains if d not in found]
        if missing:
            raise ValueError(f"domains: {missing} not under root (found {found})")
        names = list(domains)
    if len(names) < 2:
        raise ValueError(f"root: needs at least 2 domain folders, found {found}")
    classes = {
        d: sorted(p.name for p in (root / d).iterdir() if p.is_dir() and _visible(p)) for d in names
    }
    all_classes = sorted(set().union(*classes.values()))
    for d in names:
        lacking = sorted(set(all_classes) - set(classes[d]))
        if lacking:
            raise ValueError(
                f"root: domain {d!r} lacks class folders {lacking[:5]}; every domain must hold "
                "every class (labels are numbered over all domains)"
            )
        loose = sorted(p.name for p in (root / d).iterdir() if p.is_file() and _visible(p))
        if loose:
            raise ValueError(f"root: files in domain {d!r} outside a class folder: {loose[:5]}")
    index = {c: i for i, c in enumerate(all_classes)}
    envs = []
    for d in names:
        xs, ys = [], []
        for c in all_classes:
            files = sorted(p for p in (root / d / c).rglob("*") if p.is_file() and _visible(p))
            other = [p.name for p in files if p.suffix.lower() not in IMAGE_EXTENSIONS]
            if other:
                raise ValueError(f"root: non-image files in {d}/{c}: {other[:5]}")
            if not files:
                raise ValueError(f"root: class folder {d}/{c} holds no image")
            xs += [_read_image(p, int(image_size)) for p in files]
            ys += [index[c]] * len(files)
        X = torch.from_numpy(np.stack(xs)).permute(0, 3, 1, 2).float().div_(255.0)
        envs.append((X.contiguous(), torch.tensor(ys, dtype=torch.int64)))
    return DomainDataset(envs, names, num_classes=len(all_classes), class_names=all_classes)
