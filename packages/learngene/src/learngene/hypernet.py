"""Graph hypernetwork (GHN-3 / LoGAH style) with the task-specific FiLM layer of TAL.

Encoder: Graphormer layers over the architecture graph (spec §2.1-2.2); the first layer adds
in/out-degree and distance-from-input embeddings and uses forward/backward shortest-path distances
as an attention bias (as in GHN-3, later layers are plain transformer layers). Every layer has a
task-specific layer (TSL, TAL Eqs. 3-4): after the first LayerNorm,
``h <- (1 + W_g e + b_g) * LN(h) + (W_b e + b_b)``, zero-initialised so that a fresh TSL is the
identity. Decoder (LoGAH, as the reference code runs it): node state → MLP → (2r × r) → ReLU →
Linear(r → c_k) → re-viewed as (2c_k × r) → A (c_k × r), B (r × c_k) → W = A·B, cropped (or tiled,
for larger targets) to each tensor's shape, then post-processed: 2·sigmoid(0.5 p) for LayerNorm
weights, tanh(0.2 p) for biases, and for weights either GHN-3's fan-in rule or (default) timm's
initialisation scale with a learnable gain (see ``GraphHyperNetwork(scale=...)``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from learngene._validation import check_int
from learngene.graph import NODE_TYPES, ArchGraph

__all__ = [
    "GraphHyperNetwork",
    "GraphormerLayer",
    "TaskFiLM",
    "fit_to_shape",
    "postprocess_param",
    "shape_bucket",
]

_HIDDEN = {"patch_embed", "qkv", "proj", "fc1", "fc2", "conv"}
_NORMS = {"ln", "gn"}
_LINEAR = _HIDDEN | {"head", "distill"}
_TOKENS = {"cls_token", "pos_embed"}
_MAX_DEGREE, _MAX_DIST, _N_BUCKETS = 15, 255, 32


def shape_bucket(v):
    """Bucket a tensor dimension for the shape embedding: 0 → 0, else 1 + round(2·log2 v), ≤ 31."""
    v = np.asarray(v, np.float64)
    out = np.where(v > 0, 1 + np.round(2 * np.log2(np.maximum(v, 1))), 0)
    return np.minimum(out, _N_BUCKETS - 1).astype(np.int64)


def fit_to_shape(block: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Crop a predicted block to ``shape``; tile it (repeat, then crop) where ``shape`` is larger.

    Parameters
    ----------
    block : Tensor of shape (c,) or (c, c)
    shape : tuple of 1 or 2 ints, same rank as ``block``

    Returns
    -------
    Tensor of shape ``shape``
    """
    if block.dim() != len(shape):
        raise ValueError(f"block rank {block.dim()} does not match shape {shape}")
    reps = [max(1, math.ceil(s / b)) for s, b in zip(shape, block.shape, strict=True)]
    if any(r > 1 for r in reps):
        warnings.warn(
            "a target tensor is larger than max_shape: the predicted block is tiled (flexible "
            "scale, GHN-3)",
            stacklevel=2,
        )
        block = block.repeat(*reps)
    return block[tuple(slice(0, s) for s in shape)]


def postprocess_param(raw: torch.Tensor, node_type: str, role: str, gain=None) -> torch.Tensor:
    """Parameter normalisation for one predicted tensor.

    Parameters
    ----------
    raw : Tensor
        Cropped raw prediction.
    node_type : str
        One of ``NODE_TYPES``.
    role : {"weight", "bias"}
    gain : Tensor (scalar) or None
        None: GHN-3's rule, ``W·√(2/fan_in)`` for every 2-D weight, class and positional tokens
        unchanged. A gain: hidden weights and tokens are brought to unit RMS and multiplied by it
        (``scale="timm"``), and their biases ``tanh(0.2 p)`` are multiplied by it too; the
        classifier and distillation heads keep the fan-in rule.
    Norm-layer weights are ``2·sigmoid(0.5 p)`` and biases ``tanh(0.2 p)`` otherwise.
    """
    if role == "bias":
        b = torch.tanh(0.2 * raw)
        # with timm-scale weights, O(0.1) biases would swamp the input-dependent signal; they are
        # scaled by the same gain (timm initialises them at zero)
        return b * gain if gain is not None and node_type in _HIDDEN else b
    if node_type in _NORMS:
        return 2.0 * torch.sigmoid(0.5 * raw)
    if gain is not None and (node_type in _HIDDEN or node_type in _TOKENS):
        return raw / (raw.pow(2).mean().sqrt() + 1e-8) * gain
    if node_type in _LINEAR:
        return raw * math.sqrt(2.0 / raw.shape[1])  # β = 2 for every 2-D weight
    return raw  # class token, positional embedding


class TaskFiLM(nn.Module):
    """Task-specific layer: ``(1 + γ(e)) ⊙ h + β(e)`` with γ, β linear in e, zero-initialised."""

    def __init__(self, task_dim: int, dim: int):
        super().__init__()
        self.fc_gamma = nn.Linear(task_dim, dim)
        self.fc_beta = nn.Linear(task_dim, dim)
        for p in self.parameters():
            nn.init.zeros_(p)

    def forward(self, h: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        return (1.0 + self.fc_gamma(e)) * h + self.fc_beta(e)


class GraphormerLayer(nn.Module):
    """Pre-LN transformer layer over nodes, with an optional TSL after the first LayerNorm."""

    def __init__(self, dim: int, heads: int, task_dim: int | None, mlp_ratio: int = 2):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.tsl = None if task_dim is None else TaskFiLM(task_dim, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(
            nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim)
        )

    def forward(self, x, bias=None, task_emb=None):
        N, C = x.shape
        h = self.ln1(x)
        if task_emb is not None and self.tsl is not None:
            h = self.tsl(h, task_emb)
        q, k, v = self.qkv(h).view(N, 3, self.heads, C // self.heads).permute(1, 2, 0, 3)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + self.out(a.transpose(0, 1).reshape(N, C))
        return x + self.ff(self.ln2(x))


class GraphHyperNetwork(nn.Module):
    """Predict every parameter of a TinyViT or TinyResNet from its graph (and, with a TSL, a task
    embedding).

    Parameters
    ----------
    hid : int
        Node state width.
    layers, heads : int
        Graphormer depth and heads (``hid % heads == 0``).
    lora_r : int
        Rank r of the LoRA-style decoder.
    max_shape : int
        Side c_k of the predicted blocks; larger tensors are tiled.
    task_dim : int or None
        Task embedding size; None builds no TSLs (plain GHN).
    scale : {"timm", "fan_in"}
        "fan_in": GHN-3's rule (hidden weights ``W·√(2/fan_in)``). "timm" (default): hidden
        weights and tokens at unit RMS times a learnable per-node-type gain that starts at 0.02,
        timm's ViT initialisation scale (see ``postprocess_param``).
    """

    def __init__(
        self, hid=64, layers=3, heads=4, lora_r=16, max_shape=256, task_dim=64, scale="timm"
    ):
        super().__init__()
        hid, layers, heads = (
            check_int(hid, "hid", 1),
            check_int(layers, "layers", 1),
            check_int(heads, "heads", 1),
        )
        lora_r, max_shape = check_int(lora_r, "lora_r", 1), check_int(max_shape, "max_shape", 1)
        if task_dim is not None:
            task_dim = check_int(task_dim, "task_dim", 1)
        if hid % heads:
            raise ValueError(f"hid ({hid}) must be divisible by heads ({heads})")
        if scale not in ("timm", "fan_in"):
            raise ValueError(f"scale must be 'timm' or 'fan_in', got {scale!r}")
        self.scale = scale
        self.log_gain = nn.Parameter(torch.full((len(NODE_TYPES),), math.log(0.02)))
        self.hid, self.heads, self.lora_r, self.max_shape, self.task_dim = (
            hid,
            heads,
            lora_r,
            max_shape,
            task_dim,
        )
        self.type_embed = nn.Embedding(len(NODE_TYPES), hid)
        self.shape_embed = nn.ModuleList(nn.Embedding(_N_BUCKETS, hid) for _ in range(4))
        self.deg_in = nn.Embedding(_MAX_DEGREE + 1, hid)
        self.deg_out = nn.Embedding(_MAX_DEGREE + 1, hid)
        self.input_dist = nn.Embedding(_MAX_DIST + 1, hid)
        self.edge_fwd = nn.Embedding(_MAX_DIST + 1, heads)
        self.edge_bwd = nn.Embedding(_MAX_DIST + 1, heads)
        self.layers = nn.ModuleList(GraphormerLayer(hid, heads, task_dim) for _ in range(layers))
        self.ln_out = nn.LayerNorm(hid)
        self.mat_mlp = nn.Sequential(
            nn.Linear(hid, 2 * hid), nn.ReLU(), nn.Linear(2 * hid, 2 * lora_r * lora_r)
        )
        self.lora_out = nn.Linear(lora_r, max_shape)
        self.vec_mlp = nn.Sequential(
            nn.Linear(hid, 2 * hid), nn.ReLU(), nn.Linear(2 * hid, 2 * max_shape)
        )
        self._cache: dict = {}

    # ------------------------------------------------------------------ graph → tensors
    def _graph_tensors(self, g: ArchGraph):
        dev = self.type_embed.weight.device  # the graph's tensors go where the network is
        key = (id(g), str(dev))
        hit = self._cache.get(key)
        if hit is not None and hit[0] is g:
            return hit[1]
        d = torch.from_numpy(g.dist.astype(np.int64)).to(dev)
        one_hop = (d == 1).long()
        t = dict(
            types=torch.from_numpy(g.node_types).to(dev),
            buckets=torch.from_numpy(shape_bucket(g.shapes)).to(dev),
            deg_in=one_hop.sum(0).clamp(max=_MAX_DEGREE),
            deg_out=one_hop.sum(1).clamp(max=_MAX_DEGREE),
            from_input=d[0].clamp(max=_MAX_DIST),
            dist=d,
        )
        if len(self._cache) > 512:
            self._cache.clear()
        self._cache[key] = (g, t)
        return t

    def encode(self, g: ArchGraph, task_emb: torch.Tensor | None = None) -> torch.Tensor:
        """Node states (N, hid) after the encoder (the learngene's output)."""
        if not isinstance(g, ArchGraph):
            raise TypeError(f"g must be an ArchGraph (arch_graph(spec)), got {type(g).__name__}")
        if task_emb is not None:
            if self.task_dim is None:
                raise ValueError("task_emb: this hypernetwork has no task layers (task_dim=None)")
            if not isinstance(task_emb, torch.Tensor) or not task_emb.is_floating_point():
                raise TypeError("task_emb must be a float tensor of shape (task_dim,)")
            if tuple(task_emb.shape) != (self.task_dim,) or not bool(
                torch.isfinite(task_emb).all()
            ):
                raise ValueError(f"task_emb must be a finite ({self.task_dim},) tensor, got "
                                 f"{tuple(task_emb.shape)}")  # fmt: skip
        t = self._graph_tensors(g)
        x = self.type_embed(t["types"])
        for k, emb in enumerate(self.shape_embed):
            x = x + emb(t["buckets"][:, k])
        x = (
            x
            + self.deg_in(t["deg_in"])
            + self.deg_out(t["deg_out"])
            + self.input_dist(t["from_input"])
        )
        bias = (self.edge_fwd(t["dist"]) + self.edge_bwd(t["dist"].T)).permute(2, 0, 1)
        for i, layer in enumerate(self.layers):
            x = layer(x, bias if i == 0 else None, task_emb)
        return self.ln_out(x)

    # ------------------------------------------------------------------ decoding
    def forward(
        self, g: ArchGraph, task_emb: torch.Tensor | None = None, n_classes: int | None = None
    ):
        """Predicted parameters ``{name: tensor}`` with the shapes of ``TinyViT(g.spec, ...)``.

        ``n_classes`` crops the head to that many rows (default: the graph's head rows).
        """
        if n_classes is not None:
            n_classes = check_int(n_classes, "n_classes", 1)
        h = self.encode(g, task_emb)
        r, ck = self.lora_r, self.max_shape
        mat_nodes = [i for i, s in enumerate(g.shapes) if s[1] > 0]
        vec_nodes = [i for i, p in enumerate(g.param_names) if p]
        out = self.lora_out(F.relu(self.mat_mlp(h[mat_nodes]).view(-1, 2 * r, r)))  # (M, 2r, ck)
        # re-view (2r, ck) as (2ck, r) as the reference decoder does (a reshape, not a transpose):
        # A and B then do not share one r-dimensional column space across nodes
        out = out.reshape(-1, 2 * ck, r)
        mats = out[:, :ck] @ out[:, ck:].transpose(1, 2)  # (M, ck, ck)
        vecs = self.vec_mlp(h[vec_nodes]).view(-1, 2, ck)
        mat_of = dict(zip(mat_nodes, mats, strict=True))
        vec_of = dict(zip(vec_nodes, vecs, strict=True))
        params: dict[str, torch.Tensor] = {}
        for i, names in enumerate(g.param_names):
            if not names:
                continue
            t = NODE_TYPES[g.node_types[i]]
            shape = tuple(int(s) for s in g.shapes[i] if s > 0)
            if t == "head" and n_classes is not None:
                shape = (n_classes, shape[1])
            gain = self.log_gain[g.node_types[i]].exp() if self.scale == "timm" else None
            block = mat_of[i] if len(shape) >= 2 else vec_of[i][0]
            # a convolution kernel (out, in, k, k) is decoded as its (out, in·k·k) matrix view
            flat = shape if len(shape) < 3 else (shape[0], math.prod(shape[1:]))
            w = postprocess_param(fit_to_shape(block, flat), t, "weight", gain).reshape(shape)
            if t == "cls_token":
                w = w.view(1, 1, -1)
            elif t == "pos_embed":
                w = w.unsqueeze(0)
            params[names[0]] = w
            if len(names) > 1:  # bias, one per output row
                params[names[1]] = postprocess_param(
                    fit_to_shape(vec_of[i][1], shape[:1]), t, "bias", gain
                )
        return params
