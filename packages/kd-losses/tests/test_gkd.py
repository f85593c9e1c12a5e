"""The TRL GKDTrainer adapter: TRL's signature and reductions with the package's losses."""

import types

import pytest
import torch

import kd_losses as K
from kd_losses.gkd import gkd_loss


def _logits(seed=0, b=3, t=5, v=11):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(b, t, v, generator=g, dtype=torch.float64)
    te = torch.randn(b, t, v, generator=g, dtype=torch.float64)
    labels = torch.randint(0, v, (b, t), generator=g)
    labels[0, :2] = -100
    labels[2, 4] = -100
    return s, te, labels


def test_reductions_follow_trl_with_the_packages_losses():
    s, t, labels = _logits()
    f = gkd_loss("bdl", lam=0.2)
    mask = labels != -100
    per_token = K.distill_loss("bdl", s, t, lam=0.2, reduction="none")
    total = per_token[mask].sum()
    torch.testing.assert_close(f(s, t, labels), total / mask.sum())  # batchmean
    torch.testing.assert_close(f(s, t, labels, reduction="sum"), total)
    torch.testing.assert_close(f(s, t, labels, reduction="mean"), total / (mask.sum() * 11))
    torch.testing.assert_close(f(s, t, labels, num_items_in_batch=torch.tensor(40)), total / 40)
    torch.testing.assert_close(f(s, t), per_token.sum() / 3)  # batchmean without labels: / B
    # the trainer's beta is ignored by losses other than jsd
    torch.testing.assert_close(f(s, t, labels, beta=0.9), f(s, t, labels, beta=0.1))
    with pytest.raises(ValueError, match="reduction"):
        f(s, t, labels, reduction="none")
    with pytest.raises(ValueError, match="loss"):
        gkd_loss("kl")
    with pytest.raises(TypeError, match="beta"):
        gkd_loss("jsd", beta=0.3)
    with pytest.raises(ValueError, match="beta"):
        gkd_loss("jsd")(s, t, labels, beta=1.5)


@pytest.mark.parametrize("beta", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_jsd_equals_trls_generalized_jsd_loss(beta, temperature):
    gkd = pytest.importorskip("trl.experimental.gkd")
    trl_loss = gkd.GKDTrainer.generalized_jsd_loss
    s, t, labels = _logits(1)
    ours = gkd_loss("jsd")
    cases = [dict(labels=labels), dict(labels=None), dict(labels=labels, reduction="sum"),
             dict(labels=labels, reduction="mean"),
             dict(labels=labels, num_items_in_batch=torch.tensor(37))]  # fmt: skip
    for kw in cases:
        want = trl_loss(s, t, beta=beta, temperature=temperature, **kw)
        got = ours(s, t, beta=beta, temperature=temperature, **kw)
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_the_recipe_runs_inside_gkdtrainer_compute_loss():
    gkd = pytest.importorskip("trl.experimental.gkd")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=29, hidden_size=16, intermediate_size=32,
                                   num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=1)  # fmt: skip
    student, teacher = transformers.LlamaForCausalLM(cfg), transformers.LlamaForCausalLM(cfg)
    ids = torch.randint(0, 29, (2, 7))
    labels = ids.clone()
    labels[:, :3] = -100  # the prompt
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}

    class BDLGKDTrainer(gkd.GKDTrainer):
        generalized_jsd_loss = staticmethod(gkd_loss("bdl", lam=0.1))

    fake = types.SimpleNamespace(teacher_model=teacher, beta=0.5,
                                 generalized_jsd_loss=BDLGKDTrainer.generalized_jsd_loss)  # fmt: skip
    got = gkd.GKDTrainer.compute_loss(fake, student, inputs)
    zs, zt = student(ids).logits[:, :-1], teacher(ids).logits[:, :-1].detach()
    keep = labels[:, 1:] != -100
    want = K.distill_loss("bdl", zs, zt, lam=0.1, reduction="none")[keep].mean()
    torch.testing.assert_close(got, want)
