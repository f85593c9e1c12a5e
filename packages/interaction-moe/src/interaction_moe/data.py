"""Multimodal data without downloads: planted PID-style interactions, and feature-group splits of
scikit-learn's bundled sets."""

from __future__ import annotations

import numpy as np

__all__ = [
    "load_breast_cancer_groups",
    "load_digits_halves",
    "load_multibench_pickle",
    "load_multimodal_npz",
    "make_interaction_data",
]


def make_interaction_data(
    n: int,
    n_modalities: int = 2,
    dim: int = 16,
    proportions=None,
    cue: float = 1.0,
    noise: float = 0.5,
    n_classes: int = 2,
    seed: int = 0,
    geometry_seed: int = 0,
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Samples whose label comes from one planted interaction type each.

    Types ``0..M-1`` = uniqueness of modality m (label = its bit ``b_m``), ``M`` = synergy (label =
    parity of all ``b_m``), ``M+1`` = redundancy (label = a sign ``c`` shared by every modality).
    ``x^m = b_m mu_m + c_m nu_m + cue G_m[t] + noise N(0, I)`` with fixed orthonormal directions
    drawn from ``geometry_seed`` (shared by train and test sets). ``n_classes = 4`` uses two
    independent label slots (two bits per type).

    Returns
    -------
    xs : list of M ndarrays (n, dim), float32
    y : ndarray (n,) of int
    types : ndarray (n,) of int in [0, M + 2)
    """
    M = int(n_modalities)
    if M < 2 or n < 1 or dim < 4 + 2 * M:
        raise ValueError(f"need n_modalities >= 2, n >= 1 and dim >= {4 + 2 * M}")
    if n_classes not in (2, 4):
        raise ValueError(f"n_classes must be 2 or 4, got {n_classes}")
    p = (
        np.full(M + 2, 1.0 / (M + 2))
        if proportions is None
        else np.asarray(proportions, dtype=float)
    )
    if p.shape != (M + 2,) or (p < 0).any() or not np.isclose(p.sum(), 1):
        raise ValueError(f"proportions must be {M + 2} non-negative numbers summing to 1")
    slots = 1 if n_classes == 2 else 2
    geo = np.random.default_rng(geometry_seed)
    # per modality: slots label directions, slots redundancy directions, one cue per type
    need = 2 * slots + M + 2
    basis = [np.linalg.qr(geo.standard_normal((dim, dim)))[0][:, :need].T for _ in range(M)]
    rng = np.random.default_rng(seed)
    t = rng.choice(M + 2, size=n, p=p)
    b = rng.choice([-1.0, 1.0], size=(n, M, slots))
    c = rng.choice([-1.0, 1.0], size=(n, M, slots))
    red = t == M + 1
    c[red] = c[red][:, :1, :]  # one shared sign for redundancy samples
    lab = np.empty((n, slots))
    for m in range(M):
        lab[t == m] = b[t == m, m]
    lab[t == M] = np.prod(b[t == M], axis=1)
    lab[red] = c[red, 0]
    bits = (lab > 0).astype(int)
    y = bits[:, 0] if slots == 1 else bits[:, 0] * 2 + bits[:, 1]
    xs = []
    for m in range(M):
        B = basis[m]
        x = np.einsum("ns,sd->nd", b[:, m], B[:slots]) + np.einsum(
            "ns,sd->nd", c[:, m], B[slots : 2 * slots]
        )
        x = x + cue * B[2 * slots + t] + noise * rng.standard_normal((n, dim))
        xs.append(x.astype(np.float32))
    return xs, y.astype(np.int64), t


def load_breast_cancer_groups() -> tuple[list[np.ndarray], np.ndarray]:
    """scikit-learn's breast cancer set as 3 modalities: the 10 'mean', 10 'error', 10 'worst' features."""
    from sklearn.datasets import load_breast_cancer

    d = load_breast_cancer()
    X = d.data.astype(np.float32)
    return [X[:, :10], X[:, 10:20], X[:, 20:30]], d.target.astype(np.int64)


def load_digits_halves() -> tuple[list[np.ndarray], np.ndarray]:
    """scikit-learn's 8x8 digits as 2 modalities: the top 4 rows and the bottom 4 rows (32 pixels each)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X = d.images.astype(np.float32) / 16.0
    return [X[:, :4].reshape(len(X), -1), X[:, 4:].reshape(len(X), -1)], d.target.astype(np.int64)


def load_multimodal_npz(path: str) -> tuple[list[np.ndarray], np.ndarray]:
    """Arrays ``modality_0, modality_1, ...`` and ``y`` from an ``.npz`` (e.g. exported features of
    ADNI / MIMIC / MM-IMDB, which need credentials and are never downloaded here)."""
    import zipfile

    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: not a readable .npz file ({exc})") from exc
    if not hasattr(z, "files"):
        raise ValueError(f"{path}: a single array, not an .npz archive of modality_* and y")
    with z:
        names = sorted(
            (k for k in z.files if k.startswith("modality_")), key=lambda k: int(k.split("_")[1])
        )
        if len(names) < 2 or "y" not in z.files:
            raise ValueError(f"{path}: need arrays modality_0, modality_1, ... and y")
        try:
            xs = [np.asarray(z[k]) for k in names]
            y = np.asarray(z["y"])
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path}: a damaged archive ({exc})") from exc
    if any(len(x) != len(y) for x in xs):
        raise ValueError(f"{path}: every modality must have len(y) = {len(y)} rows")
    return xs, y


def load_multibench_pickle(
    path,
    split: str = "train",
    modalities: tuple[str, ...] = ("vision", "audio", "text"),
    label_key: str = "labels",
    task: str = "binary",
    pool: str | None = None,
) -> tuple[list[np.ndarray], np.ndarray]:
    """A MultiBench affect pickle (CMU-MOSI / MOSEI ``mosi_raw.pkl``-style) as modality arrays.

    The layout MultiBench's ``get_dataloader`` reads: a dict ``{"train" | "valid" | "test":
    {modality: (N, T, D) array, ..., "labels": (N, 1, 1) or (N,) array}}``.

    Parameters
    ----------
    path : str or Path
    split : {"train", "valid", "test"}
    modalities : tuple of str
        The keys to read, in order; every one must exist.
    label_key : str, default="labels"
    task : {"binary", "regression", "classification"}
        ``"binary"`` thresholds the sentiment score at 0 (MultiBench's ``task="classification"``
        for MOSI: positive vs negative, neutral 0 dropped); ``"regression"`` keeps the score;
        ``"classification"`` keeps integer labels as they are.
    pool : {None, "mean", "last"}
        ``None`` keeps the (N, T, D) token sequences (for the ``encoder="gru"`` classifier);
        ``"mean"`` / ``"last"`` give (N, D) vectors.

    Returns
    -------
    xs : list of arrays, one per modality
    y : ndarray (N',)
    """
    import pickle
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path {str(path)!r} is not a file")
    try:
        with p.open("rb") as fh:
            data = pickle.load(fh)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as exc:
        raise ValueError(f"{p.name}: not a readable pickle ({type(exc).__name__}: {exc})") from exc
    if not isinstance(data, dict) or split not in data or not isinstance(data[split], dict):
        raise ValueError(f"{p.name}: expected a dict with a {split!r} split of modality arrays")
    part = data[split]
    missing = [k for k in (*modalities, label_key) if k not in part]
    if missing:
        raise ValueError(f"{p.name}: split {split!r} has no {missing}; keys are {sorted(part)}")
    if task not in ("binary", "regression", "classification"):
        raise ValueError(f"task must be 'binary', 'regression' or 'classification', got {task!r}")
    if pool not in (None, "mean", "last"):
        raise ValueError(f"pool must be None, 'mean' or 'last', got {pool!r}")
    y = np.asarray(part[label_key], dtype=np.float64).reshape(len(part[label_key]), -1)[:, 0]
    xs = []
    for m in modalities:
        a = np.asarray(part[m], dtype=np.float64)
        if a.ndim == 2:
            a = a[:, None, :]
        if a.ndim != 3 or len(a) != len(y):
            raise ValueError(f"{p.name}: {m} must be (N, T, D) with N = {len(y)}, got {a.shape}")
        # MultiBench pickles hold +-inf in a few audio features; they are not data
        if not np.isfinite(a).all():
            raise ValueError(
                f"{p.name}: {m} contains NaN or inf ({int((~np.isfinite(a)).sum())} values)"
            )
        xs.append(a if pool is None else (a.mean(1) if pool == "mean" else a[:, -1]))
    if not np.isfinite(y).all():
        raise ValueError(f"{p.name}: {label_key} contains NaN or inf")
    if task == "binary":
        keep = y != 0
        xs, y = [x[keep] for x in xs], (y[keep] > 0).astype(np.int64)
    elif task == "classification":
        if np.any(y != np.round(y)):
            raise ValueError(f"{p.name}: {label_key} are not integer class labels")
        y = y.astype(np.int64)
    return [x.astype(np.float32) for x in xs], y
