"""Transfer protocol on the deterministic simulators (smoke + invariants) and the demo."""

from __future__ import annotations

import numpy as np

import cost_model as C


def _data() -> tuple[C.CostDataset, C.CostDataset, C.CostDataset]:
    ms = C.MatrixSet.synthetic(18, seed=1, rows=(256, 1024), nnz=(1e3, 8e3))
    feat = C.MatrixFeaturizer(16)
    src = C.collect(C.SimCPUBackend(), "spmm", ms, n_configs=12, seed=0, featurizer=feat)
    tgt = C.collect(C.SimAccelBackend(), "spmm", ms, n_configs=12, seed=1, featurizer=feat)
    tr, te = tgt.split(test_frac=1 / 3, seed=0)
    keep = [i for i, n in enumerate(src.matrix_names) if n not in set(te.matrix_names)]
    return src.take_matrices(np.asarray(keep)), tr, te


def test_run_experiment_refuses_test_matrices_in_training_sets() -> None:
    import pytest

    src, tr, te = _data()
    kw = dict(fracs=(0.1,), seeds=(0,), src_epochs=1, tgt_epochs=1, strategies=("target_only",))
    with pytest.raises(ValueError, match="tgt_train and tgt_test share"):
        C.run_experiment(src, te, te, **kw)
    # the same matrix under another name is found by its features
    renamed = C.CostDataset(
        **{**te.__dict__, "matrix_names": [n + "_copy" for n in te.matrix_names]}
    )
    both = C.CostDataset(**{**src.__dict__})
    assert C.matrix_overlap(renamed, te) == sorted(te.matrix_names)
    with pytest.raises(ValueError, match="src and tgt_test share"):
        C.run_experiment(renamed, tr, te, **kw) if renamed.hardware == src.hardware else (
            C.run_experiment(
                C.CostDataset(
                    **{**renamed.__dict__, "hardware": src.hardware, "het_sizes": renamed.het_sizes}
                ),
                tr,
                te,
                **kw,
            )
        )
    assert C.matrix_overlap(both, te) == []


def test_run_experiment_is_deterministic_and_complete() -> None:
    src, tr, te = _data()
    kw = dict(
        fracs=(0.1,),
        seeds=(0,),
        src_epochs=2,
        tgt_epochs=2,
        strategies=("cognate", "target_only", "naive", "head_only", "zero_shot", "target_full"),
        model_kwargs={"resolution": 16, "embed_dim": 16},
    )
    a = C.run_experiment(src, tr, te, **kw)
    b = C.run_experiment(src, tr, te, **kw)
    assert [r["metrics"] for r in a.rows] == [r["metrics"] for r in b.rows]
    assert {r["strategy"] for r in a.rows} == set(kw["strategies"])
    for r in a.rows:
        assert 0 < r["metrics"]["top1"] <= r["metrics"]["oracle"] + 1e-12
    assert "cognate" in a.table()


def test_finetune_copies_and_freezes_head_only() -> None:
    src, tr, _ = _data()
    sizes = {src.hardware: src.het_sizes, tr.hardware: tr.het_sizes}
    m = C.CognateModel(sizes, resolution=16, embed_dim=16).fit(src, epochs=1)
    before = {k: v.clone() for k, v in m.net.state_dict().items()}
    few = tr.subsample(0.2, seed=0)
    ft = C.finetune(m, few, strategy="head_only", epochs=2, val_frac=0)
    for k, v in m.net.state_dict().items():  # input model untouched
        assert np.array_equal(v.numpy(), before[k].numpy())
    changed = [k for k, v in ft.net.state_dict().items() if not np.array_equal(v, before[k])]
    assert changed and all(k.startswith("pred.") for k in changed)


def test_demo() -> None:
    out = C.demo(seed=0)
    assert "cognate" in out and "target_only" in out


def test_early_stopping_never_returns_worse_than_the_start_on_validation() -> None:
    import torch

    src, tr, _ = _data()
    sizes = {src.hardware: src.het_sizes, tr.hardware: tr.het_sizes}
    m = C.CognateModel(sizes, resolution=16, embed_dim=16).fit(src, epochs=1)
    train, val = tr.split(test_frac=0.3, seed=0)

    def val_loss(model: C.CognateModel) -> float:
        with torch.no_grad():
            return float(model._objective(val, np.arange(len(val))))

    start = val_loss(m)
    for lr in (0.5, 1e-3):  # a diverging and a sane fine-tune
        ft = m.clone().fit(train, epochs=3, lr=lr, val=val, patience=1)
        assert val_loss(ft) <= start + 1e-6


def test_run_experiment_rejects_bad_ft_lr() -> None:
    import pytest

    src, tr, te = _data()
    with pytest.raises(ValueError, match="ft_lr"):
        C.run_experiment(src, tr, te, ft_lr=0.0)
