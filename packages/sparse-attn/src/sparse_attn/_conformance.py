"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import torch

from sparse_attn import (
    CCAAttention,
    QuerentMIL,
    SelfAttention,
    analytic_cache_entries,
    apply_rope,
    associative_recall_batch,
    cca_attention,
    cca_core_tokens,
    cca_num_visible_cores,
    cca_stats,
    cca_visibility,
    dense_attention,
    grid_regions,
    load_feature_bag,
    make_wsi_bags,
    passkey_batch,
    region_attention,
    sink_window_attention,
    sliding_window_attention,
)
from sparse_attn import wsi as sa_wsi
from sparse_attn.reference import naive_cca_attention


def _qkv(B=2, H=2, L=40, D=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, L, D, generator=g, dtype=torch.float64) for _ in range(3)]


@functools.cache
def _querent_model(n_features: int) -> QuerentMIL:
    # built once, outside any call: the device contract runs the call with another default
    # device, which must reach the forward pass only
    with torch.device("cpu"):
        torch.manual_seed(0)
        model = QuerentMIL(n_features, 2, dim=8, num_heads=2, region_size=4, top_k=2)
        return model.eval().double()


def _querent(features, coords):
    model = _querent_model(int(features.shape[-1]))
    with torch.no_grad():
        return model(features, coords)


def _write_clam(folder):
    import h5py

    grid = np.stack(np.meshgrid(np.arange(4), np.arange(3), indexing="ij"), -1).reshape(-1, 2)
    with h5py.File(folder / "slide.h5", "w") as f:
        f["features"] = np.arange(24, dtype=np.float32).reshape(12, 2)
        f["coords"] = grid[:, ::-1] * 512 + 100
        f["coords"].attrs.update({"patch_size": 256, "patch_level": 1, "downsample": (2.0, 2.0)})
    return folder / "slide.h5"


def _truncate_h5(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


_KERNEL_OPTIONS = {"dense": {}, "cca": {"group_size": 2, "local_window": 4},
                   "sliding": {"window": 3}, "sink": {"num_sink": 1, "window": 3}}  # fmt: skip


@functools.cache
def _layer(kind: str) -> torch.nn.Module:
    torch.manual_seed(0)
    if kind == "cca":  # the public drop-in class
        layer = CCAAttention(16, 4, 2, group_size=2, local_window=4)
    else:
        layer = SelfAttention(16, 4, 2, kind=kind, **_KERNEL_OPTIONS[kind])
    return layer.double().eval()


def _attend(x, kind="cca"):
    """One attention layer's output on x (B, L, 16) with the ``kind`` kernel."""
    with torch.no_grad():
        return _layer(kind)(x)[0]


def _decoded(x, kind="cca"):
    """The same layer fed one token at a time through its KV cache."""
    layer = _layer(kind)
    cache, out = None, []
    with torch.no_grad():
        for t in range(x.shape[1]):
            y, cache = layer(x[:, t : t + 1], cache=cache, use_cache=True)
            out.append(y)
    return torch.cat(out, 1)


_CACHES = {"dense": ("DenseKVCache", {}), "sink": ("SinkWindowKVCache", {"num_sink": 2, "window": 5}),
           "cca": ("CCAKVCache", {"group_size": 3, "local_window": 4})}  # fmt: skip


def _cached(q, k, v, kind="dense", prefill=7, layer=0):
    """Prefill ``prefill`` tokens into a KV cache, then decode the rest one token at a time."""
    import sparse_attn as sa

    name, kw = _CACHES[kind]
    cache = getattr(sa, name)(2, **kw)
    outs = [cache.attend(layer, q[..., :prefill, :], k[..., :prefill, :], v[..., :prefill, :])]
    for t in range(prefill, q.shape[-2]):
        outs.append(cache.attend(layer, q[..., t : t + 1, :], k[..., t : t + 1, :],
                                 v[..., t : t + 1, :]))  # fmt: skip
    return torch.cat(outs, dim=-2)


def _full(q, k, v, kind):
    """What the cached decode must equal: the whole sequence in one call."""
    import torch.nn.functional as F

    from sparse_attn import cca_attention

    kv = (
        k.repeat_interleave(q.shape[1] // k.shape[1], 1),
        v.repeat_interleave(q.shape[1] // k.shape[1], 1),
    )
    if kind == "dense":
        return F.scaled_dot_product_attention(q, *kv, is_causal=True)
    if kind == "cca":
        return cca_attention(q, k, v, group_size=3, local_window=4, enable_gqa=True,
                             backend="reference")  # fmt: skip
    n = q.shape[-2]
    t, u = torch.arange(n)[:, None], torch.arange(n)[None, :]
    mask = (u <= t) & ((u < 2) | (u > t - 5))  # 2 sinks + the last 5 tokens
    return F.scaled_dot_product_attention(q, *kv, attn_mask=mask)


def _tiny_config(**kw):
    """The parameter count of a TinyLlama built from the config."""
    import sparse_attn as sa

    base = {"vocab_size": 32, "hidden_size": 16, "num_layers": 1, "num_heads": 4, "num_kv_heads": 2}
    model = sa.TinyLlama(sa.TinyLlamaConfig(**{**base, **kw}))
    return {"n_params": sum(p.numel() for p in model.parameters())}


def _cache_entries() -> list[dict]:
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, 4, 20, 8, generator=g, dtype=torch.float64)
    k, v = (torch.randn(1, 2, 20, 8, generator=g, dtype=torch.float64) for _ in range(2))
    out = [
        {
            "name": "TinyLlamaConfig",
            "call": _tiny_config,
            "kwargs": {},
            "params": {
                "hidden_size": {"type": "int", "bad": [0, 18], "good": 16},
                "num_kv_heads": {"type": "int", "bad": [0, 3], "good": 2},
                "intermediate_size": {"type": "int", "bad": [0], "good": 24},
                "rope_theta": {
                    "type": "float",
                    "bad": [0.0, float("nan"), float("inf")],
                    "good": 500.0,
                },
            },
            "known": [
                {
                    "kwargs": {"intermediate_size": 24},
                    "check": lambda r: (
                        r["n_params"]
                        == 2 * 32 * 16 + 16 + 16 * 16 + 2 * 16 * 8 + 16 * 16 + 16 + 3 * 16 * 24 + 16
                    ),
                    "why": "embedding, head, q/k/v/o, two norms and a SwiGLU of width 24 (GQA 4/2)",
                }
            ],
        },
    ]
    for kind, (name, _) in _CACHES.items():
        out.append(
            {"name": name, "call": functools.partial(_cached, kind=kind),
             "kwargs": {"q": q, "k": k, "v": v},
             "arrays": {x: {"kind": "float", "ndim": 4} for x in "qkv"},
             "params": {"layer": {"type": "int", "bad": [-1, 2]}},
             "fixed": {"kind": "selects the cache this entry covers (one entry per cache)"},
             "known": [{"kwargs": {"q": q, "k": k, "v": v},
                        "check": functools.partial(
                            lambda o, kind: torch.allclose(o, _full(q, k, v, kind), atol=1e-10),
                            kind=kind),
                        "why": "prefill then token-by-token decode equals the whole sequence"},
                       {"kwargs": {"q": q, "k": k, "v": v, "layer": True}, "raises": ["layer"],
                        "why": "a bool is not a layer index"}]})  # fmt: skip
    return out


@functools.cache
def _estimator() -> torch.nn.Module:
    """A RegionScoreEstimator for head size 8 (the example's), built once in float64."""
    torch.manual_seed(0)
    from sparse_attn import RegionScoreEstimator

    return RegionScoreEstimator(8).double().eval()


def _region(q, k, v, region_size=64, top_k=8, score="minmax_bound", include_own_region=True,
            enable_gqa=False, return_stats=False):  # fmt: skip
    """region_attention; ``score="learned"`` uses the cached estimator, ``"random"`` a seeded
    generator."""
    extra = {"estimator": _estimator()} if score == "learned" else {}
    if score == "random":
        extra["generator"] = torch.Generator(device="cpu").manual_seed(0)
    with torch.no_grad():
        return region_attention(q, k, v, region_size=region_size, top_k=top_k, score=score,
                                include_own_region=include_own_region, enable_gqa=enable_gqa,
                                return_stats=return_stats, **extra)  # fmt: skip


_ONE_PER_KIND = "selects the layer kind this entry covers (one entry per kind)"


def entries() -> list[dict]:
    q, k, v = _qkv()
    qkv = {"q": q, "k": k, "v": v}
    gqa = {"q": q, "k": k[:, :1], "v": v[:, :1]}  # two query heads share one key/value head
    arrays = {"q": {"kind": "float", "ndim": 4}, "k": {"kind": "float", "ndim": 4},
              "v": {"kind": "float", "ndim": 4}}  # fmt: skip
    rows = [["q", "k", "v"]]
    ref = naive_cca_attention(q, k, v, group_size=4, local_window=8)
    gen = torch.Generator().manual_seed(1)
    feats = torch.randn(30, 4, generator=gen, dtype=torch.float64)
    coords = torch.stack(torch.meshgrid(torch.arange(6), torch.arange(5), indexing="ij"), -1)
    coords = coords.reshape(30, 2)
    hidden = torch.randn(2, 11, 16, generator=gen, dtype=torch.float64)
    for kind in _KERNEL_OPTIONS:  # built here, outside any device context the suite sets
        _layer(kind)
    out = [
        {"name": "cca_attention", "call": cca_attention,
         "kwargs": {**qkv, "group_size": 4, "local_window": 8},
         "arrays": arrays, "rows": rows, "order": "equivariant",
         "params": {"group_size": {"type": "int", "bad": [0]},
                    "local_window": {"type": "int", "bad": [0]},
                    "backend": {"type": "str", "bad": ["cuda-only"]},
                    "gqa_pooling": {"type": "str", "bad": ["mean"]}},
         "grid": {"backend": ["blocksparse", "flex", "torch", "reference"],
                  "gqa_pooling": ["shared"], "window_rule": ["paper"],
                  "return_stats": [True],
                  "enable_gqa": [{"grid_value": True,
                                  "kwargs": {**gqa, "group_size": 4, "local_window": 8}}]},
         "fixed": {"is_causal": "CCA-Attention is causal only: is_causal=False raises (known case)"},
         "known": [{"kwargs": {**qkv, "group_size": 4, "local_window": 8},
                    "check": lambda out: torch.allclose(out, ref, atol=1e-10),
                    "why": "equals the naive per-query CCA of the paper's Eqs. 1-4"},
                   {"kwargs": {**qkv, "group_size": 4, "local_window": 8, "is_causal": False},
                    "raises": ["is_causal"], "why": "no bidirectional CCA"},
                   {"kwargs": {**gqa, "group_size": 4, "local_window": 8, "enable_gqa": True},
                    "check": lambda out: torch.allclose(out, naive_cca_attention(
                        q, k[:, :1].expand(-1, 2, -1, -1), v[:, :1].expand(-1, 2, -1, -1),
                        group_size=4, local_window=8), atol=1e-10),
                    "why": "GQA equals the key/value head repeated for both query heads"}]},
        {"name": "region_attention", "call": _region, "modules": lambda: [_estimator()],
         "kwargs": {**qkv, "region_size": 8, "top_k": 2},
         "arrays": arrays, "rows": rows, "order": "equivariant",
         "params": {"region_size": {"type": "int", "bad": [0]},
                    "top_k": {"type": "int", "bad": [0]},
                    "score": {"type": "str", "bad": ["max"]}},
         "grid": {"include_own_region": [False], "return_stats": [True],
                  # random regions are drawn per batch row: a permutation draws others
                  "score": ["learned", {"grid_value": "random", "order": None}],
                  "enable_gqa": [{"grid_value": True,
                                  "kwargs": {**gqa, "region_size": 8, "top_k": 2}}]},
         "known": [{"kwargs": {**qkv, "region_size": 8, "top_k": 5},
                    "check": lambda out: torch.allclose(
                        out, dense_attention(q, k, v, is_causal=False), atol=1e-10),
                    "why": "top_k = every region is dense bidirectional attention"}]},
        {"name": "CCAAttention.forward", "call": _attend, "kwargs": {"x": hidden},
         "modules": lambda: [_layer("cca")], "fixed": {"kind": _ONE_PER_KIND},
         "arrays": {"x": {"kind": "float", "ndim": 3}}, "rows": [["x"]], "order": "equivariant",
         "known": [{"kwargs": {"x": hidden},
                    "check": lambda out: torch.allclose(out, _decoded(hidden), atol=1e-10),
                    "why": "token-by-token decoding through the CCA cache equals the prefill"}]},
        {"name": "SelfAttention.forward", "call": _attend, "kwargs": {"x": hidden, "kind": "dense"},
         "modules": lambda: [_layer(k) for k in ("dense", "sliding", "sink")],
         "arrays": {"x": {"kind": "float", "ndim": 3}}, "rows": [["x"]], "order": "equivariant",
         "grid": {"kind": ["sliding", "sink"]},
         "known": [{"kwargs": {"x": hidden, "kind": k},
                    "check": lambda out, k=k: torch.allclose(out, _decoded(hidden, k), atol=1e-10),
                    "why": f"decoding through the {k} cache equals the prefill"}
                   for k in ("dense", "sliding", "sink")]},
        {"name": "sink_window_attention", "call": sink_window_attention,
         "kwargs": {**qkv, "num_sink": 2, "window": 6}, "arrays": arrays, "rows": rows,
         "order": "equivariant",
         "params": {"num_sink": {"type": "int", "bad": [-1]}, "window": {"type": "int", "bad": [0]}},
         "grid": {"enable_gqa": [{"grid_value": True,
                                  "kwargs": {**gqa, "num_sink": 2, "window": 6}}]},
         "known": [{"kwargs": {**qkv, "num_sink": 0, "window": 6},
                    "check": lambda out: torch.allclose(
                        out, sliding_window_attention(q, k, v, 6), atol=1e-10),
                    "why": "no sink tokens: sliding-window attention"}]},
        {"name": "apply_rope", "call": lambda x, theta=10000.0: apply_rope(
            x, torch.arange(x.shape[-2] if x.ndim >= 2 else 1, device=x.device), theta),
         "kwargs": {"x": q}, "arrays": {"x": {"kind": "float", "ndim": 4}}, "rows": [["x"]],
         "order": "equivariant", "params": {"theta": {"type": "float", "bad": [0.0, float("nan")]}},
         "known": [{"kwargs": {"x": q},
                    "check": lambda out: torch.allclose(out.norm(dim=-1), q.norm(dim=-1), atol=1e-10),
                    "why": "a rotation keeps every vector's norm"}]},
        {"name": "cca_visibility", "call": cca_visibility,
         "kwargs": {"length": 12, "group_size": 4, "local_window": 4},
         "params": {"length": {"type": "int", "bad": [0]}, "group_size": {"type": "int", "bad": [0]},
                    "local_window": {"type": "int", "bad": [0]}}},
        {"name": "cca_num_visible_cores", "call": cca_num_visible_cores,
         "kwargs": {"length": 12, "group_size": 4, "local_window": 4},
         "params": {"length": {"type": "int", "bad": [0]}, "group_size": {"type": "int", "bad": [0]},
                    "local_window": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {"length": 12, "group_size": 4, "local_window": 4},
                    "check": lambda n: int(n.max()) <= 3 and int(n[0]) == 0,
                    "why": "at most one core per complete group; the first query sees none"}]},
        {"name": "cca_stats", "call": cca_stats,
         "kwargs": {"length": 64, "group_size": 8, "local_window": 16},
         "params": {"length": {"type": "int", "bad": [0]}, "group_size": {"type": "int", "bad": [0]},
                    "local_window": {"type": "int", "bad": [0]}}},
        {"name": "analytic_cache_entries", "call": analytic_cache_entries,
         "kwargs": {"length": 64, "group_size": 8, "local_window": 16},
         "params": {"length": {"type": "int", "bad": [-1]}, "group_size": {"type": "int", "bad": [0]},
                    "local_window": {"type": "int", "bad": [0]}}},
        {"name": "dense_attention", "call": dense_attention, "kwargs": dict(qkv),
         "arrays": arrays, "rows": rows, "order": "equivariant",
         "grid": {"is_causal": [False], "enable_gqa": [{"grid_value": True, "kwargs": dict(gqa)}]}},
        {"name": "sliding_window_attention", "call": sliding_window_attention,
         "kwargs": {**qkv, "window": 6}, "arrays": arrays, "rows": rows,
         "order": "equivariant", "params": {"window": {"type": "int", "bad": [0]}},
         "grid": {"enable_gqa": [{"grid_value": True, "kwargs": {**gqa, "window": 6}}]}},
        {"name": "grid_regions", "call": grid_regions, "kwargs": {"coords": coords, "tile": 2},
         "arrays": {"coords": {"kind": "int", "ndim": 2}}, "rows": [["coords"]],
         "order": None, "params": {"tile": {"type": "int", "bad": [0]}}},
        {"name": "QuerentMIL.forward", "call": _querent,
         "modules": lambda: [_querent_model(int(feats.shape[-1]))],
         "kwargs": {"features": feats, "coords": coords},
         "arrays": {"features": {"kind": "float", "ndim": (2, 3)},
                    "coords": {"kind": "int", "ndim": (2, 3)}},
         "rows": [["features", "coords"]], "order": "invariant"},
        {"name": "cca_core_tokens",
         "call": lambda q, k, v, group_size=4: torch.cat(
             cca_core_tokens(q, k, v, group_size=group_size), dim=-1),
         "kwargs": dict(qkv), "arrays": arrays, "rows": rows, "order": None,
         "params": {"group_size": {"type": "int", "bad": [0, -3]}},
         "known": [{"kwargs": {**qkv, "group_size": 1},
                    "check": lambda out: torch.allclose(out, torch.cat([k, v], -1)),
                    "why": "groups of one token: each core is that token's key and value"}]},
        {"name": "passkey_batch",
         "call": lambda batch_size=3, length=20, num_keys=8, vocab_size=32: torch.cat([
             t.flatten().double() for t in passkey_batch(
                 batch_size, length, num_keys=num_keys, vocab_size=vocab_size,
                 generator=torch.Generator().manual_seed(0))]),
         "kwargs": {},
         "params": {"batch_size": {"type": "int", "bad": [0]},
                    "length": {"type": "int", "bad": [3]},
                    "num_keys": {"type": "int", "bad": [0]},
                    "vocab_size": {"type": "int", "bad": [12]}}},
        {"name": "associative_recall_batch",
         "call": lambda batch_size=2, length=40, num_pairs=4, num_queries=2: torch.cat(
             associative_recall_batch(batch_size, length, num_pairs=num_pairs,
                                      num_queries=num_queries,
                                      generator=torch.Generator().manual_seed(0))[:2],
             dim=-1).double(),
         "kwargs": {},
         "params": {"batch_size": {"type": "int", "bad": [0]},
                    "length": {"type": "int", "bad": [5]},
                    "num_pairs": {"type": "int", "bad": [0]},
                    "num_queries": {"type": "int", "bad": [0, 9]}}},
        {"name": "make_wsi_bags",
         "call": lambda n_slides=3, feat_dim=8, lesion_patches=6, noise=0.6: torch.cat(
             [torch.as_tensor(b.features, dtype=torch.float64).flatten() for b in make_wsi_bags(
                 n_slides, (60, 80), feat_dim=feat_dim, lesion_patches=lesion_patches,
                 noise=noise, seed=0)]),
         "kwargs": {},
         "params": {"n_slides": {"type": "int", "bad": [0]},
                    "feat_dim": {"type": "int", "bad": [0]},
                    "lesion_patches": {"type": "int", "bad": [0]},
                    "noise": {"type": "float", "bad": [-1.0, float("nan")]}}},
        {"name": "load_feature_bag", "kind": "loader", "write": _write_clam,
         "read": load_feature_bag,
         "check": lambda bag: bag.coords.tolist() == np.stack(np.meshgrid(
             np.arange(4), np.arange(3), indexing="ij"), -1).reshape(-1, 2).tolist(),
         "corrupt": [("truncate", _truncate_h5), "empty"]},
    ]  # fmt: skip
    return [
        *out,
        *_module_entries(feats, coords),
        *_selected_entries(),
        *_cache_entries(),
        *_swap_entries(),
    ]


_MIL = ("ABMIL", "MeanPoolMIL", "TransMILStyle")


@functools.cache
def _module(kind: str) -> torch.nn.Module:
    """One small eval-mode module per public class, built once (outside any device run)."""
    import sparse_attn as sa

    with torch.device("cpu"):
        torch.manual_seed(0)
        if kind in _MIL:
            m = getattr(sa, kind)(4, 2, dim=8)
        elif kind == "QuerentAttention":
            m = sa.QuerentAttention(8, 2, region_size=4, top_k=2)
        elif kind == "QuerentLayer":
            m = sa.QuerentLayer(8, 2, top_k=2)
        elif kind == "RegionScoreEstimator":
            m = sa.RegionScoreEstimator(4)
        else:
            m = sa.TinyLlama(sa.TinyLlamaConfig(vocab_size=32, hidden_size=16, num_layers=1,
                                                num_heads=2, num_kv_heads=1))  # fmt: skip
        return m.double().eval()


def _run(kind, *args):
    with torch.no_grad():
        out = _module(kind)(*args)
    return out[0] if isinstance(out, tuple) else out


def _module_entries(feats, coords) -> list[dict]:
    """Forward passes of the MIL models, the Querent layers and TinyLlama (eval mode):
    determinism, pickling, devices and bf16; like torch.nn layers they propagate NaN."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 12, 8, generator=g, dtype=torch.float64)
    rid = torch.arange(12) // 4
    q, kmin, kmax = (torch.randn(1, 2, n, 4, generator=g, dtype=torch.float64) for n in (12, 3, 3))
    ids = torch.randint(0, 32, (2, 7), generator=g)
    out = [
        {
            "name": f"{k}.forward",
            "call": lambda features, coords, k=k: _run(k, features, coords),
            "kwargs": {"features": feats, "coords": coords},
            "modules": lambda k=k: [_module(k)],
            "fixed": {"k": "selects the MIL model this entry covers (one entry per model)"},
        }
        for k in _MIL
    ]
    out += [
        {"name": "QuerentAttention.forward", "call": lambda x: _run("QuerentAttention", x),
         "kwargs": {"x": x}, "modules": lambda: [_module("QuerentAttention")]},
        {"name": "QuerentLayer.forward", "call": lambda x, region_ids: _run("QuerentLayer", x, region_ids),
         "kwargs": {"x": x[0], "region_ids": rid}, "modules": lambda: [_module("QuerentLayer")]},
        {"name": "RegionScoreEstimator.forward",
         "call": lambda q, kmin, kmax: _run("RegionScoreEstimator", q, kmin, kmax),
         "kwargs": {"q": q, "kmin": kmin, "kmax": kmax},
         "modules": lambda: [_module("RegionScoreEstimator")]},
        {"name": "TinyLlama.forward", "call": lambda input_ids: _run("TinyLlama", input_ids),
         "kwargs": {"input_ids": ids}, "modules": lambda: [_module("TinyLlama")]},
    ]  # fmt: skip
    return out


def _selected_example():
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 2, 12, 4, generator=g, dtype=torch.float64) for _ in range(3))
    selected = torch.randint(0, 3, (2, 12, 2), generator=g)
    return {"q": q, "k": k, "v": v, "selected": selected}


def _selected_entries() -> list[dict]:
    """attend_selected_regions: 12 tokens in 3 regions of 4, two regions per query."""
    import torch.nn.functional as F

    from sparse_attn import attend_selected_regions

    ids = torch.arange(12) // 4
    ex = _selected_example()
    every = torch.arange(3).expand(2, 12, 3)

    def call(q, k, v, selected, scale=None):
        return attend_selected_regions(q, k, v, selected, ids, scale=scale)

    def own_region_only(out):
        q, k, v = ex["q"], ex["k"], ex["v"]
        mask = ids[:, None] == ids[None, :]  # each query sees its own region's keys only
        return torch.allclose(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                              atol=1e-12)  # fmt: skip

    from sparse_attn import region_metadata

    table = torch.tensor([[0, 1, 2, 5], [3, 4, 99, 0], [6, 7, 8, 9], [10, 11, 0, 0]])
    valid = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 0, 0]]).bool()

    def by_hand(kmm):
        k = ex["k"]
        rows = [table[m][valid[m]] for m in range(len(table))]
        lo = torch.stack([k[:, :, r].amin(2) for r in rows], 2)
        hi = torch.stack([k[:, :, r].amax(2) for r in rows], 2)
        return torch.equal(kmm[0], lo) and torch.equal(kmm[1], hi)

    return [
        {"name": "region_metadata",
         "call": lambda k: region_metadata(k, table, valid), "kwargs": {"k": ex["k"]},
         "arrays": {"k": {"kind": "float", "ndim": 4}}, "rows": [["k"]], "order": "equivariant",
         "known": [{"kwargs": {"k": ex["k"]}, "check": by_hand,
                    "why": "ragged regions (a padded slot holding 99) against a loop over regions"},
                   {"kwargs": {"k": ex["k"][:, :, :10]}, "raises": ["table"], "check": None,
                    "why": "token 10 of 10 keys"}]},
        {"name": "attend_selected_regions", "call": call, "kwargs": ex,
         "arrays": {"q": {"kind": "float", "ndim": 4}, "k": {"kind": "float", "ndim": 4},
                    "v": {"kind": "float", "ndim": 4}, "selected": {"kind": "int", "ndim": 3}},
         "rows": [["q", "k", "v", "selected"]], "order": "equivariant",
         "params": {"scale": {"type": "float", "bad": [0.0, -1.0, float("nan")], "good": 0.5}},
         "known": [{"kwargs": {**ex, "selected": every},
                    "check": lambda out: torch.allclose(
                        out, F.scaled_dot_product_attention(ex["q"], ex["k"], ex["v"]),
                        atol=1e-12),
                    "why": "every region selected: dense attention"},
                   {"kwargs": {**ex, "selected": ids.expand(2, 12)[..., None]},
                    "check": own_region_only,
                    "why": "only its own region: block-diagonal masked SDPA"},
                   {"kwargs": {**ex, "selected": torch.full((2, 12, 2), 3)},
                    "raises": ["selected"], "check": None,
                    "why": "region 3 of 3 does not exist (it would gather padding)"},
                   {"kwargs": {**ex, "selected": -ex["selected"] - 1}, "raises": ["selected"],
                    "check": None, "why": "negative ids would wrap around silently"}]},
    ]  # fmt: skip


def _bag(**kw):
    g = torch.Generator().manual_seed(4)
    base = {"features": torch.randn(6, 4, generator=g, dtype=torch.float64),
            "coords": torch.stack([torch.arange(6) // 3, torch.arange(6) % 3], 1)}  # fmt: skip
    b = sa_wsi.Bag(**(base | kw))
    return {"features": b.features, "coords": b.coords, "label": b.label, "n": len(b)}


_MIL_STUDENT: dict = {}


def _mil_model():
    """One ABMIL, reset to its initial weights on every call (the device runs move it)."""
    import sparse_attn as sa

    if not _MIL_STUDENT:
        with torch.device("cpu"):
            torch.manual_seed(3)
            m = sa.ABMIL(4, 2, dim=8).double()
        _MIL_STUDENT["m"] = (m, {k: v.clone() for k, v in m.state_dict().items()})
    m, init = _MIL_STUDENT["m"]
    m.load_state_dict(init)
    return m


def _mil_bags(n=4, labels=(0, 1)):
    g = torch.Generator().manual_seed(6)
    coords = torch.stack([torch.arange(6) // 3, torch.arange(6) % 3], 1)
    return [sa_wsi.Bag(torch.randn(6, 4, generator=g, dtype=torch.float64) + labels[i % 2],
                       coords, labels[i % 2]) for i in range(n)]  # fmt: skip


def _fit(bags=None, epochs=2, lr=2e-4, weight_decay=1e-4, seed=0, verbose=0, model=None):
    import sparse_attn as sa

    m = _mil_model() if model is None else model
    curve = sa.fit_mil(m, _mil_bags() if bags is None else bags, epochs=epochs, lr=lr,
                       weight_decay=weight_decay, seed=seed, verbose=verbose)  # fmt: skip
    return {"curve": curve, "w": m.classifier.weight.detach().clone()}


def _initial_classifier():
    return _MIL_STUDENT["m"][1]["classifier.weight"]


_SWAP: dict = {}


def _tiny_lm():
    import sparse_attn as sa

    if "lm" not in _SWAP:
        with torch.device("cpu"):
            torch.manual_seed(0)
            _SWAP["lm"] = sa.TinyLlama(sa.TinyLlamaConfig(vocab_size=32, hidden_size=16,
                                       num_layers=2, num_heads=2, num_kv_heads=1)).double().eval()  # fmt: skip
    return _SWAP["lm"]


def _swapped(input_ids, kind="cca", layers=None, group_size=4, local_window=4):
    import sparse_attn as sa

    m = copy.deepcopy(_tiny_lm())
    opts = {"cca": {"group_size": group_size, "local_window": local_window},
            "sliding": {"window": local_window}}.get(kind, {})  # fmt: skip
    n = sa.swap_attention(m, kind, layers=layers, **opts)
    with torch.no_grad():
        return {"n": n, "logits": m(input_ids)[0]}


def _tiny_hf_llama():
    import transformers

    if "hf" not in _SWAP:
        with torch.device("cpu"):
            torch.manual_seed(0)
            cfg = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
                                           num_hidden_layers=2, num_attention_heads=2,
                                           num_key_value_heads=1, max_position_embeddings=64,
                                           attn_implementation="eager")  # fmt: skip
            _SWAP["hf"] = transformers.LlamaForCausalLM(cfg).double().eval()
    return _SWAP["hf"]


def _hf_swapped(input_ids, group_size=4, local_window=4, gqa_pooling="per_query_head", model=None):
    import sparse_attn as sa

    m = copy.deepcopy(_tiny_hf_llama()) if model is None else model
    sa.swap_llama_attention(m, group_size=group_size, local_window=local_window,
                            gqa_pooling=gqa_pooling)  # fmt: skip
    with torch.no_grad():
        return m(input_ids).logits


def _hf_dense(input_ids):
    # SDPA, not eager: transformers' eager softmax runs in float32 even for a float64 model
    m = copy.deepcopy(_tiny_hf_llama())
    m.set_attn_implementation("sdpa")
    with torch.no_grad():
        return m(input_ids).logits


def _swap_entries() -> list[dict]:
    ids = torch.randint(0, 32, (2, 12), generator=torch.Generator().manual_seed(8))
    coords = torch.stack([torch.arange(6) // 3, torch.arange(6) % 3], 1)
    return [
        {"name": "Bag", "call": _bag, "kwargs": {},
         "params": {"features": {"bad": [torch.ones(6, 4, dtype=torch.long), torch.ones(6),
                                         torch.full((6, 4), float("nan")), np.ones((6, 4))]},
                    "coords": {"bad": [coords.double(), coords[:5], coords[:, :1], coords.tolist()]},
                    "label": {"bad": [-2, 1.5, True, "1"]},
                    "lesion": {"bad": [torch.ones(6), torch.ones(5, dtype=torch.bool)]}},
         "known": [{"kwargs": {"label": np.int64(1)}, "check": lambda r: type(r["label"]) is int
                    and r["n"] == 6, "why": "a numpy label is stored as an int; len = patches"}]},
        {"name": "fit_mil", "call": _fit, "kwargs": {},
         "params": {"epochs": {"type": "int", "bad": [0, 1.5], "good": 2},
                    "lr": {"type": "float", "bad": [0.0, float("inf"), "2e-4"], "good": 2e-4},
                    "weight_decay": {"type": "float", "bad": [-1e-4, float("nan")], "good": 1e-4},
                    "seed": {"type": "int", "bad": [-1], "good": 0},
                    "verbose": {"bad": ["yes"]},
                    "bags": {"bad": [[], _mil_bags()[0], [1, 2], _mil_bags(labels=(0, 2)),
                                     _mil_bags(labels=(0, -1))]},
                    "model": {"bad": ["abmil"]}},
         "known": [{"kwargs": {"epochs": 40, "lr": 3e-2},
                    "check": lambda r: r["curve"][-1] < r["curve"][0],
                    "why": "the training loss falls on separable bags"},
                   {"kwargs": {"seed": 1}, "check": lambda r: len(r["curve"]) == 2
                    and not torch.equal(r["w"], _initial_classifier()),
                    "why": "one loss per epoch; the weights move"}]},
        {"name": "swap_attention", "call": _swapped, "kwargs": {"input_ids": ids},
         "modules": lambda: [_tiny_lm()], "rows": [["input_ids"]], "order": "equivariant",
         "params": {"kind": {"type": "str", "bad": ["flash"]},
                    "layers": {"bad": ["0", [2], [True], [0, 0], [-1]]},
                    "group_size": {"type": "int", "bad": [0]},
                    "local_window": {"type": "int", "bad": [0]}},
         "grid": {"kind": ["dense", "sliding"], "layers": [[1]]},
         "known": [{"kwargs": {"input_ids": ids, "kind": "dense"},
                    "check": lambda r: r["n"] == 2 and torch.allclose(
                        r["logits"], _tiny_lm()(ids)[0].detach(), atol=1e-12),
                    "why": "swapping to dense reproduces the dense model"},
                   {"kwargs": {"input_ids": ids, "layers": [np.int64(1)]},
                    "check": lambda r: r["n"] == 1, "why": "numpy indices; one layer swapped"},
                   {"kwargs": {"input_ids": ids, "layers": [0, 5]}, "raises": ["layers"],
                    "check": None, "why": "an index past the last layer (layer 0 was swapped first)"}]},
        # no "rows": an empty batch fails in transformers' own projections, before CCA runs
        {"name": "swap_llama_attention", "call": _hf_swapped, "kwargs": {"input_ids": ids},
         "modules": lambda: [_tiny_hf_llama()],
         "params": {"group_size": {"type": "int", "bad": [0, 1.5]},
                    "local_window": {"type": "int", "bad": [0]},
                    "gqa_pooling": {"type": "str", "bad": ["mean"]},
                    "model": {"bad": ["llama", torch.nn.Linear(2, 2)]}},
         "grid": {"gqa_pooling": ["shared"]},
         "known": [{"kwargs": {"input_ids": ids, "local_window": 64},
                    "check": lambda y: torch.allclose(y, _hf_dense(ids), atol=1e-10),
                    "why": "a window over the whole sequence is dense attention"}]},
    ]  # fmt: skip
