"""``load_connectomes``: ABIDE / ADHD-200-style local folders (no downloads).

Per-subject ROI time series (``*.1D`` / ``.txt`` / ``.csv``, T x n, ``#`` header lines skipped,
the ABIDE Preprocessed ``rois_*`` layout) or per-subject connectivity matrices (``.npy``, ``.csv``,
``.mat``), matched to a phenotype CSV by the subject id appearing as a number in the file name.
"""

from __future__ import annotations

import csv
import re
import warnings
from pathlib import Path

import numpy as np

from brain_gcl.generator import BrainGraphDataset, correlation
from brain_gcl.graphs import check_fc

__all__ = ["load_connectomes"]

_SUFFIXES = (".1d", ".txt", ".csv", ".npy", ".mat")


def _read(path: Path) -> np.ndarray:
    suf = path.suffix.lower()
    if suf == ".npy":
        return np.load(path)
    if suf == ".mat":
        from scipy.io import loadmat

        arrays = [v for k, v in loadmat(path).items() if not k.startswith("__") and np.ndim(v) == 2]
        if not arrays:
            raise ValueError(f"{path.name}: no 2-D array inside")
        return np.asarray(arrays[0], dtype=float)
    delim = "," if suf == ".csv" else None
    lines = [
        ln for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not lines:
        raise ValueError(f"{path.name}: no data rows")
    head = [t.strip().lower() for t in (lines[0].split(delim) if delim else lines[0].split())]
    # the ADHD-200 Athena pipeline's *_TCs.1D files start with File and Sub-brick columns
    skip_cols = 2 if head[:2] == ["file", "sub-brick"] else 0
    first = 0 if _numeric(head) else 1  # a header row of ROI names
    table = []
    for i, ln in enumerate(lines[first:], start=first + 1):
        toks = ln.split(delim) if delim else ln.split()
        try:
            table.append([float(t) if t.strip() else np.nan for t in toks[skip_cols:]])
        except ValueError:
            raise ValueError(
                f"{path.name}: data row {i} holds text where a number is expected ({ln[:40]!r})"
            ) from None
    if len({len(r) for r in table}) != 1:
        raise ValueError(f"{path.name}: rows have different numbers of fields")
    return np.atleast_2d(np.asarray(table, dtype=float))


def _numeric(tokens: list[str]) -> bool:
    try:
        for t in tokens:
            if t:
                float(t)
    except ValueError:
        return False
    return True


_MISSING_CODES = {"", "pending", "n/a", "na", "nan", "none", "null", "unknown", "-999", "-9999"}


def _dropna_timepoints(a: np.ndarray, name: str) -> np.ndarray:
    """Time points (rows) with a missing value in a live ROI are dropped with a warning: one NaN
    would otherwise turn that ROI's whole connectivity row into NaN (then zero)."""
    nan = np.isnan(a)
    if not nan.any():
        return a
    dead = nan.all(axis=0)  # ROIs missing at every time point stay NaN (zero-variance rows)
    bad = (nan & ~dead).any(axis=1)
    if bad.all():
        raise ValueError(f"{name}: every time point has a missing value")
    warnings.warn(
        f"{name}: {int(bad.sum())} of {len(a)} time points with missing values were dropped",
        stacklevel=3,
    )
    return a[~bad]


def _partial(ts: np.ndarray) -> np.ndarray:
    from sklearn.covariance import LedoitWolf

    P = LedoitWolf().fit(ts).precision_
    d = np.sqrt(np.diag(P))
    out = -P / np.outer(d, d)
    np.fill_diagonal(out, 1.0)
    return out


_ATLAS = re.compile(r"rois_([A-Za-z0-9]+)", re.IGNORECASE)


def _atlas_of(path: Path) -> str | None:
    m = _ATLAS.search(path.stem)
    return m.group(1).lower() if m else None


def load_connectomes(root, phenotype_csv, id_col: str = "SUB_ID", label_col: str = "DX_GROUP",
                     site_col: str | None = "SITE_ID", positive_label=1,
                     kind: str = "correlation", nan_policy: str = "zero",
                     atlas: str | None = None,
                     unlabelled: str = "raise") -> BrainGraphDataset:  # fmt: skip
    """Read a local connectome folder and its phenotype table.

    Parameters
    ----------
    root : path
        Folder searched recursively for per-subject files.
    phenotype_csv : path
        CSV with subject id, diagnosis and (optionally) site columns.
    positive_label : value or sequence of values
        Diagnosis codes mapped to 1 (ABIDE: DX_GROUP 1 = ASD; ADHD-200: ``(1, 2, 3)``); every other
        code maps to 0.
    kind : {"correlation", "partial correlation"}
        Connectivity from time series (Ledoit-Wolf shrinkage for the partial one); matrices are used
        as given.
    atlas : str, optional
        Keep only files of this parcellation: the ABIDE Preprocessed ``rois_<atlas>`` token
        (``"cc200"``, ``"aal"``, ...) or, for other layouts, a case-insensitive substring of the
        file path. Without it, a folder holding several ``rois_*`` atlases raises.
    unlabelled : {"raise", "drop"}, default="raise"
        Subjects whose diagnosis is empty or a missing marker (``pending``, ``n/a``, ``-999``):
        raise listing them, or drop them with a warning (never read as controls).

    Raises
    ------
    ValueError
        The same subject in two files (e.g. ``.1D`` time series and a ``.npy`` matrix: loading
        both would put one subject in train and test), several atlases without ``atlas=``,
        different ROI counts, no matching file.

    Warns
    -----
    UserWarning
        Time series with fewer time points than ROIs (rank-deficient correlation), files whose
        name holds no phenotype id (listed), phenotype rows without a file.

    Returns
    -------
    BrainGraphDataset
        ``truth["site_names"]`` holds the site names behind the integer codes.
    """
    root, pheno = Path(root), Path(phenotype_csv)
    if not root.is_dir():
        raise FileNotFoundError(f"root {root} is not a directory")
    if not pheno.is_file():
        raise FileNotFoundError(f"phenotype_csv {pheno} does not exist")
    if unlabelled not in ("raise", "drop"):
        raise ValueError(f"unlabelled must be 'raise' or 'drop', got {unlabelled!r}")
    if kind not in ("correlation", "partial correlation"):
        raise ValueError(f"kind must be 'correlation' or 'partial correlation', got {kind!r}")
    with pheno.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise ValueError(f"phenotype_csv {pheno.name} has no rows")
    for col in (id_col, label_col) + ((site_col,) if site_col else ()):
        if col not in rows[0]:
            raise ValueError(f"phenotype_csv has no column {col!r} (columns: {list(rows[0])})")
    table, conflicts, missing_dx = {}, [], []
    for r in rows:
        try:
            sid = int(float(r[id_col]))
        except ValueError:
            continue
        code = (r[label_col] or "").strip()
        if code.lower() in _MISSING_CODES:
            missing_dx.append(sid)
            continue
        if sid in table and (
            table[sid][label_col].strip() != code
            or (site_col and table[sid][site_col] != r[site_col])
        ):
            conflicts.append(sid)
        table[sid] = r
    if conflicts:
        raise ValueError(
            f"phenotype_csv: {len(conflicts)} subjects have rows with conflicting "
            f"{label_col!r}/{site_col!r} values ({sorted(set(conflicts))[:5]}); fix the table"
        )
    if missing_dx:
        if unlabelled == "raise":
            raise ValueError(
                f"phenotype_csv: {len(missing_dx)} subjects have no diagnosis in {label_col!r} "
                f"(empty or 'pending': {missing_dx[:5]}); pass unlabelled='drop' to skip them"
            )
        warnings.warn(
            f"{len(missing_dx)} subjects without a diagnosis were dropped: {missing_dx[:5]}",
            stacklevel=2,
        )
    positives = {str(v) for v in np.atleast_1d(positive_label)}
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in _SUFFIXES and p != pheno)
    if atlas is not None:
        if not isinstance(atlas, str) or not atlas:
            raise TypeError(f"atlas must be a non-empty string, got {atlas!r}")
        want = atlas.lower()
        files = [p for p in files
                 if _atlas_of(p) == want or (_atlas_of(p) is None and want in str(p).lower())]  # fmt: skip
        if not files:
            raise ValueError(f"no file under {root} belongs to atlas {atlas!r}")
    else:
        atlases = sorted({a for a in map(_atlas_of, files) if a is not None})
        if len(atlases) > 1:
            raise ValueError(f"{root} holds several atlases {atlases}; pass atlas= to pick one")
    by_subject, unmatched = {}, []
    for path in files:
        match = [int(g) for g in re.findall(r"\d+", path.stem) if int(g) in table]
        if not match:
            unmatched.append(path.name)
            continue
        by_subject.setdefault(match[0], []).append(path)
    pairs = _one_file_per_subject(by_subject)
    if unmatched:
        warnings.warn(
            f"{len(unmatched)} files hold no subject id of {pheno.name} and were skipped: "
            f"{unmatched[:5]}{' ...' if len(unmatched) > 5 else ''}",
            stacklevel=2,
        )
    fcs, ys, sites, ids, short = [], [], [], [], []
    for sid, path in pairs:
        a = _read(path)
        if a.ndim != 2:
            raise ValueError(f"{path.name}: expected a 2-D array, got shape {a.shape}")
        if a.shape[0] == a.shape[1] and np.allclose(a, a.T, equal_nan=True):
            fc = a  # a connectivity matrix
            off = fc[~np.eye(len(fc), dtype=bool)]
            diag = np.diag(fc)
            if np.nanmax(np.abs(off), initial=0) > 1 + 1e-6 or not np.all(
                np.isnan(diag) | np.isclose(diag, 1, atol=1e-6) | (diag == 0)
            ):
                raise ValueError(
                    f"{path.name}: not a correlation matrix (diagonal {np.nanmin(diag):.3g}.."
                    f"{np.nanmax(diag):.3g}, largest off-diagonal |value| "
                    f"{np.nanmax(np.abs(off)):.3g}): a covariance (divide by the outer product "
                    "of sqrt(diag)) or Fisher-z values (np.tanh) must be converted first"
                )
        else:
            a = _dropna_timepoints(a, path.name)
            if a.shape[0] < a.shape[1]:
                short.append(f"{path.name} (T={a.shape[0]} < {a.shape[1]} ROIs)")
            ts = a.T[None]  # (1, n, T)
            if (ts.std(axis=2) == 0).any():
                fc = correlation(ts)[0]
                dead = np.flatnonzero(ts[0].std(axis=1) == 0)
                fc[dead, :] = fc[:, dead] = np.nan
            else:
                fc = correlation(ts)[0] if kind == "correlation" else _partial(a)
        fcs.append(fc)
        r = table[sid]
        code = r[label_col].strip()
        try:
            code = str(int(float(code)))
        except ValueError:
            pass
        ys.append(int(code in positives))
        sites.append(r[site_col] if site_col else "all")
        ids.append(sid)
    if not fcs:
        raise ValueError(f"no subject file under {root} matches an id in {pheno.name}")
    if short:
        warnings.warn(
            f"{len(short)} time series have fewer time points than ROIs, so their correlation "
            f"matrices are rank-deficient (a transposed file?): {short[:5]}",
            stacklevel=2,
        )
    if len({f.shape for f in fcs}) != 1:
        raise ValueError(f"subjects have different ROI counts: {sorted({f.shape[0] for f in fcs})}")
    missing = len(table) - len(set(ids))
    if missing:
        warnings.warn(f"{missing} phenotype rows have no connectome file", stacklevel=2)
    fc = check_fc(np.stack(fcs), "connectomes", nan_policy)
    names, codes = np.unique(np.asarray(sites), return_inverse=True)
    return BrainGraphDataset(fc, np.asarray(ys), codes.astype(np.int64),
                             {"site_names": names.tolist()}, ids)  # fmt: skip


def _one_file_per_subject(by_subject: dict[int, list[Path]]) -> list[tuple[int, Path]]:
    """(subject, file) pairs ordered by file name; a subject in two files raises."""
    dup = {sid: ps for sid, ps in by_subject.items() if len(ps) > 1}
    if dup:
        show = "; ".join(
            f"{sid}: {', '.join(p.name for p in ps)}" for sid, ps in list(dup.items())[:5]
        )
        raise ValueError(
            f"{len(dup)} subjects appear in more than one file ({show}); loading both would count "
            "a subject twice (and leak it across CV folds). Remove the extra files or pass atlas="
        )
    return sorted(((sid, ps[0]) for sid, ps in by_subject.items()), key=lambda kv: str(kv[1]))
