import numpy as np
import pytest
import torch

from brain_gcl import CIAGCL, FCSVM, GCN, GIN, BrainNetCNN, CIGALike, FCLogReg, GraphCL, demo
from brain_gcl.augment import choose_partners, mix_spurious
from brain_gcl.data import build_graphs, make_multisite_connectomes, site_splits
from brain_gcl.extractor import top_ratio_mask
from brain_gcl.losses import env_risk_penalty, supcon
from brain_gcl.metrics import brain_report, edge_recovery


@pytest.fixture(scope="module")
def small():
    d = make_multisite_connectomes(n_rois=16, n_sites=3, subjects_per_site=24, inv_size=4,
                                   sp_size=4, site_size=3, rho=(0.9, 0.9, 0.1), seed=1)  # fmt: skip
    return d, build_graphs(d.fc, density=0.3, node_features="profile")


def _rand_graphs(B=6, n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    u = torch.triu(torch.rand(B, n, n, generator=g), 1)
    A = torch.where(u > 0.5, u, 0.0)
    return A + A.transpose(1, 2)


def test_top_ratio_mask_counts_and_partition():
    A = _rand_graphs()
    scores = torch.rand(A.shape)
    scores = scores + scores.transpose(1, 2)
    E = A > 0
    for r in (0.1, 0.3, 1.0):
        M = top_ratio_mask(scores, E, r)
        n_e = E.triu(1).sum(dim=(1, 2))
        assert torch.equal(M.triu(1).sum(dim=(1, 2)), torch.ceil(r * n_e.float()).long())
        assert not (M & ~E).any() and torch.equal(M, M.transpose(1, 2))
        S = E & ~M
        assert not (M & S).any() and torch.equal(M | S, E)


def test_straight_through_gradient_reaches_the_scorer(small):
    _, g = small
    m = CIAGCL(epochs=1, hidden=16, random_state=0)
    net = m._build(g.n_rois, g.X.shape[2])
    X, A = torch.as_tensor(g.X[:6]), torch.as_tensor(g.A[:6])
    st = m._masks(net, X, A)[2]
    loss = net.head(net.encoder(X, A * st)).sum()
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in net.scorer.parameters())


def test_augmentation_identities():
    A = _rand_graphs(B=8)
    E = A > 0
    M = top_ratio_mask(torch.rand(A.shape) + torch.rand(A.shape).transpose(1, 2), E, 0.3)
    A_inv, A_sp = A * M, A * ~M
    y = torch.tensor([0, 0, 1, 1, 0, 1, 0, 1])
    sites = torch.tensor([0, 1, 0, 1, 0, 1, 1, 0])
    gen = torch.Generator().manual_seed(0)
    part = choose_partners(y, sites, gen)
    assert torch.equal(y[part], y) and (part != torch.arange(8)).all()
    assert (sites[part] != sites).all()  # another site exists for everyone here
    full = mix_spurious(A_inv, A_sp, M, part, 1.0, 0.0, gen)
    torch.testing.assert_close(full, A)  # p = 1, q = 0: the original graph
    inv_only = mix_spurious(A_inv, A_sp, M, part, 0.0, 0.0, gen)
    torch.testing.assert_close(inv_only, A_inv)  # p = q = 0: the invariant subgraph
    pos = mix_spurious(A_inv, A_sp, M, part, 0.5, 0.5, gen)
    assert torch.equal(pos[M], A[M]) and torch.equal(pos, pos.transpose(1, 2))
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    torch.testing.assert_close(mix_spurious(A_inv, A_sp, M, part, 0.5, 0.5, g1),
                               mix_spurious(A_inv, A_sp, M, part, 0.5, 0.5, g2))  # fmt: skip
    lone = choose_partners(torch.tensor([0, 1, 1]), None, gen)
    assert lone[0] == 0  # alone in its class: no partner


def test_supcon_matches_a_naive_loop_and_variance_penalty():
    torch.manual_seed(0)
    z = torch.randn(7, 5)
    y = torch.tensor([0, 1, 0, 1, 1, 0, 2])
    zn = torch.nn.functional.normalize(z, dim=1)
    tot, cnt = 0.0, 0
    for a in range(7):
        pos = [p for p in range(7) if p != a and y[p] == y[a]]
        if not pos:
            continue
        den = sum(torch.exp(zn[a] @ zn[k] / 0.5) for k in range(7) if k != a)
        tot += -sum(torch.log(torch.exp(zn[a] @ zn[p] / 0.5) / den) for p in pos) / len(pos)
        cnt += 1
    torch.testing.assert_close(supcon(z, y, 0.5), tot / cnt)
    losses = torch.tensor([1.0, 1.0, 2.0, 2.0])
    total, _ = env_risk_penalty(losses, torch.tensor([0, 1, 0, 1]), 3.0)
    torch.testing.assert_close(total, torch.tensor(1.5))  # equal risks: no penalty
    total2, _ = env_risk_penalty(losses, torch.tensor([0, 0, 1, 1]), 1.0)
    torch.testing.assert_close(total2, torch.tensor(1.5 + 0.25))


def test_brain_report_vs_sklearn():
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    y = np.array([0, 0, 1, 1, 1, 0])
    p = np.array([0.2, 0.6, 0.7, 0.4, 0.9, 0.1])
    r = brain_report(y, p)
    assert r["bacc"] == pytest.approx(balanced_accuracy_score(y, p >= 0.5))
    assert r["auc"] == pytest.approx(roc_auc_score(y, p))
    keys = ["accuracy", "precision", "recall", "f1", "bacc", "auc"]
    assert r["avg"] == pytest.approx(np.mean([r[k] for k in keys]))
    with pytest.raises(ValueError, match="proba"):
        brain_report(y, p[:3])
    truth = np.zeros((4, 4), bool)
    truth[0, 1] = truth[1, 0] = True
    S = np.zeros((1, 4, 4)) + 0.1
    S[0, 0, 1] = S[0, 1, 0] = 0.9
    assert edge_recovery(S, truth)["auroc"] == 1.0


@pytest.mark.parametrize("cls", [GIN, GCN, GraphCL, CIGALike, CIAGCL, BrainNetCNN])
def test_models_fit_predict_deterministic(small, cls):
    d, g = small
    tr, te = site_splits(d.site, 2)
    X0 = g.X.copy()
    m = cls(epochs=2, hidden=16, random_state=0).fit(g[tr], d.y[tr], sites=d.site[tr])
    np.testing.assert_array_equal(g.X, X0)
    p = m.predict_proba(g[te])
    assert p.shape == (len(te), 2) and np.allclose(p.sum(1), 1) and np.isfinite(p).all()
    assert len(m.history_) == 2 and all(np.isfinite(v) for v in m.history_[-1].values())
    p2 = (
        cls(epochs=2, hidden=16, random_state=0)
        .fit(g[tr], d.y[tr], sites=d.site[tr])
        .predict_proba(g[te])
    )
    np.testing.assert_allclose(p, p2, atol=1e-6)
    if cls in (CIAGCL, CIGALike):
        M = m.invariant_mask(g[te])
        E = g[te].A > 0
        n_e = np.triu(E, 1).sum(axis=(1, 2))
        assert (np.triu(M, 1).sum(axis=(1, 2)) == np.ceil(0.3 * n_e)).all()
        S = m.edge_scores(g[te])
        assert S.shape == E.shape and (S[~E] == 0).all()
    assert m.edge_saliency(g[te][:3]).shape == (3, 16, 16)


def test_ciagcl_without_sites_and_ablation(small):
    d, g = small
    m = CIAGCL(epochs=1, hidden=16, mixing="random", partner="any").fit(g, d.y)
    assert {"cau", "inv", "con"} <= set(m.history_[0])


def test_edge_baselines_learn_in_distribution():
    d = make_multisite_connectomes(n_rois=16, n_sites=3, subjects_per_site=24, inv_size=4,
                                   sp_size=4, site_size=3, rho=(0.9, 0.9, 0.9), seed=0)  # fmt: skip
    g = build_graphs(d.fc, density=0.3, node_features="profile")
    tr, te = site_splits(d.site, 2)
    assert FCLogReg().fit(g[tr], d.y[tr]).score(g[te], d.y[te]) > 0.6
    p = FCSVM().fit(g[tr], d.y[tr]).predict_proba(g[te])
    assert p.shape == (len(te), 2)
    assert FCLogReg().fit(g[tr], d.y[tr]).coef_matrix_.shape == (16, 16)


def test_bad_inputs(small):
    d, g = small
    with pytest.raises(TypeError, match="BrainGraphs"):
        GIN().fit(g.A, d.y)
    with pytest.raises(ValueError, match="binary"):
        GIN(epochs=1).fit(g, d.y + 1)
    with pytest.raises(ValueError, match="single class"):
        GIN(epochs=1).fit(g, np.zeros(len(g), int))
    with pytest.raises(ValueError, match="entries"):
        GIN(epochs=1).fit(g, d.y[:-1])
    with pytest.raises(ValueError, match="sites"):
        GIN(epochs=1).fit(g, d.y, sites=d.site[:-1])
    with pytest.raises(ValueError, match="edge_ratio"):
        CIAGCL(edge_ratio=0.0).fit(g, d.y)
    with pytest.raises(ValueError, match="p_keep"):
        CIAGCL(p_keep=1.5).fit(g, d.y)
    with pytest.raises(ValueError, match="partner"):
        CIAGCL(partner="nearest").fit(g, d.y)
    with pytest.raises(ValueError, match="epochs"):
        GIN(epochs=0).fit(g, d.y)
    with pytest.raises(RuntimeError, match="not fitted"):
        GIN().predict(g)
    m = GIN(epochs=1, hidden=8).fit(g, d.y)
    with pytest.raises(ValueError, match="ROIs"):
        m.predict(build_graphs(d.fc[:3, :10, :10], node_features="profile"))
    with pytest.raises(ValueError, match="unknown parameter"):
        m.set_params(depth=2)
    assert m.get_params()["hidden"] == 8


def test_demo_and_plot(tmp_path, small):
    assert "CIA-GCL" in demo(0)
    pytest.importorskip("matplotlib")
    from brain_gcl.plotting import plot_edge_scores

    d, g = small
    plot_edge_scores(g.A[:3], d.truth["invariant_edges"], path=tmp_path / "e.png")
    assert (tmp_path / "e.png").exists()
