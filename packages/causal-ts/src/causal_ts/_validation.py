"""Input checks shared by the public entry points (private module)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

__all__ = [
    "check_fraction",
    "check_graph",
    "check_int",
    "check_positive",
    "check_rng",
    "check_series",
    "check_windows",
]


def check_series(
    X: Any,
    name: str = "X",
    *,
    nan_policy: str = "raise",
    min_length: int = 1,
) -> np.ndarray:
    """Validate a multivariate series and return a float64 copy of shape (T, N).

    Parameters
    ----------
    X : array-like of shape (T, N)
        Time along the first axis, variables along the second.
    name : str
        Argument name used in error messages.
    nan_policy : {"raise", "ffill"}
        ``"raise"``: NaN/inf raise ``ValueError``. ``"ffill"``: non-finite values are
        forward-filled, then back-filled (a column with no finite value still raises).
    min_length : int
        Minimum number of time steps.

    Returns
    -------
    numpy.ndarray of shape (T, N), float64
        A new array; the caller's array is never modified.
    """
    if nan_policy not in ("raise", "ffill"):
        raise ValueError(f"nan_policy must be 'raise' or 'ffill'; got {nan_policy!r}")
    if isinstance(X, str | bytes) or X is None:
        raise TypeError(f"{name} must be a numeric array of shape (T, N); got {type(X).__name__}")
    if hasattr(X, "detach"):  # torch tensor
        X = X.detach().cpu().numpy()
    if hasattr(X, "tocsr") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name}: sparse input is not supported; pass a dense (T, N) array")
    arr = np.asarray(X)
    if arr.dtype == object:  # numbers in an object array (pandas, lists of Decimals) convert
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{name} must hold numbers; got dtype object ({e})") from None
    if not (np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)):
        raise TypeError(f"{name} must hold numbers; got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise ValueError(f"{name}: Complex data not supported (got dtype {arr.dtype})")
    if arr.ndim == 1:
        raise ValueError(
            f"{name} must be 2-D of shape (T, N); got a 1-D array of length {arr.shape[0]}. "
            f"Reshape your data: for a univariate series pass {name}.reshape(-1, 1)."
        )
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (T, N); got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(
            f"{name} is empty: 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required."
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: 0 time steps (shape {arr.shape})")
    if arr.shape[0] < min_length:
        raise ValueError(
            f"{name} has {arr.shape[0]} time steps; at least {min_length} are required"
        )
    out = np.array(arr, dtype=np.float64, copy=True)
    bad = ~np.isfinite(out)
    if bad.any():
        if nan_policy == "raise":
            raise ValueError(
                f"{name} contains {int(bad.sum())} NaN/inf values; clean them or use "
                "nan_policy='ffill'"
            )
        if bad.all(axis=0).any():
            col = int(np.flatnonzero(bad.all(axis=0))[0])
            raise ValueError(f"{name} column {col} has no finite value to fill from")
        out[bad] = np.nan
        out = _ffill_bfill(out)
    return out


def _ffill_bfill(X: np.ndarray) -> np.ndarray:
    """Forward-fill then back-fill NaNs along time, vectorized over columns."""
    T = X.shape[0]
    idx = np.where(np.isnan(X), 0, np.arange(T)[:, None])
    np.maximum.accumulate(idx, axis=0, out=idx)
    out = X[idx, np.arange(X.shape[1])]
    # leading NaNs: back-fill from the first finite value of each column
    first = np.argmax(~np.isnan(X), axis=0)
    lead = np.isnan(out)
    out[lead] = X[first, np.arange(X.shape[1])][np.nonzero(lead)[1]]
    return out


def check_windows(x: Any, name: str = "x") -> np.ndarray:
    """Validate a batch of windows of shape (B, W, N); return float64 copy."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must hold numbers; got dtype {arr.dtype}")
    if arr.ndim != 3:
        raise ValueError(f"{name} must be 3-D of shape (B, W, N); got shape {arr.shape}")
    if min(arr.shape) == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN/inf values")
    return np.array(arr, dtype=np.float64, copy=True)


def check_graph(graph: Any, n_vars: int | None = None, name: str = "graph") -> np.ndarray:
    """Validate a square adjacency matrix (row = cause, column = effect); return bool copy."""
    arr = np.asarray(graph)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix; got shape {arr.shape}")
    if n_vars is not None and arr.shape[0] != n_vars:
        raise ValueError(f"{name} has {arr.shape[0]} variables; expected {n_vars}")
    if not (np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)):
        raise TypeError(f"{name} must be boolean or numeric; got dtype {arr.dtype}")
    if not np.isfinite(arr.astype(float)).all():
        raise ValueError(f"{name} contains NaN/inf values")
    return arr.astype(bool)


def check_int(value: Any, name: str, *, low: int | None = None) -> int:
    """Check that ``value`` is an integer (not bool) and >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}; got {value}")
    return int(value)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Check that ``value`` is a finite real number > 0 (or >= 0)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}; got {value}")
    return v


def check_fraction(
    value: Any, name: str, *, low_open: bool = False, high_open: bool = False
) -> float:
    """Check that ``value`` lies in [0, 1] (with optionally open ends)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    v = float(value)
    ok = np.isfinite(v) and (v > 0 if low_open else v >= 0) and (v < 1 if high_open else v <= 1)
    if not ok:
        lo = "(0" if low_open else "[0"
        hi = "1)" if high_open else "1]"
        raise ValueError(f"{name} must lie in {lo}, {hi}; got {value}")
    return v


def check_rng(rng: Any) -> np.random.Generator:
    """Turn ``None``/int/Generator into a ``numpy.random.Generator``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be None, an int or a numpy Generator; got {type(rng).__name__}")
