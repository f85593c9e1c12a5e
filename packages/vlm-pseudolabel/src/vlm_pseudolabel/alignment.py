"""Concept alignment (CAP, paper Sec. 3.1): find mismatched classes, pick their descriptions.

A class is *mismatched* when its text embedding points to no image cluster. Detection
(the paper's Algorithm 1) clusters the unlabeled images into as many clusters as classes
remain, assigns the most confident (class, cluster) pair, removes both and repeats; the classes
left at the end that are also among the least-predicted ones are the mismatched ones.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import softmax
from sklearn.cluster import KMeans

__all__ = ["detect_mismatch", "select_descriptions"]


def _norm(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True).clip(1e-12)


def _finite(x, name: str, dim: int | None = None, empty_ok: bool = True) -> np.ndarray:
    """A finite numeric 2-D float64 array (``dim`` columns when given); errors name ``name``."""
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {a.shape}")
    if a.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
    a = a.astype(np.float64)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf")
    if dim is not None and a.shape[1] != dim:
        raise ValueError(f"{name} has {a.shape[1]} columns, centres have {dim}")
    if not empty_ok and len(a) == 0:
        raise ValueError(f"{name} is empty")
    return a


def detect_mismatch(
    X: np.ndarray,
    text_features: np.ndarray,
    t: int | None = None,
    logit_scale: float = 100.0,
    removal: str = "cluster",
    seed: int = 0,
    n_init: int = 10,
) -> tuple[list[int], list[int], np.ndarray]:
    """Iterative clustering detection of mismatched classes.

    1. ``R`` = all classes, ``I`` = all images, ``t = ceil(C / 10)``.
    2. While ``|R| >= t``: KMeans with ``|R|`` clusters on ``I``; ``P[c, j]`` = softmax over
       clusters of ``s * <t_c, mu_j>``; remove the arg-max class from ``R`` and its cluster's
       images from ``I`` (``removal="cluster"``; ``"reference"`` removes at most ``N/C`` of them,
       those the class's zero-shot ranking puts first).
    3. Mismatched = classes left in ``R`` that are also among the ``t`` least-predicted classes.

    Parameters
    ----------
    X : ndarray (N, d)
        Normalised image embeddings of the unlabeled pool.
    text_features : ndarray (C, d)
    t : int, optional
        Stop size (default ``ceil(C / 10)``; 1 when C < 10).
    logit_scale : float, default=100.0
    removal : {"cluster", "reference"}
    seed : int
        KMeans ``random_state``.
    n_init : int, default=10
        KMeans restarts per round.

    Returns
    -------
    mismatched : list of int
        Sorted class ids (at most ``t``).
    removal_order : list of int
        Classes in the order they were matched to a cluster.
    final_centres : ndarray (t, d)
        Normalised centres of the clusters left unclaimed by the last assignment (the round
        with ``t + 1`` classes), for description selection.
    """
    X = np.asarray(X, dtype=np.float64)
    T = np.asarray(text_features, dtype=np.float64)
    if X.ndim != 2 or T.ndim != 2 or X.shape[1] != T.shape[1]:
        raise ValueError("X must be (N, d) and text_features (C, d) with the same d")
    if not (np.isfinite(X).all() and np.isfinite(T).all()):
        raise ValueError("X and text_features must be finite")
    n, c = len(X), len(T)
    if c < 2:
        raise ValueError("text_features must hold at least 2 classes")
    if n < c:
        raise ValueError(f"X must hold at least as many images as classes ({c}), got {n}")
    if isinstance(n_init, bool) or not isinstance(n_init, int) or n_init < 1:
        raise ValueError(f"n_init must be an int >= 1, got {n_init!r}")
    if removal not in ("cluster", "reference"):
        raise ValueError(f"removal must be 'cluster' or 'reference', got {removal!r}")
    if t is None:
        t = 1 if c < 10 else math.ceil(c / 10)
    if not 1 <= t <= c:
        raise ValueError(f"t must be in [1, {c}], got {t}")
    X, T = _norm(X), _norm(T)
    zs = (X @ T.T).argmax(1)
    remaining = list(range(c))
    alive = np.ones(n, dtype=bool)
    order: list[int] = []
    centres = np.zeros((0, X.shape[1]))
    while len(remaining) > t:
        pts = X[alive]
        k = min(len(remaining), len(pts))
        if k < 1:
            break
        km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(pts)
        round_centres = _norm(km.cluster_centers_)
        p = softmax(logit_scale * T[remaining] @ round_centres.T, axis=1)
        ci, cj = np.unravel_index(int(np.argmax(p)), p.shape)
        # the clusters no class claimed in the last assignment round are where the remaining
        # (mismatched) classes' images lie
        centres = np.delete(round_centres, cj, axis=0)
        cls = remaining.pop(int(ci))
        order.append(cls)
        members = np.flatnonzero(alive)[km.labels_ == cj]
        if removal == "reference":
            rank = np.argsort(-(X[members] @ T[cls]))
            members = members[rank[: max(1, n // c)]]
        alive[members] = False
    counts = np.bincount(zs, minlength=c)
    low = set(np.argsort(counts, kind="stable")[:t].tolist())
    mismatched = sorted(int(r) for r in remaining if r in low)
    return mismatched, order, centres


def select_descriptions(
    mismatched: list[int],
    descriptions: dict[int, np.ndarray],
    centres: np.ndarray,
    text_features: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
) -> dict[int, int]:
    """For each mismatched class, the description closest to "its" cluster.

    Mismatched classes are matched to the centres of the last clustering round by a Hungarian
    assignment on their best description-centre cosine; the chosen description of class ``c``
    is the arg-max over its candidates of ``<d, mu_match(c)>``.

    Parameters
    ----------
    mismatched : list of int
    descriptions : dict of int -> ndarray (n_c, d)
    centres : ndarray (K, d)
    text_features : ndarray (C, d), optional
        The alignment gate (this package's option, not the paper's): when given, a class keeps
        its description only if that description is closer to the matched centre than every
        other (allowed) class's text embedding, i.e. the cluster would become the class's. A
        false detection, whose leftover cluster holds another class's images, is left alone.
    allowed : ndarray of bool (C,), optional
        Classes that compete in the gate (default: all).

    Returns
    -------
    dict of int -> int
        Class -> index of the chosen description (classes without descriptions, or rejected by
        the gate, are skipped).
    """
    centres = _finite(centres, "centres")
    if not isinstance(descriptions, dict):
        raise TypeError(
            f"descriptions must be a dict class -> (n_c, d) array, got {type(descriptions).__name__}"
        )
    if isinstance(mismatched, str) or not all(
        isinstance(c, int | np.integer) and not isinstance(c, bool) for c in mismatched
    ):
        raise TypeError(f"mismatched must be a list of int class ids, got {mismatched!r}")
    d_dim = centres.shape[1]
    for c in mismatched:
        if c in descriptions:
            _finite(descriptions[c], f"descriptions[{c}]", d_dim, empty_ok=True)
    if text_features is not None:
        text_features = _finite(text_features, "text_features", d_dim)
    cls = [c for c in mismatched if c in descriptions and len(descriptions[c])]
    if not cls or len(centres) == 0:
        return {}
    centres = _norm(centres)
    best = np.stack(
        [(_norm(np.asarray(descriptions[c], dtype=np.float64)) @ centres.T).max(0) for c in cls]
    )  # (|cls|, K)
    rows, cols = linear_sum_assignment(-best)
    T = None if text_features is None else _norm(np.asarray(text_features, dtype=np.float64))
    if T is not None:
        keep = np.ones(len(T), bool) if allowed is None else np.asarray(allowed, bool).copy()
        if keep.shape != (len(T),):
            raise ValueError(f"allowed must be a bool mask of length {len(T)}")
    out = {}
    for r, j in zip(rows, cols, strict=True):
        d = _norm(np.asarray(descriptions[cls[r]], dtype=np.float64))
        k = int(np.argmax(d @ centres[j]))
        if T is not None:
            rivals = keep.copy()
            rivals[cls[r]] = False
            if rivals.any() and d[k] @ centres[j] <= (T[rivals] @ centres[j]).max():
                continue
        out[cls[r]] = k
    return out
