"""Core Context Aware (CCA) attention (Chen et al., ICML 2025), causal.

Paper Sec. 3.1 (globality-aware pooling, Eq. 1), Sec. 3.2 (locality-preserving module,
Eqs. 2-3) and Sec. 3.3 (differentiable fusion, Eq. 4): every complete group of ``g`` old
tokens is pooled into one *core token* with weights given by the group's last query; a query
at position ``t`` attends with ONE softmax over the core tokens of the groups that lie wholly
before its local window and the raw tokens of that window. Each past token is represented
exactly once (raw, or inside one visible core token).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.profiler import record_function

from sparse_attn.blocksparse import blocksparse_cca
from sparse_attn.flex import flex_available, flex_cca
from sparse_attn.validation import check_positive_int, check_qkv, expand_kv, softmax_hp

__all__ = [
    "CCAStats",
    "cca_attention",
    "cca_core_tokens",
    "cca_num_visible_cores",
    "cca_stats",
    "cca_visibility",
]


@dataclass(frozen=True)
class CCAStats:
    """Work done by one CCA forward (per batch element and head).

    Attributes
    ----------
    num_core : int
        Core tokens formed, ``m = max(0, (L - s) // g)``.
    visible_pairs : int
        Scored (query, key) pairs, ``sum_t n(t) + w(t)``.
    dense_pairs : int
        Pairs scored by dense causal attention, ``L (L + 1) / 2``.
    max_window : int
        Longest raw window any query sees.
    """

    num_core: int
    visible_pairs: int
    dense_pairs: int
    max_window: int


def _num_core(length: int, group_size: int, local_window: int) -> int:
    return max(0, (length - local_window) // group_size)


def _n_visible(t: int, group_size: int, local_window: int, num_core: int) -> int:
    # Core tokens visible to the query at 0-indexed position t (spec Step 3).
    return min(num_core, max(0, (t + 1 - local_window) // group_size))


def cca_num_visible_cores(
    length: int, group_size: int, local_window: int, *, device: torch.device | None = None
) -> torch.Tensor:
    """Number of core tokens visible to each query, ``n(t)`` for ``t < length``.

    Parameters
    ----------
    length : int
        Sequence length L.
    group_size, local_window : int
        Group size g and local window s.
    device : torch.device, optional
        Device of the result.

    Returns
    -------
    torch.Tensor
        Long tensor of shape (L,).
    """
    length = check_positive_int(length, "length")
    group_size = check_positive_int(group_size, "group_size")
    local_window = check_positive_int(local_window, "local_window")
    m = _num_core(length, group_size, local_window)
    t = torch.arange(length, device=device)
    return torch.div(t + 1 - local_window, group_size, rounding_mode="floor").clamp(0, m)


def cca_visibility(
    length: int, group_size: int, local_window: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean visibility of core tokens and raw tokens for every query.

    Parameters
    ----------
    length : int
        Sequence length L.
    group_size : int
        Group size g >= 1.
    local_window : int
        Local window s >= 1.

    Returns
    -------
    core_visible : torch.Tensor
        Bool (L, m): query t sees core token j.
    raw_visible : torch.Tensor
        Bool (L, L): query t sees raw token u.
    """
    check_positive_int(length, "length")
    group_size = check_positive_int(group_size, "group_size")
    local_window = check_positive_int(local_window, "local_window")
    m = _num_core(length, group_size, local_window)
    n = cca_num_visible_cores(length, group_size, local_window)
    t = torch.arange(length)
    core_visible = torch.arange(m)[None, :] < n[:, None]
    u = torch.arange(length)[None, :]
    raw_visible = (u >= (n * group_size)[:, None]) & (u <= t[:, None])
    return core_visible, raw_visible


def cca_core_tokens(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    group_size: int = 16,
    num_groups: int | None = None,
    pool_scale: float | None = None,
    shared_heads: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Globality-aware pooling (paper Eq. 1): one core key/value per group of ``g`` tokens.

    For group j with last position e = j g + g - 1, weights a = softmax(pool_scale q_e k_G^T)
    over the g keys of the group; the core key/value are the a-weighted sums of the group's
    keys/values.

    Parameters
    ----------
    q : torch.Tensor
        Queries (B, H, L, D); only the last query of each group is used.
    k, v : torch.Tensor
        Keys (B, H or H / shared_heads, L, D) and values (..., L, Dv).
    group_size : int, default=16
        Group size g.
    num_groups : int, optional
        Groups to pool (default all complete groups, ``L // g``).
    pool_scale : float, optional
        Temperature of the pooling softmax, default ``1 / sqrt(D)``.
    shared_heads : int, default=1
        If > 1, ``k``/``v`` have H / shared_heads heads and the pooling logits of each block of
        ``shared_heads`` query heads are averaged, so core tokens stay per key/value head.

    Returns
    -------
    core_k : torch.Tensor
        (B, Hk, num_groups, D).
    core_v : torch.Tensor
        (B, Hk, num_groups, Dv).
    """
    g = check_positive_int(group_size, "group_size")
    r = check_positive_int(shared_heads, "shared_heads")
    check_qkv(q, k, v, enable_gqa=True)
    if q.shape[1] != k.shape[1] * r:
        raise ValueError(
            f"q: {q.shape[1]} heads, but k has {k.shape[1]} with shared_heads={r} "
            f"(expected {k.shape[1] * r})"
        )
    if pool_scale is not None and not (isinstance(pool_scale, int | float)
                                       and math.isfinite(pool_scale)):  # fmt: skip
        raise ValueError(f"pool_scale must be a finite number, got {pool_scale!r}")
    length = k.shape[-2]
    m = length // g if num_groups is None else num_groups
    if isinstance(m, bool) or not isinstance(m, int) or m < 0 or m * g > length:
        raise ValueError(f"num_groups={num_groups} needs more than {length} tokens")
    scale = 1.0 / math.sqrt(q.shape[-1]) if pool_scale is None else pool_scale
    q_last = q[..., g - 1 : m * g : g, :]  # (B, H, m, D): the last query of each group
    lead, hk, d = k.shape[:-3], k.shape[-3], k.shape[-1]
    kf = k.reshape(-1, length, d)  # (B * Hk, L, D): views for contiguous inputs
    vf = v.reshape(-1, length, v.shape[-1])
    qf = q_last.reshape(kf.shape[0], shared_heads, m, q.shape[-1])  # (B * Hk, r, m, D)
    cks, cvs = [], []
    # one (key/value head) at a time: k[:m g].view(m, g, D) is then a free view, where a
    # batched product over all heads would copy k and v (the heads are not adjacent)
    for i in range(kf.shape[0]):
        kg = kf[i, : m * g].view(m, g, d)
        vg = vf[i, : m * g].view(m, g, vf.shape[-1])
        logits = (kg @ qf[i].permute(1, 2, 0)).mean(dim=-1) * scale  # (m, g), mean over r
        weights = softmax_hp(logits).to(k.dtype).unsqueeze(-2)  # (m, 1, g)
        cks.append((weights @ kg).squeeze(-2))
        cvs.append((weights @ vg).squeeze(-2))
    core_k = torch.stack(cks).reshape(*lead, hk, m, d)
    core_v = torch.stack(cvs).reshape(*lead, hk, m, vf.shape[-1])
    return core_k, core_v


def _chunk_mask(
    a: int,
    b: int,
    n_a: int,
    n_b: int,
    group_size: int,
    local_window: int,
    num_core: int,
    core_bias: float | None,
    dtype: torch.dtype,
    device: torch.device,
    overlap: int = 0,
) -> torch.Tensor:
    """Mask for queries [a, b) over keys [cores 0..n_b-1 ; raw n_a*g - overlap .. b-1]."""
    t = torch.arange(a, b, device=device)
    n = torch.div(t + 1 - local_window, group_size, rounding_mode="floor").clamp(0, num_core)
    core_vis = torch.arange(n_b, device=device)[None, :] < n[:, None]
    lo = n * group_size - (overlap * (n > 0))  # "paper" rule also keeps token n g - 1
    u = torch.arange(max(0, n_a * group_size - overlap), b, device=device)[None, :]
    raw_vis = (u >= lo[:, None]) & (u <= t[:, None])
    if core_bias is None:
        return torch.cat([core_vis, raw_vis], dim=1)
    neg = torch.tensor(float("-inf"), dtype=dtype, device=device)
    core = torch.where(core_vis, torch.tensor(core_bias, dtype=dtype, device=device), neg)
    raw = torch.where(raw_vis, torch.zeros((), dtype=dtype, device=device), neg)
    return torch.cat([core, raw], dim=1)


def cca_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = True,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    group_size: int = 16,
    local_window: int = 1024,
    pool_scale: float | None = None,
    core_bias: str | None = None,
    gqa_pooling: str = "per_query_head",
    backend: str = "auto",
    chunk_size: int | None = None,
    window_rule: str = "partition",
    return_stats: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, CCAStats]:
    """Causal CCA-Attention, shaped like ``F.scaled_dot_product_attention``.

    Parameters
    ----------
    q : torch.Tensor
        Queries (B, Hq, L, D), already position-encoded (RoPE applied), like SDPA.
    k, v : torch.Tensor
        Keys (B, Hkv, L, D) and values (B, Hkv, L, Dv).
    attn_mask : None
        Not supported (padding breaks group alignment); must be None.
    dropout_p : float, default=0.0
        Must be 0.
    is_causal : bool, default=True
        CCA is defined for causal attention only; False raises.
    scale : float, optional
        Softmax scale, default ``1 / sqrt(D)``.
    enable_gqa : bool, default=False
        Allow Hq to be a multiple of Hkv.
    group_size : int, default=16
        Tokens per core token, g (paper default 16). L need not be a multiple of g.
    local_window : int, default=1024
        Local window s (paper default 1024).
    pool_scale : float, optional
        Temperature of the pooling softmax, default ``1 / sqrt(D)``.
    core_bias : {None, "log_group"}, default=None
        ``"log_group"`` adds log g to every core logit (extension, not in the paper).
    gqa_pooling : {"per_query_head", "shared"}, default="per_query_head"
        ``"per_query_head"`` expands K/V to Hq heads before pooling (as the authors' code);
        ``"shared"`` averages pooling logits over a KV head's query heads (extension).
    backend : {"auto", "blocksparse", "flex", "torch", "reference"}, default="auto"
        ``"blocksparse"`` (CPU): per query block, unmasked core and window pieces, a small
        masked staircase piece and the causal diagonal on the fused CPU flash kernel, merged
        by log-sum-exp -- no dense mask, fully masked blocks never computed
        (:mod:`sparse_attn.blocksparse`). ``"flex"``: FlexAttention with a CCA ``mask_mod``
        and block mask (compiled on CUDA; unfused eager on CPU, for tests)
        (:mod:`sparse_attn.flex`). ``"torch"``: chunked SDPA with a per-chunk boolean mask
        (any device). ``"reference"``: one SDPA call with the full (L, m + L) mask (tests).
        ``"auto"`` picks ``"blocksparse"`` on CPU, ``"flex"`` on CUDA when available, and
        ``"torch"`` otherwise (and for ``window_rule="paper"``).
    chunk_size : int, optional
        Query block (default 256 for ``"blocksparse"``, 512 for ``"torch"``).
    window_rule : {"partition", "paper"}, default="partition"
        ``"partition"`` (authors' code): the raw window starts right after the last visible
        group, so every past token is seen once. ``"paper"``: the window start of the paper's
        Eqs. (2)-(3) as quoted in our spec, one token earlier (the last token of the last
        visible group is seen raw as well as inside its core token).
    return_stats : bool, default=False
        Also return a :class:`CCAStats`.

    Returns
    -------
    torch.Tensor
        (B, Hq, L, Dv), and a :class:`CCAStats` if ``return_stats``.
    """
    if attn_mask is not None:
        raise NotImplementedError("attn_mask is not supported by cca_attention (v1)")
    if dropout_p != 0.0:
        raise NotImplementedError("dropout_p > 0 is not supported by cca_attention (v1)")
    if not is_causal:
        raise ValueError("is_causal=False: CCA-Attention is defined for causal attention only")
    g = check_positive_int(group_size, "group_size")
    s = check_positive_int(local_window, "local_window")
    if core_bias not in (None, "log_group"):
        raise ValueError(f"core_bias must be None or 'log_group', got {core_bias!r}")
    if gqa_pooling not in ("per_query_head", "shared"):
        raise ValueError(f"gqa_pooling must be 'per_query_head' or 'shared', got {gqa_pooling!r}")
    if window_rule not in ("partition", "paper"):
        raise ValueError(f"window_rule must be 'partition' or 'paper', got {window_rule!r}")
    overlap = int(window_rule == "paper")
    if backend not in ("auto", "blocksparse", "flex", "torch", "reference"):
        raise ValueError(
            "backend must be 'auto', 'blocksparse', 'flex', 'torch' or 'reference', "
            f"got {backend!r}"
        )
    if chunk_size is not None:
        chunk_size = check_positive_int(chunk_size, "chunk_size")
    check_qkv(q, k, v, enable_gqa=enable_gqa)
    backend = _pick_backend(backend, q, overlap)

    hq, length = q.shape[1], q.shape[-2]
    m = _num_core(length, g, s)
    bias = math.log(g) if core_bias == "log_group" else None
    if gqa_pooling == "shared":
        with record_function("cca.core_tokens"):  # named phase for torch.profiler (attn_bench)
            core_k, core_v = cca_core_tokens(
                q,
                k,
                v,
                group_size=g,
                num_groups=m,
                pool_scale=pool_scale,
                shared_heads=hq // k.shape[1],
            )
        core_k, core_v = expand_kv(core_k, hq), expand_kv(core_v, hq)
        k, v = expand_kv(k, hq), expand_kv(v, hq)
    else:
        k, v = expand_kv(k, hq), expand_kv(v, hq)
        with record_function("cca.core_tokens"):
            core_k, core_v = cca_core_tokens(
                q, k, v, group_size=g, num_groups=m, pool_scale=pool_scale
            )

    scale_ = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if m == 0:  # L < s + g: no group is ever compressed, CCA is dense causal attention
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    elif backend == "blocksparse":
        # the CPU flash kernel needs one head size: zero-pad the shorter of (q, k) and (v, core v)
        # (zeros change neither q.k nor the weighted sum of values) and slice the output back
        dk, dv = q.shape[-1], v.shape[-1]
        if dk < dv:
            q, k, core_k = (F.pad(x, (0, dv - dk)) for x in (q, k, core_k))
        elif dv < dk:
            v, core_v = (F.pad(x, (0, dk - dv)) for x in (v, core_v))
        out = blocksparse_cca(
            q, k, v, core_k, core_v, group_size=g, local_window=s, num_core=m, scale=scale_,
            core_bias=bias or 0.0, chunk_size=chunk_size or 256,
        )[..., :dv]  # fmt: skip
    elif backend == "flex":
        out = flex_cca(
            q, k, v, core_k, core_v, group_size=g, local_window=s, num_core=m, scale=scale_,
            core_bias=bias or 0.0,
        )  # fmt: skip
    elif backend == "reference":
        mask = _chunk_mask(0, length, 0, m, g, s, m, bias, q.dtype, q.device, overlap)
        keys, values = torch.cat([core_k, k], dim=-2), torch.cat([core_v, v], dim=-2)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scale)
    else:
        outs = []
        chunk = chunk_size or 512
        for a in range(0, length, chunk):
            b = min(a + chunk, length)
            n_a, n_b = _n_visible(a, g, s, m), _n_visible(b - 1, g, s, m)
            lo = max(0, n_a * g - overlap)
            keys = torch.cat([core_k[..., :n_b, :], k[..., lo:b, :]], dim=-2)
            values = torch.cat([core_v[..., :n_b, :], v[..., lo:b, :]], dim=-2)
            mask = _chunk_mask(a, b, n_a, n_b, g, s, m, bias, q.dtype, q.device, overlap)
            outs.append(
                F.scaled_dot_product_attention(
                    q[..., a:b, :], keys, values, attn_mask=mask, scale=scale
                )
            )
        out = torch.cat(outs, dim=-2)
    if not return_stats:
        return out
    return out, cca_stats(length, g, s)


def _pick_backend(backend: str, q: torch.Tensor, overlap: int) -> str:
    if backend in ("blocksparse", "flex") and overlap:
        raise ValueError(f"backend={backend!r} supports window_rule='partition' only")
    if backend == "blocksparse" and q.device.type != "cpu":
        raise ValueError("backend='blocksparse' runs on CPU tensors (the fused CPU flash kernel)")
    if backend != "auto":
        return backend
    if overlap:
        return "torch"
    if q.device.type == "cpu" and q.dtype in (torch.float32, torch.float64, torch.bfloat16):
        return "blocksparse"
    if q.device.type == "cuda" and flex_available():
        return "flex"
    return "torch"


def cca_stats(length: int, group_size: int, local_window: int) -> CCAStats:
    """Analytic work counts of one CCA forward over ``length`` tokens (see :class:`CCAStats`)."""
    n = cca_num_visible_cores(length, group_size, local_window)  # validates all three
    length, group_size = int(length), int(group_size)
    t = torch.arange(length)
    window = t + 1 - n * group_size
    return CCAStats(
        num_core=_num_core(length, group_size, local_window),
        visible_pairs=int((n + window).sum()),
        dense_pairs=length * (length + 1) // 2,
        max_window=int(window.max()),
    )
