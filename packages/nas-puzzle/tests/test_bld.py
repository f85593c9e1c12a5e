import pytest
import torch

import nas_puzzle as npz


def test_normalized_mse_closed_form():
    t = torch.tensor([[3.0, 4.0], [0.0, 1.0]])
    p = torch.tensor([[3.0, 0.0], [0.0, 0.0]])
    assert float(npz.normalized_mse_loss(p, t)) == pytest.approx(17 / 26)
    assert float(npz.normalized_mse_loss(p, t, reduction="per_token")) == pytest.approx(
        (16 / 25 + 1) / 2
    )
    assert float(npz.normalized_mse_loss(t, t)) == 0.0
    with pytest.raises(ValueError, match="reduction"):
        npz.normalized_mse_loss(p, t, reduction="sum")
    with pytest.raises(ValueError, match="shape"):
        npz.normalized_mse_loss(p, t[:1])


def test_bld_reduces_every_units_normalized_mse(library, space, tiny_cfg):
    log = library.training_log
    assert len(log) == npz.count_units(space, "decoupled")
    for rec in log:
        assert rec["final_loss"] == rec["trained_loss"]  # paper: trained weights are kept
        if rec["init_loss"] > 1e-4:  # units that are not already (near) exact
            assert rec["trained_loss"] < 0.8 * rec["init_loss"], rec


def test_units_that_do_not_improve_warn_and_best_of_init_keeps_the_init(parent, space, corpus):
    small = space.restrict(attention=["gqa1"], ffn=["ffn8"])
    # a huge learning rate makes BLD diverge: the paper rule keeps the trained weights, loudly
    with pytest.warns(UserWarning, match="did not improve"):
        lib = npz.build_library(parent, small, corpus[0], steps=3, lr=10.0, batch_size=2, seq_len=8)
    assert any(r["trained_loss"] > r["init_loss"] for r in lib.training_log)
    with pytest.warns(UserWarning, match="kept the initial weights"):
        best = npz.build_library(
            parent,
            small,
            corpus[0],
            steps=3,
            lr=10.0,
            batch_size=2,
            seq_len=8,
            select="best_of_init",
        )
    assert all(r["final_loss"] <= r["init_loss"] for r in best.training_log)
    with pytest.raises(ValueError, match="select"):
        npz.build_library(parent, small, corpus[0], select="best")
    with pytest.raises(ValueError, match="distributed"):
        npz.build_library(parent, small, corpus[0], distributed=True)


@pytest.mark.filterwarnings("ignore:BLD unit")
def test_library_modes_and_save_load(parent, space, corpus, tmp_path):
    small = space.restrict(attention=["gqa1"], ffn=["ffn8"])
    for kw in ({"mode": "coupled"}, {"target": "delta", "reduction": "per_token"}):
        lib = npz.build_library(
            parent, small, corpus[0], steps=5, batch_size=2, seq_len=8, select="best_of_init", **kw
        )
        for rec in lib.training_log:
            assert rec["final_loss"] <= rec["init_loss"]
    assert len(lib.training_log) == npz.count_units(small, "decoupled")
    lib.save(tmp_path / "lib.pt")
    back = npz.BlockLibrary.load(tmp_path / "lib.pt")
    x = torch.randn(2, 8, parent.cfg.d_model)
    cos, sin = parent.rope_cos[:8], parent.rope_sin[:8]
    v = npz.BlockConfig.from_name("gqa1/ffn8")
    torch.testing.assert_close(back.block(1, v)(x, cos, sin)[0], lib.block(1, v)(x, cos, sin)[0])


def test_bld_bad_input(parent, space, corpus):
    with pytest.raises(ValueError, match="mode"):
        npz.build_library(parent, space, corpus[0], mode="hybrid")
    with pytest.raises(ValueError, match="target"):
        npz.build_library(parent, space, corpus[0], target="residual")
    with pytest.raises(ValueError, match="steps"):
        npz.build_library(parent, space, corpus[0], steps=-1)
    with pytest.raises(ValueError, match=r"space\.cfg"):
        npz.build_library(parent, npz.SearchSpace.paper_default(npz.DecoderConfig()), corpus[0])
    with pytest.raises(ValueError, match="data"):
        npz.build_library(parent, space, torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="not in the library"):
        npz.build_library(parent, space.restrict(ffn=[]), corpus[0], mode="init_only").ffn(
            0, npz.FFNConfig("swiglu", 8)
        )


def test_scores_parent_variant_is_exact_and_noop_is_worst(parent, library, corpus):
    sc = npz.replace_one_block(parent, library, corpus[1], metrics=("kl", "lm_loss", "top1_acc"),
                               seq_len=16, max_windows=8)  # fmt: skip
    L, K = sc["kl"].shape
    assert (L, K) == (2, len(library.space.variants()))
    j = library.space.index(parent.cfg.parent_block)
    assert abs(sc["kl"][:, j]).max() < 1e-6
    assert (sc["kl"] >= -1e-7).all()
    with pytest.raises(ValueError, match="metrics"):
        npz.replace_one_block(parent, library, corpus[1], metrics=("mmlu",))
    with pytest.raises(ValueError, match="metric"):
        sc["mmlu"]
