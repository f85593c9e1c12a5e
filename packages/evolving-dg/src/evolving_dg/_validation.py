"""Input checks shared by the estimators, datasets and loaders."""

from __future__ import annotations

import numpy as np

__all__ = ["check_array", "check_domains"]


def check_array(X, name: str = "X", shape: tuple | None = None) -> np.ndarray:
    """Return a float32 copy of a finite, non-empty numeric array (caller's array untouched)."""
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name} must be an array, got {type(X).__name__}")
    arr = np.asarray(X)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim < 2 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty array of shape (n, ...), got {arr.shape}")
    if shape is not None and tuple(arr.shape[1:]) != tuple(shape):
        raise ValueError(f"{name} has sample shape {arr.shape[1:]}, expected {tuple(shape)}")
    arr = arr.astype(np.float32)  # always a copy
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def check_domains(domains, name: str = "domains", n_classes: int | None = None, min_len: int = 1):
    """Validate a time-ordered list of (X_t, y_t); return copies as (float32, int64) pairs."""
    if isinstance(domains, (str, bytes)) or not hasattr(domains, "__len__"):
        raise TypeError(f"{name} must be a list of (X, y) pairs")
    if len(domains) < min_len:
        raise ValueError(f"{name} needs at least {min_len} domains, got {len(domains)}")
    out, shape = [], None
    for t, pair in enumerate(domains):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{name}[{t}] must be an (X, y) pair")
        X = check_array(pair[0], f"{name}[{t}] X", shape)
        shape = X.shape[1:]
        y = np.asarray(pair[1])
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"{name}[{t}]: y must be 1-D with len(X)={len(X)} entries")
        if not np.issubdtype(y.dtype, np.integer):
            if (
                not np.issubdtype(y.dtype, np.floating)
                or not np.all(np.isfinite(y))
                or np.any(y != np.round(y))
            ):
                raise TypeError(f"{name}[{t}]: y must hold integer class labels")
        y = y.astype(np.int64)
        if len(y) < 2:
            raise ValueError(f"{name}[{t}] has {len(y)} sample(s); each domain needs >= 2")
        if y.min() < 0 or (n_classes is not None and y.max() >= n_classes):
            raise ValueError(f"{name}[{t}]: labels must lie in [0, {n_classes})")
        out.append((X, y))
    return out
