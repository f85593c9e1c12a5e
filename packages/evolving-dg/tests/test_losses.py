import numpy as np
import pytest
import torch

from evolving_dg import losses as L


def test_gaussian_kl_matches_torch_and_closed_form():
    g = torch.Generator().manual_seed(0)
    mu, s = torch.randn(4, 3, 5, generator=g), torch.randn(4, 3, 5, generator=g)
    mp, sp = torch.randn(3, 5, generator=g), torch.randn(3, 5, generator=g)
    ref = torch.distributions.kl_divergence(
        torch.distributions.Normal(mu, (0.5 * s).exp()),
        torch.distributions.Normal(mp, (0.5 * sp).exp()),
    ).sum(-1)
    assert torch.allclose(L.gaussian_kl(mu, s, mp, sp, "consistent"), ref, atol=1e-5)
    closed = 0.5 * (mu**2 + s.exp() - s - 1).sum(-1)  # the reference's static KL
    assert torch.allclose(L.gaussian_kl(mu, s, param="ref"), closed, atol=1e-6)


def test_categorical_kl_brute_force():
    q, p = torch.randn(6, 4), torch.randn(6, 4)
    pq, pp = q.softmax(-1).numpy(), p.softmax(-1).numpy()
    brute = [sum(pq[i, k] * np.log(pq[i, k] / pp[i, k]) for k in range(4)) for i in range(6)]
    assert np.allclose(L.categorical_kl(q, p).numpy(), brute, atol=1e-6)


def test_mws_mutual_information():
    torch.manual_seed(0)
    B, d = 512, 2
    mu_a, mu_b = torch.randn(B, d), torch.randn(B, d)
    s = torch.zeros(B, d)  # posterior scale e^0 = 1 ("ref")
    z_a, z_b = mu_a + torch.randn(B, d), mu_b + torch.randn(B, d)
    indep = L.mws_mutual_information(z_a, mu_a, s, z_b, mu_b, s)
    dep = L.mws_mutual_information(z_a, mu_a, s, z_a, mu_a, s)
    # z_b = z_a: I = H(z) ~ 2 * 0.5 * log(2) nats for N(0, 2 I_2) vs N(0, I_2) noise
    assert float(dep) == pytest.approx(np.log(2), abs=0.35) and abs(float(indep)) < 0.05
    swap = L.mws_mutual_information(z_b, mu_b, s, z_a, mu_a, s)
    assert torch.allclose(indep, swap, atol=1e-5)  # symmetric
    grouped = L.mws_mutual_information(*(t.view(4, 128, d) for t in (z_a, mu_a, s, z_b, mu_b, s)))
    assert grouped.shape == (4,)


def _naive_contrast(a, ya, c, yc, tau, excl):
    a, c = a.numpy().astype(np.float64), c.numpy().astype(np.float64)
    out = []
    for i in range(len(a)):
        P = [j for j in range(len(c)) if yc[j] == ya[i] and not (excl and j == i)]
        N = [j for j in range(len(c)) if yc[j] != ya[i]]
        if not P:
            out.append(0.0)
            continue
        li = a @ c.T / tau
        tot = 0.0
        for j in P:
            tot += li[i, j] - np.log(np.exp(li[i, j]) + sum(np.exp(li[i, n]) for n in N))
        out.append(-tot / len(P))
    return np.mean(out)


@pytest.mark.parametrize("excl", [True, False])
def test_supervised_contrastive_vs_double_loop(excl):
    g = torch.Generator().manual_seed(1)
    a, c = torch.randn(7, 3, generator=g), torch.randn(7, 3, generator=g)
    ya = torch.tensor([0, 0, 1, 1, 2, 2, 3])  # class 3 has no positive partner when excluded
    yc = torch.tensor([0, 1, 1, 0, 2, 0, 3])
    got = float(L.supervised_contrastive(a, ya, c, yc, 0.5, excl))
    assert got == pytest.approx(_naive_contrast(a, ya, c, yc, 0.5, excl), rel=1e-5)
    # batched over groups = per-group results
    both = L.supervised_contrastive(torch.stack([a, c]), torch.stack([ya, yc]),
                                    torch.stack([c, a]), torch.stack([yc, ya]), 0.5, excl)  # fmt: skip
    assert float(both[0]) == pytest.approx(got, rel=1e-6)
    assert float(both[1]) == pytest.approx(_naive_contrast(c, yc, a, ya, 0.5, excl), rel=1e-5)


def test_contrastive_permutation_invariance_and_no_nan():
    g = torch.Generator().manual_seed(2)
    a, c = torch.randn(8, 4, generator=g), torch.randn(8, 4, generator=g)
    y = torch.tensor([0, 1, 0, 1, 0, 1, 0, 1])
    perm = torch.randperm(8, generator=g)
    base = L.supervised_contrastive(a, y, c, y, 0.07, exclude_same_index=False)
    permuted = L.supervised_contrastive(a[perm], y[perm], c[perm], y[perm], 0.07, False)
    assert torch.allclose(base, permuted, atol=1e-5)
    lonely = L.supervised_contrastive(a[:2], torch.tensor([0, 1]), c[:2], torch.tensor([0, 1]))
    assert float(lonely) == 0.0  # no anchor has a positive once j = i is excluded
    with pytest.raises(ValueError, match="tau"):
        L.supervised_contrastive(a, y, c, y, tau=0)


def test_relaxed_topk_mask_limits_and_gradient():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(50, 10, generator=g, requires_grad=True)
    m = L.relaxed_topk_mask(scores, 6, tau=0.5, generator=g)
    assert m.shape == (50, 10) and float(m.detach().min()) >= 0 and float(m.detach().max()) <= 1
    hard = L.relaxed_topk_mask(scores, 6, tau=1e-4, generator=g)
    assert torch.all((hard >= 0.5).sum(-1) == 6)
    m.sum().backward()
    assert scores.grad is not None and scores.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="k"):
        L.relaxed_topk_mask(scores, 11)
    with pytest.raises(ValueError, match="param"):
        L.sample_gaussian(scores, scores, "bad")


def test_gaussian_log_density_matches_torch():
    mu, s, z = torch.randn(5, 3), torch.randn(5, 3), torch.randn(5, 3)
    for param, scale in (("ref", s.exp()), ("consistent", (0.5 * s).exp())):
        ref = torch.distributions.Normal(mu, scale).log_prob(z)
        assert torch.allclose(L.gaussian_log_density(z, mu, s, param), ref, atol=1e-5)


def test_contrastive_eps_is_the_floored_denominator():
    """``eps > 0``: log(e^{l_ij - m_i} + sum_n e^{l_in - m_i} + eps), a double loop; eps = 0 is
    the default formula, and a tiny eps only moves far-off pairs."""
    g = torch.Generator().manual_seed(3)
    a, c = (
        torch.randn(6, 4, generator=g, dtype=torch.float64),
        torch.randn(6, 4, generator=g, dtype=torch.float64),
    )
    ya, yc = torch.tensor([0, 1, 0, 1, 1, 0]), torch.tensor([1, 1, 0, 0, 1, 0])
    for eps in (1e-6, 0.5):
        lg = (a @ c.T / 0.07).tolist()
        per = []
        for i in range(6):
            m = max(lg[i])
            neg = sum(np.exp(lg[i][n] - m) for n in range(6) if yc[n] != ya[i])
            pos = [j for j in range(6) if yc[j] == ya[i] and j != i]
            terms = [lg[i][j] - m - np.log(np.exp(lg[i][j] - m) + neg + eps) for j in pos]
            per.append(-np.mean(terms) if pos else 0.0)
        got = L.supervised_contrastive(a, ya, c, yc, 0.07, True, eps)
        assert abs(got.item() - np.mean(per)) < 1e-12
    assert torch.equal(L.supervised_contrastive(a, ya, c, yc, 0.07, True, 0.0),
                       L.supervised_contrastive(a, ya, c, yc, 0.07, True))  # fmt: skip
    with pytest.raises(ValueError, match="eps"):
        L.supervised_contrastive(a, ya, c, yc, 0.07, True, -1.0)


def test_lstm_unroll_detached_state_keeps_the_forward():
    from evolving_dg.networks import lstm_unroll

    torch.manual_seed(0)
    cell, head = torch.nn.LSTMCell(4, 6), torch.nn.Linear(6, 4)
    full = lstm_unroll(cell, head, 5, 4)
    cut = lstm_unroll(cell, head, 5, 4, state_grad=False)
    assert torch.allclose(full, cut, atol=0, rtol=0)
    g_full = torch.autograd.grad(full[-1].sum(), cell.weight_hh)[0]
    g_cut = torch.autograd.grad(cut[-1].sum(), cell.weight_hh)[0]
    assert not torch.allclose(g_full, g_cut)
