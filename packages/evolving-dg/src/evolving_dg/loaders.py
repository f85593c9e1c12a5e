"""Loaders for the real EDG datasets from a local path (no downloads; spec §5.1).

* :func:`load_image_domains` (Portraits, Caltran): ``root/<domain>/<class>/<image>``; domains in
  natural sort order of their folder names (e.g. years), classes in sorted order. Needs pillow
  (``pip install evolving-dg[images]``).
* :func:`load_onp`: the UCI Online News Popularity CSV, label 1[shares ≥ threshold], domains
  ordered by publication time (largest ``timedelta`` first), 58 predictive features.
* :func:`load_powersupply`: an ARFF file in time order, the last attribute is the class.
* :func:`load_domain_pickle`: the toy files CIDA ships and LSSAE / SYNC train on
  (``half-circle.pkl``, ``sine.pkl``): a pickled dict of ``data`` (n, d), ``label`` (n,) and
  ``domain`` (n,), read with an unpickler that admits numpy arrays only.
"""

from __future__ import annotations

import importlib
import io
import numbers
import pickle
import re
from pathlib import Path

import numpy as np

from evolving_dg.data import EvolvingDataset

__all__ = [
    "load_caltran",
    "load_domain_pickle",
    "load_image_domains",
    "load_onp",
    "load_portraits",
    "load_powersupply",
]

_IMG = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff"}


def _natural(s: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _dir(path, name: str) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"{name}={str(path)!r} is not a directory")
    return p


def _chunks(n: int, n_domains: int) -> list[np.ndarray]:
    if (
        isinstance(n_domains, bool)
        or not isinstance(n_domains, numbers.Integral)
        or not 3 <= n_domains <= n // 2
    ):
        raise ValueError(f"n_domains must be an int in [3, {n // 2}], got {n_domains!r}")
    return np.array_split(np.arange(n), n_domains)


def load_image_domains(root, size: int = 32, grayscale: bool = True, name: str = "images"):
    """Time-ordered image domains from ``root/<domain>/<class>/<image>``.

    Returns
    -------
    EvolvingDataset
        X: (n_t, C, size, size) in [0, 1], C = 1 if ``grayscale`` else 3;
        ``info["domains"]``, ``info["classes"]`` hold the folder names.
    """
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - optional dependency
        raise ImportError("image loaders need pillow: pip install 'evolving-dg[images]'") from e
    root = _dir(root, "root")
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 4:
        raise ValueError(f"size must be an int >= 4, got {size!r}")
    dom_dirs = sorted((d for d in root.iterdir() if d.is_dir()), key=lambda d: _natural(d.name))
    classes = sorted({c.name for d in dom_dirs for c in d.iterdir() if c.is_dir()})
    if len(dom_dirs) < 3 or len(classes) < 2:
        raise ValueError(f"{root} needs >= 3 domain folders holding >= 2 class folders")
    domains = []
    for d in dom_dirs:
        xs, ys = [], []
        for k, c in enumerate(classes):
            files = sorted(f for f in (d / c).glob("*") if f.suffix.lower() in _IMG) if (d / c).is_dir() else []  # fmt: skip
            for f in files:
                with Image.open(f) as im:
                    im = im.convert("L" if grayscale else "RGB").resize((size, size))
                    a = np.asarray(im, dtype=np.float32) / 255.0
                xs.append(a[None] if grayscale else a.transpose(2, 0, 1))
                ys.append(k)
        if len(xs) < 2:
            raise ValueError(f"domain folder {d} holds fewer than 2 images")
        domains.append((np.stack(xs), np.array(ys, dtype=np.int64)))
    T = len(domains)
    split = (T // 2, T // 6, T - T // 2 - T // 6)
    info = {"domains": [d.name for d in dom_dirs], "classes": classes, "split": split}
    return EvolvingDataset(domains, len(classes), name, info)


def load_portraits(root, size: int = 32, years: str = "official") -> EvolvingDataset:
    """Portraits (yearbook faces by year), in either layout.

    * The released layout ``root/F/<year>_*.png`` and ``root/M/<year>_*.png`` (what the SYNC
      repository reads): labels F = 1, M = 0 as there; the years that both folders hold, in
      order, three per domain. ``years="official"`` drops what the official loader drops (the
      first common year and the years left over after the last full domain: 34 domains on the
      real data) with a warning naming them; ``years="all"`` keeps them (the last domain then
      holds the remainder).
    * ``root/<domain>/<class>/<image>`` (:func:`load_image_domains`).
    """
    root = _dir(root, "root")
    if not ((root / "F").is_dir() and (root / "M").is_dir()):
        return load_image_domains(root, size, True, "portraits")
    if years not in ("official", "all"):
        raise ValueError(f"years must be 'official' or 'all', got {years!r}")
    by_year: dict[str, dict[int, list[Path]]] = {}
    for g in ("F", "M"):
        by_year[g] = {}
        for f in sorted((root / g).iterdir()):
            if f.suffix.lower() not in _IMG:
                continue
            if not re.match(r"\d{4}", f.name):
                raise ValueError(f"{f}: a Portraits file name starts with its year (1905_...)")
            by_year[g].setdefault(int(f.name[:4]), []).append(f)
    common = sorted(set(by_year["F"]) & set(by_year["M"]))
    only = sorted(set(by_year["F"]) ^ set(by_year["M"]))
    use = common[1:] if years == "official" else common
    groups = [use[i : i + 3] for i in range(0, len(use), 3)]
    if years == "official" and groups and len(groups[-1]) < 3:
        groups = groups[:-1]
    elif len(groups) > 1 and len(groups[-1]) < 3:
        rest = groups.pop()
        groups[-1] = groups[-1] + rest
    kept = {y for g in groups for y in g}
    dropped = sorted(set(common) - kept) + only
    if len(groups) < 3:
        raise ValueError(f"{root}: F and M share {len(common)} years, fewer than 3 domains")
    if dropped:
        import warnings

        warnings.warn(
            f"{root}: {len(dropped)} years are not used ({dropped[:8]}"
            f"{' ...' if len(dropped) > 8 else ''}): years held by one class only"
            + (" and those the official loader leaves out" if years == "official" else ""),
            UserWarning,
            stacklevel=2,
        )
    from PIL import Image

    doms = []
    for g in groups:
        files = [(f, 1) for y in g for f in by_year["F"][y]] + [
            (f, 0) for y in g for f in by_year["M"][y]
        ]
        xs = []
        for f, _ in files:
            with Image.open(f) as im:
                xs.append(np.asarray(im.convert("L").resize((size, size)), np.float32)[None] / 255)
        doms.append((np.stack(xs), np.array([lab for _, lab in files], dtype=np.int64)))
    T = len(doms)
    info = {"domains": [f"{g[0]}-{g[-1]}" for g in groups], "classes": ["M", "F"],
            "split": (T // 2, T // 6, T - T // 2 - T // 6), "dropped_years": dropped}  # fmt: skip
    return EvolvingDataset(doms, 2, "portraits", info)


def load_caltran(root, size: int = 32) -> EvolvingDataset:
    """Caltran (time-ordered traffic-camera frames; classes car / no car), RGB."""
    return load_image_domains(root, size, False, "caltran")


def load_onp(path, n_domains: int = 24, threshold: float = 1400.0) -> EvolvingDataset:
    """Online News Popularity, in either layout.

    * The SYNC repository's ``processed_ONP.csv`` (a ``time_stamp`` column holding the date,
      the features, the 0/1 label last): one domain per month (24), features as stored, as the
      official loader does (``n_domains`` and ``threshold`` do not apply).
    * The UCI ``OnlineNewsPopularity.csv`` (``url``, ``timedelta``, 58 features, ``shares``):
      label 1[shares >= threshold], ``n_domains`` equal chunks by publication time (oldest
      first), features standardised with the statistics of the source domains only (the first
      ``split[0]`` domains; target statistics would leak).
    """
    import csv

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not a file")
    with p.open(newline="", encoding="utf-8-sig") as fh:  # a BOM must not rename the first column
        rows = list(csv.reader(fh))
    if not rows:
        raise ValueError(f"{p.name}: the file is empty")
    header = [h.strip() for h in rows[0]]
    official = "time_stamp" in header
    need = ("time_stamp",) if official else ("timedelta", "shares")
    for col in need:
        if col not in header:
            raise ValueError(
                f"{p.name}: missing column {col!r} (expected the UCI layout with timedelta and "
                "shares, or SYNC's processed_ONP.csv with time_stamp)"
            )
    data = [r for r in rows[1:] if any(c.strip() for c in r)]
    if not data:
        raise ValueError(f"{p.name}: no data rows after the header")
    text = {"url", "time_stamp"}
    values = np.zeros((len(data), len(header)))
    for k, r in enumerate(data, start=2):
        if len(r) != len(header):
            raise ValueError(f"{p.name}: line {k} has {len(r)} fields, expected {len(header)}")
        for j, c in enumerate(r):
            if header[j] in text:
                continue
            try:
                values[k - 2, j] = float(c)
            except ValueError:
                raise ValueError(
                    f"{p.name}: line {k}, column {header[j]!r}: {c!r} is not a number"
                ) from None
    if not np.isfinite(values).all():
        raise ValueError(f"{p.name}: contains NaN or inf values")
    if official:
        return _onp_by_month(p, header, data, values)
    keep = [i for i, h in enumerate(header) if h not in ("url", "timedelta", "shares")]
    X = values[:, keep]
    td = values[:, header.index("timedelta")]
    shares = values[:, header.index("shares")]
    order = np.argsort(-td, kind="stable")  # oldest article first
    X, y = X[order], (shares[order] >= threshold).astype(np.int64)
    chunks = _chunks(len(y), n_domains)
    T = len(chunks)
    split = (T // 2, T // 6, T - T // 2 - T // 6)
    src = X[np.concatenate(chunks[: split[0]])]
    mu, sd = src.mean(0), src.std(0)
    X = (X - mu) / np.where(sd > 0, sd, 1.0)
    doms = [(X[i].astype(np.float32), y[i]) for i in chunks]
    return EvolvingDataset(doms, 2, "onp", {"features": [header[i] for i in keep], "split": split,
                                            "standardised_on": f"source domains 0..{split[0] - 1}"})  # fmt: skip


def _onp_by_month(p: Path, header, data, values) -> EvolvingDataset:
    """SYNC's processed_ONP.csv: one domain per month of ``time_stamp``, label last."""
    ts = header.index("time_stamp")
    months = [r[ts].strip()[:7] for r in data]
    if not all(re.fullmatch(r"\d{4}-\d{2}", m) for m in months):
        bad = next(m for m in months if not re.fullmatch(r"\d{4}-\d{2}", m))
        raise ValueError(f"{p.name}: time_stamp {bad!r} is not a YYYY-MM-DD date")
    label = values[:, -1]
    if not np.isin(label, (0, 1)).all():
        raise ValueError(f"{p.name}: the last column ({header[-1]!r}) must hold 0/1 labels")
    feats = [i for i in range(len(header) - 1) if i != ts]
    order = sorted(set(months))
    m = np.asarray(months)
    doms = [
        (values[m == mo][:, feats].astype(np.float32), label[m == mo].astype(np.int64))
        for mo in order
    ]
    T = len(doms)
    return EvolvingDataset(doms, 2, "onp", {"features": [header[i] for i in feats], "months": order,
                                            "split": (T // 2, T // 6, T - T // 2 - T // 6)})  # fmt: skip


def load_powersupply(path, n_domains: int = 30) -> EvolvingDataset:
    """PowerSupply ARFF in time order; the last attribute is the class (encoded 0..K-1)."""
    from scipy.io import arff

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not a file")
    data, meta = arff.loadarff(str(p))
    names = meta.names()
    X = np.column_stack([np.asarray(data[n], dtype=np.float64) for n in names[:-1]])
    raw = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in data[names[-1]]])
    classes, y = np.unique(raw, return_inverse=True)
    doms = [(X[i].astype(np.float32), y[i].astype(np.int64)) for i in _chunks(len(y), n_domains)]
    T = len(doms)
    return EvolvingDataset(doms, len(classes), "powersupply",
                           {"classes": list(classes), "split": (T // 2, T // 6, T - T // 2 - T // 6)})  # fmt: skip


# the globals a pickled dict of numpy arrays needs (numpy 1.x and 2.x module names)
_PICKLE_OK = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core._multiarray_umath", "_reconstruct"),
    ("numpy._core._multiarray_umath", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),  # protocol 5
    ("numpy._core.numeric", "_frombuffer"),
    ("_codecs", "encode"),  # protocols 0-2 store array bytes as latin-1 text
}


class _Refused(pickle.UnpicklingError):
    pass


class _ArrayUnpickler(pickle.Unpickler):
    """Loads plain containers and numpy arrays; refuses every other global (no code runs)."""

    def find_class(self, module: str, name: str):
        if (module, name) in _PICKLE_OK:
            # numpy 2 renamed numpy.core to numpy._core: accept either spelling under either
            if "numpy._core" in module:
                other = module.replace("numpy._core", "numpy.core")
            else:
                other = module.replace("numpy.core", "numpy._core")
            for mod in (module, other):
                try:
                    return getattr(importlib.import_module(mod), name)
                except (ImportError, AttributeError):
                    continue
        raise _Refused(f"refusing to load {module}.{name}: only numpy arrays are read")


def load_domain_pickle(path, split: tuple[int, int, int] | None = None,
                       name: str | None = None) -> EvolvingDataset:  # fmt: skip
    """The CIDA / LSSAE toy-file layout: a pickled ``{"data", "label", "domain"}`` dict.

    ``half-circle.pkl`` (30 domains of 100 two-dimensional points, the Circle of CIDA, LSSAE
    and SYNC) and ``sine.pkl`` use it. Domains are the sorted values of ``domain``; they must
    be the integers 0..T-1.

    Parameters
    ----------
    path : path-like
    split : (n_source, n_val, n_target), optional
        Stored as ``info["split"]`` for :meth:`EvolvingDataset.default_split`; default
        ``(T // 2, T // 6, rest)`` (15 / 5 / 10 for Circle's 30 domains, as the official
        scripts), with at least 3 source domains and 1 target domain.
    name : str, optional
        Dataset name (default: the file stem).

    Returns
    -------
    EvolvingDataset
        X_t float32 (n_t, d), y_t int64.

    Raises
    ------
    ValueError
        Not a dict of those three keys (extra keys are named, not dropped), mismatched
        lengths, non-finite data, non-integer labels or domains, domain ids with gaps.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not a file")
    raw = p.read_bytes()
    if not raw:
        raise ValueError(f"path: {p.name} is empty")
    try:
        obj = _ArrayUnpickler(io.BytesIO(raw), encoding="latin1").load()
    except _Refused as e:
        raise ValueError(f"path: {p.name} is not a pickle of numpy arrays ({e})") from e
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        AttributeError,
    ) as e:
        raise ValueError(
            f"path: {p.name} is not a readable pickle ({type(e).__name__}: {e})"
        ) from e
    want = {"data", "label", "domain"}
    if not isinstance(obj, dict) or not want <= set(obj):
        got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        raise ValueError(f"path: {p.name} must hold a dict with keys {sorted(want)}, got {got}")
    if set(obj) - want:
        raise ValueError(
            f"path: {p.name} has keys this loader would drop: {sorted(set(obj) - want)}"
        )
    X = np.asarray(obj["data"])
    y, d = np.asarray(obj["label"]), np.asarray(obj["domain"])
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or y.ndim != 1 or d.ndim != 1 or not len(X) == len(y) == len(d) or not len(X):
        raise ValueError(f"path: data {X.shape}, label {y.shape}, domain {d.shape} do not align")
    if not np.issubdtype(X.dtype, np.number) or not np.isfinite(X).all():
        raise ValueError(f"path: data must be finite numbers ({p.name})")
    for key, v in (("label", y), ("domain", d)):
        if not (np.issubdtype(v.dtype, np.integer) or (np.issubdtype(v.dtype, np.floating)
                                                        and np.all(v == np.round(v)))):  # fmt: skip
            raise ValueError(f"path: {key} must hold integers ({p.name})")
    y, d = y.astype(np.int64), d.astype(np.int64)
    if y.min() < 0:
        raise ValueError(f"path: label has negative values ({p.name})")
    ids = np.unique(d)
    if not np.array_equal(ids, np.arange(len(ids))):
        raise ValueError(
            f"path: domain ids must be 0..T-1 without gaps, got {ids[:10].tolist()}..."
        )
    T = len(ids)
    doms = [(X[d == t].astype(np.float32), y[d == t]) for t in range(T)]
    if split is None:
        if T < 4:
            raise ValueError(
                f"path: {p.name} holds {T} domains; a source / target split needs >= 4"
            )
        n_src = max(3, T // 2)
        n_val = max(0, min(T // 6, T - n_src - 1))
        split = (n_src, n_val, T - n_src - n_val)
    n_classes = int(y.max()) + 1
    ds = EvolvingDataset(doms, n_classes, name or p.stem, {"split": tuple(split), "source": str(p)})
    ds.split(*split)  # validates the split now, not at first use
    return ds
