"""Input checks shared by the forecasters, the model and the data helpers."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["check_adjacency", "check_int", "check_series", "check_windows"]


def _as_float(a, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got a complex array")
    return np.array(arr, dtype=np.float64)  # always a copy: callers never see their input change


def check_int(value, name: str, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; bools and non-integers raise ``TypeError``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        rng = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {rng}, got {value}")
    return int(value)


def check_series(
    Y, name: str = "Y", n_regions: int | None = None, min_length: int = 1, nonnegative=False
):
    """A (T, N) float64 copy; NaN marks a missing count, inf raises.

    ``nonnegative=True`` rejects negative values (counts and rates cannot be negative).

    Raises
    ------
    TypeError
        Non-numeric input.
    ValueError
        Not 2-D, empty, inf values, a region with no observation, wrong N, too short.
    """
    a = _as_float(Y, name)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (T, N), got shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {a.shape})")
    if np.isinf(a).any():
        raise ValueError(f"{name} contains inf")
    if n_regions is not None and a.shape[1] != n_regions:
        raise ValueError(f"{name} has {a.shape[1]} regions, expected {n_regions}")
    if a.shape[0] < min_length:
        raise ValueError(f"{name} needs at least {min_length} time steps, got {a.shape[0]}")
    if nonnegative and np.nanmin(a) < 0:
        row, col = np.argwhere(a < 0)[0]
        raise ValueError(
            f"{name} contains negative counts (first at row {row}, region {col}: {a[row, col]:g})"
        )
    empty = np.flatnonzero(np.isnan(a).all(axis=0))
    if empty.size:
        raise ValueError(f"{name}: region {int(empty[0])} has no observed value")
    return a


def check_windows(X, name: str, n_regions: int, window: int | None = None) -> np.ndarray:
    """Context windows as (n, W, N) float64 (a (W, N) array is one window)."""
    a = _as_float(X, name)
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3:
        raise ValueError(f"{name} must be (W, N) or (n, W, N), got shape {a.shape}")
    if 0 in a.shape:
        raise ValueError(f"{name} is empty (shape {a.shape})")
    if a.shape[2] != n_regions:
        raise ValueError(f"{name} has {a.shape[2]} regions, expected {n_regions}")
    if window is not None and a.shape[1] < window:
        raise ValueError(f"{name} windows need at least {window} steps, got {a.shape[1]}")
    if np.isinf(a).any():
        raise ValueError(f"{name} contains inf")
    return a


def check_adjacency(A, n_regions: int | None = None, name: str = "adjacency") -> np.ndarray:
    """A square, finite, non-negative (N, N) float64 copy; isolated nodes get a self-loop (warns)."""
    a = _as_float(A, name)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be square (N, N), got shape {a.shape}")
    if a.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if n_regions is not None and a.shape[0] != n_regions:
        raise ValueError(f"{name} is {a.shape[0]}x{a.shape[0]}, expected {n_regions} regions")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf")
    if (a < 0).any():
        raise ValueError(f"{name} must be non-negative")
    isolated = np.flatnonzero(a.sum(axis=1) == 0)
    if isolated.size:
        warnings.warn(
            f"{name}: {isolated.size} isolated node(s) {isolated.tolist()[:5]} get a self-loop",
            stacklevel=3,
        )
        a[isolated, isolated] = 1.0
    return a
