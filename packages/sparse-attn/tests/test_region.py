import itertools

import pytest
import torch
import torch.nn.functional as F

import sparse_attn as sa
from sparse_attn.reference import naive_region_attention


def rand_qkv(bsz, hq, hkv, n, d, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(bsz, h, n, d, generator=gen, dtype=dtype) for h in (hq, hkv, hkv))


def clustered(n=2048, d=32, heads=2, region=64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centres = 3.0 * torch.randn(8, d, generator=gen)
    m = n // region
    reg_centre = torch.randint(0, 8, (heads, m), generator=gen)
    k = centres[reg_centre].repeat_interleave(region, 1) + 0.5 * torch.randn(
        heads, n, d, generator=gen
    )
    q = centres[torch.randint(0, 8, (heads, n), generator=gen)] + 0.5 * torch.randn(
        heads, n, d, generator=gen
    )
    v = torch.randn(heads, n, d, generator=gen)
    return q[None], k[None], v[None]


@pytest.mark.parametrize("n", [1, 50, 130])
def test_all_regions_is_dense(n):
    q, k, v = rand_qkv(2, 4, 2, n, 8)
    out = sa.region_attention(q, k, v, region_size=16, top_k=100, enable_gqa=True)
    ref = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
    q32, k32, v32 = (x.float() for x in (q, k, v))
    out = sa.region_attention(q32, k32, v32, region_size=16, top_k=9, enable_gqa=True)
    ref = F.scaled_dot_product_attention(q32, k32, v32, enable_gqa=True)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)


def test_matches_naive_loop_with_uneven_regions():
    q, k, v = rand_qkv(1, 2, 1, 70, 8, seed=3)
    ids = torch.randint(0, 6, (70,), generator=torch.Generator().manual_seed(1))
    ids[:6] = torch.arange(6)  # every region present
    out = sa.region_attention(q, k, v, region_ids=ids, top_k=2, enable_gqa=True, chunk_size=16)
    ref = naive_region_attention(q, k, v, ids, top_k=2)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
    # contiguous regions with a short last region (70 = 4 * 16 + 6)
    out = sa.region_attention(q, k, v, region_size=16, top_k=3, enable_gqa=True)
    ref = naive_region_attention(q, k, v, torch.arange(70) // 16, top_k=3)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", ["random", "clustered"])
def test_error_bound_holds(kind):
    if kind == "random":
        q, k, v = rand_qkv(1, 2, 2, 512, 16, seed=5)
        q = 2 * q
    else:
        q, k, v = (x.double() for x in clustered(n=512))
    dense = F.scaled_dot_product_attention(q, k, v)
    logits = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    p = logits.softmax(-1)
    for top_k in (1, 2, 4):
        out, st = sa.region_attention(q, k, v, region_size=64, top_k=top_k, return_stats=True)
        sel_mask = torch.zeros_like(p, dtype=torch.bool)
        regions = torch.arange(512) // 64
        sel_mask |= (st.selected[..., None] == regions).any(-2)
        left_mass = (p * ~sel_mask).sum(-1)
        assert (left_mass <= st.mass_bound + 1e-12).all()
        err = (out - dense).norm(dim=-1)
        assert (err <= 2 * st.mass_bound * v.norm(dim=-1).max() + 1e-10).all()


def test_clustered_error_decreases_with_top_k():
    q, k, v = clustered(n=1536)
    dense = F.scaled_dot_product_attention(q, k, v)
    errs = []
    for top_k in (1, 2, 4, 8, 16):
        out = sa.region_attention(q, k, v, region_size=64, top_k=top_k)
        errs.append(((out - dense).norm(dim=-1).mean() / v.norm(dim=-1).mean()).item())
    assert all(b <= a + 1e-3 for a, b in itertools.pairwise(errs))
    assert errs[3] < 0.02 and errs[0] > 0.05
    rand = sa.region_attention(
        q, k, v, region_size=64, top_k=4, score="random", generator=torch.Generator().manual_seed(0)
    )
    assert ((rand - dense).norm(dim=-1).mean() / v.norm(dim=-1).mean()).item() > errs[2]


def test_grid_regions_and_module():
    rows, cols = torch.meshgrid(torch.arange(20), torch.arange(12), indexing="ij")
    coords = torch.stack([rows.flatten(), cols.flatten()], 1) + 100
    ids = sa.grid_regions(coords, tile=8)
    assert ids.shape == (240,) and int(ids.max()) + 1 == 3 * 2
    assert len(set(ids[(coords[:, 0] < 108) & (coords[:, 1] < 108)].tolist())) == 1
    torch.manual_seed(0)
    mod = sa.QuerentAttention(32, 4, region_size=16, top_k=2)
    x = torch.randn(2, 240, 32)
    y = mod(x, region_ids=ids)
    assert y.shape == x.shape
    y.sum().backward()
    assert mod.qkv.weight.grad.abs().sum() > 0


def test_learned_estimator_trains():
    torch.manual_seed(0)
    mod = sa.QuerentAttention(32, 2, region_size=8, top_k=2, score="learned")
    x = torch.randn(1, 64, 32)
    mod(x).sum().backward()
    assert mod.qkv.weight.grad is not None
    est = sa.RegionScoreEstimator(16, proj_dim=8)
    q, k, _ = rand_qkv(1, 2, 2, 10, 16, dtype=torch.float32)
    s = est(q, k[..., :3, :], k[..., 3:6, :])
    assert s.shape == (1, 2, 10, 3) and (s >= 0).all()


def test_bad_inputs():
    q, k, v = rand_qkv(1, 2, 2, 16, 8)
    with pytest.raises(ValueError, match="top_k"):
        sa.region_attention(q, k, v, top_k=0)
    with pytest.raises(ValueError, match="region_size"):
        sa.region_attention(q, k, v, region_size=-1)
    with pytest.raises(ValueError, match="score"):
        sa.region_attention(q, k, v, score="foo")
    with pytest.raises(ValueError, match="estimator"):
        sa.region_attention(q, k, v, score="learned")
    with pytest.raises(ValueError, match="region_ids"):
        sa.region_attention(q, k, v, region_ids=torch.zeros(5, dtype=torch.long))
    with pytest.raises(TypeError, match="region_ids"):
        sa.region_attention(q, k, v, region_ids=torch.zeros(16))
    with pytest.raises(ValueError, match="coords"):
        sa.grid_regions(torch.zeros(5, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="head dim"):
        sa.region_attention(q, k[..., :4], v)


def test_bf16_and_mqa():
    q, k, v = (x.bfloat16().float() for x in rand_qkv(2, 4, 1, 200, 32, seed=2))
    ref = sa.region_attention(q, k, v, region_size=32, top_k=3, enable_gqa=True)
    out = sa.region_attention(
        q.bfloat16(), k.bfloat16(), v.bfloat16(), region_size=32, top_k=3, enable_gqa=True
    )
    assert out.dtype == torch.bfloat16
    assert ((out.float() - ref).norm() / ref.norm()) < 2e-2
    naive = naive_region_attention(q.double(), k.double(), v.double(), torch.arange(200) // 32, 3)
    torch.testing.assert_close(ref.double(), naive, atol=1e-5, rtol=0)


@pytest.mark.parametrize("grad", [False, True])
def test_query_blocks_give_the_unblocked_result(monkeypatch, grad):
    # the region-major pass runs over blocks of queries (bounded pair buffers): each query's
    # output depends only on its own selection, so blocking changes nothing, gradients included
    from sparse_attn import region as R

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 700, 8, generator=gen, dtype=torch.float64, requires_grad=grad)
               for _ in range(3))  # fmt: skip
    torch.manual_seed(0)
    est = sa.RegionScoreEstimator(8, 4).double()
    runs = []
    for block in (10**9, 128):
        monkeypatch.setattr(R, "_QUERY_BLOCK", block)
        out = sa.region_attention(q, k, v, region_size=16, top_k=3, score="learned",
                                  estimator=est)  # fmt: skip
        grads = torch.autograd.grad(out.pow(2).sum(), (q, k, v, *est.parameters())) if grad else ()
        runs.append((out.detach(), grads))
    torch.testing.assert_close(runs[0][0], runs[1][0], atol=1e-12, rtol=0)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
