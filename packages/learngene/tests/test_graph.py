from collections import deque

import numpy as np
import pytest

from learngene.graph import NODE_TYPES, arch_graph
from learngene.vit import TinyViT, ViTSpace, ViTSpec


def _bfs(n, edges, src):
    adj = [[] for _ in range(n)]
    for a, b in edges:
        adj[a].append(b)
    d = [0] * n
    seen = {src}
    q = deque([src])
    while q:
        u = q.popleft()
        for v in adj[u]:
            if v not in seen:
                seen.add(v)
                d[v] = d[u] + 1
                q.append(v)
    return d


@pytest.mark.parametrize("seed", range(4))
def test_graph_matches_module(seed):
    spec = ViTSpace(depth=(1, 5), width=(32, 48, 96), heads=(2, 4)).sample(1, seed=seed)[0]
    n_classes = 7
    net = TinyViT(spec, n_classes, distill_dim=12)
    g = arch_graph(spec, n_classes, 12)
    params = dict(net.named_parameters())
    owned = [n for names in g.param_names for n in names]
    assert sorted(owned) == sorted(params)  # every tensor maps to exactly one node
    assert len(owned) == len(set(owned))
    assert g.n_nodes == 4 + 10 * spec.depth + 3
    for i, names in enumerate(g.param_names):
        if names:
            main = (
                tuple(params[names[0]].squeeze(0).shape)
                if NODE_TYPES[g.node_types[i]] == "pos_embed"
                else tuple(params[names[0]].shape)
            )
            if NODE_TYPES[g.node_types[i]] == "cls_token":
                main = (spec.width,)
            assert tuple(s for s in g.shapes[i] if s > 0) == main
    n_params = sum(p.numel() for p in params.values())
    assert n_params == sum(params[n].numel() for n in owned)


def test_distances_are_bfs_and_topological():
    spec = ViTSpec(3, 32, 2)
    g = arch_graph(spec, 10, None)
    assert g.dist.dtype == np.uint8
    for s in range(g.n_nodes):
        np.testing.assert_array_equal(g.dist[s], _bfs(g.n_nodes, g.edges, s))
    # nodes are numbered in a topological order: paths only go forward
    i, j = np.nonzero(g.dist)
    assert np.all(i < j)
    assert np.all(g.edges[:, 0] < g.edges[:, 1])
    # residual edges: the block input feeds both its LayerNorm and its residual add
    assert (g.dist[0] > 0).sum() == g.n_nodes - 1
    assert "distill" not in [NODE_TYPES[t] for t in g.node_types]


def test_spec_and_graph_bad_input():
    with pytest.raises(ValueError, match="divisible by heads"):
        ViTSpec(2, 30, 4)
    with pytest.raises(ValueError, match="divisible by patch"):
        ViTSpec(2, 32, 4, patch=5)
    with pytest.raises(ValueError, match="depth"):
        ViTSpec(0, 32, 4)
    with pytest.raises(TypeError, match="width"):
        ViTSpec(2, 32.0, 4)
    with pytest.raises(TypeError, match="spec"):
        arch_graph("vit")
    with pytest.raises(ValueError, match="n_classes"):
        arch_graph(ViTSpec(1, 32, 2), 0)
    with pytest.raises(ValueError, match="depth"):
        ViTSpace(depth=(3, 1))


def test_space_split_and_sample():
    space = ViTSpace()
    assert len(space) == 4 * 4 * 2
    train, held = space.split(5, seed=0)
    assert len(held) == 5 and not set(train) & set(held) and len(train) + 5 == len(space)
    assert space.sample(3, seed=1) == space.sample(3, seed=1)


def test_vit_forward_shapes_and_bad_input():
    import torch

    net = TinyViT(ViTSpec(2, 32, 4), 5, distill_dim=8, head_hidden=16)
    x = torch.rand(3, 1, 16, 16)
    logits, feat = net(x, return_features=True)
    assert logits.shape == (3, 5) and feat.shape == (3, 32)
    assert net.head_features(feat).shape == (3, 16)
    with pytest.raises(ValueError, match="x must have shape"):
        net(torch.rand(3, 1, 12, 12))
    with pytest.raises(TypeError, match="spec"):
        TinyViT((2, 32, 4), 5)
