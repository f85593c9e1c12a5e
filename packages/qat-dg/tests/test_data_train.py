import numpy as np
import pytest
import torch

from qat_dg.data import CorruptedDigits, DomainDataset, RotatedDigits, split_domains
from qat_dg.quant import is_quantized
from qat_dg.theory import rounding_noise_stats
from qat_dg.train import TrainConfig, accuracy, train_domain, train_loo


def test_rotated_digits_shapes_disjoint_deterministic():
    ds = RotatedDigits(angles=(0, 45, 90), size=8, seed=0)
    assert len(ds) == 3 and ds.input_shape == (1, 8, 8)
    assert sum(len(x) for x, _ in ds.envs) == 1797
    again = RotatedDigits(angles=(0, 45, 90), size=8, seed=0)
    assert torch.equal(ds.envs[1][0], again.envs[1][0])
    x0 = ds.envs[0][0]
    assert x0.min() >= 0 and x0.max() <= 1
    # 90-degree rotation of shard 2 equals np.rot90 of the unrotated image (up to order-1 interp)
    full = RotatedDigits(angles=(0, 90), size=8, disjoint=False)
    rot = np.rot90(full.envs[0][0].numpy(), k=1, axes=(2, 3))
    assert np.allclose(full.envs[1][0].numpy(), rot, atol=1e-5) or np.allclose(
        full.envs[1][0].numpy(), np.rot90(full.envs[0][0].numpy(), k=-1, axes=(2, 3)), atol=1e-5
    )


def test_corrupted_digits_and_split():
    ds = CorruptedDigits(size=8, color=True)
    assert ds.input_shape == (3, 8, 8) and ds.env_names == ["clean", "noise", "blur", "invert"]
    splits = split_domains(ds, 0.2, seed=1)
    for (i_in, i_out), (x, _) in zip(splits, ds.envs, strict=True):
        assert len(i_in) + len(i_out) == len(x)
        assert len(set(i_in.tolist()) & set(i_out.tolist())) == 0
    with pytest.raises(ValueError, match="holdout_fraction"):
        split_domains(ds, 1.5)
    with pytest.raises(ValueError, match="domains"):
        CorruptedDigits(domains=("clean", "fog"))
    with pytest.raises(ValueError, match="angles"):
        RotatedDigits(angles=(0,))
    with pytest.raises(ValueError, match="size"):
        RotatedDigits(size=4)


def test_train_loo_mechanics():
    ds = RotatedDigits(angles=(0, 30, 60), size=8)
    cfg = TrainConfig(n_steps=40, checkpoint_freq=10, test_envs=[0, 2], seed=0)
    res = train_loo(ds, "QTDoG", {"arch": "mlp", "quant_start_step": 15, "batch_size": 16}, cfg)
    assert set(res) == {0, 2}
    for r in res.values():
        assert 0 <= r["iid"] <= 1 and 0 <= r["oracle"] <= 1 and len(r["records"]) == 4
        assert r["iid_step"] >= 20  # only quantized checkpoints are selectable
        assert r["oracle"] >= min(rec["target"] for rec in r["records"] if rec["selectable"])
        assert is_quantized(r["model"].network)
        acc = accuracy(r["model"], *r["target_in"])
        assert acc == pytest.approx(r["iid"])
        stats = rounding_noise_stats(r["model"])
        for s in stats.values():
            assert abs(s["mean"]) < 0.1 and abs(s["var"] - 1 / 12) < 0.02
    with pytest.raises(ValueError, match="test_env"):
        train_domain(ds, "ERM", 5)
    with pytest.raises(ValueError, match="n_steps"):
        TrainConfig(n_steps=0)
    with pytest.raises(TypeError, match="dataset"):
        train_domain([1, 2], "ERM", 0)
    assert isinstance(ds, DomainDataset)


def test_version_and_public_api():
    import qat_dg

    assert qat_dg.__version__ == "0.1.0"
    for name in qat_dg.__all__:
        assert hasattr(qat_dg, name), name
