"""Official per-layout LoMAP settings, rank cap, identical neighbours, approximate search."""

import numpy as np
import pytest
import torch

from lomap_planner import LoMAP
from lomap_planner.lomap import OFFICIAL_PROJ_RANGE, local_pca, project_affine
from lomap_planner.neighbors import NeighborIndex


def test_rank_is_capped_at_k_minus_one():
    torch.manual_seed(0)
    pts = torch.randn(3, 4, 10)  # k = 4 points in 10-D span 3 directions after centring
    _, basis, n = local_pca(pts, tau=1.0)
    assert (n == 3).all() and basis.shape[2] == 3
    with pytest.raises(ValueError, match="rank"):
        local_pca(pts, rank=4)
    # the projection of each neighbour onto its own neighbourhood's subspace is itself
    mean, basis, _ = local_pca(pts, tau=1.0)
    for j in range(4):
        torch.testing.assert_close(project_affine(pts[:, j], mean, basis), pts[:, j])


def test_identical_neighbours_project_to_the_point():
    p = torch.randn(2, 1, 6)
    same = p.expand(2, 5, 6).clone()
    mean, basis, n = local_pca(same)
    assert (n == 0).all()
    x = torch.randn(2, 6)
    torch.testing.assert_close(project_affine(x, mean, basis), p[:, 0])


def test_for_layout_uses_the_official_settings():
    w = np.random.default_rng(0).normal(size=(50, 8, 6)).astype(np.float32)
    lm = LoMAP.for_layout("medium", w, action_dim=2)
    assert lm.proj_range == OFFICIAL_PROJ_RANGE["medium"] == (0.3, 0.4)
    assert lm.n_neighbors == 10 and lm.tau == 0.99
    dw = lm._weights.numpy()
    assert dw[:, :2].sum() == 0  # actions weighted 0
    assert (dw[[0, -1], 2:4] == 100).all() and (dw[[0, -1], 4:] == 1).all()  # x, y only
    assert (dw[1:-1, 2:] == 1).all()
    assert LoMAP.for_layout("umaze", w).proj_range == (0.3, 0.8)
    assert LoMAP.for_layout("large", w).proj_range == (0.5, 0.8)
    with pytest.raises(ValueError, match="layout"):
        LoMAP.for_layout("huge", w)
    with pytest.raises(ValueError, match="time_weights"):
        LoMAP(w, time_weights=np.ones(3))
    # the start/goal weights steer the search: a window matching x's endpoints wins
    q = w[7].copy()
    q[1:-1] += 3.0  # middle far off, endpoints exact
    _, idx = lm.index.search(torch.from_numpy((q * lm._weights.numpy()).reshape(1, -1)), 1)
    assert int(idx[0, 0]) == 7


def test_faiss_backend_matches_exact_search():
    pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(50, 16))
    x = (centres[rng.integers(0, 50, 5000)] + 0.2 * rng.normal(size=(5000, 16))).astype(np.float32)
    q = x[:20] + 0.01 * rng.normal(size=(20, 16)).astype(np.float32)
    exact = NeighborIndex(x, backend="torch")
    approx = NeighborIndex(x, backend="faiss", nprobe=8)
    de, ie = exact.search(q, 10)
    da, ia = approx.search(q, 10)
    recall = np.mean(
        [len(set(a) & set(b)) / 10 for a, b in zip(ia.tolist(), ie.tolist(), strict=True)]
    )
    assert recall >= 0.95
    torch.testing.assert_close(da[:, 0], de[:, 0], atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="nprobe"):
        NeighborIndex(x, backend="faiss", nprobe=0)
    assert NeighborIndex(x, backend="auto").backend == "torch"  # small n: exact
