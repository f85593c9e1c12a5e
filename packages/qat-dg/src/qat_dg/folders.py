"""DomainBed image folders (PACS, VLCS, OfficeHome, TerraIncognita, DomainNet layout).

``root/<domain>/<class>/<image>``: one folder per domain, one sub-folder per class. Labels are
the class folders' sorted order over *all* domains, and every domain must hold every class: a
per-domain ``ImageFolder`` would number classes per folder, so a domain missing one class would
silently shift every label after it.

Images are normalised with ImageNet's mean and std by default, as DomainBed's transforms do for
every image data set (and as an ImageNet-pretrained ResNet-18 expects). ``stream=True`` keeps
each domain as :class:`ImageFiles`, a ``torch.utils.data.Dataset`` of file paths decoded on
access, instead of one float32 tensor (PACS at 224 px is 6.0 GB as float32).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

import numpy as np
import torch

from qat_dg.data import DomainDataset

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "IMAGE_EXTENSIONS", "ImageFiles", "load_domainbed"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")
IMAGENET_MEAN = (0.485, 0.456, 0.406)  # torchvision's / DomainBed's Normalize
IMAGENET_STD = (0.229, 0.224, 0.225)


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


def _normalisation(normalize: object) -> tuple[torch.Tensor, torch.Tensor] | None:
    if normalize is None:
        return None
    if isinstance(normalize, str):
        if normalize != "imagenet":
            raise ValueError(
                f"normalize: expected 'imagenet', None or (mean, std), got {normalize!r}"
            )
        normalize = (IMAGENET_MEAN, IMAGENET_STD)
    try:
        mean, std = (torch.as_tensor(v, dtype=torch.float32).reshape(-1) for v in normalize)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"normalize: expected 'imagenet', None or (mean, std), got {normalize!r}"
        ) from e
    if mean.shape != (3,) or std.shape != (3,):
        raise ValueError("normalize: mean and std must hold one value per RGB channel")
    if not (torch.isfinite(mean).all() and torch.isfinite(std).all() and (std > 0).all()):
        raise ValueError("normalize: mean must be finite and std finite and positive")
    return mean.view(3, 1, 1), std.view(3, 1, 1)


def _to_tensor(pixels: np.ndarray, norm) -> torch.Tensor:
    """(..., H, W, 3) uint8 -> (..., 3, H, W) float32, in [0, 1] or normalised."""
    x = torch.from_numpy(pixels if pixels.flags.writeable else pixels.copy())
    x = x.movedim(-1, -3).float().div_(255.0)
    if norm is not None:
        x = (x - norm[0]) / norm[1]
    return x.contiguous()


class ImageFiles(torch.utils.data.Dataset):
    """A domain's images as file paths, decoded (RGB, resized, normalised) when indexed.

    A stand-in for the (n, 3, S, S) float32 tensor of one domain that holds no pixels:
    ``files[i]`` is image ``i`` (3, S, S), ``files[idx]`` for a slice, index tensor or array is
    the decoded batch (B, 3, S, S), ``files.subset(idx)`` a lazy subset and
    ``ImageFiles.concat`` joins domains. ``len``, ``shape``, ``ndim`` and ``dtype`` answer as
    the tensor would, so the training loop, the DomainBed algorithms and the flatness probes
    take it in place of one.

    Parameters
    ----------
    paths : sequence of path
        Image files.
    image_size : int
        Side S of the decoded square images.
    normalize : "imagenet", None or (mean, std)
        Per-channel normalisation after scaling to [0, 1] (None keeps [0, 1]).
    """

    def __init__(
        self, paths: Sequence[str | os.PathLike], image_size: int, normalize: object = "imagenet"
    ) -> None:
        self.paths = [pathlib.Path(p) for p in paths]
        self.image_size = int(image_size)
        self.normalize = normalize
        self._norm = _normalisation(normalize)

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def shape(self) -> torch.Size:
        """(n, 3, S, S), the shape of the tensor it stands for."""
        return torch.Size((len(self.paths), 3, self.image_size, self.image_size))

    ndim = 4
    dtype = torch.float32

    def _positions(self, idx: object) -> list[int]:
        if isinstance(idx, slice):
            return list(range(len(self.paths)))[idx]
        a = np.asarray(idx.cpu() if isinstance(idx, torch.Tensor) else idx)
        if a.dtype == bool:
            if a.shape != (len(self.paths),):
                raise IndexError(f"idx: boolean mask of shape {a.shape} for {len(self)} images")
            return np.flatnonzero(a).tolist()
        if a.dtype.kind not in "iu" or a.ndim != 1:
            raise IndexError(f"idx: expected an int, slice or 1-D integer index, got {a.dtype}")
        n = len(self.paths)
        if len(a) and (a.min() < -n or a.max() >= n):
            raise IndexError(f"idx: index out of range for {n} images")
        return [int(i) % n for i in a]

    def __getitem__(self, idx: object) -> torch.Tensor:
        if isinstance(idx, int | np.integer) and not isinstance(idx, bool):
            return _to_tensor(_read_image(self.paths[int(idx)], self.image_size), self._norm)
        rows = self._positions(idx)
        if not rows:
            return torch.empty((0, 3, self.image_size, self.image_size))
        pixels = np.stack([_read_image(self.paths[i], self.image_size) for i in rows])
        return _to_tensor(pixels, self._norm)

    def subset(self, idx: object) -> ImageFiles:
        """The images at ``idx`` (slice, index tensor or array), still on disk."""
        return ImageFiles([self.paths[i] for i in self._positions(idx)], self.image_size,
                          self.normalize)  # fmt: skip

    @staticmethod
    def concat(parts: Sequence[ImageFiles]) -> ImageFiles:
        """One :class:`ImageFiles` over ``parts`` in order (same size and normalisation)."""
        first = parts[0]
        for p in parts[1:]:
            if p.image_size != first.image_size or repr(p.normalize) != repr(first.normalize):
                raise ValueError("parts: ImageFiles of different image_size or normalize")
        return ImageFiles([q for p in parts for q in p.paths], first.image_size, first.normalize)

    def load(self) -> torch.Tensor:
        """Every image decoded into one (n, 3, S, S) float32 tensor."""
        return self[:]

    def __repr__(self) -> str:
        return (
            f"ImageFiles(n={len(self)}, image_size={self.image_size}, normalize={self.normalize!r})"
        )


def _check_image(path: pathlib.Path) -> None:
    """Cheap decodability check for streamed images (header and, for PNG, the CRCs)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            if im.mode == "F":
                raise ValueError(f"root: {path} is a float image; save it as 8- or 16-bit")
            im.verify()
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise ValueError(f"root: {path} is not a readable image ({e})") from e


def load_domainbed(
    root: str | os.PathLike,
    image_size: int = 64,
    domains: Sequence[str] | None = None,
    *,
    normalize: object = "imagenet",
    stream: bool = False,
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
    normalize : "imagenet", None or (mean, std), default="imagenet"
        Per-channel normalisation after scaling pixels to [0, 1]: ImageNet's statistics, as
        DomainBed's transforms (what a pretrained ResNet-18 expects); None keeps [0, 1].
    stream : bool, default=False
        Keep each domain's images on disk as :class:`ImageFiles` (decoded per minibatch; each
        file's header is checked now) instead of decoding them all into memory.

    Returns
    -------
    DomainDataset
        ``envs[i] = (X, y)`` with ``X`` float32 (n_i, 3, image_size, image_size) (a tensor, or
        :class:`ImageFiles` with ``stream=True``) and ``y`` int64; ``class_names`` in label
        order.

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
    norm = _normalisation(normalize)
    if not isinstance(stream, bool | np.bool_):
        raise TypeError(f"stream: expected a bool, got {type(stream).__name__}")
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
            if stream:
                for p in files:
                    _check_image(p)
                xs += files
            else:
                xs += [_read_image(p, int(image_size)) for p in files]
            ys += [index[c]] * len(files)
        X = ImageFiles(xs, int(image_size), normalize) if stream else _to_tensor(np.stack(xs), norm)
        envs.append((X, torch.tensor(ys, dtype=torch.int64)))
    return DomainDataset(envs, names, num_classes=len(all_classes), class_names=all_classes)
