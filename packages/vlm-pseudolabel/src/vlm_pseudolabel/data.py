"""Tasks for VLM pseudolabelling without downloads.

* :class:`VLMTask` -- the container every estimator reads: frozen image embeddings of an
  unlabeled pool and a test set, class text embeddings, candidate description embeddings, and
  (for the semi-supervised and transductive zero-shot paradigms) labeled data and the class split.
* :func:`make_synthetic_vlm_task` -- controlled embeddings with planted *mismatched* classes
  (text pointing to no image cluster) and *confused* groups (one class's text drawn towards its
  group), with the ground truth returned.
* :func:`make_glyph_digits_task` -- real images: scikit-learn's handwritten digits as the images,
  and as the "text" the printed glyph of each class name rendered from matplotlib's bundled fonts
  through the UCI optdigits pipeline; a frozen encoder fitted on the unlabeled images maps both
  into one space. Printed and handwritten digits disagree the way CLIP's text and images do: the
  zero-shot classifier is imbalanced, some classes are rarely predicted, others absorb them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "DESCRIPTION_FONTS",
    "PROMPT_FONTS",
    "VLMTask",
    "make_glyph_digits_task",
    "make_synthetic_vlm_task",
    "render_glyph",
]

PROMPT_FONTS = ("DejaVuSans", "DejaVuSerif", "DejaVuSansMono")
DESCRIPTION_FONTS = (
    "DejaVuSans-Oblique",
    "DejaVuSerif-Italic",
    "STIXGeneralItalic",
    "cmr10",
    "cmtt10",
    "DejaVuSans-Bold",
    "STIXGeneral",
)
PARADIGMS = ("ul", "ssl", "trzsl")


@dataclass
class VLMTask:
    """A downstream classification task seen through a frozen vision-language model.

    Attributes
    ----------
    X_unlabeled : ndarray (N, d)
        L2-normalised image embeddings of the unlabeled pool.
    X_test, y_test : ndarray (M, d), (M,)
        Test embeddings and labels in ``[0, C)``.
    text_features : ndarray (C, d)
        L2-normalised class-prompt embeddings.
    descriptions : dict of int -> ndarray (n_c, d)
        Candidate description embeddings per class (the LLM-written descriptions of the paper).
    class_names : list of str
    logit_scale : float
        ``s`` in ``s * cos(v, t)``.
    X_labeled, y_labeled : ndarray or None
        Labeled embeddings (SSL shots, or the seen classes in TRZSL).
    seen, unseen : ndarray of int or None
        Class split in TRZSL.
    y_unlabeled : ndarray or None
        Ground truth of the pool (diagnostics only; never used for training).
    augment : callable or None
        ``augment(indices, strength, rng) -> (B, d)`` embeddings of augmented views of pool images
        (``strength`` "weak" or "strong"); None: feature-space views.
    paradigm : {"ul", "ssl", "trzsl"}
    planted_mismatch : list of int
    confusion_groups : list of list of int
        Ground truth of the synthetic generator (empty for real data).
    backbone : HFCLIPBackbone or OpenCLIPBackbone or None
        The model that encoded the task (set by ``encode_task``): needed by ``prompt="coop"``,
        which learns context tokens through its text encoder.
    templates : list of str or None
        The class-prompt templates (``"a photo of a {}."``) the text features came from.
    description_texts : dict of int -> list of str or None
        The description strings behind ``descriptions`` (same order).
    """

    X_unlabeled: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    text_features: np.ndarray
    descriptions: dict[int, np.ndarray]
    class_names: list[str]
    logit_scale: float = 100.0
    X_labeled: np.ndarray | None = None
    y_labeled: np.ndarray | None = None
    seen: np.ndarray | None = None
    unseen: np.ndarray | None = None
    y_unlabeled: np.ndarray | None = None
    augment: Callable | None = None
    paradigm: str = "ul"
    planted_mismatch: list[int] = field(default_factory=list)
    confusion_groups: list[list[int]] = field(default_factory=list)
    backbone: Any = field(default=None, repr=False)
    templates: list[str] | None = None
    description_texts: dict[int, list[str]] | None = None

    @property
    def n_classes(self) -> int:
        """Number of classes C."""
        return int(self.text_features.shape[0])


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True).clip(1e-12)


# ---------------------------------------------------------------------------------------------
# synthetic embeddings (controlled causes)
# ---------------------------------------------------------------------------------------------


def make_synthetic_vlm_task(
    n_classes: int = 40,
    dim: int = 64,
    n_groups: int = 8,
    n_unlabeled: int = 60,
    n_test: int = 30,
    n_mismatch: int = 4,
    n_confused_groups: int = 3,
    n_descriptions: int = 5,
    logit_scale: float = 30.0,
    confusion_strength: float = 0.7,
    seed: int = 0,
) -> VLMTask:
    """Controlled embeddings with planted mismatched classes and confused groups.

    Visual prototypes come in ``n_groups`` groups: ``u_c = norm(g + 0.6 xi_c)`` around a group
    centre ``g``; images ``v = norm(u_c + 0.6 e)`` (``e`` a random unit vector). Text ``t_c = norm(u_c + gamma + 0.25 eta)``
    with a shared modality gap ``gamma`` (norm 0.5). *Mismatch*: ``t_c = norm(zeta + gamma)``
    for a random unit ``zeta``. *Confusion*: in each confused group one dominant class's text is
    moved towards the group mean and the other members' texts lose ``confusion_strength`` of
    their component along it, so the group's images drift to the dominant class. Descriptions: one good
    ``norm(u_c + gamma + 0.1 eta)`` and ``n - 1`` noisy ``norm(u_c + gamma + 1.5 eta)``, shuffled.

    Parameters
    ----------
    n_classes, dim, n_groups : int
        C (a multiple of ``n_groups``), embedding size, groups of similar classes.
    n_unlabeled, n_test : int
        Images per class in the pool and the test set.
    n_mismatch : int
        Planted mismatched classes (0 for none).
    n_confused_groups : int
        Groups with a planted dominant class (0 for none).
    n_descriptions : int
        Candidate descriptions per class.
    logit_scale : float
    confusion_strength : float, default=0.7
        Share of the group concept removed from the non-dominant members' texts, in [0, 1].
    seed : int

    Returns
    -------
    VLMTask
        With ``planted_mismatch`` and ``confusion_groups`` (dominant class first) filled in.
    """
    for name, v, lo in (
        ("n_classes", n_classes, 2),
        ("dim", dim, 2),
        ("n_groups", n_groups, 1),
        ("n_unlabeled", n_unlabeled, 1),
        ("n_test", n_test, 1),
        ("n_descriptions", n_descriptions, 1),
        ("n_mismatch", n_mismatch, 0),
        ("n_confused_groups", n_confused_groups, 0),
    ):
        _check_int(name, v, lo)
    _check_positive("logit_scale", logit_scale)
    if isinstance(confusion_strength, bool) or not isinstance(
        confusion_strength, int | float | np.number
    ):
        raise ValueError(
            f"confusion_strength must be a number in [0, 1], got {confusion_strength!r}"
        )
    if n_classes % n_groups:
        raise ValueError(f"n_classes ({n_classes}) must be a multiple of n_groups ({n_groups})")
    if not 0 <= n_mismatch <= n_classes // 2:
        raise ValueError(f"n_mismatch must be in [0, {n_classes // 2}], got {n_mismatch}")
    if not 0 <= confusion_strength <= 1:
        raise ValueError(f"confusion_strength must be in [0, 1], got {confusion_strength}")
    if not 0 <= n_confused_groups <= n_groups:
        raise ValueError(f"n_confused_groups must be in [0, {n_groups}], got {n_confused_groups}")
    rng = np.random.default_rng(seed)
    per = n_classes // n_groups
    group = np.repeat(np.arange(n_groups), per)
    centres = _normalise(rng.normal(size=(n_groups, dim)))
    protos = _normalise(centres[group] + 0.6 * _normalise(rng.normal(size=(n_classes, dim))))
    gap = 0.5 * _normalise(rng.normal(size=dim))
    text = _normalise(protos + gap + 0.25 * _normalise(rng.normal(size=(n_classes, dim))))
    confused: list[list[int]] = []
    for g in rng.choice(n_groups, n_confused_groups, replace=False):
        members = np.flatnonzero(group == g)
        dom = int(rng.choice(members))
        gbar = _normalise(text[members].mean(0))
        text[dom] = _normalise(text[dom] + 0.8 * (gbar - text[dom]))
        # the other members' texts lose part of the shared group concept, so images of the
        # group score higher with the dominant class than with their own (our addition: moving
        # the dominant text alone does not make the group's images drift here)
        for m in members[members != dom]:
            text[m] = _normalise(text[m] - confusion_strength * (text[m] @ gbar) * gbar)
        confused.append([dom, *[int(m) for m in members if m != dom]])
    in_confused = {c for grp in confused for c in grp}
    pool = [c for c in range(n_classes) if c not in in_confused]
    mismatch = sorted(int(c) for c in rng.choice(pool, n_mismatch, replace=False))
    for c in mismatch:
        text[c] = _normalise(_normalise(rng.normal(size=dim)) + gap)
    descriptions = {}
    for c in range(n_classes):
        good = _normalise(protos[c] + gap + 0.1 * _normalise(rng.normal(size=dim)))
        noisy = _normalise(
            protos[c] + gap + 1.5 * _normalise(rng.normal(size=(n_descriptions - 1, dim)))
        )
        d = np.vstack([good[None], noisy])
        descriptions[c] = d[rng.permutation(n_descriptions)].astype(np.float32)

    def images(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.repeat(np.arange(n_classes), n)
        x = _normalise(protos[y] + 0.6 * _normalise(rng.normal(size=(len(y), dim))))
        p = rng.permutation(len(y))
        return x[p].astype(np.float32), y[p]

    xu, yu = images(n_unlabeled)
    xt, yt = images(n_test)
    return VLMTask(
        X_unlabeled=xu,
        X_test=xt,
        y_test=yt,
        text_features=text.astype(np.float32),
        descriptions=descriptions,
        class_names=[f"class_{c}" for c in range(n_classes)],
        logit_scale=float(logit_scale),
        y_unlabeled=yu,
        planted_mismatch=mismatch,
        confusion_groups=confused,
    )


# ---------------------------------------------------------------------------------------------
# glyph digits (real images)
# ---------------------------------------------------------------------------------------------


def _check_int(name: str, v, lo: int, hi: int | None = None) -> None:
    """An int (not a bool) in ``[lo, hi]``; the error names the argument."""
    if (
        isinstance(v, bool)
        or not isinstance(v, int | np.integer)
        or v < lo
        or (hi is not None and v > hi)
    ):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be an int {rng}, got {v!r}")


def _check_positive(name: str, v) -> None:
    ok = not isinstance(v, bool) and isinstance(v, int | float | np.number)
    if not ok or not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {v!r}")


def _font_path(name: str) -> str:
    import matplotlib

    path = os.path.join(matplotlib.get_data_path(), "fonts", "ttf", f"{name}.ttf")
    if not os.path.isfile(path):
        raise ValueError(f"font {name!r} is not bundled with matplotlib ({path})")
    return path


def render_glyph(char: str, font: str, stroke: int = 0) -> np.ndarray:
    """Render ``char`` like the UCI optdigits pipeline: an 8x8 array of counts 0..16.

    The glyph is drawn large with Pillow, cropped to its bounding box, scaled so its longer
    side is 32 px (aspect kept), centred in 32x32, binarised at 50 % and summed over 4x4 blocks.

    Parameters
    ----------
    char : str
        One character.
    font : str
        Name of a TrueType font bundled with matplotlib (e.g. ``"DejaVuSans"``).
    stroke : int, default=0
        Extra stroke width in pixels at the 96-px drawing size.

    Returns
    -------
    ndarray (8, 8) of float64, integer-valued in [0, 16]
    """
    from PIL import Image, ImageDraw, ImageFont

    if not isinstance(char, str) or len(char) != 1:
        raise ValueError(f"char must be one character, got {char!r}")
    if not isinstance(font, str):
        raise TypeError(f"font must be a font name (str), got {type(font).__name__}")
    _check_int("stroke", stroke, 0, 48)
    f = ImageFont.truetype(_font_path(font), 96)
    img = Image.new("L", (160, 160), 0)
    ImageDraw.Draw(img).text((30, 10), char, fill=255, font=f, stroke_width=stroke, stroke_fill=255)
    a = np.asarray(img, dtype=np.float64) / 255.0
    rows, cols = np.flatnonzero(a.max(1) > 0.5), np.flatnonzero(a.max(0) > 0.5)
    if len(rows) == 0:
        raise ValueError(f"font {font!r} draws nothing for {char!r}")
    crop = Image.fromarray(
        (a[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1] * 255).astype(np.uint8)
    )
    h, w = crop.size[1], crop.size[0]
    scale = 32.0 / max(h, w)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    crop = crop.resize((nw, nh), Image.BILINEAR)
    canvas = np.zeros((32, 32))
    top, left = (32 - nh) // 2, (32 - nw) // 2
    canvas[top : top + nh, left : left + nw] = np.asarray(crop, dtype=np.float64) / 255.0
    binary = (canvas >= 0.5).astype(np.float64)
    return binary.reshape(8, 4, 8, 4).sum(axis=(1, 3))


class _PixelEncoder:
    """Frozen encoder fitted on unlabeled 8x8 images: centre, optional PCA whitening, L2."""

    def __init__(self, images: np.ndarray, kind: str, dim: int) -> None:
        flat = images.reshape(len(images), -1)
        self.mean = flat.mean(0)
        self.kind = kind
        if kind == "pca":
            _u, s, vt = np.linalg.svd(flat - self.mean, full_matrices=False)
            self.proj = vt[:dim].T / (s[:dim] / np.sqrt(len(flat))).clip(1e-8)
        elif kind != "centered":
            raise ValueError(f"encoder must be 'centered' or 'pca', got {kind!r}")

    def __call__(self, images: np.ndarray) -> np.ndarray:
        x = images.reshape(len(images), -1) - self.mean
        if self.kind == "pca":
            x = x @ self.proj
        return _normalise(x).astype(np.float32)


def _augment_images(images: np.ndarray, strength: str, rng: np.random.Generator) -> np.ndarray:
    """Weak: +-1 px shift. Strong: shift, rotation +-15 degrees, 10 % pixel dropout."""
    import torch
    import torch.nn.functional as F

    n = len(images)
    x = torch.as_tensor(images, dtype=torch.float32)[:, None]
    shift = torch.as_tensor(rng.integers(-1, 2, size=(n, 2)), dtype=torch.float32) * (2 / 8)
    ang = torch.zeros(n)
    if strength == "strong":
        ang = torch.as_tensor(rng.uniform(-15, 15, size=n), dtype=torch.float32) * np.pi / 180
    cos, sin = torch.cos(ang), torch.sin(ang)
    theta = torch.stack(
        [torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1
    )
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    out = F.grid_sample(x, grid, align_corners=False)[:, 0].numpy()
    if strength == "strong":
        out = out * (rng.random(out.shape) >= 0.1)
    return out.astype(np.float64)


def make_glyph_digits_task(
    paradigm: str = "ul",
    test_size: float = 0.3,
    encoder: str = "centered",
    pca_dim: int = 32,
    logit_scale: float = 30.0,
    n_labeled: int = 2,
    n_seen: int = 6,
    n_descriptions: int = 5,
    seed: int = 0,
) -> VLMTask:
    """Handwritten digits as images, printed glyphs of the class names as text (no downloads).

    Parameters
    ----------
    paradigm : {"ul", "ssl", "trzsl"}, default="ul"
        Unsupervised; semi-supervised (``n_labeled`` shots per class from the training part);
        transductive zero-shot (``n_seen`` classes labeled, the others unlabeled).
    test_size : float, default=0.3
        Stratified test fraction.
    encoder : {"centered", "pca"}, default="centered"
        Frozen encoder fitted on the unlabeled (and, in TRZSL, labeled) training images.
    pca_dim : int, default=32
    logit_scale : float, default=30.0
    n_labeled, n_seen : int
        SSL shots per class; TRZSL seen classes.
    n_descriptions : int, default=5
        Description candidates per class, one glyph font each (at most 7).
    seed : int, default=0

    Returns
    -------
    VLMTask
        With an ``augment`` callable producing weak / strong views of pool images.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if paradigm not in PARADIGMS:
        raise ValueError(f"paradigm must be one of {PARADIGMS}, got {paradigm!r}")
    if encoder not in ("centered", "pca"):
        raise ValueError(f"encoder must be 'centered' or 'pca', got {encoder!r}")
    if (
        isinstance(test_size, bool)
        or not isinstance(test_size, float | np.floating)
        or not 0 < float(test_size) < 1
    ):
        raise ValueError(f"test_size must be a float in (0, 1), got {test_size!r}")
    _check_int("n_descriptions", n_descriptions, 1, len(DESCRIPTION_FONTS))
    _check_int("n_seen", n_seen, 1, 9)
    _check_int("n_labeled", n_labeled, 1)
    _check_int("pca_dim", pca_dim, 1, 64)
    _check_positive("logit_scale", logit_scale)
    digits = load_digits()
    images, y = digits.images.astype(np.float64), digits.target.astype(np.int64)
    idx_tr, idx_te = train_test_split(
        np.arange(len(y)), test_size=float(test_size), stratify=y, random_state=seed
    )
    rng = np.random.default_rng(seed)
    classes = list(range(10))
    labeled_idx = np.zeros(0, dtype=int)
    seen = unseen = None
    if paradigm == "ssl":
        labeled_idx = np.concatenate(
            [rng.choice(idx_tr[y[idx_tr] == c], n_labeled, replace=False) for c in classes]
        )
        pool_idx = np.setdiff1d(idx_tr, labeled_idx)
    elif paradigm == "trzsl":
        perm = rng.permutation(10)
        seen, unseen = np.sort(perm[:n_seen]), np.sort(perm[n_seen:])
        labeled_idx = idx_tr[np.isin(y[idx_tr], seen)]
        pool_idx = idx_tr[np.isin(y[idx_tr], unseen)]
    else:
        pool_idx = idx_tr
    fit_idx = pool_idx if paradigm != "trzsl" else idx_tr
    enc = _PixelEncoder(images[fit_idx], encoder, pca_dim)
    prompts = np.stack(
        [np.stack([render_glyph(str(c), f) for f in PROMPT_FONTS]) for c in classes]
    )  # (C, n_fonts, 8, 8)
    text = _normalise(np.stack([enc(p).mean(0) for p in prompts])).astype(np.float32)
    fonts = DESCRIPTION_FONTS[:n_descriptions]
    descriptions = {c: enc(np.stack([render_glyph(str(c), f) for f in fonts])) for c in classes}
    pool_images = images[pool_idx]

    def augment(
        indices: Sequence[int], strength: str, generator: np.random.Generator
    ) -> np.ndarray:
        if strength not in ("weak", "strong"):
            raise ValueError(f"strength must be 'weak' or 'strong', got {strength!r}")
        return enc(_augment_images(pool_images[np.asarray(indices)], strength, generator))

    return VLMTask(
        X_unlabeled=enc(pool_images),
        X_test=enc(images[idx_te]),
        y_test=y[idx_te],
        text_features=text,
        descriptions=descriptions,
        class_names=[str(c) for c in classes],
        logit_scale=float(logit_scale),
        X_labeled=enc(images[labeled_idx]) if len(labeled_idx) else None,
        y_labeled=y[labeled_idx] if len(labeled_idx) else None,
        seen=seen,
        unseen=unseen,
        y_unlabeled=y[pool_idx],
        augment=augment,
        paradigm=paradigm,
    )
