import pytest
import torch

import sparse_attn as sa


def rand_qkv(bsz, hq, hkv, length, d, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(bsz, h, length, d, generator=gen, dtype=torch.float64) for h in (hq, hkv, hkv)
    )


def run_cache(cache, q, k, v, l0):
    outs = []
    if l0:
        outs.append(cache.attend(0, q[..., :l0, :], k[..., :l0, :], v[..., :l0, :]))
    for t in range(l0, q.shape[-2]):
        outs.append(
            cache.attend(0, q[..., t : t + 1, :], k[..., t : t + 1, :], v[..., t : t + 1, :])
        )
        yield t, torch.cat(outs, dim=-2)


@pytest.mark.parametrize("l0", [0, 23, 31, 32, 137])
def test_cca_decode_equals_full_forward(l0):
    g, s, total = 8, 24, 137 + 40
    q, k, v = rand_qkv(1, 4, 2, total, 8)
    full = sa.cca_attention(q, k, v, group_size=g, local_window=s, enable_gqa=True)
    cache = sa.CCAKVCache(1, group_size=g, local_window=s)
    out = None
    for t, so_far in run_cache(cache, q, k, v, l0):
        out = so_far
        visible, pending = cache.num_core()
        raw = cache.num_entries() - visible - pending
        assert visible == max(0, (t + 1 - s) // g)
        assert pending <= -(-s // g) and raw <= s + g - 1
    torch.testing.assert_close(out, full, atol=1e-10, rtol=0)
    assert cache.seen == total
    assert cache.num_entries() == sa.analytic_cache_entries(total, g, s)


@pytest.mark.parametrize("l0", [1, 40])
def test_sink_and_dense_decode_equal_full_forward(l0):
    q, k, v = rand_qkv(2, 2, 1, 90, 8)
    full = sa.sink_window_attention(q, k, v, num_sink=3, window=16, enable_gqa=True)
    cache = sa.SinkWindowKVCache(1, num_sink=3, window=16)
    *_, (_, out) = run_cache(cache, q, k, v, l0)
    torch.testing.assert_close(out, full, atol=1e-10, rtol=0)
    assert cache.num_entries() <= 3 + 16
    full = sa.dense_attention(q, k, v, enable_gqa=True)
    cache = sa.DenseKVCache(1)
    *_, (_, out) = run_cache(cache, q, k, v, l0)
    torch.testing.assert_close(out, full, atol=1e-10, rtol=0)
    # several new tokens at once after a prefill
    cache = sa.DenseKVCache(1)
    a = cache.attend(0, q[..., :l0, :], k[..., :l0, :], v[..., :l0, :])
    b = cache.attend(0, q[..., l0:, :], k[..., l0:, :], v[..., l0:, :])
    torch.testing.assert_close(torch.cat([a, b], -2), full, atol=1e-10, rtol=0)


def test_cca_module_uses_absolute_positions():
    torch.manual_seed(0)
    attn = sa.CCAAttention(32, 4, num_kv_heads=2, group_size=4, local_window=6).double()
    x = torch.randn(2, 40, 32, dtype=torch.float64)
    full, _ = attn(x)
    y0, cache = attn(x[:, :13], use_cache=True)
    ys = [y0]
    for t in range(13, 40):
        y, cache = attn(x[:, t : t + 1], cache=cache)
        ys.append(y)
    torch.testing.assert_close(torch.cat(ys, 1), full, atol=1e-10, rtol=0)
    # the cache holds fewer entries than tokens: positions taken from the cache length would
    # rotate the last query wrongly
    assert cache.num_entries() < cache.seen
    wrong, _ = attn(x[:, 39:40], position_ids=torch.tensor([cache.num_entries()]))
    assert (wrong - ys[-1]).abs().max() > 1e-6


def test_cache_bad_inputs():
    with pytest.raises(ValueError, match="num_layers"):
        sa.DenseKVCache(0)
    with pytest.raises(ValueError, match="group_size"):
        sa.CCAKVCache(1, group_size=0)
    with pytest.raises(ValueError, match="window"):
        sa.SinkWindowKVCache(1, window=0)
    q, k, v = rand_qkv(1, 2, 2, 4, 8)
    with pytest.raises(ValueError, match="layer"):
        sa.DenseKVCache(1).attend(3, q, k, v)
    cache = sa.CCAKVCache(2, group_size=2, local_window=2)
    cache.attend(0, q, k, v)
    assert cache.memory_bytes() > 0


@pytest.mark.parametrize("kind", ["dense", "sink", "cca"])
def test_decode_with_another_head_size_raises_by_name(kind):
    # a mismatched head size once surfaced as a raw RuntimeError from torch.cat
    make = {"dense": lambda: sa.DenseKVCache(1), "sink": lambda: sa.SinkWindowKVCache(1, window=8),
            "cca": lambda: sa.CCAKVCache(1, group_size=2, local_window=2)}[kind]  # fmt: skip
    cache = make()
    q, k, v = rand_qkv(1, 2, 2, 6, 8)
    cache.attend(0, q, k, v)
    before = cache.memory_bytes()
    q2, k2, v2 = rand_qkv(1, 2, 2, 1, 16)
    with pytest.raises(ValueError, match="key head size 8 -> 16"):
        cache.attend(0, q2, k2, v2)
    q3, k3, v3 = rand_qkv(1, 4, 4, 1, 8)
    with pytest.raises(ValueError, match="KV heads 2 -> 4"):
        cache.attend(0, q3, k3, v3)
    assert cache.memory_bytes() == before  # a refused call leaves the cache as it was
    cache.attend(0, q[..., :1, :], k[..., :1, :], v[..., :1, :])


def test_dense_cache_stores_kv_per_kv_head_exactly():
    q, k, v = rand_qkv(2, 8, 2, 50, 16)
    cache = sa.DenseKVCache(3)
    for layer in range(3):
        cache.attend(layer, q[..., :30, :], k[..., :30, :], v[..., :30, :])
        for t in range(30, 50):
            cache.attend(layer, q[..., t : t + 1, :], k[..., t : t + 1, :], v[..., t : t + 1, :])
    # layers * L * Hkv * D * 2 (K and V) * bytes, per batch element
    assert cache.memory_bytes() == 3 * 2 * 50 * 2 * 16 * 2 * 8
    assert cache.allocated_bytes() >= cache.memory_bytes()


@pytest.mark.parametrize("l0", [0, 40, 100])
def test_cca_shared_pooling_decode_equals_full_forward(l0):
    g, s, total = 8, 24, 160
    q, k, v = rand_qkv(1, 8, 2, total, 8, seed=3)
    full = sa.cca_attention(
        q, k, v, group_size=g, local_window=s, enable_gqa=True, gqa_pooling="shared"
    )
    cache = sa.CCAKVCache(1, group_size=g, local_window=s, gqa_pooling="shared")
    out = None
    for _, so_far in run_cache(cache, q, k, v, l0):
        out = so_far
    torch.testing.assert_close(out, full, atol=1e-10, rtol=0)
    # every cached tensor is per KV head
    assert all(b.view().shape[1] == 2 for b in cache.layers[0].buffers() if b.data is not None)


def test_shared_cca_cache_is_a_tenth_of_a_gqa_dense_cache():
    g, s, total = 16, 64, 4096
    _, k, v = rand_qkv(1, 4, 1, total, 16)
    q = torch.randn(1, 4, total, 16, dtype=torch.float64)
    dense = sa.DenseKVCache(1)
    cca = sa.CCAKVCache(1, group_size=g, local_window=s, gqa_pooling="shared")
    dense.attend(0, q[..., :-1, :], k[..., :-1, :], v[..., :-1, :])
    cca.attend(0, q[..., :-1, :], k[..., :-1, :], v[..., :-1, :])
    dense.attend(0, q[..., -1:, :], k[..., -1:, :], v[..., -1:, :])
    cca.attend(0, q[..., -1:, :], k[..., -1:, :], v[..., -1:, :])
    assert cca.memory_bytes() <= 0.1 * dense.memory_bytes()


def test_decode_appends_without_reconcatenating_the_cache():
    q, k, v = rand_qkv(1, 2, 2, 600, 8)
    cache = sa.CCAKVCache(1, group_size=4, local_window=16)
    layer = None
    reallocs, last = 0, None
    for t in range(600):
        cache.attend(0, q[..., t : t + 1, :], k[..., t : t + 1, :], v[..., t : t + 1, :])
        layer = cache.layers[0]
        ptr = layer.core_k.data.data_ptr() if layer.core_k.data is not None else None
        reallocs += ptr != last
        last = ptr
    assert reallocs <= 12  # geometric growth: O(log L) reallocations, not one per token
    assert layer.num_entries() == sa.analytic_cache_entries(600, 4, 16)
