import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from learngene.losses import TaskSampler, kd_loss, task_probabilities


def test_kd_loss_hand_computed():
    logits = torch.tensor([[1.0, 0.0, -1.0], [0.5, 0.5, 0.0]])
    y = torch.tensor([0, 2])
    qs = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 0.0]])
    qt = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    a, T = 0.2, 3.0

    def softmax(v):
        e = [math.exp(x / T) for x in v]
        return [x / sum(e) for x in e]

    kl = 0.0
    for s, t in zip(qs.tolist(), qt.tolist(), strict=True):
        ps, pt = softmax(s), softmax(t)
        kl += sum(b * math.log(b / c) for b, c in zip(pt, ps, strict=True))
    ce = 0.0
    for row, label in zip(logits.tolist(), y.tolist(), strict=True):
        ce += -row[label] + math.log(sum(math.exp(v) for v in row))
    expected = a * T * T * kl / 6 + (1 - a) * ce / 2
    assert kd_loss(logits, y, qs, qt, a, T).item() == pytest.approx(expected, rel=1e-6)


def test_kd_term_is_normalised_by_the_logits_element_count():
    # the official trainer divides the summed KL by y.numel(), y the logits (n x C); this
    # package once divided by the feature count (n x d), which differs whenever C != d
    g = torch.Generator().manual_seed(1)
    logits, y = torch.randn(4, 10, generator=g), torch.tensor([0, 3, 9, 2])
    qs, qt = torch.randn(4, 6, generator=g), torch.randn(4, 6, generator=g)
    kl = torch.nn.functional.kl_div(
        torch.log_softmax(qs / 3, 1), torch.log_softmax(qt / 3, 1), reduction="sum", log_target=True
    )
    ce = torch.nn.functional.cross_entropy(logits, y)
    want = 0.2 * kl * 9 / logits.numel() + 0.8 * ce
    torch.testing.assert_close(kd_loss(logits, y, qs, qt, 0.2, 3.0), want, rtol=1e-6, atol=1e-7)


def test_kd_alpha_zero_is_ce_and_alpha_one_is_kd():
    g = torch.Generator().manual_seed(0)
    logits, qs, qt = (torch.randn(4, 5, generator=g) for _ in range(3))
    y = torch.tensor([0, 1, 2, 3])
    assert kd_loss(logits, y, qs, qt, 0.0).item() == pytest.approx(
        F.cross_entropy(logits, y).item()
    )
    assert kd_loss(logits, y, None, None, 0.0).item() == pytest.approx(
        F.cross_entropy(logits, y).item()
    )
    assert kd_loss(logits, y, qt, qt, 1.0).item() == pytest.approx(0.0, abs=1e-6)


def test_kd_loss_bad_input():
    x = torch.zeros(2, 3)
    y = torch.tensor([0, 1])
    with pytest.raises(ValueError, match="alpha"):
        kd_loss(x, y, x, x, alpha=1.5)
    with pytest.raises(ValueError, match="T"):
        kd_loss(x, y, x, x, T=0.0)
    with pytest.raises(ValueError, match="student_feat"):
        kd_loss(x, y, x, torch.zeros(2, 4))
    with pytest.raises(ValueError, match="target"):
        kd_loss(x, torch.tensor([0]), x, x)


def test_task_probabilities_closed_form_and_sampler():
    sizes = {"a": 100, "b": 400, "c": 1600}
    p = task_probabilities(list(sizes.values()), 2.0)
    q = np.sqrt(np.array([100, 400, 1600]) / 2100)
    np.testing.assert_allclose(p, q / q.sum())
    np.testing.assert_allclose(task_probabilities([1, 3], 1.0), [0.25, 0.75])
    np.testing.assert_allclose(task_probabilities([1, 3], 1e9), [0.5, 0.5], atol=1e-6)
    draws = TaskSampler(sizes, 2.0, seed=0).sample(10_000)
    freq = np.array([draws.count(k) for k in sizes]) / 10_000
    assert np.all(np.abs(freq - p) < 0.02)
    with pytest.raises(ValueError, match="temperature"):
        task_probabilities([1, 2], 0.0)
    with pytest.raises(ValueError, match="sizes"):
        task_probabilities([1, -2])
    with pytest.raises(ValueError, match="sizes"):
        TaskSampler({})
