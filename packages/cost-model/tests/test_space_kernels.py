"""Schedule spaces (C2), kernel correctness of every backend (C1), timing harness, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import cost_model as C
from cost_model.kernels import make_operands, reference

BACKENDS = [C.ScipyBackend(), C.TorchCPUBackend(), C.SimCPUBackend(), C.SimAccelBackend()]


@pytest.mark.parametrize("be", BACKENDS, ids=lambda b: b.hardware)
@pytest.mark.parametrize("op", ["spmm", "sddmm"])
def test_space_roundtrip_and_determinism(be, op: str) -> None:  # type: ignore[no-untyped-def]
    sp_ = be.space(op)
    allc = sp_.enumerate()
    assert sp_.default() in allc
    for cfg in allc[:: max(1, len(allc) // 40)]:
        e = sp_.encode(cfg)
        assert sp_.decode(e["hom"], e["het"]) == cfg
    a = sp_.sample(12, seed=3)
    assert a == sp_.sample(12, seed=3) and a[0] == sp_.default()
    assert len({str(c) for c in a}) == len(a)
    assert all(sp_.valid(c) for c in a)


def test_space_validity_and_errors() -> None:
    sp_ = C.SimCPUBackend().space("spmm")
    cfg = sp_.default()
    with pytest.raises(ValueError, match="not valid"):
        sp_.check({**cfg, "block": 4})  # block without bsr
    with pytest.raises(ValueError, match="unknown knobs"):
        sp_.check({**cfg, "tiles": 3})
    with pytest.raises(ValueError, match="format"):
        sp_.check({**cfg, "format": "ell"})
    with pytest.raises(ValueError, match="missing"):
        sp_.check({k: v for k, v in cfg.items() if k != "threads"})
    with pytest.raises(ValueError, match="op"):
        C.SimCPUBackend().space("spmv")
    with pytest.raises(ValueError, match="group"):
        C.Knob("x", (1, 2), "both")


@pytest.mark.parametrize("be", BACKENDS[:2], ids=lambda b: b.hardware)
@pytest.mark.parametrize("op", ["spmm", "sddmm"])
def test_kernels_match_dense_reference(be, op: str) -> None:  # type: ignore[no-untyped-def]
    sp_ = be.space(op)
    allc = sp_.enumerate()
    cfgs = [*allc[:: max(1, len(allc) // 24)], sp_.default()]
    for knob in sp_.knobs:  # add one configuration per knob value not yet covered
        for v in set(knob.values) - {c[knob.name] for c in cfgs}:
            cfgs.append(next(c for c in allc if c[knob.name] == v))
    for knob in sp_.knobs:  # every knob value is exercised by some checked configuration
        assert {c[knob.name] for c in cfgs} == set(knob.values), knob.name
    for i, fam in enumerate(("uniform", "block", "powerlaw")):
        A = C.generate(fam, 300 + 7 * i, 280, 0.02, seed=i, block=4)
        ops = make_operands(op, A, 16, seed=i)
        ref = reference(op, A, ops)
        for c in cfgs:
            got = np.asarray(be.prepare(op, A, c, ops)())
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())


def test_measure_and_timer() -> None:
    A = C.generate("uniform", 200, 200, 0.02, seed=0)
    be = C.ScipyBackend()
    cfgs = be.space("spmm").sample(3, seed=0)
    ms = C.measure(be, "spmm", A, cfgs, dense_width=8, timer=C.Timer(0, 2), check=True)
    assert len(ms) == 3 and all(m.runtime_s > 0 and m.prep_s >= 0 for m in ms)
    sim = C.measure(C.SimAccelBackend(), "spmm", A, C.SimAccelBackend().space("spmm").sample(5))
    again = C.measure(C.SimAccelBackend(), "spmm", A, C.SimAccelBackend().space("spmm").sample(5))
    assert [m.runtime_s for m in sim] == [m.runtime_s for m in again]  # deterministic
    t, cv = C.Timer(warmup=0, repeats=3)(lambda: sum(range(100)))
    assert t > 0 and cv >= 0
    with pytest.raises(ValueError, match="repeats"):
        C.Timer(repeats=0)
    with pytest.raises(ValueError, match="configs"):
        C.measure(be, "spmm", A, [])
    with pytest.raises(ValueError, match="dense_width"):
        C.measure(be, "spmm", A, cfgs, dense_width=0)
    with pytest.raises(ValueError, match="format"):
        C.measure(be, "spmm", A, [{**cfgs[0], "format": "ell"}])
    with pytest.raises(ValueError, match="name"):
        C.get_backend("tpu")


def test_sim_accel_is_nontrivial() -> None:
    from scipy.stats import spearmanr

    ms = C.MatrixSet.synthetic(24, seed=5, rows=(512, 2048), nnz=(2e3, 2e4))
    cpu, acc = C.SimCPUBackend(), C.SimAccelBackend()
    shared = [
        c
        for c in cpu.space("spmm").enumerate()
        if c["format"] != "coo"
        and c["threads"] == 2
        and c["prefetch"] == "off"
        and c["unroll"] == 1
    ]
    het = {"barrier": "off", "bypass": "off", "reorder": "off", "pe_group": 4}
    acc_cfgs = [
        {k: c[k] for k in ("format", "block", "row_panel", "col_tile")} | het for c in shared
    ]
    allc = acc.space("spmm").enumerate()
    rhos, argmins = [], set()
    for A in ms.matrices:
        rhos.append(
            spearmanr(cpu.cost("spmm", A, shared, 64), acc.cost("spmm", A, acc_cfgs, 64))[0]
        )
        argmins.add(str(allc[int(np.argmin(acc.cost("spmm", A, allc, 64)))]))
    assert len(argmins) >= 5
    assert 0.2 <= float(np.mean(rhos)) <= 0.8


def test_timer_min_time_batches_fast_kernels() -> None:
    calls = []
    t, cv = C.Timer(warmup=1, repeats=3, min_time=0.002)(lambda: calls.append(1))
    # 1 warm-up + 1 calibration + 3 samples of n >= 2 calls each
    assert len(calls) >= 1 + 1 + 3 * 2 and (len(calls) - 2) % 3 == 0
    assert 0 < t < 0.002 and cv >= 0
    with pytest.raises(ValueError, match="min_time"):
        C.Timer(min_time=-1)


def test_timing_quality_closed_form() -> None:
    def m(mid, t, cv):
        return C.Measurement(mid, "hw", "spmm", {}, t, cv, 0.0)

    ms = [m(0, 1.0, 0.01), m(0, 1.1, 0.02), m(0, 2.0, 0.5), m(1, 1.0, 0.1), m(1, 1.05, 0.01)]
    q = C.timing_quality(ms)
    np.testing.assert_allclose(q["gap"], [0.1, 0.05])
    assert q["resolved"].tolist() == [True, False]  # 0.02 < 0.05; 0.1 > 0.025
    assert q["frac_resolved"] == 0.5 and q["frac_cv_ok"] == 0.6
    assert q["median_cv"] == pytest.approx(0.02)
    with pytest.raises(ValueError, match="empty"):
        C.timing_quality([])
    with pytest.raises(ValueError, match="two configurations"):
        C.timing_quality([m(0, 1.0, 0.0)])
    with pytest.raises(ValueError, match="cv_max"):
        C.timing_quality(ms, cv_max=0)
