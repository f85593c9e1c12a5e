"""Single-core measured regime (threads knob, CPU pinning), stored timing noise, variance shares,
and the real source-code matrices."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

import cost_model as C
from cost_model.matrices import source_code_matrices


@pytest.mark.parametrize("cls", [C.ScipyBackend, C.TorchCPUBackend])
def test_single_thread_regime_space(cls) -> None:  # type: ignore[no-untyped-def]
    be = cls(threads=(1,))
    for op in ("spmm", "sddmm"):
        sp_ = be.space(op)
        assert sp_.default()["threads"] == 1
        assert {c["threads"] for c in sp_.enumerate()} == {1}
    assert cls().space("spmm").default()["threads"] == 2  # the old default is unchanged
    with pytest.raises(ValueError, match="threads"):
        cls(threads=(1, 1))
    with pytest.raises(ValueError, match="threads"):
        cls(threads=(4,))
    with pytest.raises(TypeError, match="threads"):
        cls(threads=1)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity")
def test_pinned_restores_affinity() -> None:
    before = os.sched_getaffinity(0)
    with C.kernels.pinned():
        assert os.sched_getaffinity(0) == {max(before)}
    assert os.sched_getaffinity(0) == before
    with pytest.raises(ValueError, match="cpu"):
        with C.kernels.pinned(10_000):
            pass
    assert os.sched_getaffinity(0) == before


def test_collect_stores_cv_and_subsets_keep_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ms = C.MatrixSet.synthetic(3, seed=0, rows=(100, 200), nnz=(300, 600))
    be = C.ScipyBackend(threads=(1,))
    ds = C.collect(be, "spmm", ms, n_configs=4, dense_width=8, timer=C.Timer(0, 3))
    assert ds.cv is not None and ds.cv.shape == (len(ds),) and np.all(ds.cv >= 0)
    sub = ds.take_matrices(np.array([2, 0]))
    np.testing.assert_array_equal(
        sub.cv, np.concatenate([ds.cv[ds.rows_of(0)], ds.cv[ds.rows_of(2)]])
    )
    ds.save(tmp_path / "d.npz")
    np.testing.assert_array_equal(C.CostDataset.load(tmp_path / "d.npz").cv, ds.cv)
    sim = C.collect(C.SimCPUBackend(), "spmm", ms, n_configs=4)
    assert np.all(sim.cv == 0)


def _toy(effect: dict, rng: np.random.Generator, noise: float = 0.0) -> C.CostDataset:
    """4 matrices x all 3 x 2 (format, het) combinations; log runtime = matrix + effects."""
    rows = [(m, f, h) for m in range(4) for f in range(3) for h in range(2)]
    mi = np.array([r[0] for r in rows])
    hom = np.zeros((len(rows), len(C.SHARED_KNOBS)), np.int64)
    hom[:, 0] = [1 + r[1] for r in rows]
    het = np.array([[r[2]] for r in rows])
    logt = np.array([m + effect["format"][f] + effect["het"][h] for m, f, h in rows])
    logt = logt + noise * rng.standard_normal(len(rows))
    return C.CostDataset(
        "toy", "spmm", np.zeros((4, 2, 2), np.float32), np.zeros((4, 1), np.float32),
        np.zeros((4, 1), np.float32), [f"m{i}" for i in range(4)], mi, hom, het,
        np.exp(logt), hom[:, 0] == 1, (2,),
    )  # fmt: skip


def test_variance_explained_closed_form() -> None:
    rng = np.random.default_rng(0)
    only_shared = _toy({"format": [0.0, 1.0, -1.0], "het": [0.0, 0.0]}, rng)
    v = only_shared.variance_explained()
    assert v["shared"] == pytest.approx(1.0) and v["het"] == pytest.approx(0.0, abs=1e-12)
    assert v["format"] == pytest.approx(1.0) and v["het0"] == pytest.approx(0.0, abs=1e-12)
    # balanced design: shares add up; format var (2/3) vs het var (0.25) -> 8/11 and 3/11
    mixed = _toy({"format": [0.0, 1.0, -1.0], "het": [-0.5, 0.5]}, rng)
    v = mixed.variance_explained()
    assert v["shared"] == pytest.approx(8 / 11) and v["het"] == pytest.approx(3 / 11)
    assert v["all"] == pytest.approx(1.0)
    noisy = _toy({"format": [0.0, 1.0, -1.0], "het": [-0.5, 0.5]}, rng, noise=0.3)
    assert 0.3 < noisy.variance_explained()["all"] < 1.0
    flat = _toy({"format": [0.0, 0.0, 0.0], "het": [0.0, 0.0]}, rng)
    with pytest.raises(ValueError, match="distinct"):
        flat.variance_explained()


def test_source_code_matrices_hand_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "pkg").mkdir()
    (tmp_path / "a.py").write_text("a b a\n\nc = b\n")
    (tmp_path / "pkg" / "b.py").write_text("# a\nx.y(a)\n")
    mats, names = source_code_matrices(tmp_path, n_line_chunks=2, rows=2, cols=16, vocab_sizes=(3,))
    assert names == ["lines_0", "lines_1", "bigram_3"]
    lines0 = mats[0].toarray()  # lines "a b a", "c b" (a.py comes first)
    assert lines0.shape == (2, 16) and lines0.sum() == 5 and lines0[0].max() == 2
    # identifiers by frequency: a (4), b (2), then c, x, y (1 each, alphabetical): top-3 a, b, c
    # transitions within lines: a->b, b->a, c->b (x->y, y->a involve identifiers outside)
    expect = np.zeros((3, 3), np.float32)
    expect[0, 1] = expect[1, 0] = expect[2, 1] = 1
    np.testing.assert_array_equal(mats[2].toarray(), expect)
    assert all(isinstance(m, sp.csr_array) and m.dtype == np.float32 for m in mats)
    with pytest.raises(ValueError, match="root"):
        source_code_matrices(tmp_path / "missing")
    with pytest.raises(ValueError, match="rows"):
        source_code_matrices(tmp_path, rows=100)


class _Delays:
    """A measured backend on a fake clock: each kernel call advances it ``delay`` units, so the
    timings are exact on any machine; ``flip`` makes the fastest kernel slow from its
    re-measurement on (calls after the warm-up and the first pass)."""

    hardware = "fake-cpu"
    unit = 1_000_000  # ns

    def __init__(self, flip: bool = False, rounds: int = 3) -> None:
        self.flip, self.rounds, self.order, self.now = flip, rounds, [], 0

    def clock(self) -> int:
        return self.now

    def fingerprint(self) -> dict:
        return {"hardware": self.hardware}

    def space(self, op: str) -> C.ScheduleSpace:
        return C.ScheduleSpace([C.Knob("delay", (1, 2, 3, 4), "het")], {"delay": 4})

    def prepare(self, op, A, c, operands):  # type: ignore[no-untyped-def]
        d = c["delay"]
        calls = [0]  # per prepared kernel: one per (matrix, configuration)

        def run() -> np.ndarray:
            calls[0] += 1
            self.order.append(d)
            slow = self.flip and d == 1 and calls[0] > 1 + self.rounds  # after the first pass
            self.now += int((3.5 if slow else d) * self.unit)
            return np.zeros(1)

        return run


@pytest.fixture
def fake(monkeypatch):  # type: ignore[no-untyped-def]
    def make(**kw):  # type: ignore[no-untyped-def]
        be = _Delays(**kw)
        monkeypatch.setattr(C.kernels, "_clock", be.clock)
        return be

    return make


def test_measure_interleaved_ranks_rotates_and_retests(fake) -> None:  # type: ignore[no-untyped-def]
    A = sp.random_array((50, 50), density=0.1, random_state=0, format="csr")
    cfgs = [{"delay": d} for d in (3, 1, 4, 2)]
    be = fake(rounds=5)
    ms, info = C.measure_interleaved(be, "spmm", A, cfgs, rounds=5, retest=3, min_time=0)
    assert [m.config["delay"] for m in sorted(ms, key=lambda m: m.runtime_s)] == [1, 2, 3, 4]
    assert all(m.runtime_s == pytest.approx(m.config["delay"] * 1e-3) and m.cv == 0 for m in ms)
    assert info["top2"] == [1, 3] and info["agree"] is True and info["gap"] == pytest.approx(1.0)
    first_pass = be.order[4 : 4 + 20]  # after the 4 warm-ups: 5 rounds of every configuration
    rounds = [first_pass[4 * r : 4 * r + 4] for r in range(5)]
    assert all(sorted(r) == [1, 2, 3, 4] for r in rounds) and rounds[0] != rounds[1]
    _, flaky = C.measure_interleaved(
        fake(flip=True), "spmm", A, cfgs, rounds=3, retest=3, min_time=0
    )
    assert flaky["agree"] is False and flaky["retest_s"][0] > flaky["retest_s"][1]
    with pytest.raises(ValueError, match="rounds"):
        C.measure_interleaved(be, "spmm", A, cfgs, rounds=0)
    with pytest.raises(ValueError, match="two configurations"):
        C.measure_interleaved(be, "spmm", A, cfgs[:1])
    with pytest.raises(ValueError, match="simulate"):
        C.measure_interleaved(C.SimCPUBackend(), "spmm", A, [{}, {}])


def test_collect_interleaved_stores_agreement_and_refuses_irreproducible_timing(
    tmp_path, fake
) -> None:  # type: ignore[no-untyped-def]
    ms = C.MatrixSet.synthetic(3, seed=0, rows=(60, 80), nnz=(100, 200))
    timer = C.Timer(warmup=1, repeats=3, min_time=0)
    ds = C.collect(fake(), "spmm", ms, n_configs=4, timer=timer, protocol="interleaved", retest=3)
    assert ds.retest_agree.tolist() == [True] * 3
    assert ds.timing["protocol"] == "interleaved-min" and ds.timing["agreement"] == 1.0
    assert {"load_start", "load_end", "rounds", "retest"} <= set(ds.timing)
    ds.save(tmp_path / "d.npz")
    back = C.CostDataset.load(tmp_path / "d.npz")
    assert back.timing == ds.timing and back.retest_agree.tolist() == [True] * 3
    assert ds.take_matrices(np.array([2, 0])).retest_agree.tolist() == [True, True]
    with pytest.raises(C.TimingNotReproducibleError, match="0% of 3 matrices"):
        C.collect(
            fake(flip=True),
            "spmm",
            ms,
            n_configs=4,
            timer=timer,
            protocol="interleaved",
            retest=3,
        )
    kept = C.collect(fake(flip=True), "spmm", ms, n_configs=4, timer=timer,
                     protocol="interleaved", retest=3, min_agreement=0)  # fmt: skip
    assert kept.timing["agreement"] == 0.0 and not kept.retest_agree.any()
    with pytest.raises(ValueError, match="protocol"):
        C.collect(fake(), "spmm", ms, protocol="best")
    with pytest.raises(ValueError, match="simulated"):
        C.collect(C.SimCPUBackend(), "spmm", ms, protocol="interleaved")
    with pytest.raises(ValueError, match="min_agreement"):
        C.collect(fake(), "spmm", ms, protocol="interleaved", min_agreement=1.5)
    assert C.collect(C.SimCPUBackend(), "spmm", ms, n_configs=4).timing == {}


def test_reorder_knob_is_exact_and_recovers_a_scrambled_band() -> None:
    be = C.ScipyBackend(threads=(1, 2), reorder=True)
    assert be.hardware == "scipy-cpu-reorder" and C.ScipyBackend().hardware == "scipy-cpu"
    space = be.space("spmm")
    assert space.default()["reorder"] == "none" and space.default()["threads"] == 1
    assert "bsr" not in next(k for k in space.knobs if k.name == "format").values
    ms = C.MatrixSet.synthetic(2, seed=0, rows=(300, 400), nnz=(2e3, 4e3), shuffled=1.0,
                               families=("banded",))  # fmt: skip
    rect = C.generate("powerlaw", 120, 70, 0.05, seed=1)
    cfgs = [{**space.default(), "reorder": r, "x_order": x, "row_panel": p, "threads": t}
            for r in ("none", "rcm", "degree") for x in ("C", "F") for p, t in ((0, 1), (256, 2))]  # fmt: skip
    for A in (ms[0], rect):
        ms_ = C.measure(be, "spmm", A, cfgs, dense_width=8, timer=C.Timer(0, 1), check=True)
        assert len(ms_) == len(cfgs)
    A = ms[0]
    rows, cols = C.kernels.reorder_permutations(A, "rcm")
    assert sorted(rows) == list(range(A.shape[0])) and sorted(cols) == list(range(A.shape[1]))
    coo = A.tocoo()
    R = A[rows][:, cols].tocoo()
    assert np.abs(R.row - R.col).mean() < 0.1 * np.abs(coo.row - coo.col).mean()  # band back
    with pytest.raises(ValueError, match="reorder"):
        C.kernels.reorder_permutations(A, "metis")
    with pytest.raises(TypeError, match="reorder"):
        C.ScipyBackend(reorder="rcm")


def test_synthetic_shuffled_permutes_without_changing_the_default_set() -> None:
    kw = dict(seed=4, rows=(100, 200), nnz=(500, 900))
    plain, again = C.MatrixSet.synthetic(6, **kw), C.MatrixSet.synthetic(6, shuffled=0.0, **kw)
    assert plain.names == again.names
    assert all((a != b).nnz == 0 for a, b in zip(plain.matrices, again.matrices, strict=True))
    shuf = C.MatrixSet.synthetic(6, shuffled=1.0, **kw)
    assert all(n.endswith("_shuffled") for n in shuf.names)
    for a, b in zip(plain.matrices, shuf.matrices, strict=True):
        assert a.nnz == b.nnz
        assert sorted(np.diff(a.indptr)) == sorted(np.diff(b.indptr))
    with pytest.raises(ValueError, match="shuffled"):
        C.MatrixSet.synthetic(2, shuffled=1.5)


def test_torch_formats_subset() -> None:
    be = C.TorchCPUBackend(threads=(1,), formats=("csr", "coo"))
    space = be.space("spmm")
    assert {c["format"] for c in space.enumerate()} == {"csr", "coo"}
    assert {c["block"] for c in space.enumerate()} == {1}  # no BSR, no block knob values
    A = C.generate("banded", 64, 64, 0.1, seed=0)
    ops = C.kernels.make_operands("spmm", A, 8)
    ref = C.kernels.reference("spmm", A, ops)
    for cfg in space.sample(6, seed=0):
        np.testing.assert_allclose(be.prepare("spmm", A, cfg, ops)(), ref, rtol=1e-4, atol=1e-4)
    for bad, err in ((("coo",), ValueError), (("csr", "ell"), ValueError),
                     (("csr", "csr"), ValueError), ("csr", TypeError)):  # fmt: skip
        with pytest.raises(err, match="formats"):
            C.TorchCPUBackend(formats=bad)  # type: ignore[arg-type]
