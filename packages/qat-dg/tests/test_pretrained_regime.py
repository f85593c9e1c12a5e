"""Pre-trained regime: styled domains, backbone pre-training, frozen BN and the new controls."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from qat_dg import (
    SWA,
    SWAD,
    FrozenFP,
    PretrainDigits,
    QTDoG,
    StyledDigits,
    TorchQAT,
    TrainConfig,
    pretrain_backbone,
    train_domain,
)
from qat_dg.models import build_model

SHAPE = (3, 8, 8)


def _batches(k, seed=0, n_dom=2, bs=8):
    g = torch.Generator().manual_seed(seed)
    return [
        [
            (torch.rand(bs, *SHAPE, generator=g), torch.randint(0, 10, (bs,), generator=g))
            for _ in range(n_dom)
        ]
        for _ in range(k)
    ]


def _make(cls, **hp):
    torch.manual_seed(0)
    return cls(SHAPE, 10, 2, {"arch": "small_cnn", "width": 4, **hp})


def test_styled_and_pretrain_digits():
    ds = StyledDigits(size=8, n_per_domain=40, seed=3)
    assert ds.env_names == ["photo", "art", "cartoon", "sketch"] and ds.input_shape == (3, 8, 8)
    again = StyledDigits(size=8, n_per_domain=40, seed=3)
    for (x, y), (x2, y2) in zip(ds.envs, again.envs, strict=True):
        assert torch.equal(x, x2) and torch.equal(y, y2)
        assert x.min() >= 0 and x.max() <= 1 and y.min() >= 0 and y.max() <= 9
    sketch = ds.envs[3][0]  # grey: the three channels coincide up to the shared noise
    assert torch.allclose(sketch[:, 0], sketch[:, 1]) and torch.allclose(sketch[:, 1], sketch[:, 2])
    x, y = PretrainDigits(size=8, n=100, seed=1)
    assert x.shape == (100, 3, 8, 8) and 0 <= int(y.min()) and int(y.max()) < 20
    for bad in ({"domains": ("photo",)}, {"domains": ("photo", "oil")}, {"n_per_domain": 5}):
        with pytest.raises(ValueError):
            StyledDigits(**bad)
    with pytest.raises(ValueError, match="n"):
        PretrainDigits(n=3)
    # the default draws the same images as before the styles option; mixed styles are seeded
    xm, ym = PretrainDigits(size=8, n=100, seed=1, styles=("photo", "sketch"))
    x2, y2 = PretrainDigits(size=8, n=100, seed=1, styles=["photo"])
    assert torch.equal(x, x2) and torch.equal(y, y2) and torch.equal(ym, y)
    assert torch.equal(xm, PretrainDigits(size=8, n=100, seed=1, styles=("photo", "sketch"))[0])
    grey = (xm[:, 0] == xm[:, 1]).flatten(1).all(1) & (xm[:, 1] == xm[:, 2]).flatten(1).all(1)
    assert 0.2 < grey.float().mean() < 0.9  # sketches (and the 20 % grey photos)
    for bad in ((), ("photo", "photo"), ("oil",)):
        with pytest.raises(ValueError, match="styles"):
            PretrainDigits(n=100, styles=bad)


def test_pretrain_backbone_learns_and_loads():
    x, y = PretrainDigits(size=8, n=400, seed=0)
    sd, info = pretrain_backbone(x, y, width=4, n_steps=60, batch_size=32)
    assert info["loss_last"] < info["loss_first"]
    algo = _make(QTDoG, pretrained=sd, freeze_bn=True)
    for k, v in algo.network.features.state_dict().items():
        assert torch.equal(v, sd[k])
    bad = {k: v[:1] if v.ndim else v for k, v in sd.items()}
    with pytest.raises(ValueError, match="pretrained"):
        _make(QTDoG, pretrained=bad)
    with pytest.raises(TypeError, match="pretrained"):
        _make(QTDoG, pretrained=[1, 2])
    with pytest.raises(ValueError, match="y"):
        pretrain_backbone(x, y[:-1])


def test_freeze_bn_keeps_running_statistics():
    algo = _make(QTDoG, freeze_bn=True, quant_start_step=2)
    bn = [m for m in algo.modules() if isinstance(m, nn.BatchNorm2d)]
    before = [m.running_mean.clone() for m in bn]
    algo.train()
    assert all(not m.training for m in bn)
    for step, mb in enumerate(_batches(4)):
        algo.update(mb, step=step)
    assert all(torch.equal(m.running_mean, b) for m, b in zip(bn, before, strict=True))
    plain = _make(QTDoG)
    plain.update(_batches(1)[0], step=0)
    assert not torch.equal(
        next(m for m in plain.modules() if isinstance(m, nn.BatchNorm2d)).running_mean,
        torch.zeros(4),
    )


def test_frozen_fp_freezes_exactly_the_qtdog_layers():
    ff = _make(FrozenFP, quant_start_step=2)
    qt = _make(QTDoG, quant_start_step=2, freeze_quantized_after_switch=True)
    for step, mb in enumerate(_batches(2)):
        ff.update(mb, step=step)
    convs = [copy.deepcopy(m.weight) for m in ff.network.modules() if isinstance(m, nn.Conv2d)]
    head = ff.network.classifier.weight.detach().clone()
    for step, mb in enumerate(_batches(3, seed=1), start=2):
        ff.update(mb, step=step)
        qt.update(mb, step=step)
    now = [m.weight for m in ff.network.modules() if isinstance(m, nn.Conv2d)]
    assert all(torch.equal(a, b) for a, b in zip(convs, now, strict=True))
    assert not torch.equal(head, ff.network.classifier.weight)
    frozen_ff = {n for n, p in ff.network.named_parameters() if not p.requires_grad}
    frozen_qt = {
        n for n, p in qt.network.named_parameters() if not p.requires_grad and "quantizer" not in n
    }
    assert frozen_ff == frozen_qt and frozen_ff


def test_torch_qat_uses_torch_fake_quant_on_the_same_parameters():
    algo = _make(TorchQAT, quant_start_step=1, bits=7)
    convs = [m for m in algo.network.modules() if isinstance(m, nn.Conv2d)]
    weights = [m.weight for m in convs]
    for step, mb in enumerate(_batches(3)):
        algo.update(mb, step=step)
    assert algo.is_quantized and algo.selectable
    algo.eval()  # observers off: reading the weight no longer moves the scale
    for m, w in zip(convs, weights, strict=True):
        assert m.parametrizations.weight.original is w
        fq = m.parametrizations.weight[0]
        ref = torch.fake_quantize_per_channel_affine(
            w, fq.scale, fq.zero_point.to(torch.int32), 0, -63, 63
        )
        assert (fq.quant_min, fq.quant_max) == (-63, 63)  # 7-bit symmetric grid
        assert torch.equal(m.weight, ref)
    scales = [m.parametrizations.weight[0].scale.clone() for m in convs]
    algo.predict(torch.rand(4, *SHAPE))
    assert all(
        torch.equal(m.parametrizations.weight[0].scale, s)
        for m, s in zip(convs, scales, strict=True)
    )


def test_swa_is_the_uniform_average_of_its_snapshots():
    algo = _make(SWA, swa_start_step=2, swa_freq=2)
    snaps = []
    for step, mb in enumerate(_batches(7)):
        algo.update(mb, step=step)
        if algo.num_updates >= 2 and (algo.num_updates - 2) % 2 == 0:
            snaps.append([p.detach().clone() for p in algo.network.parameters()])
    assert len(snaps) == 3 and algo.final_only
    for pa, *ps in zip(algo.predict_network().parameters(), *snaps, strict=True):
        assert torch.allclose(pa, torch.stack(ps).mean(0), atol=1e-6)


def _valley_brute(losses, n_s, n_e, r):
    n = len(losses)
    t_s = n - 1
    for i in range(n - n_s + 1):
        if losses[i] == min(losses[i : i + n_s]):
            t_s = i
            break
    t_e = n - 1
    for j in range(t_s + 1, n - n_e + 1):
        if all(v > r * losses[t_s] for v in losses[j : j + n_e]):
            t_e = j - 1
            break
    return t_s, t_e


def test_swad_valley_rule_and_dense_average():
    rng = np.random.default_rng(0)
    algo = _make(SWAD, swad_n_converge=3, swad_n_tolerance=2, swad_ratio=1.2)
    for _ in range(30):
        losses = list(rng.uniform(0.5, 2.0, size=rng.integers(1, 12)))
        algo.segments = [([torch.zeros(1)], 1, v) for v in losses]
        assert algo.valley() == _valley_brute(losses, 3, 2, 1.2)
    # dense average: weights of every step in the valley's segments, equally weighted
    algo = _make(SWAD, swad_n_converge=1, swad_n_tolerance=50)
    x_val, y_val = torch.rand(8, *SHAPE), torch.randint(0, 10, (8,))
    steps = []
    for step, mb in enumerate(_batches(6)):
        algo.update(mb, step=step)
        steps.append([p.detach().clone() for p in algo.network.parameters()])
        if step in (1, 5):
            algo.on_checkpoint(x_val, y_val)
    assert [c for _, c, _ in algo.segments] == [2, 4]
    algo.finalize(x_val, y_val)
    t_s, t_e = algo.valley_
    first = 0 if t_s == 0 else 2
    last = 2 if t_e == 0 else 6
    for i, pa in enumerate(algo.predict_network().parameters()):
        ref = torch.stack([s[i] for s in steps[first:last]]).mean(0)
        assert torch.allclose(pa, ref, atol=1e-6)


def test_train_domain_reports_the_finalized_swad_model():
    ds = StyledDigits(size=8, n_per_domain=40)
    r = train_domain(
        ds, "SWAD", 1, {"width": 4, "batch_size": 8}, TrainConfig(n_steps=30, checkpoint_freq=5)
    )
    assert r["records"][-1].get("final") and r["records"][-1]["selectable"]
    assert sum(rec["selectable"] for rec in r["records"]) == 1
    assert r["model"].network_swad is not None
    with pytest.raises(ValueError, match="swad_ratio"):
        _make(SWAD, swad_ratio=0.5)
    with pytest.raises(ValueError, match="swa_freq"):
        _make(SWA, swa_freq=0)


def test_models_build_for_styled_inputs():
    net = build_model("small_cnn", (3, 16, 16), 10, 8)
    assert net(torch.rand(2, 3, 16, 16)).shape == (2, 10)
