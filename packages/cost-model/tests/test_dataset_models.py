"""Datasets, the cost model, metrics and transfer on the deterministic simulators."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cost_model as C


@pytest.fixture(scope="module")
def data() -> tuple[C.CostDataset, C.CostDataset]:
    ms = C.MatrixSet.synthetic(30, seed=0, rows=(256, 2048), nnz=(1e3, 1.5e4))
    feat = C.MatrixFeaturizer(16)
    src = C.collect(C.SimCPUBackend(), "spmm", ms, n_configs=16, seed=0, featurizer=feat)
    tgt = C.collect(C.SimAccelBackend(), "spmm", ms, n_configs=16, seed=1, featurizer=feat)
    return src, tgt


def test_dataset_shapes_split_subsample_save(data, tmp_path) -> None:  # type: ignore[no-untyped-def]
    src, _ = data
    assert len(src) == 30 * 16 and src.n_matrices == 30
    assert src.is_default.sum() == 30  # one default row per matrix
    tr, te = src.split(test_frac=0.2, seed=0)
    assert tr.n_matrices == 24 and te.n_matrices == 6
    assert not set(tr.matrix_names) & set(te.matrix_names)
    few = tr.subsample(0.05, by="pairs", min_per_matrix=2, seed=0)
    assert len(few) == round(0.05 * len(tr))
    assert np.bincount(few.matrix_index).min() >= 2
    assert tr.subsample(0.25, by="matrices", seed=0).n_matrices == 6
    path = tmp_path / "d.npz"
    src.save(path)
    back = C.CostDataset.load(path)
    assert np.array_equal(back.runtime, src.runtime) and back.matrix_names == src.matrix_names
    assert back.het_sizes == src.het_sizes and back.hardware == "sim-cpu"
    with pytest.raises(ValueError, match="frac"):
        tr.subsample(0.0)
    with pytest.raises(ValueError, match="by"):
        tr.subsample(0.1, by="rows")


def test_rank_loss_brute_force() -> None:
    s = torch.tensor([0.0, 0.5, 3.0, 1.0])
    t = torch.tensor([1.0, 2.0, 3.0, 0.5])
    g = torch.tensor([0, 0, 0, 1])
    # pairs in group 0 with t_a < t_b: (0,1), (0,2), (1,2)
    want = (max(0, 1 - 0.5) + max(0, 1 - 3.0) + max(0, 1 - 2.5)) / 3
    assert C.pairwise_rank_loss(s, t, g).item() == pytest.approx(want)
    assert C.pairwise_rank_loss(s[3:], t[3:], g[3:]).item() == 0.0


def test_metrics_oracle_and_default(data) -> None:  # type: ignore[no-untyped-def]
    src, _ = data
    oracle = C.evaluate_scores(src, np.log(src.runtime))
    assert oracle["top1"] == pytest.approx(oracle["oracle"]) and oracle["pair_acc"] == 1.0
    assert oracle["captured"] == pytest.approx(1.0)
    default = C.evaluate_scores(src, np.where(src.is_default, -1.0, 0.0))
    assert default["top1"] == pytest.approx(1.0)
    per = C.evaluate_scores(src, np.log(src.runtime), per_matrix=True)["top1_per_matrix"]
    assert len(per) == src.n_matrices and min(per) >= 1.0
    assert np.exp(np.mean(np.log(per))) == pytest.approx(oracle["top1"])
    assert "top1_per_matrix" not in oracle
    with pytest.raises(ValueError, match="scores"):
        C.evaluate_scores(src, np.zeros(3))


def test_model_learns_source_ranking(data) -> None:  # type: ignore[no-untyped-def]
    src, _ = data
    tr, te = src.split(test_frac=0.3, seed=0)
    m = C.CognateModel({"sim-cpu": src.het_sizes}, resolution=16, embed_dim=32, seed=0)
    m.pretrain_matrix_encoder(tr.images, tr.scalars, epochs=2)
    assert (
        m.pretrain_mapper("sim-cpu", epochs=5)[-1] < m.pretrain_mapper("sim-cpu", epochs=1)[0] + 1
    )
    m.fit(tr, epochs=12, lr=3e-3, batch_matrices=4)
    r = C.evaluate(m, te)
    assert r["pair_acc"] > 0.7
    # predict / rank on a raw matrix agree with dataset scoring
    A = C.generate("uniform", 512, 512, 0.01, seed=0)
    sp_ = C.SimCPUBackend().space("spmm")
    cfgs = sp_.sample(10, seed=0)
    s = m.predict(A, cfgs, space=sp_, hardware="sim-cpu", resolution=16)
    assert s.shape == (10,) and np.all(np.isfinite(s))
    assert (
        m.rank_schedules(A, cfgs, k=3, space=sp_, hardware="sim-cpu", resolution=16)[0]
        == cfgs[int(np.argmin(s))]
    )
    assert (
        m.best_schedule(A, cfgs, space=sp_, hardware="sim-cpu", resolution=16)
        == cfgs[int(np.argmin(s))]
    )
    with pytest.raises(ValueError, match="k must"):
        m.rank_schedules(A, cfgs, k=0, space=sp_, hardware="sim-cpu", resolution=16)
    best = C.select(m, A, sp_, hardware="sim-cpu", n_candidates=20, k=2)
    assert len(best) == 2


def test_model_bad_input(data) -> None:  # type: ignore[no-untyped-def]
    src, tgt = data
    m = C.CognateModel({"sim-cpu": src.het_sizes}, resolution=16, embed_dim=16)
    with pytest.raises(ValueError, match="hardware"):
        m.fit(tgt, epochs=1)
    with pytest.raises(ValueError, match="loss"):
        C.CognateModel({"sim-cpu": src.het_sizes}, loss="hinge")
    with pytest.raises(ValueError, match="mapper"):
        C.CognateModel({"sim-cpu": src.het_sizes}, mapper="linear")
    with pytest.raises(ValueError, match="strategies"):
        C.run_experiment(src, tgt, tgt, strategies=("magic",))


def test_hom_knobs_missing_on_one_hardware_go_to_its_mapper(data) -> None:  # type: ignore[no-untyped-def]
    src, tgt = data
    assert src.hom_present.tolist() == [True] * 5  # format, block, row_panel, col_tile, threads
    assert tgt.hom_present.tolist() == [True, True, True, True, False]  # no threads
    m = C.CognateModel(
        {src.hardware: src.het_sizes, tgt.hardware: tgt.het_sizes},
        hom_present={src.hardware: src.hom_present, tgt.hardware: tgt.hom_present},
        resolution=16,
        embed_dim=16,
    )
    assert m.shared_mask.tolist() == [True, True, True, True, False]
    assert m.mapper_sizes["sim-cpu"] == (*src.het_sizes, 2)  # threads joins sim-cpu's mapper
    assert m.mapper_sizes["sim-accel"] == tgt.het_sizes
    hom, het = m._config_inputs(src, np.arange(5))
    assert bool((hom[:, 4] == 0).all()) and het.shape[1] == len(src.het_sizes) + 1
    with pytest.raises(RuntimeError, match="not fitted"):
        m.score(tgt)  # before fit: the scalars would be standardised on the scored data
    assert np.all(np.isfinite(m.fit(src, epochs=1).score(tgt)))


def test_mse_log_loss_trains(data) -> None:  # type: ignore[no-untyped-def]
    src, _ = data
    m = C.CognateModel({"sim-cpu": src.het_sizes}, resolution=16, embed_dim=16, loss="mse_log")
    rows = np.arange(len(src))
    with torch.no_grad():
        before = float(m._objective(src, rows))
    m.fit(src, epochs=5, lr=3e-3)
    with torch.no_grad():
        assert float(m._objective(src, rows)) < before


def test_collect_cli(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cost_model.cli import main

    out = tmp_path / "s.npz"
    assert (
        main(["--backend", "sim-accel", "--n-matrices", "3", "--configs", "4", "--out", str(out)])
        == 0
    )
    ds = C.CostDataset.load(out)
    assert len(ds) == 12 and ds.hardware == "sim-accel"


def test_cross_run_agreement_gates_two_collections() -> None:
    # collect's gate compares the top two inside one run; a loaded machine passes it
    import dataclasses

    ms = C.MatrixSet.synthetic(6, seed=4, rows=(64, 96), nnz=(100, 300))
    a = C.collect(C.SimCPUBackend(), "spmm", ms, n_configs=8, seed=0)
    b = C.collect(C.SimCPUBackend(), "spmm", ms, n_configs=8, seed=0)
    assert C.cross_run_agreement(a, b) == 1.0
    # a second run whose fastest configuration differs on half of the matrices
    rt = b.runtime.copy()
    for m in range(3):
        rows = np.flatnonzero(b.matrix_index == m)
        rt[rows[np.argmax(rt[rows])]] = rt[rows].min() / 2
    noisy = dataclasses.replace(b, runtime=rt)
    with pytest.raises(C.TimingNotReproducibleError, match="50% of 6"):
        C.cross_run_agreement(a, noisy)
    assert C.cross_run_agreement(a, noisy, min_agreement=None) == 0.5
    other = C.collect(C.SimCPUBackend(), "spmm", ms, n_configs=8, seed=1)
    with pytest.raises(ValueError, match="different configurations"):
        C.cross_run_agreement(a, other)
