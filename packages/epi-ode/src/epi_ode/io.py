"""Surveillance data in and out: the Cola-GNN / EpiGNN / EARTH text layout and CDC-style long CSVs.

``load_colagnn`` reads ``name.txt`` (T x N counts) and ``name-adj.txt`` (N x N), the layout the
official EARTH, Cola-GNN and EpiGNN code reads; ``read_wide_csv`` is the same reader for any
wide table; ``load_ilinet`` reads CDC FluView ILINet downloads and Delphi-epidata-style long
tables (one row per region and week) onto a gap-free MMWR-week grid.

Every reader detects the delimiter (comma, semicolon, tab, whitespace) and a header row instead
of trusting a default, reads empty fields and the usual missing tokens as NaN, and raises a
``ValueError`` naming the file, line and column for anything it would otherwise drop or misread:
a ragged row, a non-numeric field, a negative count, a duplicated region-week, an empty file.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from epi_ode.validation import check_adjacency, check_series

__all__ = [
    "MISSING",
    "EpiSeries",
    "epiweek_range",
    "load_colagnn",
    "load_ilinet",
    "read_wide_csv",
    "save_colagnn",
]

MISSING = frozenset({"", "nan", "na", "n/a", "null", "none", "x", "-", "."})
_DELIMS = ",;\t|"


@dataclass(frozen=True)
class EpiSeries:
    """A (T, N) series on a regular weekly grid.

    Attributes
    ----------
    values : ndarray (T, N)
        Counts (NaN = not reported that week).
    regions : list of str
        Column names, in order of first appearance in the file.
    epiweeks : list of int
        MMWR weeks as ``YYYYWW`` integers, consecutive (53-week years included).
    """

    values: np.ndarray
    regions: list[str]
    epiweeks: list[int]

    def drop(self, regions) -> EpiSeries:
        """A new series without the named regions (e.g. those reported as all missing)."""
        names = [regions] if isinstance(regions, str) else list(regions)
        unknown = [r for r in names if r not in self.regions]
        if unknown:
            raise ValueError(f"regions: {unknown} are not in this series ({self.regions[:8]})")
        keep = [j for j, r in enumerate(self.regions) if r not in names]
        if not keep:
            raise ValueError("regions: dropping them would leave no region")
        return EpiSeries(
            self.values[:, keep].copy(), [self.regions[j] for j in keep], list(self.epiweeks)
        )


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    raw = path.read_bytes()
    if b"\x00" in raw:
        raise ValueError(f"{path.name}: not a text file (NUL bytes)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _sniff(lines: list[str], name: str) -> str | None:
    """The delimiter used consistently by the sample lines (None = runs of whitespace)."""
    sample = [ln for ln in lines if ln.strip()][:50]
    if not sample:
        raise ValueError(f"{name}: the file is empty")
    semis = [ln.count(";") for ln in sample]
    if semis[-1] and len(set(semis[1:] or semis)) == 1:
        return ";"  # never inside a number, while a comma may be a decimal separator
    best, best_score = None, 0
    for d in _DELIMS:
        counts = [ln.count(d) for ln in sample]
        if counts[-1] and len(set(counts[1:] or counts)) == 1 and counts[-1] > best_score:
            best, best_score = d, counts[-1]
    if best is None:
        if all(ln.count(",") == 0 for ln in sample) and any(len(ln.split()) > 1 for ln in sample):
            return None  # whitespace-separated
        return ","  # one column
    return best


def _split(text: str, delimiter: str | None, name: str) -> list[list[str]]:
    lines = text.splitlines()
    delim = delimiter if delimiter is not None else _sniff(lines, name)
    if delim is None:
        return [ln.split() for ln in lines if ln.strip()]
    return [
        row for row in csv.reader(io.StringIO(text), delimiter=delim) if any(c.strip() for c in row)
    ]


_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+$")


def _number(token: str, decimal_comma: bool = False) -> float | None:
    t = token.strip()
    if t.lower() in MISSING:
        return np.nan
    if decimal_comma and _DECIMAL_COMMA.match(t):
        t = t.replace(",", ".")
    try:  # no thousands separators; "1,5" is read only where the delimiter is not a comma
        return float(t)
    except ValueError:
        return None


def _looks_like_index(row: list[str]) -> bool:
    """``1, 2, ..., N`` or ``0, 1, ..., N-1``: column numbers, not a week of counts."""
    try:
        v = [float(c) for c in row]
    except ValueError:
        return False
    return len(v) >= 3 and (v == list(range(1, len(v) + 1)) or v == list(range(len(v))))


def read_wide_csv(path, delimiter: str | None = None, header: bool | None = None):
    """A wide table of numbers (rows = time, columns = regions), header and delimiter detected.

    Parameters
    ----------
    path : str or Path
    delimiter : str, optional
        Force a delimiter; default: detected among comma, semicolon, tab, ``|`` and whitespace.
        In a semicolon-separated table (the European convention) ``1,5`` is 1.5.
    header : bool, optional
        Force the first row to be (or not be) a header; default: a first row with a field that
        is neither a number nor a missing token is a header, and so is a first row that numbers
        the columns (``1, 2, ..., N``), with a warning.

    Returns
    -------
    values : ndarray (T, N)
        Missing tokens (empty, ``nan``, ``NA``, ``X``, ...) as NaN.
    columns : list of str or None
        The header's names, or None without a header.

    Raises
    ------
    ValueError
        Empty file, ragged rows, a non-numeric field outside the header (line and column named).
    """
    path = Path(path)
    text = _read_text(path)
    delim = delimiter if delimiter is not None else _sniff(text.splitlines(), path.name)
    rows = _split(text, delim, path.name)
    if not rows:
        raise ValueError(f"{path.name}: the file is empty")
    # a semicolon table is the European convention: its commas are decimal separators
    comma = delim == ";"
    if (
        delim == ","
        and "." not in text
        and all(len(r) == 2 for r in rows)
        and any(
            re.match(r"^\d*[1-9]\d*$", r[1].strip()) and r[1].strip().startswith("0") for r in rows
        )
    ):
        raise ValueError(
            f"{path.name}: every row holds two comma-separated integers and some second fields "
            "have leading zeros: these look like decimal commas (one column) rather than two "
            "columns; pass delimiter=';' or fix the file"
        )
    first_numeric = all(_number(c, comma) is not None for c in rows[0])
    has_header = (not first_numeric) if header is None else bool(header)
    if header is None and first_numeric and len(rows) > 1 and _looks_like_index(rows[0]):
        has_header = True
        warnings.warn(
            f"{path.name}: the first row {[c.strip() for c in rows[0][:4]]}... numbers the "
            "columns and was read as the header (pass header=False if it is a week of counts)",
            UserWarning,
            stacklevel=2,
        )
    columns = [c.strip() for c in rows[0]] if has_header else None
    body = rows[1:] if has_header else rows
    if not body:
        raise ValueError(f"{path.name}: no data rows after the header")
    width = len(columns) if columns is not None else len(body[0])
    out = np.empty((len(body), width))
    for i, row in enumerate(body):
        line = i + 1 + int(has_header)
        if len(row) != width:
            raise ValueError(
                f"{path.name}: line {line} has {len(row)} fields, expected {width} (a ragged "
                "row, or the wrong delimiter)"
            )
        for j, tok in enumerate(row):
            v = _number(tok, comma)
            if v is None:
                raise ValueError(
                    f"{path.name}: line {line}, column {j + 1}: {tok!r} is not a number"
                )
            out[i, j] = v
    return out, columns


def load_colagnn(series_path, adjacency_path=None, delimiter: str | None = None):
    """Read a (T, N) count matrix and, optionally, its (N, N) adjacency (Cola-GNN layout).

    The official layout is comma-separated without a header (``us_hhs.txt`` and
    ``us_hhs-adj.txt``); a header row, another delimiter and missing fields are detected and
    handled (never read as a week of data). Negative counts raise.

    Returns
    -------
    Y : ndarray (T, N)
    A : ndarray (N, N) or None
    """
    path = Path(series_path)
    Y, _ = read_wide_csv(path, delimiter)
    Y = check_series(Y, f"series file {path.name}", nonnegative=True)
    A = None
    if adjacency_path is not None:
        apath = Path(adjacency_path)
        A, _ = read_wide_csv(apath, delimiter)
        A = check_adjacency(A, name=f"adjacency file {apath.name}")
        if A.shape[0] != Y.shape[1]:
            raise ValueError(
                f"adjacency file {apath.name} has {A.shape[0]} regions, series has {Y.shape[1]}"
            )
    return Y, A


def save_colagnn(series_path, Y, adjacency_path=None, adjacency=None) -> None:
    """Write ``Y`` (T, N) and optionally ``adjacency`` (N, N) in the Cola-GNN layout.

    Missing values are written as ``nan`` and read back as NaN by :func:`load_colagnn`.
    """
    Y = check_series(Y, "Y", nonnegative=True)
    if adjacency_path is not None and adjacency is None:
        raise ValueError("adjacency is required with adjacency_path")
    A = None if adjacency is None else check_adjacency(adjacency, Y.shape[1])
    np.savetxt(series_path, Y, delimiter=",", fmt="%.17g")
    if adjacency_path is not None:
        np.savetxt(adjacency_path, A, delimiter=",", fmt="%.17g")


# ------------------------------------------------------------------------------ MMWR weeks


def _mmwr_start(year: int) -> dt.date:
    """Sunday starting MMWR week 1: the week (Sunday-Saturday) holding January 4."""
    jan4 = dt.date(year, 1, 4)
    return jan4 - dt.timedelta(days=(jan4.weekday() + 1) % 7)


def _weeks_in(year: int) -> int:
    return (_mmwr_start(year + 1) - _mmwr_start(year)).days // 7


def epiweek_range(first: int, last: int) -> list[int]:
    """Every MMWR week from ``first`` to ``last`` inclusive, as ``YYYYWW`` integers.

    >>> epiweek_range(201452, 201502)   # 2014 has 53 MMWR weeks
    [201452, 201453, 201501, 201502]
    """
    out = []
    year, week = divmod(int(first), 100)
    if not 1 <= week <= _weeks_in(year):
        raise ValueError(f"epiweek {first}: week {week} is not in year {year}")
    while year * 100 + week <= last:
        out.append(year * 100 + week)
        week += 1
        if week > _weeks_in(year):
            year, week = year + 1, 1
    return out


def _find(cols: list[str], wanted: str | None, choices: tuple[str, ...], what: str, name: str):
    low = [c.strip().lower() for c in cols]
    for cand in (wanted,) if wanted else choices:
        if cand.lower() in low:
            return low.index(cand.lower())
    if wanted:
        raise ValueError(f"{name}: no {what} column {wanted!r}; columns are {cols}")
    return None


def load_ilinet(
    path,
    value: str | None = None,
    region: str | None = None,
    delimiter: str | None = None,
) -> EpiSeries:
    """A CDC ILINet / Delphi-epidata long table as a (T, N) weekly series.

    Reads FluView's ``ILINet.csv`` (a title line, then ``REGION TYPE, REGION, YEAR, WEEK, ...``,
    ``X`` for not available) and long tables with an ``epiweek`` column (``YYYYWW``), e.g.
    Delphi's ``region, epiweek, num_ili, wili``. Rows are placed on the gap-free MMWR week grid
    from the first to the last week in the file (53-week years included); weeks a region did
    not report are NaN.

    Parameters
    ----------
    path : str or Path
    value : str, optional
        The value column (default: ``ILITOTAL``, else ``num_ili``, else ``value``).
    region : str, optional
        The region column (default: ``REGION``, ``region`` or ``location``).
    delimiter : str, optional
        Force a delimiter (default: detected).

    Returns
    -------
    EpiSeries

    Raises
    ------
    ValueError
        No header with region and week columns, a week outside its year, a duplicated
        region-week, a negative or non-numeric value (line named), an empty table.
    """
    path = Path(path)
    rows = _split(_read_text(path), delimiter, path.name)
    head = None
    for k, row in enumerate(rows[:10]):  # a title line may precede the header
        low = [c.strip().lower() for c in row]
        if ("week" in low and "year" in low) or "epiweek" in low:
            head = k
            break
    if head is None:
        raise ValueError(
            f"{path.name}: no header with YEAR and WEEK (or EPIWEEK) columns in the first lines"
        )
    cols = [c.strip() for c in rows[head]]
    r_col = _find(cols, region, ("REGION", "region", "location", "state"), "region", path.name)
    if r_col is None:
        raise ValueError(f"{path.name}: no region column among {cols} (pass region=...)")
    v_col = _find(cols, value, ("ILITOTAL", "num_ili", "value"), "value", path.name)
    if v_col is None:
        raise ValueError(f"{path.name}: no value column among {cols} (pass value=...)")
    ew_col = _find(cols, None, ("epiweek",), "epiweek", path.name)
    y_col = _find(cols, None, ("YEAR",), "year", path.name)
    w_col = _find(cols, None, ("WEEK",), "week", path.name)
    records: dict[tuple[str, int], float] = {}
    regions: list[str] = []
    for k, row in enumerate(rows[head + 1 :], start=head + 2):
        if len(row) != len(cols):
            raise ValueError(f"{path.name}: line {k} has {len(row)} fields, expected {len(cols)}")
        try:
            if ew_col is not None:
                ew = int(row[ew_col])
            else:
                ew = int(row[y_col]) * 100 + int(row[w_col])
        except ValueError as exc:
            raise ValueError(f"{path.name}: line {k}: the year/week is not an integer") from exc
        year, week = divmod(ew, 100)
        if not 1 <= week <= _weeks_in(year):
            raise ValueError(f"{path.name}: line {k}: week {week} does not exist in {year}")
        name = row[r_col].strip()
        v = _number(row[v_col])
        if v is None:
            raise ValueError(f"{path.name}: line {k}: value {row[v_col]!r} is not a number")
        if v < 0:
            raise ValueError(f"{path.name}: line {k}: negative count {v:g} for {name}")
        if (name, ew) in records:
            raise ValueError(f"{path.name}: line {k}: {name} week {ew} appears twice")
        if name not in regions:
            regions.append(name)
        records[(name, ew)] = v
    if not records:
        raise ValueError(f"{path.name}: no data rows")
    weeks = epiweek_range(min(e for _, e in records), max(e for _, e in records))
    index = {e: i for i, e in enumerate(weeks)}
    col = {r: j for j, r in enumerate(regions)}
    Y = np.full((len(weeks), len(regions)), np.nan)
    for (name, ew), v in records.items():
        Y[index[ew], col[name]] = v
    empty = [regions[j] for j in np.flatnonzero(np.isnan(Y).all(axis=0))]
    if len(empty) == len(regions):
        raise ValueError(f"{path.name}: no region has a value in column {cols[v_col]}")
    if empty:
        # FluView's state export reports some states as X throughout (Florida): keep the
        # column, all NaN, so that the region list stays the file's, and say so
        warnings.warn(
            f"{path.name}: region(s) {empty} have no value in column {cols[v_col]} (all "
            "missing); they are kept as NaN columns: series.drop(...) removes them",
            UserWarning,
            stacklevel=2,
        )
    return EpiSeries(Y, regions, weeks)
