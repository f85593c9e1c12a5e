"""Measured backends (scipy.sparse, torch.sparse on CPU), the timing harness and ``measure``.

Measurement protocol (spec §4): format conversion happens in ``prepare`` and is excluded from
the kernel time (reported as ``prep_s``); ``time.perf_counter_ns``; ``warmup`` untimed runs, then
the median of ``repeats`` timed runs, with their coefficient of variation as the noise estimate;
torch's thread count is set once around the timing of a configuration
(``TorchCPUBackend.context``), never inside it, and restored afterwards; with ``check=True`` the
first run of every configuration is compared with a dense reference.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import platform
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy
import scipy.sparse as sp

from cost_model.matrices import check_matrix
from cost_model.simulated import SimAccelBackend, SimCPUBackend
from cost_model.space import Knob, ScheduleSpace

__all__ = [
    "Measurement",
    "ScipyBackend",
    "SimAccelBackend",
    "SimCPUBackend",
    "Timer",
    "TorchCPUBackend",
    "get_backend",
    "make_operands",
    "measure",
    "measure_interleaved",
    "pinned",
    "reference",
    "reorder_permutations",
    "timing_quality",
]

OPS = ("spmm", "sddmm")
REORDERINGS = ("none", "rcm", "degree")


def reorder_permutations(A: sp.csr_array, how: str) -> tuple[np.ndarray, np.ndarray]:
    """Row and column orders of ``A`` (``A[rows][:, cols]`` is the reordered matrix).

    ``"rcm"``: reverse Cuthill-McKee of the bipartite graph ``[[0, A], [A^T, 0]]``, split into
    its row and column vertices (works for rectangular ``A``); ``"degree"``: rows and columns
    by decreasing nonzero count (stable); ``"none"``: identities.
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    m, k = A.shape
    if how == "none":
        return np.arange(m), np.arange(k)
    if how == "degree":
        B = A.tocsc()
        return (np.argsort(-np.diff(A.indptr), kind="stable"),
                np.argsort(-np.diff(B.indptr), kind="stable"))  # fmt: skip
    if how != "rcm":
        raise ValueError(f"reorder must be one of {REORDERINGS}, got {how!r}")
    P = sp.csr_array((np.ones(A.nnz, np.int8), A.indices, A.indptr), shape=A.shape)
    G = sp.bmat([[None, P], [P.T, None]], format="csr")
    order = np.asarray(reverse_cuthill_mckee(G, symmetric_mode=True))
    return order[order < m], order[order >= m] - m


@dataclass
class Measurement:
    """One timed (matrix, configuration) pair."""

    matrix_id: int
    hardware: str
    op: str
    config: dict
    runtime_s: float
    cv: float
    prep_s: float


def _check_int(value: object, name: str, low: int) -> int:
    # numpy integers from a sweep are ints too; bools are not
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def check_backend(backend: object) -> object:
    """A backend of this package (or one with its interface): ``space``, ``hardware`` and
    ``cost`` (simulated) or ``prepare`` (measured)."""
    sim = getattr(backend, "simulated", False)
    need = ("space", "hardware", "cost" if sim else "prepare")
    missing = [n for n in need if not hasattr(backend, n)]
    if missing:
        raise TypeError(f"backend must be a cost_model backend (get_backend); "
                        f"{type(backend).__name__} has no {missing}")  # fmt: skip
    return backend


def _check_min_time(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 60:
        raise ValueError(f"min_time must lie in [0, 60) seconds, got {value!r}")
    return float(value)


@dataclass
class Timer:
    """Warm-up + repeats + median timing of a no-argument callable.

    Parameters
    ----------
    warmup : int, default=1
    repeats : int, default=5
    stat : {"median", "min", "mean"}, default="median"
    min_time : float, default=0.0
        Seconds each sample must last: a kernel faster than that is called ``n`` times in a
        row per sample (``n`` calibrated once, after the warm-up, and the same for every
        sample), and the sample is the mean per call. Microsecond kernels are otherwise
        dominated by timer and dispatch jitter.
    """

    warmup: int = 1
    repeats: int = 5
    stat: str = "median"
    min_time: float = 0.0

    def __post_init__(self) -> None:
        self.warmup = _check_int(self.warmup, "warmup", 0)
        self.repeats = _check_int(self.repeats, "repeats", 1)
        if self.stat not in ("median", "min", "mean"):
            raise ValueError(f"stat must be median/min/mean, got {self.stat!r}")
        self.min_time = _check_min_time(self.min_time)

    def _check_fn(self, fn: object) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be a no-argument callable, got {type(fn).__name__}")

    def __call__(self, fn: Callable[[], object]) -> tuple[float, float]:
        """Return (statistic of the per-call runtimes in s, coefficient of variation)."""
        self._check_fn(fn)
        for _ in range(self.warmup):
            fn()
        inner = _calibrated(fn, self.min_time)
        ts = np.empty(self.repeats)
        for r in range(self.repeats):
            t0 = time.perf_counter_ns()
            for _ in range(inner):
                fn()
            ts[r] = (time.perf_counter_ns() - t0) * 1e-9 / inner
        val = {"median": np.median, "min": np.min, "mean": np.mean}[self.stat](ts)
        return float(val), float(ts.std() / max(ts.mean(), 1e-12))


def timing_quality(measurements: list[Measurement], cv_max: float = 0.05) -> dict:
    """Can these measurements rank configurations?  Per matrix: noise against the top gap.

    Parameters
    ----------
    measurements : list of Measurement
        Several configurations per matrix (``matrix_id``).
    cv_max : float, default=0.05
        Coefficient-of-variation threshold.

    Returns
    -------
    dict
        ``median_cv`` over all measurements, ``frac_cv_ok`` (share with CV < ``cv_max``),
        per matrix ``gap`` (relative gap between the best and second-best median runtime) and
        ``resolved`` (both top configurations' CV below half that gap), and ``frac_resolved``.
    """
    if isinstance(measurements, Measurement) or not hasattr(measurements, "__len__"):
        raise TypeError(
            f"measurements must be a list of Measurement, got {type(measurements).__name__}"
        )
    if not measurements:
        raise ValueError("measurements is empty")
    for i, m in enumerate(measurements):
        if not isinstance(m, Measurement):
            raise TypeError(f"measurements[{i}] must be a Measurement, got {type(m).__name__}")
        if not (np.isfinite(m.runtime_s) and m.runtime_s > 0 and np.isfinite(m.cv) and m.cv >= 0):
            raise ValueError(
                f"measurements[{i}]: runtime_s must be positive and cv non-negative, both finite "
                f"(got {m.runtime_s!r}, {m.cv!r})"
            )
    if isinstance(cv_max, bool) or not isinstance(cv_max, numbers.Real) or not 0 < cv_max < 1:
        raise ValueError(f"cv_max must lie in (0, 1), got {cv_max!r}")
    by: dict[int, list[Measurement]] = {}
    for m in measurements:
        by.setdefault(m.matrix_id, []).append(m)
    gaps, resolved = [], []
    for ms in by.values():
        if len(ms) < 2:
            raise ValueError("every matrix needs at least two configurations")
        top = sorted(ms, key=lambda m: m.runtime_s)[:2]
        gap = (top[1].runtime_s - top[0].runtime_s) / max(top[0].runtime_s, 1e-12)
        gaps.append(gap)
        resolved.append(max(top[0].cv, top[1].cv) < gap / 2)
    cvs = np.array([m.cv for m in measurements])
    return {
        "median_cv": float(np.median(cvs)),
        "frac_cv_ok": float(np.mean(cvs < cv_max)),
        "gap": np.array(gaps),
        "resolved": np.array(resolved),
        "frac_resolved": float(np.mean(resolved)),
    }


def make_operands(op: str, A: sp.csr_array, width: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Dense operands: SpMM ``(X,)`` with X (k, width); SDDMM ``(X1, X2)`` (m, d), (k, d)."""
    rng = np.random.default_rng(seed)
    m, k = A.shape
    if op == "spmm":
        return (rng.standard_normal((k, width), dtype=np.float32),)
    return (
        rng.standard_normal((m, width), dtype=np.float32),
        rng.standard_normal((k, width), dtype=np.float32),
    )


def reference(op: str, A: sp.csr_array, operands: tuple[np.ndarray, ...]) -> np.ndarray:
    """Dense reference: SpMM -> (m, width) array; SDDMM -> values at A's nonzeros (CSR order)."""
    if op == "spmm":
        return (A.toarray().astype(np.float64) @ operands[0].astype(np.float64)).astype(np.float32)
    coo = A.tocsr().tocoo()
    x1, x2 = operands
    dense = x1.astype(np.float64) @ x2.astype(np.float64).T
    return (coo.data * dense[coo.row, coo.col]).astype(np.float32)


def _panels(m: int, p: int) -> list[tuple[int, int]]:
    p = p or m
    return [(s, min(s + p, m)) for s in range(0, m, p)]


def _tiles(width: int, c: int) -> list[tuple[int, int]]:
    c = c or width
    return [(s, min(s + c, width)) for s in range(0, width, c)]


class ScipyBackend:
    """scipy.sparse kernels, measured wall-clock (source hardware ``scipy-cpu``).

    SpMM: A in CSR/COO/BSR(b) sliced into row panels, X in column tiles, panels spread over
    a thread pool (scipy's sparse matmul releases the GIL). SDDMM: gather-dot over the
    nonzeros of each row panel (``order``: CSR order or column-sorted).

    Parameters
    ----------
    threads : tuple of int, default=(2, 1)
        Values of the ``threads`` knob, the first being the default's. ``(1,)`` is the
        single-core regime (with :func:`pinned`): no thread pool, no contention between the
        timed kernel and its own workers, the quietest timing on a small machine.
    reorder : bool, default=False
        Add the SpMM het knob ``reorder`` (hardware name ``scipy-cpu-reorder``): ``"none"``
        (the default's), ``"rcm"`` (reverse Cuthill-McKee of the bipartite row/column graph,
        scipy.sparse.csgraph: nonzeros near the diagonal, so consecutive rows read nearby
        rows of X) or ``"degree"`` (rows and columns by decreasing nonzero count: hot rows of
        X adjacent). The permuted matrix and X are laid out in ``prepare`` (untimed, like the
        ``x_order`` copy and format conversions); the timed kernel writes each output row back
        to its original position. This space has no BSR (its fill on a scrambled matrix is
        unbounded). Pass ``threads=(1, 2)`` for scipy's own single-threaded default.
    """

    simulated = False

    def __init__(self, threads: tuple[int, ...] = (2, 1), reorder: bool = False) -> None:
        self.threads = _check_threads(threads)
        if not isinstance(reorder, bool):
            raise TypeError(f"reorder must be a bool, got {reorder!r}")
        self.reorder = reorder
        self.hardware = "scipy-cpu-reorder" if reorder else "scipy-cpu"
        self._pool = ThreadPoolExecutor(max_workers=max(self.threads))

    def fingerprint(self) -> dict[str, str]:
        return _fingerprint(self.hardware, scipy=scipy.__version__)

    def space(self, op: str) -> ScheduleSpace:
        """Schedule space for ``op``."""
        _check_op(op)
        if op == "spmm" and self.reorder:  # no BSR: its fill on a scrambled matrix is unbounded
            knobs = [
                Knob("format", ("csr", "coo"), "hom"),
                Knob("row_panel", (0, 256, 1024, 4096), "hom"),
                Knob("col_tile", (0, 8, 16, 32), "hom"),
                Knob("threads", self.threads, "hom"),
                Knob("x_order", ("C", "F"), "het"),
                Knob("reorder", REORDERINGS, "het"),
            ]
            d = {"format": "csr", "row_panel": 0, "col_tile": 0, "threads": self.threads[0],
                 "x_order": "C", "reorder": "none"}  # fmt: skip
        elif op == "spmm":
            knobs = [
                Knob("format", ("csr", "coo", "bsr"), "hom"),
                Knob("block", (1, 2, 4, 8), "hom"),
                Knob("row_panel", (0, 256, 1024, 4096), "hom"),
                Knob("col_tile", (0, 8, 16, 32), "hom"),
                Knob("threads", self.threads, "hom"),
                Knob("x_order", ("C", "F"), "het"),
            ]
            d = {
                "format": "csr",
                "block": 1,
                "row_panel": 0,
                "col_tile": 0,
                "threads": self.threads[0],
                "x_order": "C",
            }
        else:
            knobs = [
                Knob("row_panel", (0, 256, 1024, 4096), "hom"),
                Knob("threads", self.threads, "hom"),
                Knob("order", ("row", "col_sorted"), "het"),
            ]
            d = {"row_panel": 0, "threads": self.threads[0], "order": "row"}
        return ScheduleSpace(knobs, d)

    def prepare(
        self, op: str, A: sp.csr_array, cfg: dict, operands: tuple[np.ndarray, ...]
    ) -> Callable[[], np.ndarray]:
        """Convert formats / slice panels (untimed) and return the kernel closure."""
        m = A.shape[0]
        panels = _panels(m, int(cfg["row_panel"]))
        threads = int(cfg["threads"])
        if op == "spmm":
            X = operands[0]
            row_perm = None
            if cfg.get("reorder", "none") != "none":
                row_perm, col_perm = reorder_permutations(A, cfg["reorder"])
                A = A[row_perm][:, col_perm]
                X = X[col_perm]
            if cfg["x_order"] == "F":
                X = np.asfortranarray(X)
            tiles = [
                np.ascontiguousarray(X[:, a:b]) if cfg["x_order"] == "C" else X[:, a:b]
                for a, b in _tiles(X.shape[1], int(cfg["col_tile"]))
            ]
            bounds = _tiles(X.shape[1], int(cfg["col_tile"]))
            blocks = []
            for r0, r1 in panels:
                P = A[r0:r1]
                if cfg["format"] == "coo":
                    P = sp.coo_array(P)
                elif cfg["format"] == "bsr":
                    b = int(cfg["block"])
                    pad_r, pad_c = (-P.shape[0]) % b, (-P.shape[1]) % b
                    if pad_r or pad_c:
                        P = sp.csr_array((P.data, P.indices, P.indptr), shape=P.shape)
                        P.resize((P.shape[0] + pad_r, P.shape[1] + pad_c))
                    P = sp.bsr_array(P, blocksize=(b, b))
                blocks.append((r0, r1, P))
            out = np.empty((m, X.shape[1]), dtype=np.float32)
            k = A.shape[1]

            def panel(job: tuple[int, int, sp.sparray]) -> None:
                r0, r1, P = job
                for (a, b), T in zip(bounds, tiles, strict=True):
                    if P.shape[1] != k:  # bsr padding of columns
                        T = np.vstack([T, np.zeros((P.shape[1] - k, T.shape[1]), np.float32)])
                    out[r0:r1, a:b] = (P @ T)[: r1 - r0]

            run = self._runner(panel, blocks, threads, out)
            if row_perm is None:
                return run
            final = np.empty_like(out)

            def unpermute() -> np.ndarray:
                final[row_perm] = run()  # output rows back to the caller's order
                return final

            return unpermute
        X1, X2 = operands
        csr = A.tocsr()
        jobs = []
        for r0, r1 in panels:
            s, e = csr.indptr[r0], csr.indptr[r1]
            rows = np.repeat(np.arange(r0, r1), np.diff(csr.indptr[r0 : r1 + 1]))
            cols = csr.indices[s:e]
            perm = None
            if cfg["order"] == "col_sorted":
                perm = np.argsort(cols, kind="stable")
                rows, cols = rows[perm], cols[perm]
            jobs.append(
                (s, e, rows, cols, csr.data[s:e] if perm is None else csr.data[s:e][perm], perm)
            )
        out = np.empty(csr.nnz, dtype=np.float32)

        def sddmm(job: tuple) -> None:  # type: ignore[type-arg]
            s, e, rows, cols, vals, perm = job
            v = vals * np.einsum("ij,ij->i", X1[rows], X2[cols])
            if perm is None:
                out[s:e] = v
            else:
                out[s:e][perm] = v

        return self._runner(sddmm, jobs, threads, out)

    def _runner(self, fn, jobs, threads, out):  # type: ignore[no-untyped-def]
        if threads == 1 or len(jobs) == 1:

            def run() -> np.ndarray:
                for j in jobs:
                    fn(j)
                return out

        else:

            def run() -> np.ndarray:
                list(self._pool.map(fn, jobs))
                return out

        return run


class TorchCPUBackend:
    """torch.sparse kernels on CPU, measured (target hardware ``torch-cpu``).

    SpMM: ``torch.sparse.mm`` on CSR/COO (BSR when the installed torch supports it on CPU,
    probed at construction), row panels, column tiles, ``torch.set_num_threads``; het knobs
    ``index_dtype`` (int64/int32 CSR indices) and ``x_layout`` (row/column-major X).
    SDDMM: ``torch.sparse.sampled_addmm`` (CSR) per row panel; het knob ``index_dtype``.

    Parameters
    ----------
    threads : tuple of int, default=(2, 1)
        Values of the ``threads`` knob (``torch.set_num_threads``), the first being the
        default's; ``(1,)`` is the single-core regime.
    formats : tuple of str, optional
        SpMM formats to offer, a subset of ``("csr", "coo", "bsr")`` holding ``"csr"`` (the
        default's). By default every format this torch supports on CPU. Leave BSR out for large
        or scrambled matrices: its blocks are built from a dense copy of each row panel.
    """

    hardware = "torch-cpu"
    simulated = False

    def __init__(
        self, threads: tuple[int, ...] = (2, 1), formats: tuple[str, ...] | None = None
    ) -> None:
        import torch

        self.threads = _check_threads(threads)
        if formats is not None:
            if not isinstance(formats, tuple) or not all(isinstance(f, str) for f in formats):
                raise TypeError(f"formats must be a tuple of str, got {formats!r}")
            bad = [f for f in formats if f not in ("csr", "coo", "bsr")]
            if bad or "csr" not in formats or len(set(formats)) != len(formats):
                raise ValueError(
                    f"formats must be distinct values of ('csr', 'coo', 'bsr') including 'csr', "
                    f"got {formats!r}"
                )

        self.torch = torch
        self.formats = ["csr", "coo"]
        try:  # probe: keep BSR only if this torch can multiply it on CPU
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "BSR support is in beta"
                a = torch.eye(4).to_sparse_bsr((2, 2))
                (a @ torch.ones(4, 2)).sum()
            self.formats.append("bsr")
        except Exception:
            pass
        if formats is not None:
            if "bsr" in formats and "bsr" not in self.formats:
                raise ValueError("formats: this torch build cannot multiply BSR on CPU")
            self.formats = [f for f in self.formats if f in formats]
        try:
            a = torch.eye(4).to_sparse_csr()
            torch.sparse.sampled_addmm(a, torch.ones(4, 2), torch.ones(2, 4), beta=0.0)
            self.sddmm_ok = True
        except Exception:
            self.sddmm_ok = False

    def fingerprint(self) -> dict[str, str]:
        return _fingerprint(self.hardware, torch=self.torch.__version__)

    @contextlib.contextmanager
    def context(self, cfg: dict) -> Iterator[None]:
        """Set ``torch.set_num_threads`` for a configuration and restore it afterwards.

        Entered around the whole timing of a configuration (not every run): changing the
        thread count rebuilds torch's pool, which would otherwise be timed.
        """
        old = self.torch.get_num_threads()
        self.torch.set_num_threads(int(cfg["threads"]))
        try:
            yield
        finally:
            self.torch.set_num_threads(old)

    def space(self, op: str) -> ScheduleSpace:
        """Schedule space for ``op``."""
        _check_op(op)
        if op == "spmm":
            blocks = (1, 2, 4, 8) if "bsr" in self.formats else (1,)
            knobs = [
                Knob("format", tuple(self.formats), "hom"),
                Knob("block", blocks, "hom"),
                Knob("row_panel", (0, 256, 1024, 4096), "hom"),
                Knob("col_tile", (0, 8, 16, 32), "hom"),
                Knob("threads", self.threads, "hom"),
                Knob("index_dtype", ("int64", "int32"), "het"),
                Knob("x_layout", ("row", "col"), "het"),
            ]
            d = {
                "format": "csr",
                "block": 1,
                "row_panel": 0,
                "col_tile": 0,
                "threads": self.threads[0],
                "index_dtype": "int64",
                "x_layout": "row",
            }
        else:
            if not self.sddmm_ok:
                raise ValueError("op 'sddmm' is not supported by this torch build on CPU")
            knobs = [
                Knob("row_panel", (0, 256, 1024, 4096), "hom"),
                Knob("threads", self.threads, "hom"),
                Knob("index_dtype", ("int64", "int32"), "het"),
            ]
            d = {"row_panel": 0, "threads": self.threads[0], "index_dtype": "int64"}
        return ScheduleSpace(knobs, d)

    def prepare(
        self, op: str, A: sp.csr_array, cfg: dict, operands: tuple[np.ndarray, ...]
    ) -> Callable[[], np.ndarray]:
        """Convert to torch sparse tensors (untimed) and return the kernel closure."""
        torch = self.torch
        m = A.shape[0]
        idx = torch.int32 if cfg["index_dtype"] == "int32" else torch.int64
        panels = []
        for r0, r1 in _panels(m, int(cfg["row_panel"])):
            P = A[r0:r1].tocsr()
            t = torch.sparse_csr_tensor(
                torch.from_numpy(P.indptr.astype(np.int64)).to(idx),
                torch.from_numpy(P.indices.astype(np.int64)).to(idx),
                torch.from_numpy(P.data.astype(np.float32)),
                size=P.shape,
                check_invariants=False,  # built from canonical scipy CSR
            )
            if op == "spmm" and cfg["format"] == "coo":
                t = t.to_sparse_coo()
            elif op == "spmm" and cfg["format"] == "bsr":
                b = int(cfg["block"])
                dense_p = torch.zeros(-(-P.shape[0] // b) * b, -(-P.shape[1] // b) * b)
                dense_p[: P.shape[0], : P.shape[1]] = torch.from_numpy(P.toarray())
                t = dense_p.to_sparse_bsr((b, b))
            panels.append((r0, r1, t))
        if op == "spmm":
            X = torch.from_numpy(operands[0])
            if cfg["x_layout"] == "col":
                X = X.t().contiguous().t()
            bounds = _tiles(X.shape[1], int(cfg["col_tile"]))
            tiles = [X[:, a:b] for a, b in bounds]
            k = A.shape[1]
            out = torch.empty(m, X.shape[1])

            def run() -> np.ndarray:
                for r0, r1, t in panels:
                    for (a, b), T in zip(bounds, tiles, strict=True):
                        if t.shape[1] != k:
                            T = torch.cat([T, torch.zeros(t.shape[1] - k, T.shape[1])])
                        out[r0:r1, a:b] = (t @ T)[: r1 - r0]
                return out.numpy()

            return run
        X1, X2 = (torch.from_numpy(o) for o in operands)
        outs: list = []

        def run_sddmm() -> np.ndarray:
            outs.clear()
            for r0, r1, t in panels:
                r = torch.sparse.sampled_addmm(t, X1[r0:r1], X2.T, beta=0.0)
                outs.append(r.values() * t.values())
            return torch.cat(outs).numpy()

        return run_sddmm


def _check_threads(threads: tuple[int, ...]) -> tuple[int, ...]:
    if not isinstance(threads, tuple) or not threads:
        raise TypeError(f"threads must be a non-empty tuple of ints, got {threads!r}")
    if len(set(threads)) != len(threads) or any(t not in (1, 2) for t in threads):
        raise ValueError(f"threads must hold distinct values from (1, 2), got {threads!r}")
    return threads


@contextlib.contextmanager
def pinned(cpu: int | None = None) -> Iterator[None]:
    """Pin this process to one CPU (``os.sched_setaffinity``) and restore its affinity after.

    Parameters
    ----------
    cpu : int, optional
        The CPU; default the last one this process may run on (CPU 0 takes most interrupts).
        A no-op on platforms without ``sched_setaffinity``.
    """
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    old = os.sched_getaffinity(0)
    cpu = max(old) if cpu is None else cpu
    if cpu not in old:
        raise ValueError(f"cpu must be one of {sorted(old)}, got {cpu!r}")
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


def _fingerprint(hardware: str, **versions: str) -> dict[str, str]:
    return {
        "hardware": hardware,
        "cpu": platform.processor() or platform.machine(),
        "cores": str(os.cpu_count()),
        "numpy": np.__version__,
        **versions,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", ""),
    }


def _check_op(op: str) -> None:
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")


_BACKENDS = {
    "scipy-cpu": ScipyBackend,
    "torch-cpu": TorchCPUBackend,
    "sim-cpu": SimCPUBackend,
    "sim-accel": SimAccelBackend,
}


def get_backend(name: str) -> object:
    """Backend by hardware name (scipy-cpu, torch-cpu, sim-cpu, sim-accel)."""
    if not isinstance(name, str) or name not in _BACKENDS:
        raise ValueError(f"name must be one of {tuple(_BACKENDS)}, got {name!r}")
    return _BACKENDS[name]()


def _clock() -> int:
    """Nanosecond clock of the interleaved protocol (one name, so tests can drive it)."""
    return time.perf_counter_ns()


def _context(backend: object, cfg: dict) -> contextlib.AbstractContextManager:
    """The backend's per-configuration settings (torch threads), or nothing."""
    if hasattr(backend, "context"):
        return backend.context(cfg)  # type: ignore[attr-defined]
    return contextlib.nullcontext()


def _check_result(got: object, ref: np.ndarray, label: str) -> None:
    """Raise if a kernel's output differs from the dense reference (rtol 1e-4, scaled atol)."""
    scale = float(np.abs(ref).max()) or 1.0
    if not np.allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-5 * scale):
        raise AssertionError(f"{label}: result differs from the dense reference")


def _calibrated(fn: Callable[[], object], min_time: float) -> int:
    """Calls per sample so that one sample lasts at least ``min_time`` seconds."""
    if min_time <= 0:
        return 1
    t0 = _clock()
    fn()
    return max(1, int(np.ceil(min_time / max((_clock() - t0) * 1e-9, 1e-9))))


def _sample(backend: object, c: dict, fn: Callable[[], object], inner: int) -> float:
    with _context(backend, c):  # thread settings are switched around a sample, never inside it
        t0 = _clock()
        for _ in range(inner):
            fn()
        return (_clock() - t0) * 1e-9 / inner


def measure_interleaved(
    backend: object,
    op: str,
    A: sp.csr_array,
    configs: list[dict],
    *,
    dense_width: int = 64,
    rounds: int = 5,
    retest: int = 5,
    min_time: float = 0.005,
    check: bool = False,
    seed: int = 0,
    matrix_id: int = 0,
) -> tuple[list[Measurement], dict]:
    """Time configurations interleaved, min-of-``rounds``, then re-measure the top two.

    Every configuration is prepared and warmed up first; each round then takes one sample of
    every configuration in a rotating order, so a slow spell of the machine hits all of them
    alike. A configuration's runtime is the minimum of its samples (the least-disturbed run);
    its ``cv`` is the samples' coefficient of variation. The two fastest are then re-measured
    the same way ``retest`` times: ``agree`` says whether the re-measurement picks the same
    winner (test-retest agreement of the argmin).

    Parameters
    ----------
    backend, op, A, configs, dense_width, check, seed, matrix_id
        As in :func:`measure` (measured backends only).
    rounds : int, default=5
    retest : int, default=5
        Re-measurement rounds of the top two (0 skips it: ``agree`` is None).
    min_time : float, default=0.005
        Seconds each sample must last (a fast kernel is called repeatedly within a sample).

    Returns
    -------
    measurements : list of Measurement
    retest : dict
        ``agree`` (bool or None), ``top2`` (indices into ``configs``), ``gap`` (relative gap
        between their first-pass runtimes), ``retest_s`` (their re-measured runtimes).
    """
    _check_op(op)
    A = check_matrix(A)
    check_backend(backend)
    if getattr(backend, "simulated", False):
        raise ValueError("measure_interleaved times measured backends; use measure() to simulate")
    rounds = _check_int(rounds, "rounds", 1)
    retest = _check_int(retest, "retest", 0)
    dense_width = _check_int(dense_width, "dense_width", 1)
    min_time = _check_min_time(min_time)
    if isinstance(configs, dict) or not isinstance(configs, list | tuple):
        raise TypeError(
            f"configs must be a list of configuration dicts, got {type(configs).__name__}"
        )
    if len(configs) < 2:
        raise ValueError("configs needs at least two configurations to rank")
    space = backend.space(op)  # type: ignore[attr-defined]
    for i, c in enumerate(configs):
        try:
            space.check(c)
        except (TypeError, ValueError) as e:
            raise type(e)(f"configs[{i}]: {e}") from e
    operands = make_operands(op, A, dense_width, seed)
    ref = reference(op, A, operands) if check else None
    runs, preps, inner = [], [], []
    for c in configs:
        t0 = _clock()
        run = backend.prepare(op, A, c, operands)  # type: ignore[attr-defined]
        preps.append((_clock() - t0) * 1e-9)
        with _context(backend, c):
            got = run()  # warm-up
            if ref is not None:
                _check_result(got, ref, f"{op} {c}")
            inner.append(_calibrated(run, min_time))
        runs.append(run)

    def interleave(idx: list[int], n_rounds: int) -> np.ndarray:
        ts = np.empty((len(idx), n_rounds))
        for r in range(n_rounds):
            for j in range(len(idx)):
                k = (j + r) % len(idx)  # rotating order
                ts[k, r] = _sample(backend, configs[idx[k]], runs[idx[k]], inner[idx[k]])
        return ts

    ts = interleave(list(range(len(configs))), rounds)
    best = ts.min(axis=1)
    hw = backend.hardware  # type: ignore[attr-defined]
    out = [
        Measurement(matrix_id, hw, op, dict(c), float(best[i]),
                    float(ts[i].std() / max(ts[i].mean(), 1e-12)), preps[i])
        for i, c in enumerate(configs)
    ]  # fmt: skip
    top2 = [int(i) for i in np.argsort(best, kind="stable")[:2]]
    info: dict = {"agree": None, "top2": top2, "retest_s": None,
                  "gap": float((best[top2[1]] - best[top2[0]]) / best[top2[0]])}  # fmt: skip
    if retest:
        again = interleave(top2, retest).min(axis=1)
        info["agree"] = bool(again[0] <= again[1])
        info["retest_s"] = [float(v) for v in again]
    return out, info


def measure(
    backend: object,
    op: str,
    A: sp.csr_array,
    configs: list[dict],
    *,
    dense_width: int = 64,
    timer: Timer | None = None,
    check: bool = False,
    seed: int = 0,
    matrix_id: int = 0,
) -> list[Measurement]:
    """Time (or simulate) every configuration of ``op`` on matrix ``A``.

    Parameters
    ----------
    backend : ScipyBackend, TorchCPUBackend, SimCPUBackend or SimAccelBackend
    op : {"spmm", "sddmm"}
    A : sparse matrix
    configs : list of dict
        Configurations of ``backend.space(op)``.
    dense_width : int, default=64
        SpMM dense columns n / SDDMM inner dimension d.
    timer : Timer, optional
        Default ``Timer(warmup=1, repeats=5)``.
    check : bool, default=False
        Compare every configuration's result with a dense reference (rtol 1e-4, atol 1e-5
        relative to the output scale).
    seed : int, default=0
        Seed of the dense operands.
    matrix_id : int, default=0
        Stored in the measurements.

    Returns
    -------
    list of Measurement
    """
    _check_op(op)
    A = check_matrix(A)
    check_backend(backend)
    dense_width = _check_int(dense_width, "dense_width", 1)
    if isinstance(configs, dict) or not isinstance(configs, list | tuple):
        raise TypeError(
            f"configs must be a list of configuration dicts, got {type(configs).__name__}"
        )
    if not configs:
        raise ValueError("configs is empty")
    if timer is not None and not isinstance(timer, Timer):
        raise TypeError(f"timer must be a Timer, got {type(timer).__name__}")
    sp_ = backend.space(op)  # type: ignore[attr-defined]
    for i, c in enumerate(configs):
        try:
            sp_.check(c)
        except (TypeError, ValueError) as e:
            raise type(e)(f"configs[{i}]: {e}") from e
    hw = backend.hardware  # type: ignore[attr-defined]
    if getattr(backend, "simulated", False):
        cost = backend.cost(op, A, configs, dense_width)  # type: ignore[attr-defined]
        return [
            Measurement(matrix_id, hw, op, dict(c), float(t), 0.0, 0.0)
            for c, t in zip(configs, cost, strict=True)
        ]
    timer = timer or Timer()
    operands = make_operands(op, A, dense_width, seed)
    ref = reference(op, A, operands) if check else None
    out = []
    for c in configs:
        t0 = time.perf_counter_ns()
        run = backend.prepare(op, A, c, operands)  # type: ignore[attr-defined]
        prep = (time.perf_counter_ns() - t0) * 1e-9
        with _context(backend, c):
            if ref is not None:
                _check_result(run(), ref, f"{hw} {op} {c}")
            rt, cv = timer(run)
        out.append(Measurement(matrix_id, hw, op, dict(c), rt, cv, prep))
    return out
