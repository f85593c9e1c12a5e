"""Sparse matrix generators by family, a synthetic matrix set, and a Matrix Market loader.

Families mimic structures common in SuiteSparse: ``uniform`` (Erdős–Rényi), ``powerlaw``
(Chung-Lu: row/column expected degrees ~ Pareto, a few very long rows), ``banded`` (nonzeros
within a band around the diagonal), ``block`` (dense b x b blocks placed at random: BSR-friendly),
``diag_noise`` (a diagonal plus uniform noise) and ``clustered_cols`` (rows draw their columns
from a few narrow column windows: high dense-operand reuse).
"""

from __future__ import annotations

import numbers
import re
import sysconfig
import warnings
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

__all__ = [
    "FAMILIES",
    "MatrixSet",
    "check_matrix",
    "generate",
    "load_mtx",
    "load_mtx_folder",
    "source_code_matrices",
]

FAMILIES = ("uniform", "powerlaw", "banded", "block", "diag_noise", "clustered_cols")


def check_matrix(A: object, name: str = "A") -> sp.csr_array:
    """Validate a sparse (or dense 2-D) matrix and return it as float32 canonical CSR.

    Raises ValueError for empty shapes, no nonzeros, NaN/inf values, non-2-D input.
    """
    if sp.issparse(A):
        M = sp.csr_array(A)
    elif isinstance(A, np.ndarray):
        if A.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got ndim={A.ndim}")
        if A.dtype == object or not (np.issubdtype(A.dtype, np.number) or A.dtype == bool):
            raise TypeError(f"{name} must have a real numeric dtype, got {A.dtype}")
        if A.dtype == np.float16:  # scipy.sparse has no float16
            A = A.astype(np.float32)
        M = sp.csr_array(A)
    else:
        raise TypeError(f"{name} must be a scipy.sparse matrix/array or 2-D ndarray")
    if M.shape[0] == 0 or M.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {M.shape}")
    if not np.issubdtype(M.dtype, np.number) or np.issubdtype(M.dtype, np.complexfloating):
        raise TypeError(f"{name} must have a real numeric dtype, got {M.dtype}")
    if not np.all(np.isfinite(M.data)):
        raise ValueError(f"{name} contains NaN or inf values")
    big = np.abs(M.data).max(initial=0) if M.nnz else 0
    if big > np.finfo(np.float32).max:  # float32 would turn them into inf without a word
        raise ValueError(f"{name} has values outside float32's range (max |value| {big:.3g})")
    n_zero = int((M.data == 0).sum())
    if n_zero:
        warnings.warn(
            f"{name}: {n_zero} explicitly stored zeros dropped", UserWarning, stacklevel=2
        )
    tiny = np.finfo(np.float32).tiny
    under = (M.data != 0) & (np.abs(M.data) < tiny)
    M = M.astype(np.float32)  # a copy: the caller's matrix is never written
    if under.any():  # would become 0 or subnormal (slow) in float32: keep the pattern
        warnings.warn(
            f"{name}: {int(under.sum())} nonzeros are below float32's smallest normal "
            f"({tiny:.2g}) in magnitude; stored as +-{tiny:.2g} so the sparsity pattern is kept",
            UserWarning,
            stacklevel=2,
        )
        M.data[under] = np.copysign(tiny, M.data[under])
    M.sum_duplicates()
    M.eliminate_zeros()
    M.sort_indices()
    if M.nnz == 0:
        raise ValueError(f"{name} has no nonzeros")
    return M


def _coo(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], rng) -> sp.csr_array:  # type: ignore[no-untyped-def]
    vals = rng.standard_normal(rows.size).astype(np.float32)
    M = sp.csr_array((vals, (rows, cols)), shape=shape)
    M.sum_duplicates()
    return M


def generate(
    family: str,
    n_rows: int = 4096,
    n_cols: int | None = None,
    density: float = 1e-3,
    *,
    seed: int = 0,
    block: int = 4,
    alpha: float = 1.8,
) -> sp.csr_array:
    """Generate a random sparse matrix of a family.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    n_rows : int, default=4096
        Rows (m).
    n_cols : int, optional
        Columns (k); default ``n_rows``.
    density : float, default=1e-3
        Target fraction of nonzeros, in (0, 1].
    seed : int, default=0
        Random seed.
    block : int, default=4
        Block size of the ``block`` family.
    alpha : float, default=1.8
        Pareto shape of the ``powerlaw`` degrees (smaller = heavier tail).

    Returns
    -------
    scipy.sparse.csr_array, float32, shape (n_rows, n_cols)
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    n_cols = n_rows if n_cols is None else n_cols
    for arg, v in (("n_rows", n_rows), ("n_cols", n_cols), ("seed", seed), ("block", block)):
        if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{arg} must be an int, got {v!r}")
    if isinstance(density, bool) or not isinstance(density, numbers.Real):
        raise TypeError(f"density must be a number, got {density!r}")
    if n_rows < 1 or n_cols < 1:
        raise ValueError(f"n_rows and n_cols must be >= 1, got {n_rows}, {n_cols}")
    if not 0 < density <= 1:
        raise ValueError(f"density must be in (0, 1], got {density}")
    rng = np.random.default_rng(seed)
    m, k = n_rows, n_cols
    nnz = max(1, round(density * m * k))
    if family == "uniform":
        rows, cols = rng.integers(0, m, nnz), rng.integers(0, k, nnz)
    elif family == "powerlaw":
        wr = rng.pareto(alpha, m) + 1.0
        wc = rng.pareto(alpha + 0.5, k) + 1.0
        rows = rng.choice(m, nnz, p=wr / wr.sum())
        cols = rng.choice(k, nnz, p=wc / wc.sum())
    elif family == "banded":
        bw = max(1, round(nnz / (2 * m)))
        rows = rng.integers(0, m, nnz)
        centre = (rows * (k / m)).astype(np.int64)
        cols = np.clip(centre + rng.integers(-bw, bw + 1, nnz), 0, k - 1)
    elif family == "block":
        b = max(1, int(block))
        nb = max(1, nnz // (b * b))
        br, bc = rng.integers(0, max(1, m // b), nb), rng.integers(0, max(1, k // b), nb)
        off = np.arange(b)
        rows = (br[:, None, None] * b + off[None, :, None] + 0 * off[None, None, :]).ravel()
        cols = (bc[:, None, None] * b + 0 * off[None, :, None] + off[None, None, :]).ravel()
        keep = (rows < m) & (cols < k)
        rows, cols = rows[keep], cols[keep]
    elif family == "diag_noise":
        d = min(m, k)
        n_noise = max(0, nnz - d)
        rows = np.concatenate([np.arange(d), rng.integers(0, m, n_noise)])
        cols = np.concatenate([np.arange(d), rng.integers(0, k, n_noise)])
    else:  # clustered_cols
        n_clusters = 8
        width = max(8, k // 64)
        starts = rng.integers(0, max(1, k - width), n_clusters)
        rows = rng.integers(0, m, nnz)
        c = starts[(rows * n_clusters) // m]  # row bands map to column windows
        cols = np.clip(c + rng.integers(0, width, nnz), 0, k - 1)
    return check_matrix(_coo(rows, cols, (m, k), rng))


def load_mtx(path: str | Path) -> sp.csr_array:
    """Load a Matrix Market file (e.g. from SuiteSparse) as validated float32 CSR.

    Parameters
    ----------
    path : str or Path
        ``.mtx`` (optionally ``.gz`` or ``.bz2``) file.

    Returns
    -------
    scipy.sparse.csr_array
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"path does not exist: {path}")
    try:
        A = scipy.io.mmread(str(path))
    except (ValueError, IndexError, OverflowError, OSError, EOFError) as e:
        raise ValueError(f"path: {path.name} is not a readable Matrix Market file ({e})") from e
    if not sp.issparse(A):
        A = sp.csr_array(np.asarray(A))
    return check_matrix(A, name=f"path ({path.name})")


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def source_code_matrices(
    root: str | Path | None = None,
    *,
    n_line_chunks: int = 16,
    rows: int = 4096,
    cols: int = 4096,
    vocab_sizes: tuple[int, ...] = (1024, 2048, 4096),
) -> tuple[list[sp.csr_array], list[str]]:
    """Sparse matrices from real text: the Python source files under ``root``.

    Real-world sparsity (Zipf-distributed tokens, bursty lines) without a download: every
    Python installation ships its standard library. Two kinds, deterministic for a given tree:

    * ``lines_<i>``: line x hashed-identifier count matrices (``rows`` consecutive non-empty
      lines, identifiers hashed with CRC-32 into ``cols`` columns), taken from
      ``n_line_chunks`` evenly spaced places in the sorted file list (a term-document matrix
      with lines as documents);
    * ``bigram_<V>``: counts of ``V`` x ``V`` transitions between consecutive identifiers of
      a line, over the ``V`` most frequent identifiers (a word-adjacency graph).

    Parameters
    ----------
    root : str or Path, optional
        Directory searched recursively for ``*.py``; default the standard library.
    n_line_chunks : int, default=16
    rows, cols : int, default=4096
    vocab_sizes : tuple of int, default=(1024, 2048, 4096)

    Returns
    -------
    matrices : list of scipy.sparse.csr_array (float32)
    names : list of str
    """
    root = Path(sysconfig.get_paths()["stdlib"] if root is None else root)
    if not root.is_dir():
        raise ValueError(f"root is not a directory: {root}")
    if n_line_chunks < 0 or rows < 1 or cols < 1 or any(v < 2 for v in vocab_sizes):
        raise ValueError("n_line_chunks must be >= 0, rows/cols >= 1 and vocab_sizes >= 2")
    lines: list[list[str]] = []
    for f in sorted(root.rglob("*.py")):
        if "site-packages" in f.parts:
            continue
        try:
            text = f.read_text(encoding="utf-8", errors="ignore")
        except OSError:
            continue
        lines.extend(t for t in (_IDENT.findall(ln) for ln in text.splitlines()) if t)
    if len(lines) < rows:
        raise ValueError(f"root holds {len(lines)} non-empty lines, fewer than rows={rows}")
    mats, names = [], []
    starts = np.linspace(0, len(lines) - rows, max(n_line_chunks, 1)).astype(int)
    for i, s0 in enumerate(starts[:n_line_chunks]):
        chunk = lines[s0 : s0 + rows]
        r = np.repeat(np.arange(rows), [len(t) for t in chunk])
        c = np.array([zlib.crc32(w.encode()) % cols for t in chunk for w in t], dtype=np.int64)
        mats.append(check_matrix(sp.csr_array((np.ones(r.size, np.float32), (r, c)), (rows, cols))))
        names.append(f"lines_{i}")
    if vocab_sizes:
        counts = Counter(w for t in lines for w in t)
        # rank 0 = most frequent identifier; ties broken alphabetically (deterministic)
        rank = {
            w: j for j, (w, _) in enumerate(sorted(counts.items(), key=lambda x: (-x[1], x[0])))
        }
        ids = np.fromiter((rank[w] for t in lines for w in t), np.int64, counts.total())
        lens = np.array([len(t) for t in lines])
        same_line = np.ones(ids.size - 1, bool)
        same_line[np.cumsum(lens)[:-1] - 1] = False  # no transition across a line break
        src, dst = ids[:-1][same_line], ids[1:][same_line]
        for V in vocab_sizes:
            keep = (src < V) & (dst < V)
            M = sp.csr_array((np.ones(keep.sum(), np.float32), (src[keep], dst[keep])), (V, V))
            mats.append(check_matrix(M))
            names.append(f"bigram_{V}")
    return mats, names


_MTX_SUFFIXES = (".mtx", ".mtx.gz", ".mtx.bz2")
_TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")


def _mtx_stem(name: str) -> str:
    for suffix in (".gz", ".bz2"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".mtx")


def _auxiliary(folder: str, stem: str, stems_in_folder: set[str]) -> bool:
    """SuiteSparse keeps ``<name>/<name>.mtx`` beside auxiliary ``<name>/<name>_b.mtx``...;
    a ``<folder>_*`` file is auxiliary only where the folder's own matrix is there too (in a
    flat folder ``lp/lp_adlittle.mtx`` is a matrix)."""
    return folder in stems_in_folder and stem.startswith(folder + "_")


def load_mtx_folder(root: str | Path, *, pattern: str = "**/*") -> MatrixSet:
    """Every matrix under a folder of Matrix Market files (SuiteSparse layout), named by file.

    Reads ``.mtx``, ``.mtx.gz`` and ``.mtx.bz2`` files and SuiteSparse tarballs
    (``<name>.tar.gz`` holding ``<name>/<name>.mtx``). In SuiteSparse's layout the files
    ``<name>/<name>_*.mtx`` (``_b``, ``_coord``, ``_nodename``, ...) beside ``<name>/<name>.mtx``
    hold auxiliary data: those are skipped and listed in a warning. Other compressed Matrix
    Market files (``.mtx.xz``, ``.mtx.zip``, ...) and unreadable files raise, naming them,
    rather than being dropped.

    Parameters
    ----------
    root : str or Path
    pattern : str, default="**/*"
        Glob under ``root``.

    Returns
    -------
    MatrixSet
        ``names`` are the file names without their ``.mtx`` suffixes, in path order.
    """
    import tarfile

    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"root is not a directory: {root}")
    files = sorted(p for p in root.glob(pattern) if p.is_file())
    odd = [p.name for p in files if ".mtx." in p.name and not p.name.endswith(_MTX_SUFFIXES)]
    if odd:
        raise ValueError(
            f"root: compressed Matrix Market files this reader cannot open: {odd[:5]} "
            "(decompress them, or use .gz / .bz2)"
        )
    entries: list[tuple[str, str, object]] = []  # (folder, stem, source) in path order
    for path in files:
        if path.name.endswith(_MTX_SUFFIXES):
            entries.append((path.parent.name, _mtx_stem(path.name), path))
        elif path.name.endswith(_TAR_SUFFIXES):
            with tarfile.open(path) as tar:
                for m in tar.getmembers():
                    if m.isfile() and m.name.endswith(_MTX_SUFFIXES):
                        folder = Path(m.name).parent.name
                        entries.append((folder, _mtx_stem(Path(m.name).name), (path, m.name)))
    by_folder: dict[tuple[str, object], set[str]] = {}
    for folder, stem, src in entries:
        where = src[0] if isinstance(src, tuple) else src.parent
        by_folder.setdefault((folder, where), set()).add(stem)
    out, skipped, seen = MatrixSet(), [], {}
    for folder, stem, src in entries:
        where = src[0] if isinstance(src, tuple) else src.parent
        if _auxiliary(folder, stem, by_folder[(folder, where)]):
            skipped.append(stem)
            continue
        label = f"{src[0]}:{src[1]}" if isinstance(src, tuple) else str(src)
        if stem in seen:
            raise ValueError(f"root: two files are named {stem!r}: {seen[stem]} and {label}")
        seen[stem] = label
        if isinstance(src, tuple):
            with tarfile.open(src[0]) as tar:
                data = tar.extractfile(src[1]).read()
            out.matrices.append(_load_mtx_bytes(data, src[1]))
        else:
            out.matrices.append(load_mtx(src))
        out.names.append(stem)
    if not out.matrices:
        raise ValueError(f"root: no Matrix Market file matches {pattern!r} under {root}")
    if skipped:
        warnings.warn(f"skipped {len(skipped)} SuiteSparse auxiliary files: {skipped[:5]}",
                      stacklevel=2)  # fmt: skip
    return out


def _load_mtx_bytes(data: bytes, name: str) -> sp.csr_array:
    """A Matrix Market member of a tarball (``.gz`` / ``.bz2`` members decompressed)."""
    import bz2
    import gzip
    import io

    if name.endswith(".gz"):
        data = gzip.decompress(data)
    elif name.endswith(".bz2"):
        data = bz2.decompress(data)
    try:
        A = scipy.io.mmread(io.BytesIO(data))
    except (ValueError, IndexError, OverflowError, OSError, EOFError) as e:
        raise ValueError(f"path: {name} is not a readable Matrix Market file ({e})") from e
    if not sp.issparse(A):
        A = sp.csr_array(np.asarray(A))
    return check_matrix(A, name=f"path ({name})")


@dataclass
class MatrixSet:
    """A named list of sparse matrices.

    Attributes
    ----------
    matrices : list of scipy.sparse.csr_array
    names : list of str
    """

    matrices: list[sp.csr_array] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in ("matrices", "names"):
            v = getattr(self, name)
            if isinstance(v, str) or not isinstance(v, Sequence):
                raise TypeError(f"{name} must be a list, got {type(v).__name__}")
        if len(self.matrices) != len(self.names):
            raise ValueError(f"matrices ({len(self.matrices)}) and names ({len(self.names)}) "
                             "must have one entry each per matrix")  # fmt: skip
        if not all(isinstance(n, str) for n in self.names) or len(set(self.names)) != len(
            self.names
        ):
            raise ValueError("names must be distinct str")
        self.matrices = [
            check_matrix(
                A if sp.issparse(A) else sp.csr_array(np.asarray(A)), name=f"matrices[{i}]"
            )
            for i, A in enumerate(self.matrices)
        ]
        self.names = list(self.names)

    def __len__(self) -> int:
        return len(self.matrices)

    def __getitem__(self, i: int) -> sp.csr_array:
        return self.matrices[i]

    @classmethod
    def synthetic(
        cls,
        n: int,
        *,
        seed: int = 0,
        rows: tuple[int, int] = (512, 4096),
        nnz: tuple[float, float] = (2e3, 4e4),
        families: tuple[str, ...] = FAMILIES,
        shuffled: float = 0.0,
    ) -> MatrixSet:
        """Generate ``n`` matrices: families cycled, sizes and nnz log-uniform.

        Parameters
        ----------
        n : int
            Number of matrices.
        seed : int, default=0
            Seed.
        rows : (int, int)
            Range of the (square) size.
        nnz : (float, float)
            Range of the number of nonzeros.
        families : tuple of str
            Families to cycle through.
        shuffled : float, default=0.0
            Share of matrices whose rows and columns are randomly permuted (a structured
            matrix stored in an arbitrary order, as matrices often arrive; name suffix
            ``_shuffled``). 0 leaves the set exactly as without the option.

        Returns
        -------
        MatrixSet
        """
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        if isinstance(families, str) or not families:
            raise ValueError(
                f"families must be a non-empty tuple of family names, got {families!r}"
            )
        for name, (lo, hi) in (("rows", rows), ("nnz", nnz)):
            if not (
                isinstance(lo, numbers.Real) and isinstance(hi, numbers.Real) and 1 <= lo <= hi
            ):
                raise ValueError(
                    f"{name} must be a (lo, hi) range with 1 <= lo <= hi, got {(lo, hi)}"
                )
        for f in families:
            if f not in FAMILIES:
                raise ValueError(f"families contains unknown family {f!r}")
        if not (isinstance(shuffled, numbers.Real) and 0.0 <= shuffled <= 1.0):
            raise ValueError(f"shuffled must lie in [0, 1], got {shuffled!r}")
        rng = np.random.default_rng(seed)
        shuffle_rng = np.random.default_rng([seed, 1])  # separate: the default set is unchanged
        out = cls()
        for i in range(n):
            fam = families[i % len(families)]
            m = int(np.exp(rng.uniform(np.log(rows[0]), np.log(rows[1]))))
            z = float(np.exp(rng.uniform(np.log(nnz[0]), np.log(nnz[1]))))
            dens = min(1.0, z / (m * m))
            blk = int(rng.choice([2, 4, 8]))
            A = generate(fam, m, m, dens, seed=int(rng.integers(2**31)), block=blk)
            name = f"{fam}_{i}"
            if shuffled and shuffle_rng.random() < shuffled:
                A = A[shuffle_rng.permutation(m)][:, shuffle_rng.permutation(m)].tocsr()
                name += "_shuffled"
            out.matrices.append(A)
            out.names.append(name)
        return out
