"""Initial top-k pseudolabels (FPL-style) and the main-sample growth schedule."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["grow_main_samples", "growth_k", "topk_pseudolabels"]


def topk_pseudolabels(proba: np.ndarray, k: int, fill: str = "fpl") -> dict[int, np.ndarray]:
    """The ``k`` most confident pool images per class.

    Parameters
    ----------
    proba : ndarray (N, C)
        Zero-shot class probabilities of the pool.
    k : int
        Images per class (16 in the released configs).
    fill : {"fpl", "reference"}, default="fpl"
        ``"fpl"``: each image only competes for its predicted class (an image is in at most one
        list). ``"reference"``: an image that misses its predicted class's top-k is offered to
        the other classes in decreasing probability and enters any list where it beats the
        current k-th entry (an image can end up in several lists), as the reference leaderboard.

    Returns
    -------
    dict of int -> ndarray of int
        Class -> pool indices, most confident first (may hold fewer than ``k``).
    """
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2 or not np.isfinite(p).all():
        raise ValueError("proba must be a finite (N, C) array with C >= 2")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    if fill not in ("fpl", "reference"):
        raise ValueError(f"fill must be 'fpl' or 'reference', got {fill!r}")
    _n, c = p.shape
    pred = p.argmax(1)
    out: dict[int, np.ndarray] = {}
    for cls in range(c):
        idx = np.flatnonzero(pred == cls)
        out[cls] = idx[np.argsort(-p[idx, cls], kind="stable")[:k]]
    if fill == "fpl":
        return out
    chosen = set(np.concatenate(list(out.values())).tolist())
    lists = {cls: list(v) for cls, v in out.items()}
    for i in np.argsort(-p.max(1), kind="stable"):
        if i in chosen:
            continue
        for cls in np.argsort(-p[i], kind="stable")[1:]:
            lst = lists[int(cls)]
            if len(lst) < k or p[i, cls] > p[lst[-1], cls]:
                lst.append(int(i))
                lst.sort(key=lambda j, c_=int(cls): -p[j, c_])
                del lst[k:]
    return {cls: np.asarray(v, dtype=int) for cls, v in lists.items()}


def growth_k(
    epoch: int, n_epochs: int, k0: int, n_pool: int, n_classes: int, max_ratio: float = 0.8
) -> int:
    """Main-sample size per class at ``epoch``: ``k0`` rising linearly to ``min(1000,
    floor(max_ratio * N / C))`` at 70 % of training (the released schedule)."""
    for name, v, low in (("epoch", epoch, 0), ("n_epochs", n_epochs, 1), ("k0", k0, 1),
                         ("n_pool", n_pool, 0), ("n_classes", n_classes, 1)):  # fmt: skip
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {v!r}")
        if v < low:
            raise ValueError(f"{name} must be >= {low}, got {v}")
    if (
        isinstance(max_ratio, bool)
        or not isinstance(max_ratio, numbers.Real)
        or not (0 < max_ratio <= 1)
    ):
        raise ValueError(f"max_ratio must be in (0, 1], got {max_ratio!r}")
    k_max = min(1000, int(max_ratio * n_pool / n_classes))
    k_max = max(k_max, k0)
    frac = min(1.0, epoch / (0.7 * max(n_epochs, 1)))
    return int(k0 + (k_max - k0) * frac)


def grow_main_samples(
    main: dict[int, np.ndarray],
    confident_pred: np.ndarray,
    confident_conf: np.ndarray,
    confident_idx: np.ndarray,
    k: int,
    protect: set[int] | None = None,
) -> dict[int, np.ndarray]:
    """New main samples from an epoch's confident predictions.

    Each class takes its most confident new images (each image at most once, classes visited in
    index order, at most 1000 per class, images already main samples excluded), up to ``k``;
    the old main samples top the list up. Classes in ``protect`` keep their samples.

    Parameters
    ----------
    main : dict of int -> ndarray of int
        Class -> current main samples (pool indices).
    confident_pred, confident_conf, confident_idx : ndarray (M,)
        The epoch's confident predictions: class, confidence, pool index (M may be 0).
    k : int
        Main samples per class after growth.
    protect : set of int, optional
        Classes whose main samples are kept as they are.

    Returns
    -------
    dict of int -> ndarray of int
    """
    protect = protect or set()
    if not isinstance(main, dict):
        raise TypeError(f"main must be a dict class -> indices, got {type(main).__name__}")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    pred = _index_array(confident_pred, "confident_pred")
    idx = _index_array(confident_idx, "confident_idx")
    conf = np.asarray(confident_conf)
    if conf.ndim != 1 or conf.dtype.kind not in "fiub":
        raise ValueError(f"confident_conf must be a 1-D numeric array, got shape {conf.shape}")
    if not np.isfinite(conf).all():
        raise ValueError("confident_conf contains NaN or inf")
    conf = conf.astype(np.float64)
    if not len(pred) == len(conf) == len(idx):
        raise ValueError(
            "confident_pred, confident_conf, confident_idx must have one length, got "
            f"{len(pred)}, {len(conf)}, {len(idx)}"
        )
    main = {int(c): _index_array(v, f"main[{c}]") for c, v in main.items()}
    order = np.argsort(-conf, kind="stable")
    pred, idx = pred[order], idx[order]
    taken = set(np.concatenate([v for v in main.values()] or [np.zeros(0, int)]).tolist())
    out = {}
    for cls in sorted(main):
        if cls in protect:
            out[cls] = main[cls]
            continue
        new = []
        for i in idx[pred == cls]:
            if len(new) >= min(k, 1000):
                break
            if int(i) not in taken:
                new.append(int(i))
                taken.add(int(i))
        merged = list(dict.fromkeys(new + [int(j) for j in main[cls]]))[:k]
        out[cls] = np.asarray(merged, dtype=int)
    return out


def _index_array(x, name: str) -> np.ndarray:
    """Non-negative integer ids, 1-D; float arrays with fractions raise."""
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.dtype.kind == "f" and len(a):
        if not np.isfinite(a).all() or (a != np.round(a)).any():
            raise ValueError(f"{name} must hold integer ids")
    elif a.dtype.kind not in "iuf" and len(a):
        raise TypeError(f"{name} must hold integer ids, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if len(a) and a.min() < 0:
        raise ValueError(f"{name} must hold non-negative ids, got {a.min()}")
    return a
