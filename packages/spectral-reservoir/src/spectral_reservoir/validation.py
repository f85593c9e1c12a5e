"""Input checks shared by the estimators: aeon-style series containers to one padded array."""

from __future__ import annotations

import numpy as np

__all__ = ["check_series"]


def _as_float(a, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got a complex array")
    return arr.astype(np.float64)


def _trim_trailing_nan(s: np.ndarray, name: str) -> np.ndarray:
    """(C, L) -> (C, L') without trailing all-NaN steps; interior NaN/inf raise."""
    finite = np.isfinite(s).all(axis=0)
    nan_cols = np.isnan(s).all(axis=0)
    last = np.flatnonzero(~nan_cols)
    if last.size == 0:
        raise ValueError(f"{name} holds an all-NaN series")
    s = s[:, : last[-1] + 1]
    if not np.isfinite(s).all() or not finite[: last[-1] + 1].all():
        raise ValueError(
            f"{name} has NaN or inf inside a series (only trailing NaN padding is allowed)"
        )
    return s


def check_series(X, name: str = "X", min_length: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Validate a collection of series and left-pad it with zeros to a common length.

    Parameters
    ----------
    X : ndarray (n, L) or (n, C, L), or list of (L_i,) / (C, L_i) arrays
        Trailing NaN padding (aeon's unequal-length convention) marks shorter series.

    Returns
    -------
    padded : ndarray (n, C, L_max), float64, a new array
    offsets : ndarray (n,) of int
        Index of each series' first real step in ``padded``.
    """
    if isinstance(X, list | tuple):
        if len(X) == 0:
            raise ValueError(f"{name} is empty")
        series = []
        for i, s in enumerate(X):
            a = _as_float(s, f"{name}[{i}]")
            if a.ndim == 1:
                a = a[None]
            if a.ndim != 2:
                raise ValueError(f"{name}[{i}] must be (L,) or (C, L), got shape {a.shape}")
            series.append(a)
        if len({s.shape[0] for s in series}) != 1:
            raise ValueError(f"{name}: every series must have the same number of channels")
    else:
        a = _as_float(X, name)
        if a.ndim == 2:
            a = a[:, None, :]
        if a.ndim != 3:
            raise ValueError(f"{name} must be (n, L) or (n, C, L), got shape {a.shape}")
        if a.shape[0] == 0 or a.shape[2] == 0:
            raise ValueError(f"{name} is empty (shape {a.shape})")
        series = list(a)
    series = [_trim_trailing_nan(s, name) for s in series]
    lengths = np.array([s.shape[1] for s in series])
    if lengths.min() < min_length:
        raise ValueError(f"{name}: series must have length >= {min_length}, got {lengths.min()}")
    L = int(lengths.max())
    out = np.zeros((len(series), series[0].shape[0], L))
    offsets = L - lengths
    for i, s in enumerate(series):  # one copy per series at load time, not in a hot path
        out[i, :, offsets[i] :] = s
    return out, offsets.astype(np.int64)
