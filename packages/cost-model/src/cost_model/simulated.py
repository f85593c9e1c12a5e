"""Deterministic analytic platforms: ``sim-cpu`` (source) and ``sim-accel`` (target) (spec §2.3).

Both price a configuration from matrix statistics in closed form (< 1 ms per matrix for all
configurations), so transfer experiments and tests are exactly reproducible. Costs are in
seconds of a notional machine; only their ratios matter.

sim-cpu (cache-line / bandwidth model, compute and memory add up):
    compute  = work(format) * n * c_flop                 work: csr nnz, coo 1.25 nnz,
                                                          bsr(b) 0.45 nnz / fill_b + block index
    memory   = sum over column tiles of dense-row fetches: one per distinct (panel, column)
               when the panel's working set (distinct cols x tile width x 4 B) fits the
               256 KiB cache, else one per nonzero; plus one pass over A's indices per tile
    parallel = (compute + memory) * imbalance(panels -> threads) / threads + overheads
    het: ``prefetch`` (memory x0.7, compute x1.05), ``unroll`` 4 (helps rows >= 8 nnz, hurts
    short rows)

sim-accel (SPADE-like tile accelerator, 64 PEs, compute and memory overlap):
    row panels (default: one contiguous chunk per PE group) are dealt to 64/pe_group PE groups; a group's tile buffer
    (16 KiB x pe_group) holds the dense tile of the panel's distinct columns when it fits,
    else every nonzero refetches; ``barrier`` shares fetched tiles across the panels a group
    processes together (fewer fetches) at a sync cost per panel; ``bypass`` streams A around
    the cache (helps low-reuse inputs, hurts high-reuse ones); ``reorder`` balances load
    (longest-processing-time assignment) for a preprocessing pass; BSR runs on the dense tile
    engine (cheap per stored value, so it wins only when blocks are full).
    cost = max(compute, memory) * imbalance + sync + preprocessing
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from cost_model.space import Knob, ScheduleSpace

__all__ = ["SimAccelBackend", "SimCPUBackend", "sim_matrix_profile"]

_PANELS = (0, 256, 1024, 4096)


def _group_work(rl: np.ndarray, rows_per_panel: int, n_units: int, lpt: bool) -> float:
    """Imbalance = max unit load / mean unit load when panels are dealt to units."""
    m = rl.size
    n_p = -(-m // rows_per_panel)
    pad = np.zeros(n_p * rows_per_panel)
    pad[:m] = rl
    work = pad.reshape(n_p, rows_per_panel).sum(1) + 1.0  # +1: per-panel fixed cost
    if lpt:
        # longest-processing-time bound: close to perfect unless one panel dominates
        return float(max(work.max() / (work.sum() / n_units), 1.0))
    units = np.zeros(n_units)
    np.add.at(units, np.arange(n_p) % n_units, work)
    return float(units.max() / max(units.mean(), 1e-12))


def distinct_cols(prof: dict[str, object], rows_per_panel: int) -> float:
    """Number of distinct (row panel, column) pairs: dense rows a panel-wise kernel fetches."""
    key = f"distinct_{rows_per_panel}"
    if key not in prof:
        panel = prof["_row"] // rows_per_panel  # type: ignore[operator]
        prof[key] = float(np.unique(panel * int(prof["k"]) + prof["_col"]).size)  # type: ignore[operator]
    return float(prof[key])  # type: ignore[arg-type]


def sim_matrix_profile(A: sp.csr_array) -> dict[str, object]:
    """Statistics the simulators need (distinct-column counts are filled in lazily)."""
    rl = np.diff(A.indptr).astype(np.float64)
    coo = A.tocoo()
    prof: dict[str, object] = {
        "m": A.shape[0],
        "k": A.shape[1],
        "nnz": A.nnz,
        "rl": rl,
        "_row": coo.row.astype(np.int64),
        "_col": coo.col.astype(np.int64),
    }
    prof["distinct_all"] = float(np.unique(coo.col).size)
    for b in (2, 4, 8):
        nb = np.unique((coo.row.astype(np.int64) // b) * (A.shape[1] // b + 1) + coo.col // b)
        prof[f"fill_{b}"] = A.nnz / (nb.size * b * b)
    return prof


class _SimBase:
    hardware = ""
    simulated = True

    def __init__(self) -> None:
        self._cache: dict[int, dict[str, object]] = {}

    def profile(self, A: sp.csr_array) -> dict[str, object]:
        key = id(A)
        hit = self._cache.get(key)
        if hit is None or hit["_ref"] is not A:
            hit = sim_matrix_profile(A)
            hit["_ref"] = A
            if len(self._cache) > 512:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def fingerprint(self) -> dict[str, str]:
        return {"hardware": self.hardware, "kind": "analytic simulator"}


def _positive(value: object, name: str) -> float:
    # float("1e5") and float(-1) were accepted and gave nonsense costs
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (np.isfinite(value) and value > 0)
    ):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


class SimCPUBackend(_SimBase):
    """Analytic 2-thread CPU with a 256 KiB cache (deterministic source platform).

    Parameters
    ----------
    cache_bytes : float, default=2**18
    """

    hardware = "sim-cpu"

    def __init__(self, cache_bytes: float = 2**18) -> None:
        super().__init__()
        self.cache_bytes = _positive(cache_bytes, "cache_bytes")

    def space(self, op: str) -> ScheduleSpace:
        """Schedule space for ``op`` in {"spmm", "sddmm"}."""
        _check_op(op)
        knobs = [
            Knob("format", ("csr", "coo", "bsr"), "hom"),
            Knob("block", (1, 2, 4, 8), "hom"),
            Knob("row_panel", _PANELS, "hom"),
            Knob("col_tile", (0, 8, 16, 32), "hom"),
            Knob("threads", (2, 1), "hom"),
            Knob("prefetch", ("off", "on"), "het"),
            Knob("unroll", (1, 4), "het"),
        ]
        default = {
            "format": "csr",
            "block": 1,
            "row_panel": 0,
            "col_tile": 0,
            "threads": 2,
            "prefetch": "off",
            "unroll": 1,
        }
        return ScheduleSpace(knobs, default)

    def cost(self, op: str, A: sp.csr_array, configs: list[dict], width: int) -> np.ndarray:
        """Simulated runtime (s) of each configuration."""
        pr = self.profile(A)
        nnz, m = float(pr["nnz"]), int(pr["m"])
        rl = pr["rl"]
        row_mean = nnz / m
        out = np.empty(len(configs))
        for i, c in enumerate(configs):  # loop over configurations (tens), not nonzeros
            fmt, b = c["format"], int(c["block"])
            if fmt == "csr":
                work = nnz
            elif fmt == "coo":
                work = 1.25 * nnz
            else:
                work = 0.45 * nnz / float(pr[f"fill_{b}"]) + 0.5 * nnz / (b * b)
            flop = 1.0 if op == "spmm" else 1.4
            compute = work * width * 0.25e-9 * flop
            tile = int(c["col_tile"]) or width
            n_tiles = -(-width // tile)
            p = int(c["row_panel"])
            distinct = distinct_cols(pr, p) if p else float(pr["distinct_all"])
            ws = distinct / max(1, (m // p) if p else 1) * tile * 4.0
            fetch = distinct if ws <= self.cache_bytes else nnz
            if op == "sddmm":
                fetch *= 1.5  # also streams X1 rows and writes one value per nonzero
            memory = n_tiles * fetch * tile * 4.0 * 0.06e-9 + n_tiles * nnz * 0.4e-9
            if c["prefetch"] == "on":
                memory *= 0.7
                compute *= 1.05
            if int(c["unroll"]) == 4:
                compute *= 0.8 if row_mean >= 8 else 1.3
            t = int(c["threads"])
            imb = _group_work(rl, p or -(-m // t), t, lpt=False) if t > 1 else 1.0
            n_panels = -(-m // p) if p else 1
            out[i] = (compute + memory) * imb / t + 2e-6 * n_panels + (20e-6 if t > 1 else 0.0)
        return out


class SimAccelBackend(_SimBase):
    """Analytic SPADE-like accelerator with 64 PEs (deterministic target platform).

    Parameters
    ----------
    n_pe : int, default=64
    buffer_bytes : float, default=16 KiB per PE in a group
    """

    hardware = "sim-accel"

    def __init__(self, n_pe: int = 64, buffer_bytes: float = 16 * 2**10) -> None:
        super().__init__()
        if isinstance(n_pe, bool) or not isinstance(n_pe, numbers.Integral) or n_pe < 1:
            raise ValueError(f"n_pe must be an int >= 1, got {n_pe!r}")
        self.n_pe = int(n_pe)
        self.buffer_bytes = _positive(buffer_bytes, "buffer_bytes")

    def space(self, op: str) -> ScheduleSpace:
        """Schedule space for ``op`` in {"spmm", "sddmm"}."""
        _check_op(op)
        knobs = [
            Knob("format", ("csr", "bsr"), "hom"),
            Knob("block", (1, 2, 4, 8), "hom"),
            Knob("row_panel", _PANELS, "hom"),
            Knob("col_tile", (0, 8, 16, 32), "hom"),
            Knob("barrier", ("off", "on"), "het"),
            Knob("bypass", ("off", "on"), "het"),
            Knob("reorder", ("off", "on"), "het"),
            Knob("pe_group", (4, 8, 16), "het"),
        ]
        default = {
            "format": "csr",
            "block": 1,
            "row_panel": 0,
            "col_tile": 0,
            "barrier": "off",
            "bypass": "off",
            "reorder": "off",
            "pe_group": 4,
        }
        return ScheduleSpace(knobs, default)

    def cost(self, op: str, A: sp.csr_array, configs: list[dict], width: int) -> np.ndarray:
        """Simulated runtime (s) of each configuration."""
        pr = self.profile(A)
        nnz, m = float(pr["nnz"]), int(pr["m"])
        rl = pr["rl"]
        reuse = nnz / distinct_cols(pr, 256)
        out = np.empty(len(configs))
        for i, c in enumerate(configs):
            b = int(c["block"])
            if c["format"] == "bsr":
                work = 0.25 * nnz / float(pr[f"fill_{b}"])
            else:
                work = nnz
            flop = 1.0 if op == "spmm" else 1.3
            compute = work * width * flop / (self.n_pe * 8) * 1e-9
            g = int(c["pe_group"])
            units = self.n_pe // g
            # no panelling: each PE group takes one contiguous chunk of rows
            p = int(c["row_panel"]) or -(-m // units)
            tile = int(c["col_tile"]) or width
            n_tiles = -(-width // tile)
            share = 4 if c["barrier"] == "on" else 1  # panels whose tiles are shared
            distinct = distinct_cols(pr, min(p * share, m))
            ws = distinct / max(1, -(-m // (p * share))) * tile * 4.0
            fetch = distinct if ws <= self.buffer_bytes * g else nnz
            sparse_stream = nnz * 8.0
            if c["bypass"] == "on":
                sparse_stream *= 0.5
                fetch *= 1.0 if reuse < 1.5 else 1.6  # bypass loses dense-row reuse
            # memory channels are shared by all PEs; grouping only changes buffer and balance
            memory = (n_tiles * fetch * tile * 4.0 + sparse_stream) * 0.08e-9 / 16
            imb = _group_work(rl, p, units, lpt=c["reorder"] == "on")
            n_panels = -(-m // p)
            sync = (1e-6 * n_panels / units) if c["barrier"] == "on" else 0.0
            prep = 0.3e-9 * nnz * np.log2(max(m, 2)) if c["reorder"] == "on" else 0.0
            out[i] = max(compute, memory) * imb + sync + prep + 1e-6 * n_tiles
        return out


def _check_op(op: str) -> None:
    if op not in ("spmm", "sddmm"):
        raise ValueError(f"op must be 'spmm' or 'sddmm', got {op!r}")
