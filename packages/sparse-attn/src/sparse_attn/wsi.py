"""Whole-slide-image bags: a synthetic long-range generator and a CLAM-layout feature loader.

A *bag* is one slide: ``features`` (N, F) patch embeddings, ``coords`` (N, 2) integer patch-grid
positions (row, col), a slide ``label`` and, for synthetic slides, the ``lesion`` mask of the
planted patches (to score localisation).
"""

from __future__ import annotations

import numbers
import pathlib
from dataclasses import dataclass

import numpy as np
import torch

from sparse_attn.validation import check_positive_int

__all__ = ["Bag", "load_feature_bag", "make_wsi_bags"]


@dataclass
class Bag:
    """One slide.

    Attributes
    ----------
    features : torch.Tensor
        Float (N, F) patch features.
    coords : torch.Tensor
        Long (N, 2) patch-grid coordinates (row, col).
    label : int
        Slide label (-1 if unknown).
    lesion : torch.Tensor or None
        Bool (N,) planted lesion patches (synthetic bags only).
    """

    features: torch.Tensor
    coords: torch.Tensor
    label: int = -1
    lesion: torch.Tensor | None = None

    def __post_init__(self) -> None:
        # checked once here rather than at the first training step of a long fit
        f, c = self.features, self.coords
        if not isinstance(f, torch.Tensor) or not f.is_floating_point() or f.ndim != 2:
            raise TypeError("features: expected a float tensor of shape (N, F)")
        if f.shape[0] == 0 or f.shape[1] == 0:
            raise ValueError(f"features: empty bag, shape {tuple(f.shape)}")
        if not bool(torch.isfinite(f).all()):
            raise ValueError("features: contains NaN or inf")
        if not isinstance(c, torch.Tensor) or c.is_floating_point() or c.dtype == torch.bool:
            raise TypeError("coords: expected an integer tensor of patch-grid (row, col)")
        if tuple(c.shape) != (f.shape[0], 2):
            raise ValueError(f"coords: expected shape ({f.shape[0]}, 2), got {tuple(c.shape)}")
        lab = self.label
        if isinstance(lab, bool | np.bool_) or not isinstance(lab, numbers.Integral) or lab < -1:
            raise ValueError(f"label: expected an int >= 0 (or -1 for unknown), got {lab!r}")
        self.label = int(lab)
        m = self.lesion
        if m is not None and (not isinstance(m, torch.Tensor) or m.dtype != torch.bool
                              or tuple(m.shape) != (f.shape[0],)):  # fmt: skip
            raise ValueError(f"lesion: expected a bool tensor of shape ({f.shape[0]},) or None")

    def __len__(self) -> int:
        return self.features.shape[0]


def make_wsi_bags(
    n_slides: int,
    n_patches: tuple[int, int] = (1000, 4000),
    *,
    feat_dim: int = 32,
    n_tissues: int = 6,
    n_codes: int = 4,
    lesion_patches: int = 24,
    noise: float = 0.6,
    seed: int = 0,
) -> list[Bag]:
    """Synthetic slides whose label needs the interaction of two distant lesions.

    Generator (documented so that results can be reproduced):

    1. The tissue is a random blob on a square patch grid with about ``n`` patches (``n``
       uniform in ``n_patches``). Background patches belong to one of ``n_tissues`` tissue types,
       laid out as a Voronoi partition of a few random seeds, so types form spatial clusters;
       a patch's feature is its type's centre plus Gaussian noise (std ``noise``).
    2. Two lesions are planted as discs of ``lesion_patches`` patches at the two patches of the
       tissue farthest apart along a random direction (so they are far apart). Lesion A's
       features are ``centre_A + code_vec[c_A] + noise``, lesion B's ``centre_B + code_vec[c_B]
       + noise``, with codes in ``range(n_codes)``.
    3. ``label = 1`` iff ``c_A == c_B`` (drawn with probability 1/2, else a different code).

    Every slide contains both lesions, so their presence says nothing; the label is a
    comparison of the two codes. A model that scores patches independently and pools them
    (mean, ABMIL with a linear head) cannot compute it; one whose lesion patches see the other
    lesion can.

    Parameters
    ----------
    n_slides : int
        Number of bags.
    n_patches : (int, int), default=(1000, 4000)
        Range of patches per slide (inclusive).
    feat_dim : int, default=32
        Feature width F.
    n_tissues : int, default=6
        Background tissue types.
    n_codes : int, default=4
        Lesion codes.
    lesion_patches : int, default=24
        Patches per lesion.
    noise : float, default=0.6
        Feature noise std.
    seed : int, default=0

    Returns
    -------
    list of Bag
    """
    n_slides = check_positive_int(n_slides, "n_slides")
    feat_dim = check_positive_int(feat_dim, "feat_dim")
    n_codes = check_positive_int(n_codes, "n_codes")
    n_tissues = check_positive_int(n_tissues, "n_tissues")
    lesion_patches = check_positive_int(lesion_patches, "lesion_patches")
    if n_codes < 2:
        raise ValueError("n_codes: needs at least 2 codes")
    if isinstance(n_patches, str) or len(n_patches) != 2:
        raise ValueError(f"n_patches: expected a (lo, hi) pair, got {n_patches!r}")
    lo, hi = (check_positive_int(x, "n_patches") for x in n_patches)
    if not 4 * lesion_patches <= lo <= hi:
        raise ValueError(f"n_patches: need 4 * lesion_patches <= lo <= hi, got {n_patches}")
    if (
        isinstance(noise, bool | np.bool_)
        or not isinstance(noise, int | float | np.number)
        or (not np.isfinite(noise))
    ):
        raise ValueError(f"noise: must be a finite number, got {noise!r}")
    if noise < 0:
        raise ValueError(f"noise: must be >= 0, got {noise}")
    rng = np.random.default_rng(seed)
    # the feature geometry is shared by every slide (it is the "foundation model")
    geo = np.random.default_rng(12345)
    tissue_centres = 2.0 * geo.standard_normal((n_tissues, feat_dim))
    lesion_centres = 2.0 * geo.standard_normal((2, feat_dim))
    code_vecs = 1.5 * geo.standard_normal((n_codes, feat_dim))
    bags = []
    for _ in range(n_slides):
        n = int(rng.integers(lo, hi + 1))
        side = int(np.ceil(np.sqrt(n / 0.6))) + 2
        rows, cols = np.mgrid[0:side, 0:side]
        grid = np.column_stack([rows.ravel(), cols.ravel()]).astype(float)
        # an irregular blob: distance to a wobbly centre, keep the n nearest cells
        centre = grid.mean(0) + rng.normal(0, side / 10, 2)
        stretch = rng.uniform(0.6, 1.6, 2)
        dist = np.linalg.norm((grid - centre) * stretch, axis=1) + rng.normal(0, 0.8, len(grid))
        coords = grid[np.argsort(dist)[:n]].astype(np.int64)
        seeds = coords[rng.choice(n, size=3 * n_tissues, replace=False)]
        nearest = np.argmin(((coords[:, None, :] - seeds[None]) ** 2).sum(-1), axis=1)
        tissue = rng.integers(0, n_tissues, 3 * n_tissues)[nearest]
        feats = tissue_centres[tissue] + noise * rng.standard_normal((n, feat_dim))
        direction = rng.standard_normal(2)
        proj = coords @ direction
        lesion = np.zeros(n, dtype=bool)
        c_a = int(rng.integers(n_codes))
        same = rng.random() < 0.5
        c_b = c_a if same else int((c_a + rng.integers(1, n_codes)) % n_codes)
        for which, anchor, code in ((0, np.argmin(proj), c_a), (1, np.argmax(proj), c_b)):
            d2 = ((coords - coords[anchor]) ** 2).sum(1)
            disc = np.argsort(d2, kind="stable")[:lesion_patches]
            lesion[disc] = True
            feats[disc] = (
                lesion_centres[which]
                + code_vecs[code]
                + noise * rng.standard_normal((len(disc), feat_dim))
            )
        bags.append(
            Bag(
                torch.from_numpy(feats.astype(np.float32)),
                torch.from_numpy(coords),
                int(same),
                torch.from_numpy(lesion),
            )
        )
    return bags


def _clam_step(coords: np.ndarray) -> int:
    """Patch step (pixels) from coordinates alone: the most common gap between neighbouring
    patches of one row. CLAM tiles each tissue contour from its own origin, so gaps between
    patches of different contours (e.g. a 37-pixel offset) are not steps."""
    gaps = []
    for axis in (0, 1):
        other = coords[:, 1 - axis]
        order = np.lexsort((coords[:, axis], other))
        c, o = coords[order, axis], other[order]
        d = np.diff(c)[np.diff(o) == 0]
        gaps.append(d[d > 0])
    gaps = np.concatenate(gaps)
    if len(gaps) == 0:
        return 1
    values, counts = np.unique(gaps, return_counts=True)
    return int(values[np.argmax(counts)])


def load_feature_bag(
    path: str | pathlib.Path, label: int = -1, *, patch_size: int | None = None
) -> Bag:
    """Load a slide's patch features in the CLAM layout.

    ``.h5``: datasets ``features`` (N, F) and ``coords`` (N, 2) (h5py, optional). ``.pt``: a
    tensor of features (coordinates then default to ``(i, 0)``), or a dict with ``features``
    and ``coords``.

    CLAM stores level-0 pixel coordinates ``(x, y)`` of each patch's corner, and tiles every
    tissue contour from its own origin, so patches of two contours are offset by arbitrary
    pixel amounts. Grid positions are ``round(pixel / step)`` with the step, in priority order:
    ``patch_size`` given here; TRIDENT's ``patch_size_level0`` attribute of ``coords``; the
    ``patch_size`` x ``downsample`` CLAM writes there (its ``patch_level``'s downsample); else
    the most common gap between neighbouring patches of one row. When that gap is smaller than
    the patch (overlapping patches, CLAM's ``step_size < patch_size``) the gap is the step; two
    patches left on one cell raise. CLAM's ``(x, y)`` are returned as (row, col) = (y, x); the ``coords`` of a
    ``.pt`` dict are read as (row, col) and divided by their step the same way.

    Parameters
    ----------
    path : str or Path
        A ``.h5`` or ``.pt`` file.
    label : int, default=-1
        Slide label to attach.
    patch_size : int, optional
        Patch step in level-0 pixels (CLAM's ``patch_size`` times the level's downsample when
        ``step_size == patch_size``). Needed for CLAM *feature* files, which drop the attributes.

    Returns
    -------
    Bag
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    if patch_size is not None and (
        isinstance(patch_size, bool) or not isinstance(patch_size, int | np.integer)
        or patch_size < 1
    ):  # fmt: skip
        raise ValueError(f"patch_size: must be a positive int, got {patch_size!r}")
    step = None if patch_size is None else int(patch_size)
    pixel, xy = True, False
    if path.suffix == ".h5":
        import h5py

        with h5py.File(path, "r") as f:
            if "features" not in f or "coords" not in f:
                raise ValueError(f"path: {path.name} needs datasets 'features' and 'coords'")
            feats = torch.from_numpy(np.asarray(f["features"], dtype=np.float32))
            raw = np.asarray(f["coords"])
            attrs = dict(f["coords"].attrs)
        if raw.dtype.kind == "f" and not np.isfinite(raw).all():
            raise ValueError(f"path: {path.name} has non-finite coords")
        coords = torch.from_numpy(np.asarray(raw, dtype=np.int64))
        xy = True
        if step is None and "patch_size_level0" in attrs:  # TRIDENT: the patch in level-0 px
            step = round(float(np.asarray(attrs["patch_size_level0"]).ravel()[0]))
        elif step is None and "patch_size" in attrs:  # CLAM: the patch at its patch_level
            ds = np.atleast_1d(np.asarray(attrs.get("downsample", 1.0), dtype=float))
            step = round(float(attrs["patch_size"]) * float(ds[0]))
    elif path.suffix == ".pt":
        obj = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(obj, dict):
            if "features" not in obj:
                raise ValueError(f"path: {path.name} holds a dict without 'features'")
            feats = torch.as_tensor(obj["features"], dtype=torch.float32)
            coords = obj.get("coords")
            coords = None if coords is None else torch.as_tensor(coords, dtype=torch.long)
        else:
            feats, coords = torch.as_tensor(obj, dtype=torch.float32), None
        if coords is None:
            pixel = False
            coords = torch.stack([torch.zeros(len(feats)), torch.arange(len(feats))], 1).long()
    else:
        raise ValueError(f"path: expected a .h5 or .pt file, got {path.suffix!r}")
    if feats.ndim != 2 or coords.shape != (feats.shape[0], 2):
        raise ValueError(
            f"path: features {tuple(feats.shape)} and coords {tuple(coords.shape)} do not match"
        )
    if feats.shape[0] == 0:
        raise ValueError(f"path: {path.name} holds an empty bag")
    if not torch.isfinite(feats).all():
        raise ValueError(f"path: {path.name} has NaN or inf features")
    if not pixel:
        return Bag(feats, coords, label)
    c = coords.numpy()
    c = c - c.min(0)
    seen = _clam_step(c)
    if step is None:
        step = seen
    elif patch_size is None and 1 < seen < step:
        # patches overlap (CLAM's step_size < patch_size): the grid is the tiling step, not
        # the patch size, or neighbouring patches would share a cell
        step = seen
    grid = np.rint(c / step).astype(np.int64)
    cells = np.unique(grid, axis=0).shape[0]
    if cells < len(grid):
        raise ValueError(
            f"path: {path.name}: on a step of {step} px, {len(grid) - cells} of {len(grid)} "
            "patches share a grid cell; pass patch_size= with the tiling step in level-0 pixels"
        )
    if xy:  # CLAM's (x, y) -> (row, col)
        grid = grid[:, ::-1].copy()
    return Bag(feats, torch.from_numpy(grid), label)
