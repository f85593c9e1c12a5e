import torch
import torch.nn.functional as F

from interaction_moe import (
    interaction_loss,
    redundancy_loss,
    regression_losses,
    synergy_loss,
    uniqueness_loss,
)


def _naive_triplet(a, p, n, margin):
    out = []
    for i in range(len(a)):
        dp = torch.sqrt(((a[i] - p[i] + 1e-7) ** 2).sum())
        dn = torch.sqrt(((a[i] - n[i] + 1e-7) ** 2).sum())
        out.append(torch.clamp(dp - dn + margin, min=0))
    return torch.stack(out).mean()


def test_uniqueness_pairing_and_reference():
    g = torch.Generator().manual_seed(0)
    a, p0, p1 = (torch.randn(6, 3, generator=g) for _ in range(3))
    # M = 2, m = 0: anchor clean, positive = modality 1 removed, negative = modality 0 removed
    got = uniqueness_loss(a, [p0, p1], 0, margin=1.0)
    assert torch.allclose(got, _naive_triplet(a, p1, p0, 1.0), atol=1e-6)
    assert torch.allclose(got, torch.nn.TripletMarginLoss(margin=1.0, p=2, eps=1e-7)(a, p1, p0))
    swapped = _naive_triplet(a, p0, p1, 1.0)
    assert not torch.allclose(got, swapped)
    # zero when d(a, p) + margin <= d(a, n)
    assert float(uniqueness_loss(a, [a + 10.0, a.clone()], 0, margin=1.0)) == 0.0


def test_synergy_redundancy_limits_and_zero_vectors():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(5, 4, generator=g)
    assert torch.allclose(synergy_loss(a, [a.clone(), a.clone()]), torch.tensor(1.0))
    assert torch.allclose(redundancy_loss(a, [a.clone(), a.clone()]), torch.tensor(0.0), atol=1e-6)
    b = torch.randn(5, 4, generator=g)
    assert torch.allclose(synergy_loss(a, [b]), F.cosine_similarity(a, b).mean(), atol=1e-6)
    z = torch.zeros(5, 4)
    assert torch.isfinite(synergy_loss(z, [z])) and torch.isfinite(redundancy_loss(z, [a]))


def test_interaction_loss_total_and_regression_modes():
    g = torch.Generator().manual_seed(2)
    clean = [torch.randn(4, 2, generator=g) for _ in range(4)]
    pert = [[torch.randn(4, 2, generator=g) for _ in range(2)] for _ in range(4)]
    d = interaction_loss(clean, pert)
    assert set(d) == {"uni_1", "uni_2", "syn", "red", "total"}
    assert torch.allclose(d["total"], (d["uni_1"] + d["uni_2"] + d["syn"] + d["red"]) / 4)
    c1 = [torch.randn(4, 1, generator=g) for _ in range(4)]
    p1 = [[torch.randn(4, 1, generator=g) for _ in range(2)] for _ in range(4)]
    ref = regression_losses(c1, p1, "reference")
    mse = F.mse_loss
    assert torch.allclose(ref[0], mse(c1[0], p1[0][1]) - mse(c1[0], p1[0][0]))
    assert torch.allclose(
        ref[2], (mse(c1[2], p1[2][0]) + mse(c1[2], p1[2][1])) / 2
    )  # same sign as R
    paper = regression_losses(c1, p1, "paper")
    assert torch.allclose(
        paper[2],
        (
            torch.exp(-((c1[2] - p1[2][0]) ** 2)).mean()
            + torch.exp(-((c1[2] - p1[2][1]) ** 2)).mean()
        )
        / 2,
    )
    assert all(torch.isfinite(v) for v in paper)
