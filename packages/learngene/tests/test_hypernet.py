import math

import numpy as np
import pytest
import torch

from learngene.graph import arch_graph
from learngene.hypernet import (
    GraphHyperNetwork,
    TaskFiLM,
    fit_to_shape,
    postprocess_param,
    shape_bucket,
)
from learngene.vit import TinyViT, ViTSpec


def test_fit_to_shape_crop_equal_tile():
    b = torch.arange(16.0).view(4, 4)
    assert torch.equal(fit_to_shape(b, (2, 3)), b[:2, :3])
    assert torch.equal(fit_to_shape(b, (4, 4)), b)
    with pytest.warns(UserWarning, match="tiled"):
        t = fit_to_shape(b, (10, 6))
    assert t.shape == (10, 6)
    assert torch.equal(t[4:8, :4], b) and torch.equal(t[8:10, 4:6], b[:2, :2])
    v = torch.arange(3.0)
    with pytest.warns(UserWarning):
        assert torch.equal(fit_to_shape(v, (7,)), torch.tensor([0.0, 1, 2, 0, 1, 2, 0]))
    with pytest.raises(ValueError, match="rank"):
        fit_to_shape(v, (2, 2))


def test_fan_in_rule_and_ranges():
    g = torch.Generator().manual_seed(0)
    raw = torch.randn(400, 100, generator=g)
    for t in ("qkv", "fc1", "head", "distill"):  # GHN-3: unit-variance raw -> variance 2 / fan_in
        assert postprocess_param(raw, t, "weight").var().item() == pytest.approx(2 / 100, rel=0.03)
    assert torch.equal(postprocess_param(raw, "pos_embed", "weight"), raw)
    p = torch.linspace(-20, 20, 101)
    ln = postprocess_param(p, "ln", "weight")
    assert (
        torch.all((ln > 0) & (ln < 2))
        and postprocess_param(torch.zeros(1), "ln", "weight").item() == 1.0
    )
    b = postprocess_param(p, "fc1", "bias")
    assert torch.all(b.abs() < 1) and torch.allclose(b, torch.tanh(0.2 * p))


def test_timm_scale_mode():
    g = torch.Generator().manual_seed(0)
    raw = torch.randn(400, 100, generator=g)
    gain = torch.tensor(0.02)
    for t in ("qkv", "fc2", "patch_embed", "pos_embed"):  # unit RMS x gain, whatever the raw scale
        w = postprocess_param(7 * raw, t, "weight", gain)
        assert w.pow(2).mean().sqrt().item() == pytest.approx(0.02, rel=1e-4)
    # heads keep the fan-in rule (their scale is learnt through the raw prediction)
    assert postprocess_param(0.1 * raw, "head", "weight", gain).var().item() == pytest.approx(
        2e-4, rel=0.03
    )
    p = torch.linspace(-5, 5, 11)
    assert torch.allclose(postprocess_param(p, "qkv", "bias", gain), 0.02 * torch.tanh(0.2 * p))
    assert torch.allclose(postprocess_param(p, "head", "bias", gain), torch.tanh(0.2 * p))
    assert torch.allclose(postprocess_param(p, "ln", "weight", gain), 2 * torch.sigmoid(0.5 * p))
    with pytest.raises(ValueError, match="scale"):
        GraphHyperNetwork(scale="kaiming")


def test_shape_bucket():
    np.testing.assert_array_equal(shape_bucket([0, 1, 2, 4, 1 << 20]), [0, 1, 3, 5, 31])


def _net(**kw):
    torch.manual_seed(0)
    return GraphHyperNetwork(hid=16, layers=2, heads=2, lora_r=4, max_shape=64, task_dim=8, **kw)


def test_predicted_shapes_match_module():
    spec = ViTSpec(2, 32, 4)
    net = TinyViT(spec, 5, distill_dim=8)
    params = _net()(arch_graph(spec, 64, 8), None, 5)
    assert {k: tuple(v.shape) for k, v in params.items()} == {
        k: tuple(v.shape) for k, v in net.named_parameters()
    }
    logits = torch.func.functional_call(net, params, (torch.rand(2, 1, 16, 16),))
    assert logits.shape == (2, 5) and torch.isfinite(logits).all()


def test_tiling_beyond_max_shape():
    spec = ViTSpec(1, 48, 4)  # qkv has 144 rows > max_shape 64
    with pytest.warns(UserWarning, match="tiled"):
        params = _net()(arch_graph(spec, 64, 8), None, 3)
    assert params["blocks.0.qkv.weight"].shape == (144, 48)


def test_tsl_identity_at_zero_init_then_task_dependent():
    h = _net()
    g = arch_graph(ViTSpec(2, 32, 4), 64, 8)
    e1, e2 = torch.randn(8), torch.randn(8)
    base = h.encode(g, None)
    assert torch.allclose(h.encode(g, e1), base) and torch.allclose(h.encode(g, e2), base)
    f = TaskFiLM(8, 16)
    x = torch.randn(5, 16)
    assert torch.equal(f(x, e1), x)
    for layer in h.layers:
        torch.nn.init.normal_(layer.tsl.fc_gamma.weight, std=0.1)
    assert not torch.allclose(h.encode(g, e1), h.encode(g, e2))
    p1, p2 = h(g, e1, 3), h(g, e2, 3)
    assert not torch.allclose(p1["head.weight"], p2["head.weight"])


def test_differentiable_and_deterministic():
    h = _net()
    g = arch_graph(ViTSpec(1, 32, 2), 64, 8)
    net = TinyViT(g.spec, 3, distill_dim=8)
    x, y = torch.rand(4, 1, 16, 16), torch.tensor([0, 1, 2, 0])
    loss = torch.nn.functional.cross_entropy(
        torch.func.functional_call(net, h(g, None, 3), (x,)), y
    )
    loss.backward()
    grads = {n: p.grad for n, p in h.named_parameters()}
    assert grads["mat_mlp.0.weight"].abs().sum() > 0 and grads["type_embed.weight"].abs().sum() > 0
    # the gradient agrees with a finite difference along a random direction of one decoder weight
    w = h.lora_out.weight
    d = torch.randn_like(w)
    eps = 1e-3

    def f():
        with torch.no_grad():
            out = torch.func.functional_call(net, h(g, None, 3), (x,))
            return torch.nn.functional.cross_entropy(out, y).item()

    with torch.no_grad():
        w += eps * d
    up = f()
    with torch.no_grad():
        w -= 2 * eps * d
    down = f()
    with torch.no_grad():
        w += eps * d
    assert (up - down) / (2 * eps) == pytest.approx(
        (grads["lora_out.weight"] * d).sum().item(), rel=0.05, abs=1e-4
    )
    a, b = h(g, None, 3), h(g, None, 3)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert math.isfinite(loss.item())
