"""to_int8: real int8 models from fake-quantized ones."""

import pytest
import torch

from qat_dg import (
    MLP,
    Int8Conv2d,
    SmallCNN,
    quantize_model,
    saved_size_bytes,
    to_int8,
)


def _cnn(seed=0):
    torch.manual_seed(seed)
    m = SmallCNN(3, 7, 8)
    with torch.no_grad():  # non-trivial BatchNorm statistics, one negative scale
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.normal_(0, 0.1)
                mod.running_var.uniform_(0.5, 2.0)
                mod.weight.normal_(1.0, 0.3)
                mod.bias.normal_(0, 0.1)
        m.features[1].weight[0] = -0.5
    return quantize_model(m, bits=7).eval()


def _x(n=16, seed=1):
    return torch.randn(n, 3, 16, 16, generator=torch.Generator().manual_seed(seed))


def test_weight_only_equals_the_fake_quant_model_and_round_trips():
    q = _cnn()
    before = {k: v.clone() for k, v in q.state_dict().items()}
    m = to_int8(q)
    assert all(torch.equal(v, before[k]) for k, v in q.state_dict().items())  # input untouched
    assert isinstance(m.features[0], Int8Conv2d) and m.features[0].codes.dtype == torch.int8
    x = _x()
    with torch.no_grad():
        assert torch.equal(m(x), q(x))
    sd = m.state_dict()
    fresh = to_int8(quantize_model(SmallCNN(3, 7, 8), bits=7))
    fresh.load_state_dict(sd)
    with torch.no_grad():
        assert torch.equal(fresh(x), q(x))
    fp = SmallCNN(3, 7, 8)
    assert saved_size_bytes(m) < 0.5 * saved_size_bytes(fp)


def test_weight_only_linear_targets():
    torch.manual_seed(0)
    q = quantize_model(MLP(12, 3, 16), bits=8, targets=("linear",), exclude=()).eval()
    m = to_int8(q)
    x = torch.randn(5, 12)
    with torch.no_grad():
        assert torch.equal(m(x), q(x))


def test_static_writes_the_lsq_codes_into_fused_int8_kernels():
    q = _cnn()
    s = to_int8(q, "static", calibration=_x(128, seed=2))
    mods = dict(s.named_modules())
    bn = q.features[1]
    g = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    w = mods["features.0"].weight().dequantize()
    ref = q.features[0].quantized_weight() * g.reshape(-1, 1, 1, 1)
    assert (w - ref).abs().max() < 1e-6
    x = _x(64)
    with torch.no_grad():
        a, b = q(x), s(x)
    assert (a.argmax(1) == b.argmax(1)).float().mean() >= 0.9
    assert (a - b).abs().max() < 0.1 * a.abs().max()


def test_to_int8_rejects_bad_input():
    fp = SmallCNN(3, 7, 8)
    with pytest.raises(ValueError, match="quantize_model"):
        to_int8(fp)
    with pytest.raises(ValueError, match="bits"):
        to_int8(quantize_model(fp, bits=12))
    q = _cnn()
    with pytest.raises(ValueError, match="mode"):
        to_int8(q, "dynamic")
    with pytest.raises(TypeError, match="calibration"):
        to_int8(q, "static")
    with pytest.raises(ValueError, match="calibration"):
        to_int8(q, calibration=_x())
    with pytest.raises(ValueError, match="finite"):
        to_int8(q, "static", calibration=torch.full((4, 3, 16, 16), float("nan")))
    with pytest.raises(ValueError, match="batch_size"):
        to_int8(q, "static", calibration=_x(), batch_size=0)
    with pytest.raises(TypeError, match="model"):
        to_int8("model")
    with pytest.raises(TypeError, match="model"):
        saved_size_bytes(3)
