"""Correctness of the token-level distillation losses."""

from __future__ import annotations

import pytest
import torch

import kd_losses as K
from kd_losses import functional as KF

NAMES = K.LOSS_NAMES


def _dense(name: str, s: torch.Tensor, t: torch.Tensor, temp: float = 1.0) -> torch.Tensor:
    """Direct probability-space formulas, float64, per token."""
    q = torch.softmax(s.double() / temp, -1)
    p = torch.softmax(t.double() / temp, -1)

    def kl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * (a / b).log()).sum(-1)

    if name == "fkl":
        return kl(p, q)
    if name == "rkl":
        return kl(q, p)
    if name == "jsd":
        m = 0.5 * p + 0.5 * q
        return 0.5 * kl(p, m) + 0.5 * kl(q, m)
    if name == "tvd":
        return 0.5 * (p - q).abs().sum(-1)
    if name == "skl":
        return kl(p, 0.1 * p + 0.9 * q)
    if name == "srkl":
        return kl(q, 0.1 * q + 0.9 * p)
    if name == "bdl":
        return kl(p, 0.1 * p + 0.9 * q) + kl(q, 0.1 * q + 0.9 * p)
    if name == "akl":
        out = []
        for pi, qi in zip(p.reshape(-1, p.shape[-1]), q.reshape(-1, q.shape[-1]), strict=True):
            order = pi.argsort(descending=True)
            head = torch.zeros_like(pi, dtype=torch.bool)
            acc = 0.0
            for j in order.tolist():  # brute force: add tokens until the mass reaches 0.5
                head[j] = True
                acc += float(pi[j])
                if acc >= 0.5:
                    break
            gap = (pi - qi).abs()
            w = gap[head].sum() / gap.sum()
            out.append(w * kl(pi, qi) + (1 - w) * kl(qi, pi))
        return torch.stack(out).reshape(p.shape[:-1])
    raise AssertionError(name)


@pytest.fixture
def logits() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return 2 * torch.randn(3, 5, 17, generator=g), 2 * torch.randn(3, 5, 17, generator=g)


@pytest.mark.parametrize("name", NAMES)
def test_matches_dense_formula(name: str, logits: tuple[torch.Tensor, torch.Tensor]) -> None:
    s, t = logits
    for temp in (1.0, 2.5):
        got = KF.distill_loss(name, s.double(), t.double(), temperature=temp, reduction="none")
        torch.testing.assert_close(got, _dense(name, s, t, temp), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_zero_for_identical_and_nonnegative(name: str, logits: tuple) -> None:
    s, t = logits
    assert KF.distill_loss(name, t, t).abs().item() < 1e-6
    per = KF.distill_loss(name, s, t, reduction="none")
    assert bool((per >= -1e-7).all())
    assert per.sum().item() > 0


def test_forward_kl_matches_torch_kl_div(logits: tuple) -> None:
    s, t = logits
    ref = torch.nn.functional.kl_div(
        torch.log_softmax(s, -1).reshape(-1, 17),
        torch.log_softmax(t, -1).reshape(-1, 17),
        reduction="batchmean",
        log_target=True,
    )
    torch.testing.assert_close(K.forward_kl(s, t), ref)
    ref_r = torch.nn.functional.kl_div(
        torch.log_softmax(t, -1).reshape(-1, 17),
        torch.log_softmax(s, -1).reshape(-1, 17),
        reduction="batchmean",
        log_target=True,
    )
    torch.testing.assert_close(K.reverse_kl(s, t), ref_r)


def test_special_cases() -> None:
    g = torch.Generator().manual_seed(1)
    s, t = torch.randn(4, 9, generator=g), torch.randn(4, 9, generator=g)
    torch.testing.assert_close(K.skew_kl(s, t, alpha=0.0), K.forward_kl(s, t))
    torch.testing.assert_close(K.skew_reverse_kl(s, t, alpha=0.0), K.reverse_kl(s, t))
    torch.testing.assert_close(
        K.bidirectional_discrepancy_loss(s, t, lam=0.0), K.forward_kl(s, t) + K.reverse_kl(s, t)
    )
    torch.testing.assert_close(
        K.bidirectional_discrepancy_loss(s, t, lam=0.3),
        K.skew_kl(s, t, alpha=0.3) + K.skew_reverse_kl(s, t, alpha=0.3),
    )
    # JSD is symmetric at beta = 0.5 and bounded by log 2
    torch.testing.assert_close(K.js_divergence(s, t), K.js_divergence(t, s))
    assert K.js_divergence(100 * s, -100 * s).item() <= torch.log(torch.tensor(2.0)).item() + 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_float64(name: str) -> None:
    g = torch.Generator().manual_seed(2)
    s = torch.randn(2, 3, 6, generator=g, dtype=torch.float64, requires_grad=True)
    t = torch.randn(2, 3, 6, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1, 1, 0], [1, 0, 1]], dtype=torch.bool)

    kw = {"detach_weights": False} if name == "akl" else {}  # the true gradient of AKL

    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return KF.distill_loss(name, a, b, mask=mask, temperature=1.7, **kw)

    assert torch.autograd.gradcheck(f, (s, t), eps=1e-6, atol=1e-6)

    def fc(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return KF.distill_loss(name, a, b, mask=mask, chunk_size=2, **kw)

    assert torch.autograd.gradcheck(fc, (s, t), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("chunk", [None, 2])
def test_one_pass_student_gradient_equals_autograd(name: str, chunk) -> None:
    """With a frozen teacher the loss runs the one-pass kernel with its analytic gradient;
    it equals autograd through the log-space formula (float64, 1e-10)."""
    g = torch.Generator().manual_seed(3)
    s = torch.randn(2, 3, 7, generator=g, dtype=torch.float64, requires_grad=True)
    t = torch.randn(2, 3, 7, generator=g, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    out = KF.distill_loss(name, s, t, mask=mask, temperature=1.3, chunk_size=chunk)
    (grad,) = torch.autograd.grad(out, s)
    t_ref = t.clone().requires_grad_(True)  # a teacher needing grads takes the autograd path
    ref = KF.distill_loss(name, s, t_ref, mask=mask, temperature=1.3)
    (grad_ref,) = torch.autograd.grad(ref, s)
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(grad, grad_ref, atol=1e-10, rtol=0)
    # (the autograd path itself is checked against numerical gradients by gradcheck above)


def test_all_masked_batch_is_zero_with_zero_gradient() -> None:
    s = torch.randn(2, 3, 5, requires_grad=True)
    t = torch.randn(2, 3, 5)
    labels = torch.full((2, 3), -100)
    for name in NAMES:
        out = KF.distill_loss(name, s, t, labels=labels)
        (grad,) = torch.autograd.grad(out, s)
        assert out.item() == 0.0 and torch.count_nonzero(grad) == 0


def test_minus_inf_logits_where_both_models_mask_the_same_tokens() -> None:
    g = torch.Generator().manual_seed(4)
    s = torch.randn(4, 9, generator=g, dtype=torch.float64)
    t = torch.randn(4, 9, generator=g, dtype=torch.float64)
    s[:, 6:] = t[:, 6:] = float("-inf")
    for name in NAMES:
        a = s.clone().requires_grad_(True)
        out = KF.distill_loss(name, a, t)
        (grad,) = torch.autograd.grad(out, a)
        ref = KF.distill_loss(name, s[:, :6], t[:, :6])
        torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)
        assert torch.isfinite(grad).all() and torch.count_nonzero(grad[:, 6:]) == 0
    bad = t.clone()
    bad[0, 6] = 0.0
    with pytest.raises(ValueError, match="same"):
        KF.forward_kl(s, bad)


@pytest.mark.parametrize("name", NAMES)
def test_mask_and_ignore_index(name: str, logits: tuple) -> None:
    s, t = logits
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[0, 3:] = False
    mask[2, 0] = False
    base = KF.distill_loss(name, s, t, mask=mask)
    # garbage at padded positions changes nothing, value or gradient
    s2, t2 = s.clone(), t.clone()
    s2[~mask] = 1e4 * torch.randn(int((~mask).sum()), 17)
    t2[~mask] = -3e3
    s2.requires_grad_(True)
    out = KF.distill_loss(name, s2, t2, mask=mask)
    torch.testing.assert_close(out, base)
    out.backward()
    assert bool((s2.grad[~mask] == 0).all())
    # labels with ignore_index give the same result
    labels = torch.where(mask, torch.zeros(3, 5, dtype=torch.long), torch.full((3, 5), -100))
    torch.testing.assert_close(KF.distill_loss(name, s, t, labels=labels), base)
    # mean = sum / count over valid tokens; "none" zeros padded tokens
    per = KF.distill_loss(name, s, t, mask=mask, reduction="none")
    assert bool((per[~mask] == 0).all())
    torch.testing.assert_close(KF.distill_loss(name, s, t, mask=mask, reduction="sum"), per.sum())
    torch.testing.assert_close(base, per.sum() / mask.sum())


@pytest.mark.parametrize("name", NAMES)
def test_chunked_equals_unchunked(name: str, logits: tuple) -> None:
    s, t = logits
    s1 = s.clone().requires_grad_(True)
    s2 = s.clone().requires_grad_(True)
    a = KF.distill_loss(name, s1, t, reduction="sum")
    b = KF.distill_loss(name, s2, t, reduction="sum", chunk_size=4)
    torch.testing.assert_close(a, b)
    a.backward()
    b.backward()
    torch.testing.assert_close(s1.grad, s2.grad)


@pytest.mark.parametrize("name", NAMES)
def test_stable_large_logits_and_bf16(name: str) -> None:
    g = torch.Generator().manual_seed(3)
    s = 3000 * torch.randn(2, 4, 1000, generator=g)
    t = 3000 * torch.randn(2, 4, 1000, generator=g)
    v = KF.distill_loss(name, s, t)
    assert torch.isfinite(v)
    sb, tb = s.bfloat16() / 300, t.bfloat16() / 300
    vb = KF.distill_loss(name, sb, tb)
    assert vb.dtype == torch.float32 and torch.isfinite(vb)
    ref = KF.distill_loss(name, sb.float(), tb.float())
    torch.testing.assert_close(vb, ref)


def test_large_vocab_chunked_bounded() -> None:
    g = torch.Generator().manual_seed(4)
    s = torch.randn(1, 6, 128_000, generator=g).bfloat16().requires_grad_(True)
    t = (10 * torch.randn(1, 6, 128_000, generator=g)).bfloat16()
    v = K.bidirectional_discrepancy_loss(s, t, chunk_size=2)
    v.backward()
    assert torch.isfinite(v) and torch.isfinite(s.grad.float()).all()


@pytest.mark.parametrize("name", NAMES)
def test_modules_match_functional(name: str, logits: tuple) -> None:
    s, t = logits
    mod = K.make_loss(name, temperature=2.0, reduction="sum", chunk_size=4)
    torch.testing.assert_close(
        mod(s, t), KF.distill_loss(name, s, t, temperature=2.0, reduction="sum")
    )
    assert name in repr(type(mod)).lower() or isinstance(mod, K.DistillLoss)


def test_inputs_not_mutated(logits: tuple) -> None:
    s, t = logits
    s0, t0 = s.clone(), t.clone()
    for name in NAMES:
        KF.distill_loss(name, s, t, temperature=3.0, chunk_size=2)
    assert torch.equal(s, s0) and torch.equal(t, t0)
