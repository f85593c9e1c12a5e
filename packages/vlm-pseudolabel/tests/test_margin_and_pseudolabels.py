import numpy as np
import pytest
import torch
import torch.nn.functional as F

from vlm_pseudolabel import (
    grow_main_samples,
    growth_k,
    margin_cross_entropy,
    margin_matrix,
    topk_pseudolabels,
)


def test_margin_ce_zero_margin_is_cross_entropy():
    g = torch.Generator().manual_seed(0)
    z, y = torch.randn(7, 5, generator=g), torch.randint(0, 5, (7,), generator=g)
    torch.testing.assert_close(margin_cross_entropy(z, y, torch.zeros(5, 5)), F.cross_entropy(z, y))


def test_margin_ce_matches_the_formula_and_uses_the_label_row():
    g = torch.Generator().manual_seed(1)
    z, y = torch.randn(6, 4, generator=g), torch.randint(0, 4, (6,), generator=g)
    m = torch.rand(4, 4, generator=g) * 3
    ref = []
    for i in range(6):
        num = torch.exp(z[i, y[i]])
        den = num + sum(torch.exp(z[i, c] + m[y[i], c]) for c in range(4) if c != y[i])
        ref.append(-torch.log(num / den))
    torch.testing.assert_close(margin_cross_entropy(z, y, m), torch.stack(ref).mean())
    # the column of the label would give a different value
    assert not torch.allclose(margin_cross_entropy(z, y, m.T), torch.stack(ref).mean())
    with pytest.raises(ValueError, match="margin"):
        margin_cross_entropy(z, y, torch.zeros(3, 3))


def _protos(c=3, d=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(c, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_margin_matrix_properties():
    vp, tf = _protos(), _protos(seed=1)
    assert np.all(margin_matrix(np.full(3, 7.0), vp, tf) == 0)  # equal counts: no margin
    assert np.all(margin_matrix(np.zeros(3), vp, tf) == 0)
    m = margin_matrix(np.array([10.0, 5.0, 1.0]), vp, tf)
    assert np.all(np.diag(m) == 0) and np.all(m[0] == 0)  # r = 1: zero row
    # same similarities: the rarer class gets the larger row
    same = _protos(3, 4, 2)
    m2 = margin_matrix(np.array([10.0, 5.0, 1.0]), same, same)
    sim = same @ same.T
    r = np.array([1.0, 0.5, 0.1])
    d = (1 - r) / (1 + r)
    lo = sim.min(1, keepdims=True)
    s_res = lo + (sim - lo) / (sim.max(1, keepdims=True) - lo) * (1 - lo)  # a no-op here
    np.testing.assert_allclose(s_res, sim, atol=1e-12)
    ref = 12 * 0.9 * d[:, None] * sim
    np.fill_diagonal(ref, 0)
    np.testing.assert_allclose(m2, ref, rtol=1e-5)
    lin = margin_matrix(np.array([10.0, 5.0, 1.0]), same, same, delta="linear")
    ref_lin = 12 * 0.9 * (1 - r)[:, None] * sim
    np.fill_diagonal(ref_lin, 0)
    np.testing.assert_allclose(lin, ref_lin, rtol=1e-5)
    # S is the elementwise max of the visual and the text similarities
    vp2, tf2 = _protos(3, 4, 3), _protos(3, 4, 4)
    m3 = margin_matrix(np.array([10.0, 5.0, 1.0]), vp2, tf2)
    s = np.maximum(vp2 @ vp2.T, tf2 @ tf2.T)
    np.testing.assert_allclose(m3[2, 0] / m3[2, 1], s[2, 0] / s[2, 1], rtol=1e-5)
    seen = margin_matrix(np.array([10.0, 5.0, 1.0]), vp, tf, seen_mask=np.array([0, 0, 1], bool))
    assert np.all(seen[2] == 0)
    with pytest.raises(ValueError, match="delta"):
        margin_matrix(np.ones(3), vp, tf, delta="exp")
    with pytest.raises(ValueError, match="counts"):
        margin_matrix(np.array([1.0, np.nan, 2.0]), vp, tf)


def test_topk_fill_modes():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4) * 0.3, size=60)
    fpl = topk_pseudolabels(p, 5, "fpl")
    all_idx = np.concatenate(list(fpl.values()))
    assert len(all_idx) == len(set(all_idx.tolist()))
    assert all(len(v) <= 5 for v in fpl.values())
    for c, v in fpl.items():  # predicted class only, most confident first
        assert np.all(p[v].argmax(1) == c) and np.all(np.diff(p[v, c]) <= 0)
    # classes 1 and 2 are never predicted: the images class 0 leaves out fill both of their
    # lists, so one image can sit in two lists (the reference leaderboard's behaviour)
    q = np.array([[0.6, 0.25, 0.15], [0.7, 0.2, 0.1], [0.8, 0.1, 0.1], [0.5, 0.3, 0.2]])
    ref = topk_pseudolabels(q, 2, "reference")
    assert ref[0].tolist() == [2, 1]
    assert ref[1].tolist() == [3, 0] and ref[2].tolist() == [3, 0]
    assert topk_pseudolabels(q, 2, "fpl")[1].size == 0
    with pytest.raises(ValueError, match="fill"):
        topk_pseudolabels(p, 5, "random")


def test_growth_schedule_and_update():
    assert growth_k(0, 50, 16, 1000, 10) == 16
    assert growth_k(35, 50, 16, 1000, 10) == min(1000, int(0.8 * 1000 / 10)) == 80
    assert growth_k(49, 50, 16, 1000, 10) == 80
    main = {0: np.array([1, 2]), 1: np.array([3])}
    new = grow_main_samples(
        main,
        np.array([0, 0, 1, 1, 0]),
        np.array([0.9, 0.95, 0.99, 0.8, 0.7]),
        np.array([10, 11, 12, 13, 2]),
        k=3,
    )
    assert list(new[0]) == [11, 10, 1] and list(new[1]) == [12, 13, 3]
    for v in new.values():
        assert len(v) == len(set(v.tolist())) <= 3
