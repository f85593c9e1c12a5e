"""Loaders for the real MTSAD benchmarks from files you already have (nothing is downloaded).

Each returns ``Bunch(X_train, X_test, y_test, name, columns)`` with float64 arrays, point labels
0/1 for the test part and the train part assumed normal. Expected layouts (the common
distributions of each data set):

=========  =================================================================================
name       files under ``root``
=========  =================================================================================
``psm``    ``train.csv``, ``test.csv``, ``test_label.csv`` (first column a timestamp; labels in
           the column ``label``)
``smd``    ``train/<machine>.txt``, ``test/<machine>.txt``, ``test_label/<machine>.txt``
           (comma-separated values without header; pass ``machine="machine-1-1"``)
``msl``    ``MSL_train.npy``, ``MSL_test.npy``, ``MSL_test_label.npy`` (also ``smap``: ``SMAP_*``)
``swat``   ``SWaT_Dataset_Normal_v1.csv`` and ``SWaT_Dataset_Attack_v0.csv`` (a timestamp
           column first, a last column ``Normal/Attack`` with values "Normal" / "Attack"); the
           first rows of the normal file may be a title line, detected and skipped
``wadi``   ``WADI_14days.csv`` (normal) and ``WADI_attackdata.csv`` (test) plus
           ``WADI_attack_labels.csv`` holding one 0/1 label per test row (the labels come from
           the attack table, which every user converts differently); ``Row``, ``Date`` and
           ``Time`` columns are dropped, and columns that are empty in the normal file too
=========  =================================================================================

Missing values are forward- then back-filled (columns entirely empty are dropped).
"""

from __future__ import annotations

import csv
import pathlib

import numpy as np
from sklearn.utils import Bunch

__all__ = ["DATASETS", "load_mtsad"]

DATASETS = ("psm", "smd", "msl", "smap", "swat", "wadi")


def _read_csv(path: pathlib.Path) -> tuple[list[str], list[list[str]]]:
    if not path.is_file():
        raise FileNotFoundError(f"root: missing {path.name} (expected at {path})")
    with path.open(newline="") as f:
        rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    if len(rows) < 2:
        raise ValueError(f"root: {path.name} has no data rows")
    # a title line before the header (SWaT's normal file): the header is the widest row
    if len(rows[0]) < len(rows[1]):
        rows = rows[1:]
    return [c.strip() for c in rows[0]], rows[1:]


def _to_float(rows: list[list[str]], cols: list[int]) -> np.ndarray:
    out = np.full((len(rows), len(cols)), np.nan)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            v = r[c].strip() if c < len(r) else ""
            try:
                out[i, j] = float(v)
            except ValueError:
                pass
    return out


def _fill(X: np.ndarray) -> np.ndarray:
    """Forward- then back-fill NaNs per column."""
    X = X.copy()
    for j in range(X.shape[1]):
        col = X[:, j]
        ok = ~np.isnan(col)
        if not ok.any():
            continue
        idx = np.where(ok, np.arange(len(col)), 0)
        np.maximum.accumulate(idx, out=idx)
        col = col[idx]
        first = np.argmax(ok)
        col[:first] = col[first]
        X[:, j] = col
    return X


def _finish(name: str, X_tr: np.ndarray, X_te: np.ndarray, y: np.ndarray, cols: list[str]) -> Bunch:
    keep = ~(np.isnan(X_tr).all(0) | np.isnan(X_te).all(0))
    X_tr, X_te = _fill(X_tr[:, keep]), _fill(X_te[:, keep])
    y = np.asarray(y).astype(int).ravel()
    if y.shape[0] != X_te.shape[0]:
        raise ValueError(f"root: {name} has {X_te.shape[0]} test rows but {y.shape[0]} labels")
    if not set(np.unique(y)) <= {0, 1}:
        raise ValueError(f"root: {name} labels must be 0/1")
    return Bunch(
        X_train=X_tr, X_test=X_te, y_test=y, name=name,
        columns=[c for c, k in zip(cols, keep, strict=True) if k],
    )  # fmt: skip


def load_mtsad(name: str, root: str | pathlib.Path, machine: str | None = None) -> Bunch:
    """Load a real multivariate anomaly-detection benchmark from local files.

    Parameters
    ----------
    name : {"psm", "smd", "msl", "smap", "swat", "wadi"}
        The benchmark (layouts in the module docstring).
    root : str or Path
        Folder holding its files.
    machine : str, optional
        The SMD machine, e.g. ``"machine-1-1"`` (required for ``"smd"``).

    Returns
    -------
    sklearn.utils.Bunch
        ``X_train`` (T_train, N), ``X_test`` (T_test, N), ``y_test`` (T_test,) 0/1, ``name``,
        ``columns``.
    """
    if name not in DATASETS:
        raise ValueError(f"name must be one of {DATASETS}; got {name!r}")
    root = pathlib.Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"root: {str(root)!r} is not a folder")
    if name == "psm":
        head, tr = _read_csv(root / "train.csv")
        _, te = _read_csv(root / "test.csv")
        lab_head, lab = _read_csv(root / "test_label.csv")
        cols = list(range(1, len(head)))
        li = lab_head.index("label") if "label" in lab_head else len(lab_head) - 1
        y = _to_float(lab, [li])[:, 0]
        return _finish(name, _to_float(tr, cols), _to_float(te, cols), y, head[1:])
    if name == "smd":
        if not machine:
            raise ValueError("machine: SMD needs a machine name such as 'machine-1-1'")
        arrays = []
        for sub in ("train", "test", "test_label"):
            path = root / sub / f"{machine}.txt"
            if not path.is_file():
                raise FileNotFoundError(f"root: missing {sub}/{machine}.txt")
            arrays.append(np.loadtxt(path, delimiter=",", ndmin=2))
        n = arrays[0].shape[1]
        return _finish(name, arrays[0], arrays[1], arrays[2][:, 0], [f"x{i}" for i in range(n)])
    if name in ("msl", "smap"):
        prefix = name.upper()
        parts = []
        for suffix in ("train", "test", "test_label"):
            path = root / f"{prefix}_{suffix}.npy"
            if not path.is_file():
                raise FileNotFoundError(f"root: missing {path.name}")
            parts.append(np.load(path, allow_pickle=False).astype(float))
        n = parts[0].shape[1]
        return _finish(name, parts[0], parts[1], parts[2], [f"x{i}" for i in range(n)])
    if name == "swat":
        head, tr = _read_csv(root / "SWaT_Dataset_Normal_v1.csv")
        head_te, te = _read_csv(root / "SWaT_Dataset_Attack_v0.csv")
        label_col = len(head) - 1
        cols = list(range(1, label_col))
        y = np.array([r[len(head_te) - 1].strip().lower().startswith("a") for r in te], int)
        return _finish(name, _to_float(tr, cols), _to_float(te, cols), y, head[1:label_col])
    # wadi
    head, tr = _read_csv(root / "WADI_14days.csv")
    head_te, te = _read_csv(root / "WADI_attackdata.csv")
    drop = {"row", "date", "time"}
    cols = [i for i, c in enumerate(head) if c.strip().lower() not in drop]
    names = [head[i] for i in cols]
    idx_te = [head_te.index(c) if c in head_te else -1 for c in names]
    if -1 in idx_te:
        missing = names[idx_te.index(-1)]
        raise ValueError(f"root: WADI test file lacks column {missing!r}")
    lab_path = root / "WADI_attack_labels.csv"
    if not lab_path.is_file():
        raise FileNotFoundError("root: missing WADI_attack_labels.csv (one 0/1 label per test row)")
    y = np.loadtxt(lab_path, delimiter=",", ndmin=1)
    return _finish(name, _to_float(tr, cols), _to_float(te, idx_te), y, names)
