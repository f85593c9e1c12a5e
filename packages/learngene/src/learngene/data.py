"""The 16×16 task suite (spec §5.1): a glyph proxy task, a mini-Decathlon and two unseen tasks.

Everything is generated offline: glyphs are rendered with Pillow from the TrueType fonts that ship
inside matplotlib, digits come from scikit-learn's bundled ``load_digits``, the rest is drawn with
NumPy. Augmentation (rotation, translation, stroke thickening, noise) is applied in one batched
``grid_sample`` call, not per image.
"""

from __future__ import annotations

import os
import string
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from learngene._validation import check_images, check_int, check_labels, check_real

__all__ = [
    "DECATHLON_TASKS",
    "HELDOUT_FONTS",
    "TRAIN_FONTS",
    "Task",
    "make_mini_decathlon",
    "make_proxy_task",
    "make_unseen_tasks",
    "render_glyphs",
]

# 20 text fonts bundled with matplotlib, by family (label of the glyph-font task)
_FONTS = {
    "sans": [
        "DejaVuSans",
        "DejaVuSans-Bold",
        "DejaVuSans-Oblique",
        "DejaVuSans-BoldOblique",
        "cmss10",
    ],
    "serif": [
        "DejaVuSerif",
        "DejaVuSerif-Bold",
        "DejaVuSerif-Italic",
        "DejaVuSerif-BoldItalic",
        "STIXGeneral",
        "STIXGeneralBol",
        "STIXGeneralItalic",
        "STIXGeneralBolIta",
        "cmr10",
        "cmb10",
    ],
    "mono": [
        "DejaVuSansMono",
        "DejaVuSansMono-Bold",
        "DejaVuSansMono-Oblique",
        "DejaVuSansMono-BoldOblique",
        "cmtt10",
    ],
}
#: fonts never seen by the proxy task; the inverted-glyphs task draws from these
HELDOUT_FONTS = (
    "DejaVuSans-BoldOblique",
    "cmss10",
    "STIXGeneralBolIta",
    "cmb10",
    "DejaVuSansMono-BoldOblique",
    "cmtt10",
)
#: the 14 fonts of the proxy task
TRAIN_FONTS = tuple(f for fam in _FONTS.values() for f in fam if f not in HELDOUT_FONTS)
_FAMILY = {f: i for i, fam in enumerate(_FONTS.values()) for f in fam}
_CHARS = string.digits + string.ascii_uppercase + string.ascii_lowercase  # 62 proxy classes
_CANVAS, _IMG = 24, 16
_SIZES = (10, 11, 12, 13, 14, 15)


_IMAGE_EXT = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


@dataclass
class Task:
    """One classification task: train/test images (n, c, h, w) in [0, 1] and integer labels.

    Parameters
    ----------
    X_train, X_test : ndarray of shape (n, c, h, w)
        Finite images; stored as float32 copies.
    y_train, y_test : ndarray of shape (n,)
        Integer labels in ``[0, n_classes)``.
    n_classes : int
        Number of classes (>= 2).
    name : str
        Task name.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    name: str = "task"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.n_classes = check_int(self.n_classes, "n_classes", 2)
        self.X_train = check_images(self.X_train, "X_train")
        self.X_test = check_images(self.X_test, "X_test")
        if self.X_train.shape[1:] != self.X_test.shape[1:]:
            raise ValueError(
                f"X_train and X_test image shapes differ: {self.X_train.shape[1:]} vs "
                f"{self.X_test.shape[1:]}"
            )
        self.y_train = check_labels(self.y_train, len(self.X_train), self.n_classes, "y_train")
        self.y_test = check_labels(self.y_test, len(self.X_test), self.n_classes, "y_test")

    @property
    def n_train(self) -> int:
        return len(self.y_train)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.X_train.shape[1:])

    def __repr__(self) -> str:
        return (
            f"Task({self.name!r}, n_classes={self.n_classes}, train={self.n_train}, "
            f"test={len(self.y_test)}, image={self.image_shape})"
        )

    @classmethod
    def from_folder(
        cls, path, image_size: int = 16, test_fraction: float = 0.25, seed: int = 0, name=None
    ) -> Task:
        """Load a folder of class sub-folders of images (ImageFolder layout) as grayscale.

        Parameters
        ----------
        path : str or path-like
            Root folder; each sub-folder is a class (sorted names give the label order).
        image_size : int
            Side of the square grayscale images after resizing.
        test_fraction : float in (0, 1)
            Stratified share of each class held out as the test split.
        """
        from PIL import Image

        image_size = check_int(image_size, "image_size", 4)
        test_fraction = check_real(test_fraction, "test_fraction", 0.0, 0.95, open_low=True)
        if not os.path.isdir(path):
            raise ValueError(f"path {path!r} is not a folder")
        classes = sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))
        if len(classes) < 2:
            raise ValueError(f"path needs >= 2 class sub-folders, found {len(classes)}")
        stray = sorted(
            f for f in os.listdir(path)
            if not f.startswith(".") and os.path.isfile(os.path.join(path, f))
        )  # fmt: skip
        if stray:
            raise ValueError(f"path: files outside any class folder: {stray[:5]}")
        rng = np.random.default_rng(seed)
        tr, te = [], []
        for label, c in enumerate(classes):
            entries = sorted(f for f in os.listdir(os.path.join(path, c)) if not f.startswith("."))
            nested = [f for f in entries if os.path.isdir(os.path.join(path, c, f))]
            if nested:
                raise ValueError(f"path: class folder {c!r} holds sub-folders {nested[:5]}")
            files = [f for f in entries if f.lower().endswith(_IMAGE_EXT)]
            other = [f for f in entries if f not in files]
            if other:
                raise ValueError(f"path: non-image files in class folder {c!r}: {other[:5]}")
            if len(files) < 2:
                raise ValueError(f"class folder {c!r} needs >= 2 images, found {len(files)}")
            imgs = []
            for f in files:
                try:
                    with Image.open(os.path.join(path, c, f)) as im:
                        im = im.convert("L").resize((image_size, image_size), Image.BILINEAR)
                        imgs.append(np.asarray(im, dtype=np.float32) / 255.0)
                except OSError as e:  # PIL's UnidentifiedImageError is an OSError
                    raise ValueError(f"path: {c}/{f} is not a readable image ({e})") from e
            order = rng.permutation(len(imgs))
            n_te = min(len(imgs) - 1, max(1, round(test_fraction * len(imgs))))
            for k, i in enumerate(order):
                (te if k < n_te else tr).append((imgs[i], label))
        X_tr = np.stack([a for a, _ in tr])[:, None]
        X_te = np.stack([a for a, _ in te])[:, None]
        return cls(
            X_tr,
            np.array([b for _, b in tr]),
            X_te,
            np.array([b for _, b in te]),
            len(classes),
            name or os.path.basename(os.path.normpath(path)),
            {"classes": classes},
        )


# --------------------------------------------------------------------------- glyph rendering


def _font_path(font: str) -> str:
    import matplotlib

    return os.path.join(matplotlib.get_data_path(), "fonts", "ttf", font + ".ttf")


@lru_cache(maxsize=64)
def _glyph_bank(font: str, chars: str) -> np.ndarray:
    """Centred renders (len(_SIZES), len(chars), 24, 24) in [0, 1] of ``chars`` in ``font``."""
    from PIL import Image, ImageDraw, ImageFont

    out = np.zeros((len(_SIZES), len(chars), _CANVAS, _CANVAS), np.float32)
    for s, size in enumerate(_SIZES):
        ft = ImageFont.truetype(_font_path(font), size)
        for c, ch in enumerate(chars):
            im = Image.new("L", (_CANVAS, _CANVAS), 0)
            ImageDraw.Draw(im).text((_CANVAS / 2, _CANVAS / 2), ch, fill=255, font=ft, anchor="mm")
            out[s, c] = np.asarray(im, np.float32) / 255.0
    return out


def _augment(canvas: np.ndarray, rng, rot_deg=10.0, shift=2.0, thicken=0.3, noise=0.05):
    """Batched random rotation/translation of (n, 24, 24) canvases, centre crop to 16×16,
    max-filter thickening with probability ``thicken`` and Gaussian noise, clipped to [0, 1]."""
    import torch
    import torch.nn.functional as F

    n = len(canvas)
    th = np.deg2rad(rng.uniform(-rot_deg, rot_deg, n))
    t = rng.uniform(-shift, shift, (n, 2)) * 2.0 / _CANVAS  # pixels -> normalised coordinates
    A = np.zeros((n, 2, 3), np.float32)
    A[:, 0, 0], A[:, 0, 1], A[:, 1, 0], A[:, 1, 1] = np.cos(th), -np.sin(th), np.sin(th), np.cos(th)
    A[:, :, 2] = t
    x = torch.from_numpy(np.ascontiguousarray(canvas, dtype=np.float32))[:, None]
    grid = F.affine_grid(torch.from_numpy(A), list(x.shape), align_corners=False)
    x = F.grid_sample(x, grid, align_corners=False)
    lo = (_CANVAS - _IMG) // 2
    x = x[:, :, lo : lo + _IMG, lo : lo + _IMG]
    thick = torch.from_numpy(rng.random(n) < thicken)
    x = torch.where(thick[:, None, None, None], F.max_pool2d(x, 3, 1, 1), x)
    x = x + noise * torch.from_numpy(rng.standard_normal(x.shape).astype(np.float32))
    return x.clamp_(0.0, 1.0).numpy()


def render_glyphs(chars, fonts, seed: int = 0, **augment) -> np.ndarray:
    """Render glyph ``chars[i]`` in ``fonts[i]`` at a random size with the spec's augmentation.

    Parameters
    ----------
    chars, fonts : sequences of str, same length n
        Single characters and matplotlib font names (see ``TRAIN_FONTS``, ``HELDOUT_FONTS``).

    Returns
    -------
    ndarray of shape (n, 1, 16, 16), float32 in [0, 1]
    """
    chars, fonts = list(chars), list(fonts)
    if len(chars) != len(fonts):
        raise ValueError(f"chars and fonts differ in length: {len(chars)} vs {len(fonts)}")
    if not chars:
        raise ValueError("chars must be non-empty")
    for f in set(fonts):
        if f not in _FAMILY:
            raise ValueError(f"unknown font {f!r}; choose from {sorted(_FAMILY)}")
    for ch in set(chars):
        if not isinstance(ch, str) or len(ch) != 1 or ch not in _CHARS:
            raise ValueError(f"chars must be single alphanumeric characters, got {ch!r}")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, len(_SIZES), len(chars))
    canvas = np.empty((len(chars), _CANVAS, _CANVAS), np.float32)
    fonts_arr, ch_idx = np.array(fonts), np.array([_CHARS.index(c) for c in chars])
    for f in np.unique(fonts_arr):  # one cached bank per font; gather all of its samples at once
        m = fonts_arr == f
        canvas[m] = _glyph_bank(str(f), _CHARS)[sizes[m], ch_idx[m]]
    return _augment(canvas, rng, **augment)


def _balanced_labels(n_train: int, n_test: int, n_classes: int, rng) -> np.ndarray:
    """Labels balanced within each split (train first, then test), shuffled."""
    return np.concatenate(
        [rng.permutation(np.arange(n) % n_classes) for n in (n_train, n_test)]
    ).astype(np.int64)


def _glyph_task(name, chars, fonts, label_of, n_classes, n_train, n_test, seed, invert=False):
    rng = np.random.default_rng(seed)
    y = _balanced_labels(n_train, n_test, n_classes, rng)
    ch, ft = label_of(y, rng)
    X = render_glyphs([chars[i] for i in ch], [fonts[i] for i in ft], seed=seed + 1)
    if invert:
        X = 1.0 - X
    return Task(X[:n_train], y[:n_train], X[n_train:], y[n_train:], n_classes, name)


def make_proxy_task(seed: int = 0, n_per_class: int = 300, n_test_per_class: int = 50) -> Task:
    """``glyph-62``: the 62 characters 0-9, A-Z, a-z in the 14 training fonts (the proxy task that
    plays ImageNet's role in stage 1 and for the ancestry model)."""
    n_per_class = check_int(n_per_class, "n_per_class", 1)
    n_test_per_class = check_int(n_test_per_class, "n_test_per_class", 1)
    return _glyph_task(
        "glyph-62",
        _CHARS,
        TRAIN_FONTS,
        lambda y, rng: (y, rng.integers(0, len(TRAIN_FONTS), len(y))),
        62,
        62 * n_per_class,
        62 * n_test_per_class,
        seed,
    )


# --------------------------------------------------------------------------- drawn tasks


def _digits(seed: int, n_train: int, n_test: int, rotate=None):
    import torch
    import torch.nn.functional as F
    from sklearn.datasets import load_digits

    d = load_digits()
    X = torch.from_numpy(d.images.astype(np.float32) / 16.0)[:, None]
    X = F.interpolate(X, size=(_IMG, _IMG), mode="bilinear", align_corners=False).numpy()
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(X))[: n_train + n_test]
    X, y = X[idx], d.target[idx].astype(np.int64)
    if rotate is not None:  # rotate by a random angle in [lo, hi] degrees, random sign
        pad = np.zeros((len(X), _CANVAS, _CANVAS), np.float32)
        lo = (_CANVAS - _IMG) // 2
        pad[:, lo : lo + _IMG, lo : lo + _IMG] = X[:, 0]
        ang = rng.uniform(*rotate, len(X)) * rng.choice([-1.0, 1.0], len(X))
        th = np.deg2rad(ang)
        A = np.zeros((len(X), 2, 3), np.float32)
        A[:, 0, 0], A[:, 0, 1] = np.cos(th), -np.sin(th)
        A[:, 1, 0], A[:, 1, 1] = np.sin(th), np.cos(th)
        g = F.affine_grid(torch.from_numpy(A), [len(X), 1, _CANVAS, _CANVAS], align_corners=False)
        out = F.grid_sample(torch.from_numpy(pad)[:, None], g, align_corners=False).numpy()
        X = out[:, :, lo : lo + _IMG, lo : lo + _IMG]
    X = np.clip(X + 0.05 * rng.standard_normal(X.shape).astype(np.float32), 0, 1)
    return X, y


def _shapes(y: np.ndarray, rng, outline=False):
    """6 shapes (circle, square, triangle, cross, ring, diamond), random centre and size."""
    n = len(y)
    cy, cx = rng.uniform(5.5, 9.5, (2, n))
    R = rng.uniform(3.5, 5.5, n)
    yy, xx = np.mgrid[0:_IMG, 0:_IMG].astype(np.float32) + 0.5
    dy = yy[None] - cy[:, None, None]
    dx = xx[None] - cx[:, None, None]

    def mask(r):
        r = r[:, None, None]
        rad = np.hypot(dx, dy)
        m = np.stack(
            [
                rad <= r,
                np.maximum(abs(dx), abs(dy)) <= 0.8 * r,
                (dy <= 0.7 * r) & (dy >= -r) & (abs(dx) <= (dy + r) * 0.6),
                ((abs(dx) <= r / 3) & (abs(dy) <= r)) | ((abs(dy) <= r / 3) & (abs(dx) <= r)),
                (rad <= r) & (rad >= 0.55 * r),
                abs(dx) + abs(dy) <= r,
            ]
        )
        return m[y, np.arange(n)]

    m = mask(R)
    if outline:
        m = m & ~mask(R - 1.3)
        ring = y == 4  # the ring's inner edge is part of its outline too
        m[ring] = (np.hypot(dx, dy)[ring] <= R[ring, None, None]) & (
            np.hypot(dx, dy)[ring] >= R[ring, None, None] - 1.3
        ) | (
            (np.hypot(dx, dy)[ring] >= 0.55 * R[ring, None, None])
            & (np.hypot(dx, dy)[ring] <= 0.55 * R[ring, None, None] + 1.3)
        )
    X = m.astype(np.float32) * rng.uniform(0.7, 1.0, (n, 1, 1)).astype(np.float32)
    return X[:, None], y


def _gratings(y: np.ndarray, rng):
    """8 orientations kπ/8 of a sinusoid with random frequency (0.15-0.35 cycles/px) and phase."""
    n = len(y)
    th = y * np.pi / 8 + rng.uniform(-0.05, 0.05, n)
    f = rng.uniform(0.15, 0.35, n)
    ph = rng.uniform(0, 2 * np.pi, n)
    yy, xx = np.mgrid[0:_IMG, 0:_IMG].astype(np.float32)
    u = xx[None] * np.cos(th)[:, None, None] + yy[None] * np.sin(th)[:, None, None]
    X = 0.5 + 0.5 * np.sin(2 * np.pi * f[:, None, None] * u + ph[:, None, None])
    return X[:, None].astype(np.float32), y


def _counting(y: np.ndarray, rng):
    """1-5 dots (label = count - 1) in distinct cells of a 4×4 grid, jittered by ±0.8 px."""
    n = len(y)
    cells = np.argsort(rng.random((n, 16)), axis=1)[:, :5]  # 5 distinct cells per image
    cy = (cells // 4) * 4 + 2 + rng.uniform(-0.8, 0.8, (n, 5))
    cx = (cells % 4) * 4 + 2 + rng.uniform(-0.8, 0.8, (n, 5))
    yy, xx = np.mgrid[0:_IMG, 0:_IMG].astype(np.float32) + 0.5
    d = np.hypot(yy[None, None] - cy[..., None, None], xx[None, None] - cx[..., None, None])
    on = np.arange(5)[None] <= y[:, None]  # the first y + 1 dots are drawn
    X = ((d <= 1.3) & on[..., None, None]).any(axis=1).astype(np.float32)
    return X[:, None], y


def _noisy_task(name, X, y, n_classes, n_train, rng, noise=0.05):
    X = np.clip(X + noise * rng.standard_normal(X.shape).astype(np.float32), 0, 1)
    return Task(X[:n_train], y[:n_train], X[n_train:], y[n_train:], n_classes, name)


#: the seven stage-2 tasks in order, with their class counts
DECATHLON_TASKS = {
    "digits": 10,
    "digits-parity": 2,
    "glyph-font": 3,
    "shapes": 6,
    "gratings": 8,
    "counting": 5,
    "inverted-glyphs": 26,
}


def make_mini_decathlon(
    seed: int = 0, n_train: int = 1000, n_test: int = 300, names=None
) -> dict[str, Task]:
    """The seven stage-2 tasks of spec §5.1 (``DECATHLON_TASKS``), ``n_train`` / ``n_test`` each.

    ``digits`` and ``digits-parity`` share images (sklearn's 1797 handwritten digits upsampled to
    16×16, so ``n_train + n_test <= 1797``); the glyph tasks use the package renderer. ``names``
    builds a subset (in ``DECATHLON_TASKS`` order); each task's data does not depend on which
    others are built.
    """
    n_train = check_int(n_train, "n_train", 2)
    n_test = check_int(n_test, "n_test", 1)
    if n_train + n_test > 1797:
        raise ValueError(
            f"n_train + n_test must be <= 1797 (sklearn digits), got {n_train + n_test}"
        )
    if names is None:
        names = list(DECATHLON_TASKS)
    if isinstance(names, str) or not names or any(k not in DECATHLON_TASKS for k in names):
        raise ValueError(f"names must be a non-empty list drawn from {list(DECATHLON_TASKS)}")
    tasks: dict[str, Task] = {}
    if "digits" in names or "digits-parity" in names:
        Xd, yd = _digits(seed, n_train, n_test)
        tasks["digits"] = Task(Xd[:n_train], yd[:n_train], Xd[n_train:], yd[n_train:], 10, "digits")
        tasks["digits-parity"] = Task(
            Xd[:n_train], yd[:n_train] % 2, Xd[n_train:], yd[n_train:] % 2, 2, "digits-parity"
        )
    if "glyph-font" in names:
        train_by_family = [[f for f in TRAIN_FONTS if _FAMILY[f] == k] for k in range(3)]
        fonts = [f for fam in train_by_family for f in fam]
        offsets = np.cumsum([0] + [len(f) for f in train_by_family])

        def font_label(y, r):
            pick = offsets[y] + (r.random(len(y)) * np.diff(offsets)[y]).astype(int)
            return r.integers(0, 62, len(y)), pick

        tasks["glyph-font"] = _glyph_task(
            "glyph-font", _CHARS, fonts, font_label, 3, n_train, n_test, seed + 11
        )
    drawn = (
        ("shapes", _shapes, 6, 31),
        ("gratings", _gratings, 8, 37),
        ("counting", _counting, 5, 41),
    )
    for name, draw, c, off in drawn:
        if name in names:
            rng = np.random.default_rng(seed + off)
            y = _balanced_labels(n_train, n_test, c, rng)
            tasks[name] = _noisy_task(name, *draw(y, rng), c, n_train, rng)
    if "inverted-glyphs" in names:
        tasks["inverted-glyphs"] = _glyph_task(
            "inverted-glyphs",
            string.ascii_uppercase,
            HELDOUT_FONTS,
            lambda y, r: (y, r.integers(0, len(HELDOUT_FONTS), len(y))),
            26,
            n_train,
            n_test,
            seed + 23,
            invert=True,
        )
    return {k: tasks[k] for k in DECATHLON_TASKS if k in names}


def make_unseen_tasks(seed: int = 0, n_train: int = 1000, n_test: int = 300) -> dict[str, Task]:
    """The two tasks never seen in stage 2: ``digits-rot`` (digits rotated by 30-60°) and
    ``shapes-outline`` (outlines instead of filled shapes)."""
    n_train = check_int(n_train, "n_train", 2)
    n_test = check_int(n_test, "n_test", 1)
    if n_train + n_test > 1797:
        raise ValueError(
            f"n_train + n_test must be <= 1797 (sklearn digits), got {n_train + n_test}"
        )
    rng = np.random.default_rng(seed + 101)
    Xr, yr = _digits(seed + 101, n_train, n_test, rotate=(30.0, 60.0))
    Xs, ys = _shapes(_balanced_labels(n_train, n_test, 6, rng), rng, outline=True)
    return {
        "digits-rot": Task(
            Xr[:n_train], yr[:n_train], Xr[n_train:], yr[n_train:], 10, "digits-rot"
        ),
        "shapes-outline": _noisy_task("shapes-outline", Xs, ys, 6, n_train, rng),
    }
