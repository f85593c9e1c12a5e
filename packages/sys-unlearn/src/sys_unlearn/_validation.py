"""Input checks shared by the estimators: clear errors that name the argument."""

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["check_X", "check_X_y", "check_ids", "check_known_ids", "check_sample_ids"]


def check_X(X: ArrayLike, *, n_features: int | None = None, name: str = "X") -> np.ndarray:
    """Return ``X`` as a finite float64 2-D array; callers never write to it."""
    if not _is_numeric(X):
        raise TypeError(f"{name}: expected a numeric array, got dtype {np.asarray(X).dtype}")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(
            f"{name}: expected a 2-D array of shape (n_samples, n_features), got {X.ndim}-D"
        )
    if X.shape[0] == 0:
        raise ValueError(f"{name}: empty input (0 samples)")
    if X.shape[1] == 0:
        raise ValueError(f"{name}: 0 features")
    if not np.isfinite(X).all():
        raise ValueError(f"{name}: contains NaN or inf")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"{name}: has {X.shape[1]} features, but the model was fitted with {n_features}"
        )
    return X


def check_X_y(
    X: ArrayLike, y: ArrayLike, *, n_features: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a labelled batch: 2-D finite ``X`` and 1-D ``y`` of the same length."""
    X = check_X(X, n_features=n_features)
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
    if len(y) != len(X):
        raise ValueError(f"y: has {len(y)} labels but X has {len(X)} samples")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError("y: contains NaN or inf")
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


def _is_numeric(X: ArrayLike) -> bool:
    try:
        return np.asarray(X).dtype.kind in "biuf"
    except (TypeError, ValueError):
        return False
