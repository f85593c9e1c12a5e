import pytest
import torch

from qat_dg.ensemble import Ensemble, EoQ
from qat_dg.models import build_model
from qat_dg.quant import model_size_bits, quantize_model


def _net(seed, width=4):
    torch.manual_seed(seed)
    return build_model("small_cnn", (1, 8, 8), 10, width=width).eval()


def test_single_member_equals_member_and_probs_rule():
    x = torch.rand(5, 1, 8, 8)
    a, b = _net(0), _net(1)
    torch.testing.assert_close(Ensemble([a]).predict(x), a(x))
    ens = Ensemble([a, b], combine="logits")
    torch.testing.assert_close(ens(x), a(x) + b(x))
    ens_p = Ensemble([a, b], combine="probs")
    torch.testing.assert_close(ens_p(x), (a(x).softmax(-1) + b(x).softmax(-1)) / 2)


def test_eoq_members_and_size():
    qa, qb = quantize_model(_net(0), bits=7), quantize_model(_net(1), bits=7)
    eoq = EoQ([qa, qb])
    assert eoq.size_bits() == model_size_bits(qa) + model_size_bits(qb)
    assert eoq.predict(torch.rand(2, 1, 8, 8)).shape == (2, 10)


def test_errors():
    with pytest.raises(ValueError, match="members"):
        Ensemble([])
    with pytest.raises(ValueError, match="architectures"):
        Ensemble([_net(0), _net(1, width=8)])
    with pytest.raises(ValueError, match="architectures"):
        Ensemble([_net(0), quantize_model(_net(1), bits=7)])
    with pytest.raises(ValueError, match="combine"):
        Ensemble([_net(0)], combine="vote")
    with pytest.raises(ValueError, match="quantized"):
        EoQ([quantize_model(_net(0), bits=7), _net(1)])
    with pytest.raises(TypeError, match="members"):
        Ensemble(["model"])


def test_ptq_members_count_quantized_size():
    from qat_dg.algorithms import PTQ

    torch.manual_seed(0)
    algo = PTQ((1, 8, 8), 10, 1, {"arch": "small_cnn", "width": 4, "bits": 4})
    ens = Ensemble([algo])
    assert ens.size_bits() == model_size_bits(algo.quantized_network())
    assert ens.size_bits() < model_size_bits(algo.network)
