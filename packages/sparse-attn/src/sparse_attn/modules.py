"""``nn.Module`` drop-ins: causal self-attention with a swappable kernel, and Querent attention."""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

from sparse_attn.baselines import dense_attention, sink_window_attention, sliding_window_attention
from sparse_attn.cache import CCAKVCache, DenseKVCache, KVCache, SinkWindowKVCache
from sparse_attn.cca import cca_attention
from sparse_attn.region import RegionScoreEstimator, region_attention
from sparse_attn.validation import check_positive_int

__all__ = [
    "KERNELS",
    "CCAAttention",
    "QuerentAttention",
    "SelfAttention",
    "apply_rope",
    "check_kernel",
    "make_cache",
]

# kernel kind -> its hyper-parameters and defaults
KERNELS: dict[str, dict[str, int]] = {
    "dense": {},
    "cca": {"group_size": 16, "local_window": 1024},
    "sliding": {"window": 1024},
    "sink": {"num_sink": 4, "window": 1024},
}


def check_kernel(kind: str, options: dict) -> dict[str, int]:
    """Validate an attention kernel ``kind`` and its options; return the full option dict.

    Parameters
    ----------
    kind : {"dense", "cca", "sliding", "sink"}
        Kernel.
    options : dict
        Hyper-parameters (see :data:`KERNELS`); missing ones take the defaults.

    Returns
    -------
    dict
        Options with defaults filled in.
    """
    if kind not in KERNELS:
        raise ValueError(f"kind must be one of {sorted(KERNELS)}, got {kind!r}")
    unknown = set(options) - set(KERNELS[kind])
    if unknown:
        raise ValueError(f"unknown options for kind={kind!r}: {sorted(unknown)}")
    full = {**KERNELS[kind], **options}
    for name, value in full.items():
        if name == "num_sink":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"num_sink must be an int >= 0, got {value!r}")
        else:
            check_positive_int(value, name)
    return full


def make_cache(kind: str, options: dict, num_layers: int) -> KVCache:
    """The KV cache class matching an attention kernel."""
    opts = check_kernel(kind, options)
    if kind == "cca":
        return CCAKVCache(num_layers, opts["group_size"], opts["local_window"])
    if kind == "sliding":
        return SinkWindowKVCache(num_layers, num_sink=0, window=opts["window"])
    if kind == "sink":
        return SinkWindowKVCache(num_layers, num_sink=opts["num_sink"], window=opts["window"])
    return DenseKVCache(num_layers)


def apply_rope(x: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (rotate-half convention) of x (B, H, L, D) at ``positions`` (L,)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {getattr(x, 'dtype', type(x))}")
    if x.ndim != 4 or x.numel() == 0 or x.shape[-1] % 2:
        raise ValueError(
            f"x must be a non-empty (B, H, L, D) tensor with even D, got {tuple(x.shape)}"
        )
    if not isinstance(positions, torch.Tensor) or positions.shape != (x.shape[2],):
        raise ValueError(
            f"positions must be a ({x.shape[2]},) tensor, got {getattr(positions, 'shape', None)}"
        )
    if (
        isinstance(theta, bool)
        or not isinstance(theta, numbers.Real)
        or not (math.isfinite(theta) and theta > 0)
    ):
        raise ValueError(f"theta must be a finite number > 0, got {theta!r}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x contains NaN or inf")
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    ang = positions.to(torch.float32)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], dim=-1).to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], dim=-1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class SelfAttention(nn.Module):
    """Llama-style causal self-attention (GQA, RoPE) whose kernel can be swapped.

    Parameters
    ----------
    hidden_size : int
        Model width.
    num_heads : int
        Query heads.
    num_kv_heads : int, optional
        Key/value heads (default ``num_heads``); must divide ``num_heads``.
    head_dim : int, optional
        Default ``hidden_size // num_heads``.
    kind : {"dense", "cca", "sliding", "sink"}, default="dense"
        Attention kernel.
    rope_theta : float, default=10000.0
        RoPE base.
    bias : bool, default=False
        Bias in the projections.
    layer_idx : int, default=0
        Index of this layer in a shared :class:`~sparse_attn.cache.KVCache`.
    **options
        Kernel hyper-parameters (``group_size``, ``local_window``, ``window``, ``num_sink``).
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        head_dim: int | None = None,
        *,
        kind: str = "dense",
        rope_theta: float = 10000.0,
        bias: bool = False,
        layer_idx: int = 0,
        **options: int,
    ) -> None:
        super().__init__()
        check_positive_int(hidden_size, "hidden_size")
        check_positive_int(num_heads, "num_heads")
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        check_positive_int(num_kv_heads, "num_kv_heads")
        if num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
        head_dim = hidden_size // num_heads if head_dim is None else head_dim
        check_positive_int(head_dim, "head_dim")
        if head_dim % 2:
            raise ValueError(f"head_dim must be even for RoPE, got {head_dim}")
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.rope_theta, self.layer_idx = rope_theta, layer_idx
        self.q_proj = nn.Linear(hidden_size, num_heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(num_heads * head_dim, hidden_size, bias=bias)
        self.set_kernel(kind, **options)

    def set_kernel(self, kind: str, **options: int) -> None:
        """Swap the attention kernel in place (weights untouched)."""
        self.options = check_kernel(kind, options)
        self.kind = kind

    def kernel(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Apply the configured kernel to position-encoded q (B, Hq, L, D), k, v (B, Hkv, L, D)."""
        o = self.options
        if self.kind == "cca":
            return cca_attention(
                q, k, v, enable_gqa=True, group_size=o["group_size"], local_window=o["local_window"]
            )
        if self.kind == "sliding":
            return sliding_window_attention(q, k, v, o["window"], enable_gqa=True)
        if self.kind == "sink":
            return sink_window_attention(
                q, k, v, num_sink=o["num_sink"], window=o["window"], enable_gqa=True
            )
        return dense_attention(q, k, v, is_causal=True, enable_gqa=True)

    def forward(
        self,
        x: torch.Tensor,
        position_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
        use_cache: bool = False,
    ) -> tuple[torch.Tensor, KVCache | None]:
        """Self-attention over x (B, L, hidden).

        Parameters
        ----------
        x : torch.Tensor
            (B, L, hidden_size).
        position_ids : torch.Tensor, optional
            (L,) absolute positions; default: tokens this layer has already cached
            (``cache.layers[layer_idx].seen``) + ``arange(L)``.
        cache : KVCache, optional
            Decode cache (layer ``self.layer_idx``); created when ``use_cache`` and None.
        use_cache : bool, default=False
            Return an updated cache.

        Returns
        -------
        y : torch.Tensor
            (B, L, hidden_size).
        cache : KVCache or None
        """
        if not isinstance(x, torch.Tensor) or x.ndim != 3:
            raise ValueError(f"x must have shape (B, L, hidden), got {getattr(x, 'shape', x)}")
        if not x.is_floating_point():
            raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
        if x.shape[-1] != self.q_proj.in_features or x.numel() == 0:
            raise ValueError(
                f"x must be a non-empty (B, L, {self.q_proj.in_features}) tensor, got {tuple(x.shape)}"
            )
        if not torch.isfinite(x).all():
            raise ValueError("x contains NaN or inf")
        x = x.to(self.q_proj.weight.dtype)  # e.g. float16 activations into a float32 layer
        bsz, length, _ = x.shape
        if use_cache and cache is None:
            cache = make_cache(self.kind, self.options, self.layer_idx + 1)
        if position_ids is None:
            start = cache.layers[self.layer_idx].seen if cache is not None else 0
            position_ids = torch.arange(start, start + length, device=x.device)
        q = self.q_proj(x).view(bsz, length, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, length, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, length, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q = apply_rope(q, position_ids, self.rope_theta)
        k = apply_rope(k, position_ids, self.rope_theta)
        if cache is not None:
            out = cache.attend(self.layer_idx, q, k, v)
        else:
            out = self.kernel(q, k, v)
        y = self.o_proj(out.transpose(1, 2).reshape(bsz, length, -1))
        return y, cache


class CCAAttention(SelfAttention):
    """Causal self-attention with the CCA kernel (paper Sec. 3), a drop-in for Llama attention.

    Parameters
    ----------
    hidden_size, num_heads, num_kv_heads, head_dim : int
        As :class:`SelfAttention`.
    group_size : int, default=16
        g.
    local_window : int, default=1024
        s.
    rope_theta : float, default=10000.0
        RoPE base.
    bias : bool, default=False
        Projection bias.
    layer_idx : int, default=0
        Layer index in a shared cache.
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        head_dim: int | None = None,
        group_size: int = 16,
        local_window: int = 1024,
        rope_theta: float = 10000.0,
        bias: bool = False,
        layer_idx: int = 0,
    ) -> None:
        super().__init__(
            hidden_size,
            num_heads,
            num_kv_heads,
            head_dim,
            kind="cca",
            rope_theta=rope_theta,
            bias=bias,
            layer_idx=layer_idx,
            group_size=group_size,
            local_window=local_window,
        )


class QuerentAttention(nn.Module):
    """Bidirectional multi-head attention over each query's top-k regions (Querent-style).

    Parameters
    ----------
    dim : int
        Token width.
    num_heads : int
        Heads (``dim`` must be divisible by it).
    region_size : int, default=64
        Contiguous tokens per region when no ``region_ids`` are passed.
    top_k : int, default=8
        Regions attended per query.
    score : {"minmax_bound", "learned", "random"}, default="minmax_bound"
        Region importance estimate.
    proj_dim : int, default=32
        Width of the learned estimator (``score="learned"``).
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        region_size: int = 64,
        top_k: int = 8,
        score: str = "minmax_bound",
        proj_dim: int = 32,
    ) -> None:
        super().__init__()
        check_positive_int(dim, "dim")
        check_positive_int(num_heads, "num_heads")
        if dim % num_heads:
            raise ValueError(f"dim={dim} must be divisible by num_heads={num_heads}")
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.region_size = check_positive_int(region_size, "region_size")
        self.top_k = check_positive_int(top_k, "top_k")
        if score not in ("minmax_bound", "learned", "random"):
            raise ValueError(f"score must be 'minmax_bound', 'learned' or 'random', got {score!r}")
        self.score = score
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.estimator = (
            RegionScoreEstimator(self.head_dim, proj_dim) if score == "learned" else None
        )
        self.scale = 1.0 / math.sqrt(self.head_dim)

    def forward(self, x: torch.Tensor, region_ids: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, N, dim) -> (B, N, dim); ``region_ids`` (N,) optional region of each token."""
        if not isinstance(x, torch.Tensor) or x.ndim != 3:
            raise ValueError(f"x must have shape (B, N, dim), got {getattr(x, 'shape', x)}")
        bsz, n, _ = x.shape
        qkv = self.qkv(x).view(bsz, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = region_attention(
            qkv[0],
            qkv[1],
            qkv[2],
            region_size=self.region_size,
            top_k=self.top_k,
            region_ids=region_ids,
            score=self.score,
            estimator=self.estimator,
        )
        return self.proj(out.transpose(1, 2).reshape(bsz, n, -1))
