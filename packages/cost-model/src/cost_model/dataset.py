"""Cost datasets: (matrix, configuration, runtime) triples of one hardware and op.

Matrix features are stored once per matrix; configurations as their hom/het codes
(:meth:`ScheduleSpace.encode`), so datasets of different hardware share the hom columns.
"""

from __future__ import annotations

import json
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from cost_model.features import MatrixFeaturizer
from cost_model.kernels import Timer, check_backend, measure, measure_interleaved
from cost_model.matrices import MatrixSet
from cost_model.space import SHARED_KNOBS

__all__ = ["CostDataset", "TimingNotReproducibleError", "collect", "cross_run_agreement"]


class TimingNotReproducibleError(RuntimeError):
    """The collection's re-measured winners disagree too often to rank configurations."""


@dataclass
class CostDataset:
    """Runtime measurements of one (hardware, op).

    Attributes
    ----------
    hardware, op : str
    images : (M, R, R) float32; scalars : (M, S) float32; workload : (M, W) float32
        Per-matrix features (W: log2 dense width).
    matrix_names : list of str, length M
    matrix_index : (N,) int64, row -> matrix
    hom : (N, len(SHARED_KNOBS)) int64; het : (N, n_het) int64
    runtime : (N,) float64 seconds
    is_default : (N,) bool, the row is the platform's default configuration
    het_sizes : tuple of int, number of values of each het knob
    fingerprint : dict
    cv : (N,) float64 or None
        Coefficient of variation of each measurement's timing samples (0 when simulated).
    retest_agree : (M,) bool or None
        ``collect(protocol="interleaved")``: whether re-measuring each matrix's two fastest
        configurations picked the same winner.
    timing : dict
        How the runtimes were taken (protocol, rounds, retest, machine load before and after,
        agreement); empty for older or simulated datasets.
    """

    hardware: str
    op: str
    images: np.ndarray
    scalars: np.ndarray
    workload: np.ndarray
    matrix_names: list[str]
    matrix_index: np.ndarray
    hom: np.ndarray
    het: np.ndarray
    runtime: np.ndarray
    is_default: np.ndarray
    het_sizes: tuple[int, ...]
    fingerprint: dict = field(default_factory=dict)
    cv: np.ndarray | None = None
    retest_agree: np.ndarray | None = None
    timing: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("hardware", "op"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")
        kinds = {"images": ("f", 3), "scalars": ("f", 2), "workload": ("f", 2),
                 "matrix_index": ("iu", 1), "hom": ("iu", 2), "het": ("iu", 2),
                 "runtime": ("f", 1), "is_default": ("b", 1)}  # fmt: skip
        for name, (kind, ndim) in kinds.items():
            a = np.asarray(getattr(self, name))
            if a.ndim != ndim or (a.size and a.dtype.kind not in kind):
                raise ValueError(f"{name} must be a {ndim}-D {kind!r}-kind array, "
                                 f"got {a.dtype} {a.shape}")  # fmt: skip
            if kind == "f" and not np.all(np.isfinite(a)):
                raise ValueError(f"{name} contains NaN or inf")
            setattr(self, name, a)
        m = len(self.matrix_names)
        if isinstance(self.matrix_names, str) or not all(
            isinstance(x, str) for x in self.matrix_names
        ):
            raise TypeError("matrix_names must be a list of str")
        self.matrix_names = list(self.matrix_names)
        for name in ("images", "scalars", "workload"):
            if getattr(self, name).shape[0] != m:
                raise ValueError(
                    f"{name} has {getattr(self, name).shape[0]} rows but "
                    f"matrix_names names {m} matrices"
                )
        n = self.runtime.shape[0]
        names = ("matrix_index", "hom", "het", "is_default") + (
            ("cv",) if self.cv is not None else ()
        )
        for name in names:
            if getattr(self, name).shape[0] != n:
                raise ValueError(f"{name} must have {n} rows")
        if n and (self.matrix_index.min() < 0 or self.matrix_index.max() >= m):
            raise ValueError(f"matrix_index must point at the {m} matrices, in [0, {m})")
        sizes = tuple(self.het_sizes)
        if self.het.shape[1] != len(sizes) or any(
            isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1 for k in sizes
        ):
            raise ValueError(f"het_sizes must give one positive size per het column "
                             f"({self.het.shape[1]}), got {sizes}")  # fmt: skip
        self.het_sizes = tuple(int(k) for k in sizes)
        if (
            n
            and self.het.size
            and ((self.het < 0).any() or (self.het >= np.array(self.het_sizes)).any())
        ):
            raise ValueError("het codes must lie in [0, het_sizes[j]) for column j")
        vocab = np.array([len(v) for v in SHARED_KNOBS.values()])
        if self.hom.shape[1] != len(vocab):
            raise ValueError(f"hom must have {len(vocab)} columns (SHARED_KNOBS)")
        if n and ((self.hom < 0).any() or (self.hom > vocab).any()):
            raise ValueError("hom codes must lie in [0, len(SHARED_KNOBS[knob])] (0 = absent)")
        if self.retest_agree is not None and self.retest_agree.shape[0] != len(self.matrix_names):
            raise ValueError(
                f"retest_agree must have {len(self.matrix_names)} entries (one per matrix)"
            )
        if (n and not np.all(np.isfinite(self.runtime))) or np.any(self.runtime <= 0):
            raise ValueError("runtime must be finite and positive")
        if self.cv is not None:
            self.cv = np.asarray(self.cv, dtype=np.float64)
            if not np.all(np.isfinite(self.cv)) or np.any(self.cv < 0):
                raise ValueError("cv must be finite and >= 0")

    def __len__(self) -> int:
        return int(self.runtime.shape[0])

    @property
    def hom_present(self) -> np.ndarray:
        """Which shared-vocabulary knobs this hardware has, shape (len(SHARED_KNOBS),)."""
        return (self.hom != 0).any(0)

    @property
    def n_matrices(self) -> int:
        return int(self.images.shape[0])

    def rows_of(self, matrix: int) -> np.ndarray:
        """Row indices of one matrix."""
        return np.flatnonzero(self.matrix_index == matrix)

    def _subset(self, mats: np.ndarray, rows: np.ndarray | None = None) -> CostDataset:
        mats = np.asarray(mats, dtype=np.int64)
        remap = -np.ones(self.n_matrices, dtype=np.int64)
        remap[mats] = np.arange(mats.size)
        if rows is None:
            rows = np.flatnonzero(remap[self.matrix_index] >= 0)
        rows = np.sort(rows)
        return CostDataset(
            self.hardware,
            self.op,
            self.images[mats],
            self.scalars[mats],
            self.workload[mats],
            [self.matrix_names[i] for i in mats],
            remap[self.matrix_index[rows]],
            self.hom[rows],
            self.het[rows],
            self.runtime[rows],
            self.is_default[rows],
            self.het_sizes,
            dict(self.fingerprint),
            None if self.cv is None else self.cv[rows],
            None if self.retest_agree is None else self.retest_agree[mats],
            dict(self.timing),
        )

    def split(
        self, *, by: str = "matrix", test_frac: float = 0.2, seed: int = 0
    ) -> tuple[CostDataset, CostDataset]:
        """Split by matrix into (train, test); test matrices are disjoint from train."""
        if by != "matrix":
            raise ValueError(f"by must be 'matrix', got {by!r}")
        if not 0 < test_frac < 1:
            raise ValueError(f"test_frac must be in (0, 1), got {test_frac}")
        perm = np.random.default_rng(seed).permutation(self.n_matrices)
        n_test = max(1, round(test_frac * self.n_matrices))
        return self._subset(np.sort(perm[n_test:])), self._subset(np.sort(perm[:n_test]))

    def take_matrices(self, idx: np.ndarray) -> CostDataset:
        """The sub-dataset of the given matrices (all their rows)."""
        return self._subset(np.asarray(idx))

    def subsample(
        self, frac: float, *, by: str = "pairs", min_per_matrix: int = 2, seed: int = 0
    ) -> CostDataset:
        """A random ``frac`` of the data (spec §2.6).

        ``by="pairs"``: ``round(frac * len(self))`` triples spread over as many matrices as
        allow ``min_per_matrix`` rows each (ranking needs pairs); ``by="matrices"``: ``frac`` of
        the matrices with all their rows.
        """
        if not 0 < frac <= 1:
            raise ValueError(f"frac must be in (0, 1], got {frac}")
        rng = np.random.default_rng(seed)
        if frac == 1:
            return self._subset(np.arange(self.n_matrices))
        if by == "matrices":
            k = max(1, round(frac * self.n_matrices))
            return self._subset(np.sort(rng.choice(self.n_matrices, k, replace=False)))
        if by != "pairs":
            raise ValueError(f"by must be 'pairs' or 'matrices', got {by!r}")
        if min_per_matrix < 1:
            raise ValueError(f"min_per_matrix must be >= 1, got {min_per_matrix}")
        budget = max(min_per_matrix, round(frac * len(self)))
        n_mat = min(self.n_matrices, max(1, budget // min_per_matrix))
        mats = np.sort(rng.choice(self.n_matrices, n_mat, replace=False))
        quota = np.full(n_mat, budget // n_mat)
        quota[: budget % n_mat] += 1
        rows = []
        for mi, q in zip(mats, quota, strict=True):
            r = self.rows_of(mi)
            rows.append(rng.choice(r, min(q, r.size), replace=False))
        return self._subset(mats, np.concatenate(rows))

    def centred_log_runtime(self) -> np.ndarray:
        """log runtime minus its matrix mean, shape (N,): what a per-matrix ranking sees."""
        y = np.log(self.runtime)
        mean = np.bincount(self.matrix_index, y, self.n_matrices) / np.maximum(
            np.bincount(self.matrix_index, minlength=self.n_matrices), 1
        )
        return y - mean[self.matrix_index]

    def variance_explained(self) -> dict[str, float]:
        """Share of the within-matrix variance of log runtime that each knob group explains.

        R² of least-squares fits of :meth:`centred_log_runtime` on one-hot knob values plus
        their pairwise products, pooled over matrices: ``"shared"`` (homogeneous knobs),
        ``"het"`` (heterogeneous knobs), ``"all"`` (both, with cross products), and per knob
        ``"<name>"`` (η², one-way). A knob effect that flips sign between matrices counts as
        unexplained here (the fits do not see the matrix), so these are lower bounds on what
        a matrix-aware model can learn from each group.

        Returns
        -------
        dict of str to float
        """
        y = self.centred_log_runtime()
        tot = float(y @ y)
        if len(self) < 2 or tot <= 0:
            raise ValueError("need at least two distinct runtimes per matrix")
        names = list(SHARED_KNOBS)
        hom = [self.hom[:, j] for j in range(self.hom.shape[1]) if self.hom_present[j]]
        hom_names = [names[j] for j in range(self.hom.shape[1]) if self.hom_present[j]]
        het = [self.het[:, j] for j in range(self.het.shape[1])]

        def r2(cols: list[np.ndarray]) -> float:
            # one-hot (first level dropped) + pairwise products, intercept
            oh = [(c == v).astype(np.float64) for c in cols for v in np.unique(c)[1:]]
            feats = [np.ones(len(y))] + oh + [a * b for i, a in enumerate(oh) for b in oh[i + 1 :]]
            X = np.stack(feats, 1)
            coef, *_ = np.linalg.lstsq(X, y, rcond=None)
            res = y - X @ coef
            return float(max(0.0, 1 - (res @ res) / tot))

        out = {"shared": r2(hom), "het": r2(het), "all": r2(hom + het)}
        for name, c in zip(
            hom_names + [f"het{j}" for j in range(len(het))], hom + het, strict=True
        ):
            inv = np.unique(c, return_inverse=True)[1]
            fit = (np.bincount(inv, y) / np.bincount(inv))[inv]  # group means; y has mean 0
            out[name] = float((fit @ fit) / tot)
        return out

    def save(self, path: str | Path) -> None:
        """Save to ``.npz`` (names and fingerprint as JSON)."""
        meta = {
            "hardware": self.hardware,
            "op": self.op,
            "names": self.matrix_names,
            "het_sizes": list(self.het_sizes),
            "fingerprint": self.fingerprint,
            "timing": self.timing,
        }
        np.savez_compressed(
            path,
            images=self.images,
            scalars=self.scalars,
            workload=self.workload,
            matrix_index=self.matrix_index,
            hom=self.hom,
            het=self.het,
            runtime=self.runtime,
            is_default=self.is_default,
            meta=np.array(json.dumps(meta)),
            **({} if self.cv is None else {"cv": self.cv}),
            **({} if self.retest_agree is None else {"retest_agree": self.retest_agree}),
        )

    @classmethod
    def load(cls, path: str | Path) -> CostDataset:
        """Load a dataset written by :meth:`save`."""
        import zipfile

        need = {"images", "scalars", "workload", "matrix_index", "hom", "het", "runtime",
                "is_default", "meta"}  # fmt: skip
        try:
            z = np.load(path, allow_pickle=False)
            missing = need - set(getattr(z, "files", ()))
            if missing:
                raise ValueError(f"misses the arrays {sorted(missing)}")
            meta = json.loads(str(z["meta"]))
            keys = {"hardware", "op", "names", "het_sizes", "fingerprint"}
            if not isinstance(meta, dict) or keys - set(meta):
                raise ValueError(f"meta misses {sorted(keys - set(meta or {}))}")
        except (zipfile.BadZipFile, EOFError, json.JSONDecodeError, ValueError) as e:
            raise ValueError(f"{path} is not a CostDataset .npz written by save(): {e}") from e
        return cls(
            meta["hardware"],
            meta["op"],
            z["images"],
            z["scalars"],
            z["workload"],
            list(meta["names"]),
            z["matrix_index"],
            z["hom"],
            z["het"],
            z["runtime"],
            z["is_default"],
            tuple(meta["het_sizes"]),
            meta["fingerprint"],
            z["cv"] if "cv" in z.files else None,
            z["retest_agree"] if "retest_agree" in z.files else None,
            dict(meta.get("timing", {})),
        )


def collect(
    backend: object,
    op: str,
    mset: MatrixSet,
    *,
    n_configs: int = 24,
    dense_width: int = 64,
    seed: int = 0,
    timer: Timer | None = None,
    featurizer: MatrixFeaturizer | None = None,
    check: bool = False,
    verbose: bool = False,
    protocol: str = "median",
    retest: int = 5,
    min_agreement: float = 0.8,
) -> CostDataset:
    """Measure ``n_configs`` sampled configurations (default included) on every matrix.

    Parameters
    ----------
    backend : a backend from :mod:`cost_model.kernels`
    op : {"spmm", "sddmm"}
    mset : MatrixSet
    n_configs : int, default=24
        Configurations per matrix (a fresh sample per matrix, seeded).
    dense_width : int, default=64
    seed : int, default=0
    timer : Timer, optional
    featurizer : MatrixFeaturizer, optional
        Default resolution 32.
    check : bool, default=False
        Verify kernels against a dense reference.
    verbose : bool, default=False
        Progress bar.
    protocol : {"median", "interleaved"}, default="median"
        ``"median"``: each configuration timed in turn, the median of ``timer.repeats``
        samples. ``"interleaved"`` (measured backends): one sample of every configuration per
        round in a rotating order, the minimum of ``timer.repeats`` rounds, then each
        matrix's two fastest re-measured ``retest`` times
        (:func:`~cost_model.kernels.measure_interleaved`).
    retest : int, default=5
        ``"interleaved"`` only: re-measurement rounds of each matrix's top two.
    min_agreement : float, default=0.8
        ``"interleaved"`` only: the share of matrices whose re-measurement must pick the same
        winner; below it :class:`TimingNotReproducibleError` is raised (0 keeps any result).

    Returns
    -------
    CostDataset

    Raises
    ------
    TimingNotReproducibleError
        The test-retest agreement is below ``min_agreement``.
    """
    if not isinstance(mset, MatrixSet):
        raise TypeError(f"mset must be a MatrixSet, got {type(mset).__name__}")
    if len(mset) == 0:
        raise ValueError("mset is empty")
    check_backend(backend)
    if isinstance(n_configs, bool) or not isinstance(n_configs, numbers.Integral) or n_configs < 1:
        raise ValueError(f"n_configs must be an int >= 1, got {n_configs!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if timer is not None and not isinstance(timer, Timer):
        raise TypeError(f"timer must be a Timer, got {type(timer).__name__}")
    if protocol not in ("median", "interleaved"):
        raise ValueError(f"protocol must be 'median' or 'interleaved', got {protocol!r}")
    interleaved = protocol == "interleaved"
    if interleaved and getattr(backend, "simulated", False):
        raise ValueError("protocol='interleaved' times a measured backend; this one is simulated")
    if isinstance(min_agreement, bool) or not (
        isinstance(min_agreement, numbers.Real) and 0 <= min_agreement <= 1
    ):
        raise ValueError(f"min_agreement must lie in [0, 1], got {min_agreement!r}")
    if (
        isinstance(retest, bool)
        or not isinstance(retest, numbers.Integral)
        or retest < (1 if interleaved else 0)
    ):
        raise ValueError(f"retest must be a positive int, got {retest!r}")
    timer = timer or Timer()
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    agree = []
    space = backend.space(op)  # type: ignore[attr-defined]
    feat = featurizer or MatrixFeaturizer()
    images, scalars, rows = [], [], []
    default = space.default()
    for i in tqdm(range(len(mset)), disable=not verbose, desc=f"collect {op}"):
        A = mset[i]
        img, sc = feat(A)
        images.append(img)
        scalars.append(sc)
        cfgs = space.sample(n_configs, seed=seed * 100_003 + i, include_default=True)
        if interleaved:
            ms_i, info = measure_interleaved(
                backend, op, A, cfgs, dense_width=dense_width, rounds=timer.repeats,
                retest=retest, min_time=timer.min_time, check=check, seed=seed, matrix_id=i,
            )  # fmt: skip
            agree.append(bool(info["agree"]))
        else:
            ms_i = measure(
                backend, op, A, cfgs, dense_width=dense_width, timer=timer, check=check,
                seed=seed, matrix_id=i,
            )  # fmt: skip
        for ms in ms_i:
            rows.append((i, space.encode(ms.config), ms.runtime_s, ms.config == default, ms.cv))
    timing: dict = {}
    if interleaved:
        load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        frac = float(np.mean(agree))
        timing = {"protocol": "interleaved-min", "rounds": timer.repeats, "retest": retest,
                  "min_time": timer.min_time, "load_start": load0, "load_end": load1,
                  "agreement": frac}  # fmt: skip
        if frac < min_agreement:
            raise TimingNotReproducibleError(
                f"re-measuring each matrix's two fastest configurations picked the same winner "
                f"on {frac:.0%} of {len(agree)} matrices (< min_agreement={min_agreement:.0%}; "
                f"1-min load {load0:.1f} -> {load1:.1f}): these timings cannot rank "
                "configurations. Re-run on an idle machine, pin the process to one core "
                "(cost_model.kernels.pinned), raise timer.min_time or timer.repeats, or pass "
                "min_agreement=0 to keep them anyway."
            )
    return CostDataset(
        backend.hardware,
        op,
        np.stack(images),
        np.stack(scalars),  # type: ignore[attr-defined]
        np.full((len(mset), 1), np.log2(dense_width), dtype=np.float32),
        list(mset.names),
        np.array([r[0] for r in rows], dtype=np.int64),
        np.stack([r[1]["hom"] for r in rows]),
        np.stack([r[1]["het"] for r in rows]),
        np.array([r[2] for r in rows], dtype=np.float64),
        np.array([r[3] for r in rows]),
        tuple(len(k.values) for k in space.het_knobs),
        backend.fingerprint(),  # type: ignore[attr-defined]
        np.array([r[4] for r in rows], dtype=np.float64),
        np.array(agree, dtype=bool) if interleaved else None,
        timing,
    )


def _configs(ds: CostDataset, name: str) -> set[tuple]:
    rows = ds.matrix_index == ds.matrix_names.index(name)
    return {
        (tuple(h), tuple(t))
        for h, t in zip(ds.hom[rows].tolist(), ds.het[rows].tolist(), strict=True)
    }


def _winners(ds: CostDataset) -> dict[str, tuple]:
    """Each matrix's fastest configuration (its encoded knob values), by matrix name."""
    out = {}
    for m, name in enumerate(ds.matrix_names):
        rows = np.flatnonzero(ds.matrix_index == m)
        best = rows[np.argmin(ds.runtime[rows])]
        out[name] = (tuple(ds.hom[best].tolist()), tuple(ds.het[best].tolist()))
    return out


def cross_run_agreement(a: CostDataset, b: CostDataset, min_agreement: float | None = 0.8) -> float:
    """Share of the matrices two independent collections give the same fastest configuration.

    :func:`collect`'s gate re-measures the top two inside one run, so a machine that stays
    loaded through the run passes it; two runs (another time, or another process) must also
    agree before their labels rank configurations.

    Parameters
    ----------
    a, b : CostDataset
        Collections of the same op and hardware over the same matrices and configurations
        (the same ``n_configs`` and ``seed``).
    min_agreement : float or None, default=0.8
        Below it :class:`TimingNotReproducibleError` is raised; None only reports.

    Returns
    -------
    float
        The agreement in [0, 1].
    """
    if min_agreement is not None and (
        isinstance(min_agreement, bool)
        or not isinstance(min_agreement, numbers.Real)
        or not 0 <= min_agreement <= 1
    ):
        raise ValueError(f"min_agreement must be in [0, 1] or None, got {min_agreement!r}")
    if not isinstance(a, CostDataset) or not isinstance(b, CostDataset):
        raise TypeError("a, b: expected two CostDataset collections")
    if (a.op, a.hardware) != (b.op, b.hardware):
        raise ValueError(
            f"a, b: different collections ({a.op}/{a.hardware} vs {b.op}/{b.hardware})"
        )
    if sorted(a.matrix_names) != sorted(b.matrix_names):
        raise ValueError("a, b: the collections hold different matrices")
    wa, wb = _winners(a), _winners(b)
    for name in wa:
        if _configs(a, name) != _configs(b, name):
            raise ValueError(f"a, b: matrix {name!r} was measured on different configurations")
    frac = float(np.mean([wa[n] == wb[n] for n in wa]))
    if min_agreement is not None and frac < min_agreement:
        raise TimingNotReproducibleError(
            f"two collections pick the same fastest configuration on {frac:.0%} of "
            f"{len(wa)} matrices (< min_agreement={min_agreement:.0%}): the timings do not "
            "rank configurations reproducibly (re-run on an idle machine, pinned to one core)"
        )
    return frac
