"""Input checks shared by the estimators: clear errors that name the argument."""

import numbers

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, column_or_1d

__all__ = [
    "check_X",
    "check_X_y",
    "check_ids",
    "check_known_ids",
    "check_sample_ids",
    "is_int",
    "is_real",
]


def _named(name: str, fn, *args, **kwargs):
    """Run a scikit-learn validator so that its message also names the argument."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{name}: {exc}") from exc


def check_X(
    X: ArrayLike, *, n_features: int | None = None, name: str = "X", owner: object = None
) -> np.ndarray:
    """Return ``X`` as a finite float64 2-D array (a copy when converted; never written to).

    Messages carry both the argument's name and scikit-learn's wording (its estimator checks
    match on it): sparse input, complex or object dtype, 1-D input, empty input, NaN/inf.
    """
    if isinstance(X, str | bytes):
        raise TypeError(f"{name}: expected a numeric array, got {type(X).__name__}")
    X = _named(name, check_array, X, dtype=np.float64, ensure_all_finite=True)
    if n_features is not None and X.shape[1] != n_features:
        who = type(owner).__name__ if owner is not None else "the model"
        raise ValueError(
            f"{name}: X has {X.shape[1]} features, but {who} is expecting {n_features} features "
            "as input"
        )
    return X


def check_X_y(
    X: ArrayLike, y: ArrayLike, *, n_features: int | None = None, owner: object = None
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a labelled batch: 2-D finite ``X`` and class labels ``y`` of the same length."""
    if y is None:
        who = type(owner).__name__ if owner is not None else "this estimator"
        raise ValueError(f"y: {who} requires y to be passed, but the target y is None")
    X = check_X(X, n_features=n_features, owner=owner)
    y = _named("y", column_or_1d, y, warn=True)
    if len(y) != len(X):
        raise ValueError(f"y: has {len(y)} labels but X has {len(X)} samples")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError("y: contains NaN or inf")
    _named("y", check_classification_targets, y)
    return X, y


def check_ids(sample_ids: ArrayLike) -> np.ndarray:
    """Validate a deletion request: a 1-D sequence of integer ids (repeats removed)."""
    ids = np.asarray(sample_ids)
    if ids.ndim == 0:
        ids = ids.reshape(1)
    if ids.ndim != 1:
        raise ValueError(f"sample_ids: expected a 1-D sequence of ids, got shape {ids.shape}")
    if ids.size == 0:
        return ids.astype(np.int64)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"sample_ids: expected integer ids, got dtype {ids.dtype}")
    return np.unique(ids.astype(np.int64))


def check_sample_ids(sample_ids: ArrayLike | None, n: int) -> np.ndarray:
    """Ids naming the rows of a batch: ``None`` means ``0..n-1``; else ``n`` distinct ints."""
    if sample_ids is None:
        return np.arange(n, dtype=np.int64)
    ids = np.asarray(sample_ids)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ValueError(f"sample_ids: expected shape ({n},), got {ids.shape}")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"sample_ids: expected integer ids, got dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    if np.unique(ids).size != n:
        raise ValueError("sample_ids: ids must be distinct")
    return ids


def check_known_ids(sample_ids: ArrayLike, alive: np.ndarray) -> np.ndarray:
    """For baselines that store every point: ids must index live rows (positions)."""
    ids = check_ids(sample_ids)
    bad = ids[(ids < 0) | (ids >= len(alive))]
    if bad.size:
        raise ValueError(f"sample_ids: unknown ids {bad[:5].tolist()}")
    dead = ids[~alive[ids]]
    if dead.size:
        raise ValueError(f"sample_ids: ids {dead[:5].tolist()} were already unlearned")
    return ids


def is_real(value: object) -> bool:
    """A real number (numpy scalars included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def is_int(value: object) -> bool:
    """An integer (numpy integers included), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)
