"""Bad input raises errors that name the argument."""

from __future__ import annotations

import pytest
import torch

import kd_losses as K
from kd_losses import functional as KF

S = torch.randn(2, 3, 5)
T = torch.randn(2, 3, 5)


@pytest.mark.parametrize("name", K.LOSS_NAMES)
def test_shape_and_vocab_mismatch(name: str) -> None:
    with pytest.raises(ValueError, match="vocab mismatch"):
        KF.distill_loss(name, S, torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match="shape mismatch"):
        KF.distill_loss(name, S, torch.randn(2, 4, 5))


@pytest.mark.parametrize("name", K.LOSS_NAMES)
def test_nan_and_inf(name: str) -> None:
    bad = S.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="student_logits"):
        KF.distill_loss(name, bad, T)
    bad2 = T.clone()
    bad2[1, 2, 3] = float("inf")
    with pytest.raises(ValueError, match="teacher_logits"):
        KF.distill_loss(name, S, bad2)


@pytest.mark.parametrize("temp", [0.0, -1.0, float("nan"), float("inf")])
def test_temperature(temp: float) -> None:
    with pytest.raises(ValueError, match="temperature"):
        K.forward_kl(S, T, temperature=temp)
    with pytest.raises(ValueError, match="temperature"):
        K.ForwardKL(temperature=temp)


def test_param_ranges() -> None:
    for v in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="beta"):
            K.js_divergence(S, T, beta=v)
    for v in (1.0, -0.1):
        with pytest.raises(ValueError, match="alpha"):
            K.skew_kl(S, T, alpha=v)
        with pytest.raises(ValueError, match="alpha"):
            K.SkewReverseKL(alpha=v)
        with pytest.raises(ValueError, match="lam"):
            K.bidirectional_discrepancy_loss(S, T, lam=v)
    with pytest.raises(ValueError, match="mu"):
        K.adaptive_kl(S, T, mu=0.0)
    with pytest.raises(TypeError, match="alpha"):
        K.skew_kl(S, T, alpha="0.1")  # type: ignore[arg-type]


def test_empty_mask_and_mask_shape() -> None:
    # an all-masked batch is not an error (a training loop must not crash): the loss is 0
    assert K.forward_kl(S, T, mask=torch.zeros(2, 3, dtype=torch.bool)).item() == 0.0
    assert K.forward_kl(S, T, labels=torch.full((2, 3), -100)).item() == 0.0
    with pytest.raises(ValueError, match="mask"):
        K.forward_kl(S, T, mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="labels"):
        K.forward_kl(S, T, labels=torch.zeros(3, 3, dtype=torch.long))


def test_types_and_options() -> None:
    with pytest.raises(TypeError, match="student_logits"):
        K.forward_kl(S.long(), T)
    with pytest.raises(TypeError, match="teacher_logits"):
        K.forward_kl(S, T.numpy())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reduction"):
        K.forward_kl(S, T, reduction="batchmean")
    with pytest.raises(ValueError, match="chunk_size"):
        K.forward_kl(S, T, chunk_size=0)
    with pytest.raises(ValueError, match="name"):
        K.distill_loss("kl", S, T)
    with pytest.raises(ValueError, match="name"):
        K.make_loss("kl")
    with pytest.raises(ValueError, match="no tokens"):
        K.forward_kl(torch.randn(0, 5), torch.randn(0, 5))
