import numpy as np
import pytest
import torch

from lomap_planner.lomap import LoMAP, local_pca, project_affine
from lomap_planner.neighbors import NeighborIndex


def _plane_samples(b=3, k=12, d=7, r=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    origin = torch.randn(b, 1, d, generator=g)
    axes = torch.linalg.qr(torch.randn(b, d, r, generator=g)).Q  # (b, d, r)
    coef = torch.randn(b, k, r, generator=g) * 3
    return origin + torch.einsum("bdr,bkr->bkd", axes, coef), origin[:, 0], axes


def test_local_pca_recovers_affine_plane_and_projects_exactly():
    x, origin, axes = _plane_samples()
    mean, basis, n = local_pca(x, tau=0.99)
    assert n.tolist() == [2, 2, 2]
    # Same subspace: projectors agree.
    p_true = axes @ axes.transpose(1, 2)
    p_est = basis @ basis.transpose(1, 2)
    np.testing.assert_allclose(p_est.numpy(), p_true.numpy(), atol=1e-4)
    # Closed-form projection of an off-plane point.
    q = torch.randn(3, 7)
    expected = origin + torch.einsum("bij,bj->bi", p_true, q - origin)
    np.testing.assert_allclose(project_affine(q, mean, basis).numpy(), expected.numpy(), atol=1e-4)


def test_projection_is_idempotent_and_residual_orthogonal():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 9, 20, generator=g)
    mean, basis, n = local_pca(x, tau=0.8)
    q = torch.randn(4, 20, generator=g)
    p = project_affine(q, mean, basis)
    np.testing.assert_allclose(project_affine(p, mean, basis).numpy(), p.numpy(), atol=1e-5)
    resid = torch.einsum("bdr,bd->br", basis, q - p)
    assert resid.abs().max() < 1e-4
    # Columns beyond each element's own rank are zero.
    for b in range(4):
        assert torch.all(basis[b, :, n[b] :] == 0)


def test_tau_and_rank_behaviour():
    # Variances 100, 10, 1 along three axes: tau picks 1, 2 or 3 components.
    k = torch.tensor(
        [[10.0, 0, 0], [-10, 0, 0], [0, 3.16227766, 0], [0, -3.16227766, 0], [0, 0, 1], [0, 0, -1]]
    )[None]
    assert local_pca(k, tau=0.85)[2].item() == 1
    assert local_pca(k, tau=0.95)[2].item() == 2
    assert local_pca(k, tau=1.0)[2].item() == 3
    assert local_pca(k, rank=2)[2].item() == 2


def test_batch_rank_gives_every_element_the_largest_rank():
    # element 0 lies on a line, element 1 on a plane: own ranks 1 and 2
    line, _, _ = _plane_samples(b=1, r=1, seed=2)
    plane, _, _ = _plane_samples(b=1, r=2, seed=3)
    x = torch.cat([line, plane])
    assert local_pca(x, tau=0.99)[2].tolist() == [1, 2]
    noisy = x + 1e-3 * torch.randn(x.shape, generator=torch.Generator().manual_seed(4))
    _, basis, n = local_pca(noisy, tau=0.99, batch_rank=True)
    assert n.tolist() == [2, 2] and basis.shape[2] == 2
    # the line's second direction is its largest noise direction, orthonormal to the first,
    # as the released compute_pca keeps it
    np.testing.assert_allclose((basis[0].T @ basis[0]).numpy(), np.eye(2), atol=1e-5)
    # an exact line has no second direction: a zero-variance column is dropped, not invented
    basis_exact = local_pca(x, tau=0.99, batch_rank=True)[1]
    assert torch.all(basis_exact[0, :, 1] == 0) and basis_exact[1, :, 1].norm() > 0.99
    # coincident neighbours keep rank 0 (the projection is the common point)
    same = torch.ones(1, 4, 7)
    assert local_pca(torch.cat([same, x[:, :4]]), batch_rank=True)[2][0] == 0
    with pytest.raises(TypeError, match="batch_rank"):
        local_pca(x, batch_rank=1)


def test_local_pca_bad_input():
    x = torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match="rank"):
        local_pca(x, rank=4)
    with pytest.raises(ValueError, match="tau"):
        local_pca(x, tau=0.0)
    x[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        local_pca(x)
    with pytest.raises(ValueError, match="samples"):
        local_pca(torch.randn(5, 3))


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize("backend", ["torch", "kdtree"])
def test_neighbor_index_matches_brute_force(metric, backend):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(500, 12)).astype(np.float32)
    q = rng.normal(size=(7, 12)).astype(np.float32)
    if metric == "cosine":
        dn = data / np.linalg.norm(data, axis=1, keepdims=True)
        qn = q / np.linalg.norm(q, axis=1, keepdims=True)
        ref = np.argsort(-(qn @ dn.T), axis=1)[:, :5]
    else:
        ref = np.argsort(((q[:, None] - data[None]) ** 2).sum(-1), axis=1)[:, :5]
    index = NeighborIndex(data, metric=metric, backend=backend, block_size=64)
    dist, idx = index.search(q, 5)
    np.testing.assert_array_equal(idx.numpy(), ref)
    assert (dist[:, 1:] >= dist[:, :-1] - 1e-6).all()


def test_neighbor_index_bad_input():
    with pytest.raises(ValueError, match="metric"):
        NeighborIndex(np.zeros((3, 2)), metric="l1")
    with pytest.raises(ValueError, match="data"):
        NeighborIndex(np.array([[np.nan, 1.0]]))
    idx = NeighborIndex(np.ones((3, 2)))
    with pytest.raises(ValueError, match="k"):
        idx.search(np.ones((1, 2)), 4)
    with pytest.raises(ValueError, match="queries"):
        idx.search(np.ones((1, 3)), 1)
    # a zero query once returned arbitrary cosine neighbours
    with pytest.raises(ValueError, match=r"queries: rows \[1\] are zero vectors"):
        idx.search(np.array([[1.0, 0.0], [0.0, 0.0]]), 1)
    with pytest.raises(ValueError, match="data: rows"):
        NeighborIndex(np.array([[1.0, 2.0], [0.0, 0.0]]))
    euclid = NeighborIndex(np.array([[1.0, 2.0], [0.0, 0.0]]), metric="euclidean")
    assert euclid.search(np.zeros((1, 2)), 1)[1].item() == 1


def _windows_on_subspace(n=200, h=4, c=3, r=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    axes = torch.linalg.qr(torch.randn(h * c, r, generator=g)).Q
    w = 0.5 + torch.randn(n, r, generator=g) @ axes.T * 0.3
    return w.reshape(n, h, c), axes


def test_lomap_projection_pulls_onto_data_subspace():
    windows, axes = _windows_on_subspace()
    lm = LoMAP(windows, n_neighbors=20, tau=0.999)
    x0 = windows[:5]
    x = x0 + 0.1 * torch.randn(x0.shape, generator=torch.Generator().manual_seed(3))
    # alpha_bar = 1: neighbours are clean data, so x lands on the data's affine plane.
    y = lm.project(x, x0, alpha_bar=1.0)
    off = (y.reshape(5, -1) - 0.5) - (y.reshape(5, -1) - 0.5) @ axes @ axes.T
    assert off.abs().max() < 1e-4
    assert (y - x0).norm() < (x - x0).norm()
    assert lm.last_ranks.max() <= 2
    # Conditioning callable is applied to the neighbour stack (b * k rows).
    seen = {}

    def cond(z):
        seen["rows"] = z.shape[0]
        return z

    lm.project(x, x0, alpha_bar=0.5, condition=cond)
    assert seen["rows"] == 5 * 20


def test_lomap_search_weights_select_neighbours_by_weighted_features():
    # Two clusters that differ only in channel 0; channel 1 carries a large decoy.
    w = torch.zeros(40, 2, 2)
    w[:20, :, 0], w[20:, :, 0] = 1.0, -1.0
    w[::2, :, 1] = 5.0
    query = torch.zeros(1, 2, 2)
    query[..., 0], query[..., 1] = 1.0, 5.0
    lm = LoMAP(w, n_neighbors=5, metric="euclidean", search_weights=[1.0, 0.0])
    _, idx = lm.index.search((query * lm.search_weights).reshape(1, -1), 5)
    assert (idx < 20).all()
    with pytest.raises(ValueError, match="search_weights"):
        LoMAP(w, n_neighbors=5, search_weights=[1.0])
    with pytest.raises(ValueError, match="search_weights"):
        LoMAP(w, n_neighbors=5, search_weights=[0.0, 0.0])


def test_lomap_active_steps_follow_proj_range():
    lm = LoMAP(torch.rand(30, 4, 2), n_neighbors=5, proj_range=(0.5, 0.8))
    active = [i for i in range(100) if lm.active(i, 100)]
    assert active[0] == 49 and active[-1] == 79


def test_lomap_bad_input():
    w = torch.rand(30, 4, 2)
    with pytest.raises(ValueError, match="rank"):
        LoMAP(w, n_neighbors=10, rank=9)  # 9 > horizon * transition_dim = 8
    with pytest.raises(ValueError, match="rank"):
        LoMAP(torch.rand(30, 8, 2), n_neighbors=5, rank=6)
    with pytest.raises(ValueError, match="n_neighbors"):
        LoMAP(w, n_neighbors=31)
    with pytest.raises(ValueError, match="proj_range"):
        LoMAP(w, proj_range=(0.8, 0.5))
    with pytest.raises(ValueError, match="tau"):
        LoMAP(w, tau=1.5)
    bad = w.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="windows"):
        LoMAP(bad)
    lm = LoMAP(w, n_neighbors=5)
    with pytest.raises(ValueError, match="x"):
        lm.project(torch.rand(2, 3, 2), torch.rand(2, 3, 2), 0.5)
    with pytest.raises(ValueError, match="alpha_bar"):
        lm.project(torch.rand(2, 4, 2), torch.rand(2, 4, 2), 0.0)


def test_lomap_does_not_mutate_inputs():
    windows, _ = _windows_on_subspace()
    before = windows.clone()
    lm = LoMAP(windows, n_neighbors=6)
    x, x0 = torch.rand(3, 4, 3), torch.rand(3, 4, 3)
    xc, x0c = x.clone(), x0.clone()
    lm.project(x, x0, alpha_bar=0.7)
    assert torch.equal(x, xc) and torch.equal(x0, x0c) and torch.equal(windows, before)
