import pytest
import torch

from qat_dg.algorithms import (
    ERM,
    ERM_SMA,
    PTQ,
    SAM,
    NoiseInjection,
    QTDoG,
    default_hparams,
    get_algorithm_class,
)
from qat_dg.quant import is_quantized, quant_parameters, quantized_modules

SHAPE = (1, 8, 8)


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


def test_qtdog_identical_to_erm_before_switch():
    erm, qt = _make(ERM), _make(QTDoG, quant_start_step=5)
    for step, mb in enumerate(_batches(5)):
        erm.update(mb, step=step)
        qt.update(mb, step=step)
    assert not qt.is_quantized
    for (n, a), b in zip(erm.network.named_parameters(), qt.network.parameters(), strict=True):
        assert torch.equal(a, b), n


def test_qtdog_switch_keeps_training_weights_and_steps():
    qt = _make(QTDoG, quant_start_step=2, bits=4)
    batches = _batches(8)
    for step, mb in enumerate(batches[:3]):
        qt.update(mb, step=step)
    assert qt.is_quantized and qt.selectable
    steps = list(quant_parameters(qt.network))
    opt_ids = {id(p) for g in qt.optimizer.param_groups for p in g["params"]}
    assert all(id(p) in opt_ids for p in steps)
    assert all(id(p) in opt_ids for p in qt.network.parameters())
    w_before = [m.weight.detach().clone() for _, m in quantized_modules(qt.network)]
    s_before = [p.detach().clone() for p in steps]
    for step, mb in enumerate(batches[3:], start=3):
        qt.update(mb, step=step)
    w_after = [m.weight.detach() for _, m in quantized_modules(qt.network)]
    assert all(not torch.equal(a, b) for a, b in zip(w_before, w_after, strict=True))
    assert all(not torch.equal(a, b.detach()) for a, b in zip(s_before, steps, strict=True))


def test_qtdog_freeze_after_switch():
    qt = _make(QTDoG, quant_start_step=1, freeze_quantized_after_switch=True)
    batches = _batches(4)
    qt.update(batches[0], step=0)
    qt.update(batches[1], step=1)
    w = [m.weight.detach().clone() for _, m in quantized_modules(qt.network)]
    cls_w = qt.network.classifier.weight.detach().clone()
    for step, mb in enumerate(batches[2:], start=2):
        qt.update(mb, step=step)
    for a, (_, m) in zip(w, quantized_modules(qt.network), strict=True):
        assert torch.equal(a, m.weight)
    assert not torch.equal(cls_w, qt.network.classifier.weight)


def test_qtdog_mlp_defaults_to_linear_and_default_step_counter():
    torch.manual_seed(0)
    qt = QTDoG(SHAPE, 10, 2, {"arch": "mlp", "quant_start_step": 1})
    for mb in _batches(2):
        qt.update(mb)
    assert qt.is_quantized and len(list(quantized_modules(qt.network))) == 2


def test_sam_and_noise_and_sma_and_ptq_run():
    for cls in (SAM, NoiseInjection, ERM_SMA, PTQ):
        algo = _make(cls, quant_start_step=0, sma_start_step=1)
        before = [p.detach().clone() for p in algo.network.parameters()]
        for mb in _batches(3):
            out = algo.update(mb)
            assert torch.isfinite(torch.tensor(out["loss"]))
        assert any(
            not torch.equal(a, b) for a, b in zip(before, algo.network.parameters(), strict=True)
        )
        algo.eval()
        assert algo.predict(torch.rand(3, *SHAPE)).shape == (3, 10)


def test_erm_sma_is_uniform_average():
    algo = _make(ERM_SMA, sma_start_step=1)
    iterates = []
    for mb in _batches(4):
        algo.update(mb)
        iterates.append([p.detach().clone() for p in algo.network.parameters()])
    for i, pa in enumerate(algo.network_sma.parameters()):
        avg = torch.stack([it[i] for it in iterates]).mean(0)
        torch.testing.assert_close(pa, avg)


def test_ptq_predicts_with_quantized_copy():
    algo = _make(PTQ, bits=3)
    algo.update(_batches(1)[0])
    q = algo.quantized_network()
    assert is_quantized(q) and not is_quantized(algo.network)
    for _, m in quantized_modules(q):
        codes = m.weight / m.quantizer.step.reshape(-1, 1, 1, 1)
        assert codes.abs().max() <= 3.0 + 1e-5  # max|w| maps to Q_P = 3: no clipping


def test_bad_inputs():
    with pytest.raises(ValueError, match="algorithm"):
        get_algorithm_class("IRM")
    with pytest.raises(ValueError, match="hparams"):
        ERM(SHAPE, 10, 2, {"learning_rate": 1.0})
    with pytest.raises(ValueError, match="lr"):
        ERM(SHAPE, 10, 2, {"lr": -1.0})
    with pytest.raises(ValueError, match="bits"):
        QTDoG(SHAPE, 10, 2, {"bits": 1})
    with pytest.raises(ValueError, match="quant_start_step"):
        QTDoG(SHAPE, 10, 2, {"quant_start_step": -1})
    erm = _make(ERM)
    with pytest.raises(ValueError, match="minibatches"):
        erm.update([])
    with pytest.raises(ValueError, match="minibatches"):
        erm.update([(torch.rand(2, 1, 4, 4), torch.zeros(2, dtype=torch.long))])
    bad = torch.rand(2, *SHAPE)
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        erm.update([(bad, torch.zeros(2, dtype=torch.long))])
    assert default_hparams("QTDoG")["bits"] == 7
    assert not is_quantized(erm.network)


@pytest.mark.parametrize(
    ("key", "value"),
    [("batch_size", 0), ("rho", -0.1), ("weight_decay", float("nan")), ("sma_start_step", -2)],
)
def test_hparam_ranges(key, value):
    cls = {"rho": SAM, "sma_start_step": ERM_SMA}.get(key, ERM)
    with pytest.raises(ValueError, match=key):
        cls(SHAPE, 10, 2, {key: value})


def test_noise_injection_bits_checked_at_init():
    with pytest.raises(ValueError, match="bits"):
        NoiseInjection(SHAPE, 10, 2, {"bits": 20})
