import pytest
import torch
import torch.nn.functional as F
from torch import nn

from qat_dg.flatness import local_flatness
from qat_dg.models import build_model
from qat_dg.quant import quantize_model


def _data(n=64):
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 1, 8, 8, generator=g), torch.randint(0, 10, (n,), generator=g)


def test_zero_radius_determinism_and_restoration():
    torch.manual_seed(0)
    net = build_model("small_cnn", (1, 8, 8), 10, width=4)
    net = quantize_model(net, bits=5)
    net.train()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    kw = {"radii": ("rel", [0, 0.05, 0.2]), "n_directions": 4, "seed": 3}
    a = local_flatness(net, F.cross_entropy, _data(), **kw)
    b = local_flatness(net, F.cross_entropy, _data(), **kw)
    assert a == b
    assert a["mean"][0] == 0.0 and a["radius"][0] == 0.0
    assert a["mean"][2] > a["mean"][1]
    assert net.training
    for k, v in net.state_dict().items():
        assert torch.equal(v, state[k]), k


def test_quadratic_closed_form():
    # at an exact least-squares fit L(w + d) - L(w) = d^T A d with A = X^T X / N, so
    # E over the sphere of radius r is r^2 tr(A) / p.
    torch.manual_seed(0)
    x = torch.randn(200, 6)
    lin = nn.Linear(6, 1, bias=False)
    y = lin(x).detach()

    def mse(out, target, reduction="sum"):
        return F.mse_loss(out, target, reduction=reduction)

    res = local_flatness(lin, mse, (x, y), radii=[0.5], n_directions=3000, seed=0)
    expected = 0.25 * float((x**2).sum(0).mean() * 6 / 200) / 6
    assert res["mean"][0] == pytest.approx(expected, rel=0.05)


def test_errors():
    net = build_model("mlp", (1, 8, 8), 10)
    with pytest.raises(ValueError, match="n_directions"):
        local_flatness(net, F.cross_entropy, _data(), n_directions=0)
    with pytest.raises(ValueError, match="include"):
        local_flatness(net, F.cross_entropy, _data(), include="steps")
    with pytest.raises(ValueError, match="radii"):
        local_flatness(net, F.cross_entropy, _data(), radii=("rel", [-1.0]))
    with pytest.raises(ValueError, match="radii"):
        local_flatness(net, F.cross_entropy, _data(), radii=("pct", [0.1]))
    x, y = _data()
    with pytest.raises(ValueError, match="loader"):
        local_flatness(net, F.cross_entropy, (x, y[:3]))


def test_algorithm_probes_its_predict_network():
    from qat_dg.algorithms import ERM_SMA

    torch.manual_seed(0)
    algo = ERM_SMA((1, 8, 8), 10, 2, {"arch": "mlp", "sma_start_step": 0})
    x, y = _data()
    for _ in range(3):
        algo.update([(x[:16], y[:16]), (x[16:32], y[16:32])])
    sma = {k: v.clone() for k, v in algo.network_sma.state_dict().items()}
    res = local_flatness(algo, F.cross_entropy, (x, y), radii=("rel", [0.3]), n_directions=3)
    assert res["mean"][0] != 0.0  # frozen (requires_grad=False) averaged weights were perturbed
    for k, v in algo.network_sma.state_dict().items():
        assert torch.equal(v, sma[k])


def test_filter_normalised_directions_ignore_weight_scale():
    """A ReLU net rescaled (layer 1 x c, layer 2 / c) computes the same function: its
    filter-normalised flatness is unchanged, while fixed absolute radii call it flatter."""
    from qat_dg.flatness import _filter_normalized

    torch.manual_seed(0)
    x = torch.randn(128, 5)
    y = torch.randint(0, 3, (128,))
    net = nn.Sequential(nn.Linear(5, 16, bias=False), nn.ReLU(), nn.Linear(16, 3, bias=False))
    big = nn.Sequential(nn.Linear(5, 16, bias=False), nn.ReLU(), nn.Linear(16, 3, bias=False))
    with torch.no_grad():
        big[0].weight.copy_(4.0 * net[0].weight)
        big[2].weight.copy_(net[2].weight / 4.0)
        assert torch.allclose(big(x), net(x), atol=1e-5)
    kw = {"radii": [0.0, 0.1, 0.3], "n_directions": 5, "seed": 2, "normalize": "filter"}
    a = local_flatness(net, F.cross_entropy, (x, y), **kw)
    b = local_flatness(big, F.cross_entropy, (x, y), **kw)
    assert a["mean"] == pytest.approx(b["mean"], rel=1e-4, abs=1e-6)
    assert a["weight_norm"][0] != pytest.approx(b["weight_norm"][0])
    kw["normalize"] = "sphere"
    a = local_flatness(net, F.cross_entropy, (x, y), **kw)
    b = local_flatness(big, F.cross_entropy, (x, y), **kw)
    assert a["mean"][2] != pytest.approx(b["mean"][2], rel=1e-2)
    d = _filter_normalized(torch.randn(4, 3, 2, 2), torch.arange(48.0).reshape(4, 3, 2, 2))
    w = torch.arange(48.0).reshape(4, -1)
    assert torch.allclose(d.reshape(4, -1).norm(dim=1), w.norm(dim=1))
    assert torch.equal(_filter_normalized(torch.randn(5), torch.ones(5)), torch.zeros(5))
    with pytest.raises(ValueError, match="normalize"):
        local_flatness(net, F.cross_entropy, (x, y), normalize="layer")
