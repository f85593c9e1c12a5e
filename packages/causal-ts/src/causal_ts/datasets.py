"""Loaders for the real MTSAD benchmarks from files you already have (nothing is downloaded).

Each returns ``Bunch(X_train, X_test, y_test, name, columns)`` with float64 arrays, point labels
0/1 for the test part and the train part assumed normal. Expected layouts (the common
distributions of each data set):

=========  =================================================================================
name       files under ``root``
=========  =================================================================================
``psm``    ``train.csv``, ``test.csv``, ``test_label.csv`` (first column a timestamp; labels in
           the column ``label``, matched to the test rows by timestamp)
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

__all__ = ["DAPHNET_CHANNELS", "DATASETS", "load_daphnet", "load_mtsad"]

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


_MISSING = {"", "nan", "na", "n/a", "null", "none"}


def _to_float(rows: list[list[str]], cols: list[int], path: pathlib.Path, width: int) -> np.ndarray:
    """Numeric cells of ``cols``; empty / "nan" cells are missing, any other text raises.

    A silently skipped cell would be filled from its neighbour, so a second header row, a shifted
    column or a stray unit in a real file must stop the load instead.
    """
    out = np.full((len(rows), len(cols)), np.nan)
    for i, r in enumerate(rows):
        if len(r) != width:
            raise ValueError(
                f"root: {path.name} row {i + 2} has {len(r)} fields, the header has {width}"
            )
        for j, c in enumerate(cols):
            v = r[c].strip()
            if v.lower() in _MISSING:
                continue
            try:
                out[i, j] = float(v)
            except ValueError:
                raise ValueError(
                    f"root: {path.name} row {i + 2} column {c + 1} is not a number: {v[:30]!r}"
                ) from None
    return out


def _align_by_key(keys: list[str], label_keys: list[str], y: np.ndarray) -> np.ndarray:
    """Labels reordered to the test rows' timestamps; missing or extra timestamps raise.

    A label file sorted differently, or one with rows dropped, would otherwise shift every
    label after the first gap onto the wrong time step.
    """

    def norm(k: str) -> str:  # "12" and "12.0" name the same minute
        try:
            return repr(float(k))
        except ValueError:
            return k

    keys, label_keys = [norm(k) for k in keys], [norm(k) for k in label_keys]
    pos = {}
    for i, k in enumerate(label_keys):
        if k in pos:
            raise ValueError(f"root: test_label.csv repeats the timestamp {k!r}")
        pos[k] = i
    missing = [k for k in keys if k not in pos]
    if missing:
        raise ValueError(
            f"root: test_label.csv has no label for {len(missing)} test timestamps "
            f"(first {missing[:3]})"
        )
    if len(pos) != len(keys):
        extra = sorted(set(pos) - set(keys))
        raise ValueError(
            f"root: test_label.csv has {len(extra)} timestamps that test.csv lacks "
            f"(first {extra[:3]})"
        )
    return y[[pos[k] for k in keys]]


def _swat_label(value: str, i: int) -> int:
    v = value.strip().lower().replace(" ", "")  # the attack file spells it "A ttack" in places
    if v == "normal":
        return 0
    if v == "attack":
        return 1
    raise ValueError(f"root: SWaT attack file row {i + 2}: label {value!r} is not Normal/Attack")


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
    if X_tr.shape[1] != X_te.shape[1]:
        raise ValueError(
            f"root: {name} train has {X_tr.shape[1]} columns but test has {X_te.shape[1]}"
        )
    if len(X_tr) == 0 or len(X_te) == 0:
        raise ValueError(f"root: {name} has an empty train or test part")
    keep = ~(np.isnan(X_tr).all(0) | np.isnan(X_te).all(0))
    X_tr, X_te = _fill(X_tr[:, keep]), _fill(X_te[:, keep])
    y = np.asarray(y, dtype=float).ravel()
    if y.shape[0] != X_te.shape[0]:
        raise ValueError(f"root: {name} has {X_te.shape[0]} test rows but {y.shape[0]} labels")
    if not set(np.unique(y).tolist()) <= {0.0, 1.0}:
        raise ValueError(f"root: {name} labels must be 0/1, got {np.unique(y)[:5].tolist()}")
    y = y.astype(int)
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
        head_te, te = _read_csv(root / "test.csv")
        if head_te != head:
            raise ValueError("root: PSM train.csv and test.csv headers differ")
        lab_head, lab = _read_csv(root / "test_label.csv")
        cols = list(range(1, len(head)))
        li = lab_head.index("label") if "label" in lab_head else len(lab_head) - 1
        y = _to_float(lab, [li], root / "test_label.csv", len(lab_head))[:, 0]
        if np.isnan(y).any():
            raise ValueError("root: test_label.csv has missing labels")
        X_tr = _to_float(tr, cols, root / "train.csv", len(head))
        X_te = _to_float(te, cols, root / "test.csv", len(head))
        if len(lab_head) >= 2 and li != 0:  # labels keyed by the timestamp in their first column
            y = _align_by_key([r[0].strip() for r in te], [r[0].strip() for r in lab], y)
        elif len(y) != len(X_te):
            raise ValueError(f"root: test_label.csv has {len(y)} labels for {len(X_te)} test rows")
        return _finish(name, X_tr, X_te, y, head[1:])
    if name == "smd":
        if not machine:
            raise ValueError("machine: SMD needs a machine name such as 'machine-1-1'")
        arrays = []
        for sub in ("train", "test", "test_label"):
            path = root / sub / f"{machine}.txt"
            if not path.is_file():
                raise FileNotFoundError(f"root: missing {sub}/{machine}.txt")
            try:
                arrays.append(np.loadtxt(path, delimiter=",", ndmin=2))
            except ValueError as e:  # a header row, a ragged row, a stray word
                raise ValueError(f"root: {sub}/{machine}.txt is not plain numbers ({e})") from e
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
        if [c.lower() for c in head_te] != [c.lower() for c in head]:
            raise ValueError("root: SWaT normal and attack files have different headers")
        label_col = len(head) - 1
        cols = list(range(1, label_col))
        y = np.array([_swat_label(r[label_col], i) for i, r in enumerate(te)], int)
        X_tr = _to_float(tr, cols, root / "SWaT_Dataset_Normal_v1.csv", len(head))
        X_te = _to_float(te, cols, root / "SWaT_Dataset_Attack_v0.csv", len(head))
        return _finish(name, X_tr, X_te, y, head[1:label_col])
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
    try:
        y = np.loadtxt(lab_path, delimiter=",", ndmin=1)
    except ValueError as e:
        raise ValueError(f"root: WADI_attack_labels.csv is not one number per row ({e})") from e
    X_tr = _to_float(tr, cols, root / "WADI_14days.csv", len(head))
    X_te = _to_float(te, idx_te, root / "WADI_attackdata.csv", len(head_te))
    return _finish(name, X_tr, X_te, y, names)


DAPHNET_CHANNELS = (
    "ankle_forward", "ankle_vertical", "ankle_lateral",
    "thigh_forward", "thigh_vertical", "thigh_lateral",
    "trunk_forward", "trunk_vertical", "trunk_lateral",
)  # fmt: skip


def load_daphnet(path: str | pathlib.Path) -> Bunch:
    """Read one original UCI Daphnet freezing-of-gait file (``dataset/S01R01.txt``).

    Each row holds 11 space-separated integers: the time in ms, nine acceleration channels in
    mg (ankle, thigh, trunk; forward, vertical, lateral) and the annotation ``0`` (not part of
    the experiment), ``1`` (no freeze) or ``2`` (freeze). Every row is returned; the mask
    ``in_experiment`` says which the annotation counts.

    Parameters
    ----------
    path : str or Path
        The ``.txt`` file.

    Returns
    -------
    sklearn.utils.Bunch
        ``X`` (T, 9) float64 in mg, ``y`` (T,) 1 on freeze rows, ``in_experiment`` (T,) bool,
        ``time_ms`` (T,) int64, ``columns``, ``name`` (the file stem).

    Raises
    ------
    ValueError
        A row without 11 integer fields, an annotation outside {0, 1, 2} or a time that does
        not increase (a concatenation or a sorted copy), each with its row number.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: {str(path)!r} is not a file")
    rows = []
    with path.open() as f:
        for i, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 11:
                raise ValueError(
                    f"path: {path.name} row {i} has {len(fields)} fields; a Daphnet file has 11 "
                    "(time, 9 acceleration channels, annotation)"
                )
            try:
                rows.append([int(v) for v in fields])
            except ValueError:
                raise ValueError(
                    f"path: {path.name} row {i} is not 11 integers: {line.strip()[:40]!r}"
                ) from None
    if not rows:
        raise ValueError(f"path: {path.name} has no data rows")
    a = np.asarray(rows, dtype=np.int64)
    bad = np.flatnonzero(~np.isin(a[:, 10], (0, 1, 2)))
    if bad.size:
        raise ValueError(
            f"path: {path.name} row {bad[0] + 1}: annotation {a[bad[0], 10]} is not 0, 1 or 2"
        )
    back = np.flatnonzero(np.diff(a[:, 0]) <= 0)
    if back.size:
        raise ValueError(f"path: {path.name} row {back[0] + 2}: the time does not increase")
    return Bunch(
        X=a[:, 1:10].astype(np.float64),
        y=(a[:, 10] == 2).astype(np.int64),
        in_experiment=a[:, 10] != 0,
        time_ms=a[:, 0],
        columns=list(DAPHNET_CHANNELS),
        name=path.stem,
    )
