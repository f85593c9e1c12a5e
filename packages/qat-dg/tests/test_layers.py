import copy

import pytest
import torch
from torch import nn

from qat_dg.models import build_model
from qat_dg.quant import (
    FakeQuantConv2d,
    FakeQuantLinear,
    QuantConfig,
    dequantize_export,
    export_quantized,
    is_quantized,
    model_size_bits,
    quant_parameters,
    quantize_model,
    quantized_modules,
)


def _cnn():
    torch.manual_seed(0)
    return build_model("small_cnn", (1, 8, 8), 10, width=4)


def test_swap_reuses_parameters_and_excludes_classifier():
    net = _cnn()
    ids = {n: id(p) for n, p in net.named_parameters()}
    q = quantize_model(net, bits=7, inplace=True)
    assert q is net
    assert {n: id(p) for n, p in q.named_parameters() if "quantizer" not in n} == ids
    kinds = [type(m) for _, m in quantized_modules(q)]
    assert kinds == [FakeQuantConv2d] * 3
    assert isinstance(q.classifier, nn.Linear) and not isinstance(q.classifier, FakeQuantLinear)
    assert len(list(quant_parameters(q))) == 3


def test_not_inplace_leaves_caller_model_alone():
    net = _cnn()
    before = copy.deepcopy(net.state_dict())
    q = quantize_model(net, bits=4)
    assert not is_quantized(net) and is_quantized(q)
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k])


def test_output_error_bound_linear():
    torch.manual_seed(0)
    lin = nn.Linear(20, 5)
    x = torch.randn(7, 20)
    y_fp = lin(x)
    q = quantize_model(nn.Sequential(lin), bits=6, targets=("linear",), exclude=())
    m = q[0]
    s = m.quantizer.step.detach()
    v = m.weight.detach() / s[:, None]
    assert ((v >= -32) & (v <= 31)).all()  # no clipping at init
    bound = 0.5 * s[None, :] * x.abs().sum(1, keepdim=True)
    diff = (q(x) - y_fp).abs()
    assert (diff <= bound + 1e-6).all() and diff.max() > 0


def test_idempotent_and_state_dict_round_trip():
    net = quantize_model(_cnn(), bits=5)
    mods = [id(m) for _, m in quantized_modules(net)]
    again = quantize_model(net, bits=5, inplace=True)
    assert [id(m) for _, m in quantized_modules(again)] == mods
    with torch.no_grad():
        for p in quant_parameters(net):
            p.mul_(1.3)
    fresh = quantize_model(build_model("small_cnn", (1, 8, 8), 10, width=4), bits=5)
    fresh.load_state_dict(net.state_dict())
    x = torch.rand(4, 1, 8, 8)
    net.eval()
    fresh.eval()
    torch.testing.assert_close(fresh(x), net(x))
    # a full-precision state_dict loads into the quantized model (steps stay as they are)
    fp = _cnn()
    missing, unexpected = net.load_state_dict(fp.state_dict(), strict=False)
    assert all("quantizer" in k for k in missing) and not unexpected


def test_export_exact_and_in_range():
    net = quantize_model(_cnn(), bits=4)
    exp = export_quantized(net)
    deq = dequantize_export(exp)
    for name, m in quantized_modules(net):
        codes, _step, bits = exp[f"{name}.weight"]
        assert codes.dtype == torch.int8 and bits == 4
        assert codes.min() >= -8 and codes.max() <= 7
        assert torch.equal(deq[f"{name}.weight"], m.quantized_weight().detach())
    net16 = quantize_model(_cnn(), bits=12)
    assert next(iter(export_quantized(net16).values()))[0].dtype == torch.int16


def test_model_size_bits():
    net = _cnn()
    n_fp = sum(p.numel() for p in net.parameters())
    assert model_size_bits(net) == 32 * n_fp
    q = quantize_model(net, bits=7)
    conv = sum(m.weight.numel() for _, m in quantized_modules(q))
    steps = sum(p.numel() for p in quant_parameters(q))
    assert model_size_bits(q) == 7 * conv + 32 * (n_fp - conv) + 32 * steps


def test_errors():
    mlp = build_model("mlp", (1, 8, 8), 10)
    with pytest.raises(ValueError, match="quantizable"):
        quantize_model(mlp)  # only Linear layers, default targets=("conv",)
    with pytest.raises(ValueError, match="bits"):
        quantize_model(_cnn(), bits=1)
    with pytest.raises(ValueError, match="bits"):
        QuantConfig(bits=17)
    with pytest.raises(TypeError, match="unknown"):
        quantize_model(_cnn(), bitz=4)
    with pytest.raises(TypeError, match="model"):
        quantize_model("net")
    with pytest.raises(ValueError, match="targets"):
        QuantConfig(targets=("attention",))
    with pytest.raises(ValueError, match="quantize_activations"):
        QuantConfig(quantize_activations=True)
    with pytest.raises(ValueError, match="quantized"):
        export_quantized(_cnn())
    q = quantize_model(mlp, targets="linear")
    assert len(list(quantized_modules(q))) == 2  # classifier excluded
