"""Input checks shared by the data containers, estimators and helpers."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_images", "check_int", "check_labels", "check_real", "check_vector"]


def check_int(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as int after checking type and the closed range [low, high]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value}")
    return value


def check_real(
    value, name: str, low: float | None = None, high: float | None = None, open_low=False
) -> float:
    """Return ``value`` as a finite float in [low, high] (or (low, high] with ``open_low``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (open_low and value == low)):
        raise ValueError(f"{name} must be {'>' if open_low else '>='} {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def check_images(X, name: str = "X") -> np.ndarray:
    """Return a float32 copy of a finite, non-empty image array of shape (n, c, h, w)."""
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name} must be an array, got {type(X).__name__}")
    arr = np.asarray(X.detach().cpu() if hasattr(X, "detach") else X)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 4 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty array of shape (n, c, h, w), got {arr.shape}")
    arr = arr.astype(np.float32)  # always a copy
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def check_labels(y, n: int, n_classes: int, name: str = "y") -> np.ndarray:
    """Return an int64 copy of 1-D integer labels of length ``n`` in [0, n_classes)."""
    arr = np.asarray(y.detach().cpu() if hasattr(y, "detach") else y)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"{name} must be 1-D with {n} entries, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.floating) or not np.all(np.isfinite(arr)):
            raise TypeError(f"{name} must hold integer class labels")
        if np.any(arr != np.round(arr)):
            raise TypeError(f"{name} must hold integer class labels")
    arr = arr.astype(np.int64)
    if n and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"{name} must lie in [0, {n_classes}), got [{arr.min()}, {arr.max()}]")
    return arr


def check_vector(v, name: str, dim: int) -> np.ndarray:
    """Return a finite float32 copy of a vector of length ``dim``."""
    arr = np.asarray(v.detach().cpu() if hasattr(v, "detach") else v)
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be numeric")
    if arr.shape != (dim,):
        raise ValueError(f"{name} must have shape ({dim},), got {arr.shape}")
    arr = arr.astype(np.float32)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def check_range(r, name: str, low: int = 1) -> tuple[int, int]:
    """An inclusive ``(lo, hi)`` range of ints with ``low <= lo <= hi``."""
    if isinstance(r, str) or not isinstance(r, tuple | list) or len(r) != 2:
        raise ValueError(f"{name} must be an inclusive (low, high) range, got {r!r}")
    lo, hi = check_int(r[0], name, low), check_int(r[1], name, low)
    if lo > hi:
        raise ValueError(f"{name} must be an inclusive (low, high) range, got {r!r}")
    return lo, hi


def check_choices(v, name: str) -> tuple[int, ...]:
    """A non-empty tuple of distinct positive ints (duplicates would repeat specs)."""
    if isinstance(v, str) or not isinstance(v, tuple | list) or not v:
        raise ValueError(f"{name} must be a non-empty tuple of int, got {v!r}")
    out = tuple(check_int(x, name, 1) for x in v)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} has duplicates: {out}")
    return out
