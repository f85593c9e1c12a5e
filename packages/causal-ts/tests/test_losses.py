import math

import numpy as np
import pytest
import torch

from causal_ts.losses import alpha_schedule, soc_loss


def naive_soc(z: torch.Tensor, alpha: float, tau: float) -> float:
    z = torch.nn.functional.normalize(z.double(), dim=1)
    n = z.shape[0]
    p = n // 2
    s = (z @ z.T).numpy()
    total, count = 0.0, 0
    for i in range(p):
        negs = [p + j for j in range(p) if alpha <= -1 or s[i, j] >= alpha or j == i]
        for j in range(p):
            if j == i or not (alpha <= -1 or s[i, j] >= alpha):
                continue
            num = math.exp(s[i, j] / tau)
            den = num + sum(math.exp(s[i, k] / tau) for k in negs)
            total += -math.log(num / den)
            count += 1
    return total / count if count else 0.0


@pytest.mark.parametrize("alpha", [-1.0, 0.0, 0.2, 0.5])
@pytest.mark.parametrize("tau", [0.1, 0.5])
def test_matches_naive_double_loop(alpha: float, tau: float) -> None:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(6, 4, generator=g)
    z = torch.cat([base, base + 0.8 * torch.randn(6, 4, generator=g)])
    loss, stats = soc_loss(z.double(), alpha, tau)
    assert loss.item() == pytest.approx(naive_soc(z, alpha, tau), rel=1e-9, abs=1e-12)
    assert 0 <= stats.unfiltered_ratio <= 1


def test_alpha_minus_one_keeps_every_pair() -> None:
    z = torch.randn(8, 3, generator=torch.Generator().manual_seed(1))
    _, stats = soc_loss(z, -1.0, 0.1)
    assert stats.unfiltered_ratio == 1.0 and stats.n_pairs == 4 * 3


def test_no_kept_pair_gives_zero_loss_with_graph() -> None:
    # orthogonal positives: every s_ij = 0 < alpha
    z = torch.eye(8, requires_grad=True)
    loss, stats = soc_loss(z, 0.9, 0.1)
    assert stats.n_pairs == 0 and loss.item() == 0.0 and not torch.isnan(loss)
    loss.backward()
    assert z.grad is not None and torch.all(z.grad == 0)


def test_permutation_invariance_within_positives() -> None:
    g = torch.Generator().manual_seed(2)
    z = torch.randn(10, 5, generator=g, dtype=torch.float64)
    perm = torch.randperm(5, generator=g)
    full = torch.cat([perm, perm + 5])  # permute positives and their copies together
    a, _ = soc_loss(z, 0.1, 0.2)
    b, _ = soc_loss(z[full], 0.1, 0.2)
    assert a.item() == pytest.approx(b.item(), rel=1e-12)


def test_loss_decreases_when_negatives_move_away() -> None:
    pos = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.95, 0.05]])
    near = soc_loss(torch.cat([pos, pos + 0.01]), 0.5, 0.1)[0]
    far = soc_loss(torch.cat([pos, -pos]), 0.5, 0.1)[0]
    assert far < near


def test_bad_inputs() -> None:
    with pytest.raises(TypeError, match="z"):
        soc_loss(np.zeros((4, 2)), 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="z"):
        soc_loss(torch.zeros(5, 2), 0.5)
    with pytest.raises(ValueError, match="alpha"):
        soc_loss(torch.randn(4, 2), 1.5)
    with pytest.raises(ValueError, match="temperature"):
        soc_loss(torch.randn(4, 2), 0.5, 0.0)


def test_alpha_schedule() -> None:
    assert alpha_schedule(0.7, 3, 10) == 0.7
    assert alpha_schedule((0.5, 0.9), 0, 5) == 0.5
    assert alpha_schedule((0.5, 0.9), 4, 5) == pytest.approx(0.9)
    assert alpha_schedule((0.5, 0.9), 2, 5) == pytest.approx(0.7)
    assert alpha_schedule((0.5, 0.9), 0, 1) == 0.5
