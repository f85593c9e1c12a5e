"""Computational graph of a TinyViT or a TinyResNet (spec §2.1, GHN-3 style).

One node per operation of the forward pass: parametric ones (patch embedding, class token,
positional embedding, LayerNorms, qkv / projection / MLP linears, classifier and distillation heads)
and parameter-free ones (input, attention softmax, GELU, residual adds). Directed edges follow the
forward pass, residual edges included. The hypernetwork reads node types, a shape code of each
node's main parameter tensor and the matrix of shortest-path distances.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from learngene.cnn import ResNetSpec
from learngene.vit import ViTSpec

__all__ = ["NODE_TYPES", "ArchGraph", "arch_graph"]

#: node type vocabulary (index = type id)
NODE_TYPES = (
    "input",
    "patch_embed",
    "cls_token",
    "pos_embed",
    "ln",
    "qkv",
    "softmax",
    "proj",
    "add",
    "fc1",
    "gelu",
    "fc2",
    "head",
    "distill",
    # TinyResNet (appended so that ViT type ids are unchanged)
    "conv",
    "gn",
    "relu",
    "pool",
)
_T = {t: i for i, t in enumerate(NODE_TYPES)}


@dataclass(frozen=True)
class ArchGraph:
    """Graph of one architecture.

    Attributes
    ----------
    node_types : ndarray (N,) int64
        Index into ``NODE_TYPES``.
    shapes : ndarray (N, 4) int64
        Shape of the node's main parameter tensor, zero-padded (all zeros for parameter-free ops).
    dist : ndarray (N, N) uint8
        ``dist[i, j]`` = length of the shortest directed path i → j, 0 if none (or i == j),
        clipped at 255.
    param_names : tuple of tuple of str, length N
        Names (as in ``TinyViT.named_parameters``) of the tensors each node owns, weight first.
    edges : ndarray (E, 2) int64
        Directed edges (source, target).
    """

    node_types: np.ndarray
    shapes: np.ndarray
    dist: np.ndarray
    param_names: tuple
    edges: np.ndarray
    spec: ViTSpec | ResNetSpec

    @property
    def n_nodes(self) -> int:
        return len(self.node_types)


def arch_graph(
    spec: ViTSpec | ResNetSpec, n_classes: int = 64, distill_dim: int | None = 64
) -> ArchGraph:
    """Build the graph of ``TinyViT(spec, n_classes, distill_dim)`` (or of a ``TinyResNet``).

    Parameters
    ----------
    spec : ViTSpec or ResNetSpec
    n_classes : int
        Classifier rows as seen by the graph (the hypernetwork uses ``c_max``; rows beyond a task's
        class count are cropped away after prediction).
    distill_dim : int or None
        Output size of the distillation projection node (omitted when None).

    Returns
    -------
    ArchGraph
    """
    if not isinstance(spec, ViTSpec | ResNetSpec):
        raise TypeError(f"spec must be a ViTSpec or a ResNetSpec, got {type(spec).__name__}")
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 1:
        raise ValueError(f"n_classes must be a positive integer, got {n_classes!r}")
    types, shapes, names, edges = [], [], [], []

    def node(t, shape=(), params=(), inputs=()):
        i = len(types)
        types.append(_T[t])
        shapes.append(tuple(shape) + (0,) * (4 - len(shape)))
        names.append(tuple(params))
        edges.extend((j, i) for j in inputs)
        return i

    if isinstance(spec, ResNetSpec):
        _resnet_nodes(spec, n_classes, distill_dim, node)
    else:
        _vit_nodes(spec, n_classes, distill_dim, node)
    n = len(types)
    e = np.asarray(edges, np.int64)
    adj = csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    sp = shortest_path(adj, method="D", directed=True, unweighted=True)
    dist = np.where(np.isfinite(sp), np.minimum(sp, 255), 0).astype(np.uint8)
    return ArchGraph(
        np.asarray(types, np.int64), np.asarray(shapes, np.int64), dist, tuple(names), e, spec
    )


def _resnet_nodes(spec: ResNetSpec, n_classes, distill_dim, node) -> None:
    def conv_norm(prefix, conv, norm, c_in, c_out, k, x):
        x = node("conv", (c_out, c_in, k, k), (prefix + conv + ".weight",), [x])
        return node("gn", (c_out,), (prefix + norm + ".weight", prefix + norm + ".bias"), [x])

    x = node("input")
    c = spec.widths[0]
    x = node("relu", (), (), [conv_norm("", "stem_conv", "stem_norm", spec.in_chans, c, 3, x)])
    for s, (n, w) in enumerate(zip(spec.blocks, spec.widths, strict=True)):
        for b in range(n):
            p = f"stages.{s}.{b}."
            h = node("relu", (), (), [conv_norm(p, "conv1", "norm1", c, w, 3, x)])
            h = conv_norm(p, "conv2", "norm2", w, w, 3, h)
            short = x
            if (s > 0 and b == 0) or c != w:
                short = conv_norm(p, "down_conv", "down_norm", c, w, 1, x)
            x = node("relu", (), (), [node("add", (), (), [short, h])])
            c = w
    x = node("pool", (), (), [x])
    node("head", (n_classes, c), ("head.weight", "head.bias"), [x])
    if distill_dim is not None:
        node("distill", (distill_dim, c), ("distill_head.weight",), [x])


def _vit_nodes(spec: ViTSpec, n_classes, distill_dim, node) -> None:
    w, m = spec.width, spec.mlp_ratio * spec.width

    x = node("input")
    x = node(
        "patch_embed",
        (w, spec.in_chans * spec.patch**2),
        ("patch_embed.weight", "patch_embed.bias"),
        [x],
    )
    x = node("cls_token", (w,), ("cls_token",), [x])
    x = node("pos_embed", (spec.n_tokens, w), ("pos_embed",), [x])
    for b in range(spec.depth):
        p = f"blocks.{b}."
        h = node("ln", (w,), (p + "ln1.weight", p + "ln1.bias"), [x])
        qkv = (p + "qkv.weight", p + "qkv.bias") if spec.qkv_bias else (p + "qkv.weight",)
        h = node("qkv", (3 * w, w), qkv, [h])
        h = node("softmax", (), (), [h])
        h = node("proj", (w, w), (p + "proj.weight", p + "proj.bias"), [h])
        x = node("add", (), (), [x, h])
        h = node("ln", (w,), (p + "ln2.weight", p + "ln2.bias"), [x])
        h = node("fc1", (m, w), (p + "fc1.weight", p + "fc1.bias"), [h])
        h = node("gelu", (), (), [h])
        h = node("fc2", (w, m), (p + "fc2.weight", p + "fc2.bias"), [h])
        x = node("add", (), (), [x, h])
    x = node("ln", (w,), ("norm.weight", "norm.bias"), [x])
    node("head", (n_classes, w), ("head.weight", "head.bias"), [x])
    if distill_dim is not None:
        node("distill", (distill_dim, w), ("distill_head.weight",), [x])
