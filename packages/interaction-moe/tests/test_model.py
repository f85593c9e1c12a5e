import numpy as np
import pytest
import torch
from torch import nn

from interaction_moe import ConcatMLPFusion, I2MoE, LateFusion, TransformerFusion, perturb


def _model(**kw):
    torch.manual_seed(0)
    enc = [nn.Sequential(nn.Linear(5, 8), nn.ReLU()) for _ in range(2)]
    return I2MoE(enc, ConcatMLPFusion(2, 8, 3), gate_dim=16, **kw)


def _xs(B=7):
    g = torch.Generator().manual_seed(1)
    return [torch.randn(B, 5, generator=g), torch.randn(B, 5, generator=g)]


def test_shapes_weights_and_mixture_by_hand():
    m = _model()
    out = m(_xs())
    assert (
        out.logits.shape == (7, 3)
        and out.weights.shape == (7, 4)
        and out.expert_logits.shape == (7, 4, 3)
    )
    assert torch.allclose(out.weights.sum(1), torch.ones(7))
    assert set(out.interaction_losses) == {"uni_1", "uni_2", "syn", "red", "total"}
    m.eval()
    o = m(_xs())
    assert o.interaction_losses is None
    assert torch.allclose(o.logits, (o.weights[..., None] * o.expert_logits).sum(1), atol=1e-6)
    assert m.expert_names == ["uni_1", "uni_2", "syn", "red"]


def test_temperature_global_and_one_hot_gate():
    m = _model(temperature=1e9).eval()
    assert torch.allclose(m(_xs()).weights, torch.full((7, 4), 0.25), atol=1e-6)
    g = _model(reweighting="global").eval()
    w = g(_xs()).weights
    assert torch.allclose(w, w[:1].expand_as(w))
    with torch.no_grad():
        g.gate_logits.copy_(torch.tensor([0.0, 0.0, 100.0, 0.0]))
    o = g(_xs())
    assert torch.allclose(o.logits, o.expert_logits[:, 2], atol=1e-5)


def test_experts_identical_at_init_unless_independent():
    m = _model()
    p = [torch.cat([q.flatten() for q in e.parameters()]) for e in m.experts]
    assert all(torch.equal(p[0], q) for q in p[1:])
    mi = _model(independent_init=True)
    p = [torch.cat([q.flatten() for q in e.parameters()]) for e in mi.experts]
    assert not torch.equal(p[0], p[1])


def test_perturbation_modes_and_no_mutation():
    xs = _xs()
    keep = [x.clone() for x in xs]
    z = perturb(xs, 1, "zero")
    assert z[0] is xs[0] and torch.equal(z[1], torch.zeros_like(xs[1]))
    mu = perturb(xs, 0, "mean")
    assert torch.allclose(mu[0], xs[0].mean(0, keepdim=True).expand_as(xs[0]))
    gen = perturb(xs, 0, "gaussian", torch.Generator().manual_seed(0))
    assert gen[0].shape == xs[0].shape and not torch.equal(gen[0], xs[0])
    assert all(torch.equal(a, b) for a, b in zip(xs, keep, strict=True))
    with pytest.raises(ValueError, match="perturbation"):
        perturb(xs, 0, "drop")


def test_eval_makes_no_perturbed_passes_and_training_does():
    m = _model()
    calls = []
    for e in m.experts:
        e.register_forward_hook(lambda *a: calls.append(1))
    m.eval()
    m(_xs())
    assert len(calls) == 4
    calls.clear()
    m.train()
    m(_xs())
    assert len(calls) == 4 * 3  # n_E (M + 1)


def test_gradients_reach_everything():
    m = _model()
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0])
    m.loss(m(_xs()), y).backward()
    for name, p in m.named_parameters():
        assert p.grad is not None, name


@pytest.mark.parametrize("fusion", [LateFusion(2, 8, 3), TransformerFusion(2, 8, 3)])
def test_other_backbones_and_tokens(fusion):
    enc = [
        nn.Linear(5, 8),
        nn.Sequential(nn.Linear(5, 8), nn.Unflatten(1, (1, 8))),
    ]  # vector and tokens
    m = I2MoE(enc, fusion, gate_dim=16)
    out = m(_xs())
    assert out.logits.shape == (7, 3) and torch.isfinite(out.interaction_losses["total"])


def test_bad_inputs():
    enc = [nn.Linear(5, 8), nn.Linear(5, 8)]
    f = ConcatMLPFusion(2, 8, 3)
    for kw, msg in [
        (dict(interaction_weight=-1), "interaction_weight"),
        (dict(temperature=0), "temperature"),
        (dict(margin=-0.1), "margin"),
        (dict(perturbation="drop"), "perturbation"),
        (dict(reweighting="topk"), "reweighting"),
        (dict(task="ranking"), "task"),
        (dict(expert_loss_weight=-1), "expert_loss_weight"),
    ]:
        with pytest.raises(ValueError, match=msg):
            I2MoE(enc, f, **kw)
    with pytest.raises(ValueError, match="encoders"):
        I2MoE([enc[0]], f)
    m = I2MoE(enc, f, gate_dim=16)
    xs = _xs()
    with pytest.raises(ValueError, match="list of 2"):
        m(xs[:1])
    with pytest.raises(ValueError, match="batch sizes"):
        m([xs[0], xs[1][:3]])
    bad = [xs[0].clone(), xs[1].clone()]
    bad[1][0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        m(bad)
    with pytest.raises(ValueError, match="multiclass"):
        I2MoE(enc, ConcatMLPFusion(2, 8, 1), gate_dim=16)(xs)
    with pytest.raises(ValueError, match="class id"):
        m.loss(m(xs), torch.tensor([0, 1, 2, 3, 0, 1, 2]))
    with pytest.raises(TypeError, match="integer"):
        m.loss(m(xs), torch.zeros(7))
    assert np.isfinite(float(m.loss(m(xs), torch.zeros(7, dtype=torch.long)).detach()))
