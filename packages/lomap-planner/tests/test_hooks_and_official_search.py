"""The projector hook in a plain DDPM loop, and the official neighbour search reproduced."""

import numpy as np
import pytest
import torch

from lomap_planner import LoMAP, LoMAPProjector


def _lines(n, horizon=8, seed=0):
    """Windows on a 2-parameter manifold: x(t) = a + b t in each of 2 channels."""
    rng = np.random.default_rng(seed)
    t = np.linspace(-1, 1, horizon)[None, :, None]
    a, b = rng.uniform(-1, 1, (n, 1, 2)), rng.uniform(-1, 1, (n, 1, 2))
    return (a + b * t).astype(np.float32)


def _off_manifold(x):
    """Distance of each sample from its own least-squares line fit (0 on the manifold)."""
    t = torch.linspace(-1, 1, x.shape[1])
    A = torch.stack([torch.ones_like(t), t], 1)  # (H, 2)
    P = A @ torch.linalg.pinv(A)  # projector onto lines, (H, H)
    return (x - P @ x).pow(2).mean((1, 2)).sqrt()


def test_projector_in_a_plain_ddpm_loop():
    windows = _lines(2000)
    lomap = LoMAP(windows, n_neighbors=10, proj_range=(0.0, 1.0), metric="euclidean")
    projector = LoMAPProjector(lomap, seed=0)
    n_steps = 20
    betas = torch.linspace(1e-4, 0.2, n_steps)
    alphas = 1 - betas
    abar = torch.cumprod(alphas, 0)

    def sample(hook):
        g = torch.Generator().manual_seed(1)
        x = torch.randn(64, 8, 2, generator=g)
        for t in range(n_steps - 1, -1, -1):
            # a poor denoiser (no model): x0_hat from x_t alone, so samples stay noisy
            x0_hat = (x / abar[t].sqrt()).clamp(-2, 2)
            mean = (abar[t - 1].sqrt() * betas[t] / (1 - abar[t])) * x0_hat if t else x0_hat
            if t:
                mean = mean + (alphas[t].sqrt() * (1 - abar[t - 1]) / (1 - abar[t])) * x
                x = mean + (betas[t] * (1 - abar[t - 1]) / (1 - abar[t])).sqrt() * torch.randn(
                    x.shape, generator=g
                )
                if hook is not None and hook.active(t, n_steps):
                    x = hook(x, x0_hat, abar[t - 1])
            else:
                x = mean
        return x

    plain, projected = sample(None), sample(projector)
    assert _off_manifold(projected).mean() < 0.5 * _off_manifold(plain).mean()


def _official_neighbours(windows, dim_weights, queries, k):
    """The official search, written independently: weight, L2-normalise, inner product."""
    keys = (windows * dim_weights).reshape(len(windows), -1)
    q = (queries * dim_weights).reshape(len(queries), -1)
    keys = keys / np.linalg.norm(keys, axis=1, keepdims=True)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    return np.argsort(-(q @ keys.T), axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("backend", ["torch", "faiss"])
def test_for_layout_reproduces_the_official_neighbours(backend):
    if backend == "faiss":
        pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    action_dim, horizon = 2, 16
    windows = rng.normal(size=(3000, horizon, action_dim + 4)).astype(np.float32)
    queries = rng.normal(size=(64, horizon, action_dim + 4)).astype(np.float32)
    dw = np.ones((horizon, action_dim + 4), np.float32)
    dw[:, :action_dim] = 0.0  # action_dim_weight 0 (actions first here, after obs officially)
    dw[[0, -1], action_dim : action_dim + 2] = 100.0  # sg_weight on the start/goal (x, y)
    want = _official_neighbours(windows, dw, queries, 10)
    kw = {"search_kwargs": {"nprobe": 64}} if backend == "faiss" else {}
    lomap = LoMAP.for_layout("medium", windows, action_dim=action_dim, backend=backend, **kw)
    np.testing.assert_array_equal(lomap._weights.numpy(), dw)
    _, got = lomap.index.search((torch.as_tensor(queries) * lomap._weights).reshape(64, -1), 10)
    got = np.asarray(got).reshape(len(queries), -1)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(want, got, strict=True)])
    assert overlap >= 0.95, overlap
