"""Input checks shared by every public entry point.

Every check names the offending argument in its message so that callers see
``probs: ...`` or ``y: ...`` rather than a bare NumPy error.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_labels",
    "check_nonnegative_float",
    "check_positive_int",
    "check_probs",
    "check_sample_weight",
    "check_scores",
]


def _as_2d_float(x: object, name: str) -> np.ndarray:
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a 2-D array of numbers, got {type(x).__name__}")
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name}: could not convert to an array ({exc})") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name}: complex values are not supported")
    if arr.ndim != 2:
        raise ValueError(
            f"{name}: expected a 2-D array (n_samples, n_classes), got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: empty input (0 samples)")
    if arr.shape[1] < 2:
        raise ValueError(f"{name}: need at least 2 classes (columns), got {arr.shape[1]}")
    # copy=True: we never hand the caller's buffer to code that could write to it.
    arr = np.array(arr, dtype=np.float64, copy=True)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return arr


def check_probs(
    probs: object,
    name: str = "probs",
    sum_tol: float = 1e-5,
    n_classes: int | None = None,
    min_samples: int = 1,
) -> np.ndarray:
    """Validate a matrix of class probabilities.

    Parameters
    ----------
    probs : array-like of shape (n_samples, n_classes)
        Rows must be non-negative and sum to 1 within ``sum_tol``.
    name : str, default="probs"
        Argument name used in error messages.
    sum_tol : float, default=1e-5
        Absolute tolerance on ``|sum(row) - 1|``.
    n_classes : int, optional
        Required number of columns (e.g. the number seen in ``fit``).
    min_samples : int, default=1
        Minimum number of rows.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        A float64 copy, renormalized exactly to sum to 1 per row.
    """
    arr = _as_2d_float(probs, name)
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name}: need at least {min_samples} samples, got {arr.shape[0]}")
    if n_classes is not None and arr.shape[1] != n_classes:
        raise ValueError(f"{name}: expected {n_classes} columns (as in fit), got {arr.shape[1]}")
    if np.any(arr < -sum_tol):
        raise ValueError(f"{name}: contains negative probabilities")
    if np.any(arr > 1 + sum_tol):
        raise ValueError(f"{name}: contains probabilities greater than 1")
    # rounding noise of other libraries' normalisations (-1e-17) is clipped, not rejected
    np.clip(arr, 0.0, None, out=arr)
    dev = np.abs(arr.sum(axis=1) - 1.0)
    if np.any(dev > sum_tol):
        bad = int(np.argmax(dev))
        raise ValueError(
            f"{name}: rows must sum to 1 (row {bad} sums to {arr[bad].sum():.6g}; "
            f"sum_tol={sum_tol:g})"
        )
    # sum in sorted order: the renormalized values then do not depend on column order,
    # so every calibrator is permutation-equivariant bit for bit
    arr /= np.sort(arr, axis=1).sum(axis=1, keepdims=True)
    return arr


def check_scores(
    scores: object, name: str = "logits", n_classes: int | None = None, min_samples: int = 1
) -> np.ndarray:
    """Validate a matrix of unnormalized scores (logits), shape (n_samples, n_classes)."""
    arr = _as_2d_float(scores, name)
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name}: need at least {min_samples} samples, got {arr.shape[0]}")
    if n_classes is not None and arr.shape[1] != n_classes:
        raise ValueError(f"{name}: expected {n_classes} columns (as in fit), got {arr.shape[1]}")
    return arr


def check_labels(
    y: object, n_samples: int, n_classes: int, name: str = "y", require_all: bool = True
) -> np.ndarray:
    """Validate integer class labels in ``[0, n_classes)``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Integer labels (floats holding whole numbers are accepted).
    n_samples : int
        Expected length (rows of the probability matrix).
    n_classes : int
        Number of classes (columns of the probability matrix).
    name : str, default="y"
        Argument name used in error messages.
    require_all : bool, default=True
        Raise if some class never occurs in ``y``.

    Returns
    -------
    ndarray of shape (n_samples,), dtype int64
    """
    if isinstance(y, (str, bytes)) or y is None:
        raise TypeError(f"{name}: expected a 1-D array of integer labels, got {type(y).__name__}")
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise ValueError(
            f"{name}: length {arr.shape[0]} does not match the {n_samples} rows of probs"
        )
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name}: expected integer labels, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: contains NaN or infinite values")
        if np.any(arr != np.round(arr)):
            raise ValueError(f"{name}: labels must be whole numbers")
    out = arr.astype(np.int64)
    if out.size and (out.min() < 0 or out.max() >= n_classes):
        raise ValueError(
            f"{name}: labels must lie in [0, {n_classes}) (got range [{out.min()}, {out.max()}])"
        )
    if require_all:
        counts = np.bincount(out, minlength=n_classes)
        missing = np.flatnonzero(counts == 0)
        if missing.size:
            raise ValueError(
                f"{name}: class(es) {missing.tolist()[:10]} never occur in y; this calibrator "
                "fits per-class parameters, which are unidentifiable without samples of "
                "every class (use a class-agnostic method: NA-FIR, SCIR, FIR, temperature)"
            )
    return out


def check_sample_weight(sample_weight: object, n_samples: int) -> np.ndarray:
    """Validate optional non-negative sample weights; ``None`` means all ones."""
    if sample_weight is None:
        return np.ones(n_samples)
    w = np.asarray(sample_weight)
    if w.dtype == object or not np.issubdtype(w.dtype, np.number):
        raise TypeError(f"sample_weight: expected numbers, got dtype {w.dtype}")
    w = np.array(w, dtype=np.float64, copy=True)
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight: expected shape ({n_samples},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight: must be finite and non-negative")
    if w.sum() <= 0:
        raise ValueError("sample_weight: weights sum to zero")
    return w


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """Validate an integer hyperparameter ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return int(value)


def check_nonnegative_float(value: object, name: str, strict: bool = False) -> float:
    """Validate a finite float hyperparameter ``>= 0`` (``> 0`` when ``strict``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (strict and value == 0):
        raise ValueError(f"{name}: must be {'> 0' if strict else '>= 0'} and finite, got {value}")
    return value
