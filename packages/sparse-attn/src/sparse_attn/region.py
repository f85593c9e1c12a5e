"""Query-aware region top-k attention (Querent-style, Guo et al., ICML 2025), bidirectional.

Tokens are partitioned into regions; each region is summarised by the element-wise min and
max of its keys (region metadata); every query scores every region from that metadata
(importance estimation) and attends densely, with one softmax, to the keys of its top-k regions
only. The default score is the parameter-free min/max upper bound of Quest (Tang et al., 2024),
for which the dense-attention mass left out is bounded (see ``return_stats``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
from torch import nn

from sparse_attn.validation import check_positive_int, check_qkv, expand_kv

__all__ = [
    "RegionScoreEstimator",
    "RegionStats",
    "attend_selected_regions",
    "grid_regions",
    "region_attention",
    "region_metadata",
]


@dataclass(frozen=True)
class RegionStats:
    """Selection statistics of :func:`region_attention`.

    Attributes
    ----------
    selected : torch.Tensor
        Long (B, H, N, k) region ids chosen for each query.
    log_eps : torch.Tensor
        (B, H, N) log of (upper bound of the left-out mass) / (selected mass), from the
        min/max bound of the regions left out (valid whatever score chose the regions).
    mass_bound : torch.Tensor
        (B, H, N) upper bound on the dense-attention probability of the left-out keys,
        ``sigmoid(log_eps)``; then ``||o - o_dense|| <= 2 mass_bound max_u ||v_u||``.
    num_regions : int
        M.
    """

    selected: torch.Tensor
    log_eps: torch.Tensor
    mass_bound: torch.Tensor
    num_regions: int


class RegionScoreEstimator(nn.Module):
    """Learned region score ``max(|<W q, f_min(k_min)>|, |<W q, f_max(k_max)>|)``.

    The form follows secondary descriptions of Querent's importance estimator (unverified);
    it carries no approximation bound.

    Parameters
    ----------
    head_dim : int
        D.
    proj_dim : int, default=32
        Width of the projected query and metadata.
    """

    def __init__(self, head_dim: int, proj_dim: int = 32) -> None:
        super().__init__()
        check_positive_int(head_dim, "head_dim")
        check_positive_int(proj_dim, "proj_dim")
        self.query_proj = nn.Linear(head_dim, proj_dim, bias=False)
        self.min_proj = nn.Linear(head_dim, proj_dim, bias=False)
        self.max_proj = nn.Linear(head_dim, proj_dim, bias=False)

    def forward(self, q: torch.Tensor, kmin: torch.Tensor, kmax: torch.Tensor) -> torch.Tensor:
        """Score (B, H, Nq, M) from queries (B, H, Nq, D) and metadata (B, H, M, D)."""
        qh = self.query_proj(q)
        s_min = (qh @ self.min_proj(kmin).transpose(-1, -2)).abs()
        s_max = (qh @ self.max_proj(kmax).transpose(-1, -2)).abs()
        return torch.maximum(s_min, s_max)


def grid_regions(coords: torch.Tensor, tile: int = 8) -> torch.Tensor:
    """Region ids from 2-D patch coordinates by square tiling (for whole-slide images).

    Parameters
    ----------
    coords : torch.Tensor
        Integer (N, 2) patch grid coordinates (row, col).
    tile : int, default=8
        Tile side in patches.

    Returns
    -------
    torch.Tensor
        Long (N,) region ids, consecutive from 0 over the non-empty tiles.
    """
    if not isinstance(coords, torch.Tensor) or coords.ndim != 2 or coords.shape[1] != 2:
        raise ValueError("coords must be a tensor of shape (N, 2)")
    if coords.shape[0] == 0:
        raise ValueError("coords must not be empty")
    if coords.is_floating_point() or coords.dtype == torch.bool:
        raise TypeError(f"coords must be an integer tensor, got {coords.dtype}")
    tile = check_positive_int(tile, "tile")
    cell = torch.div(coords - coords.min(dim=0).values, tile, rounding_mode="floor")
    key = cell[:, 0] * (int(cell[:, 1].max()) + 1) + cell[:, 1]
    return torch.unique(key, return_inverse=True)[1]


def _region_layout(
    n: int, region_size: int, region_ids: torch.Tensor | None, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token index table (M, Rmax), its validity mask, and each token's region id (N,)."""
    if region_ids is None:
        ids = torch.arange(n, device=device) // region_size
    else:
        if not isinstance(region_ids, torch.Tensor) or region_ids.shape != (n,):
            raise ValueError(f"region_ids must be a tensor of shape ({n},)")
        if region_ids.is_floating_point() or region_ids.dtype == torch.bool:
            raise TypeError(f"region_ids must be an integer tensor, got {region_ids.dtype}")
        if int(region_ids.min()) < 0:
            raise ValueError("region_ids must be >= 0")
        ids = torch.unique(region_ids.to(device), return_inverse=True)[1]  # make consecutive
    counts = torch.bincount(ids)
    m, rmax = counts.numel(), int(counts.max())
    order = torch.argsort(ids, stable=True)
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(n, device=device) - starts[ids[order]]  # position inside its region
    table = torch.zeros(m, rmax, dtype=torch.long, device=device)
    valid = torch.zeros(m, rmax, dtype=torch.bool, device=device)
    table[ids[order], slot] = order
    valid[ids[order], slot] = True
    return table, valid, ids


def region_metadata(
    k: torch.Tensor, table: torch.Tensor, valid: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Element-wise min and max of the keys of each region.

    Parameters
    ----------
    k : torch.Tensor
        Keys (B, H, N, D).
    table, valid : torch.Tensor
        Long (M, Rmax) token indices per region and their bool validity (a padded slot may
        hold any index; every region needs one valid slot).

    Returns
    -------
    kmin, kmax : torch.Tensor
        (B, H, M, D) each.
    """
    if (
        not isinstance(k, torch.Tensor)
        or not k.is_floating_point()
        or k.ndim != 4
        or k.numel() == 0
    ):
        raise ValueError(
            f"k must be a non-empty floating (B, H, N, D) tensor, got {getattr(k, 'shape', k)!r}"
        )
    if (
        not isinstance(table, torch.Tensor)
        or table.ndim != 2
        or table.is_floating_point()
        or (table.dtype == torch.bool)
    ):
        raise TypeError("table must be an integer (M, Rmax) tensor of token indices")
    if (
        not isinstance(valid, torch.Tensor)
        or valid.dtype != torch.bool
        or valid.shape != table.shape
    ):
        raise TypeError(f"valid must be a bool tensor of table's shape {tuple(table.shape)}")
    if not bool(torch.isfinite(k).all()):
        raise ValueError("k contains NaN or inf")
    table, valid = table.to(k.device), valid.to(k.device)  # the layout may be built on the CPU
    n = k.shape[2]
    # one sync each: a padded slot may hold any index, a real one must be a token of k
    if table.numel() and bool(((table < 0) | (table >= n)).logical_and(valid).any()):
        raise ValueError(f"table holds token indices outside [0, {n}) in valid slots")
    if not bool(valid.any(1).all()):
        raise ValueError(
            "valid: every region needs at least one token (an empty one has no min/max)"
        )
    return _region_metadata(k, table.clamp(0, n - 1), valid)  # padded slots are masked


def _region_metadata(k: torch.Tensor, table: torch.Tensor, valid: torch.Tensor):
    """:func:`region_metadata` without the checks (its callers build ``table`` themselves)."""
    kg = k[..., table, :]  # (B, H, M, Rmax, D)
    pad = ~valid[..., None]
    kmin = kg.masked_fill(pad, float("inf")).amin(dim=-2)
    kmax = kg.masked_fill(pad, float("-inf")).amax(dim=-2)
    return kmin, kmax


def region_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    region_size: int = 64,
    top_k: int = 8,
    region_ids: torch.Tensor | None = None,
    score: str = "minmax_bound",
    include_own_region: bool = True,
    estimator: RegionScoreEstimator | None = None,
    scale: float | None = None,
    enable_gqa: bool = False,
    chunk_size: int = 256,
    generator: torch.Generator | None = None,
    return_stats: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, RegionStats]:
    """Bidirectional attention over the keys of each query's top-k regions only.

    Parameters
    ----------
    q : torch.Tensor
        Queries (B, Hq, N, D).
    k, v : torch.Tensor
        Keys (B, Hkv, N, D) and values (B, Hkv, N, Dv).
    region_size : int, default=64
        R, contiguous tokens per region (the last region may be shorter); ignored if
        ``region_ids`` is given.
    top_k : int, default=8
        Regions attended per query; ``top_k >= M`` gives exact dense attention.
    region_ids : torch.Tensor, optional
        Long (N,) region of each token (e.g. from :func:`grid_regions`).
    score : {"minmax_bound", "learned", "random"}, default="minmax_bound"
        ``"minmax_bound"``: sum_d max(q_d kmax_d, q_d kmin_d), an upper bound of every
        q.k_u in the region; ``"learned"``: ``estimator``; ``"random"``: lower reference.
    include_own_region : bool, default=True
        Always select the query's own region.
    estimator : RegionScoreEstimator, optional
        Needed for ``score="learned"``.
    scale : float, optional
        Softmax scale, default ``1 / sqrt(D)``.
    enable_gqa : bool, default=False
        Allow Hq to be a multiple of Hkv.
    chunk_size : int, default=256
        Query chunk; memory O(C k R D) per head.
    generator : torch.Generator, optional
        Randomness of ``score="random"``.
    return_stats : bool, default=False
        Also return :class:`RegionStats` (selected ids and the left-out mass bound).

    Returns
    -------
    torch.Tensor
        (B, Hq, N, Dv), and :class:`RegionStats` if ``return_stats``.
    """
    region_size = check_positive_int(region_size, "region_size")
    top_k = check_positive_int(top_k, "top_k")
    check_positive_int(chunk_size, "chunk_size")
    if score not in ("minmax_bound", "learned", "random"):
        raise ValueError(f"score must be 'minmax_bound', 'learned' or 'random', got {score!r}")
    if score == "learned" and not isinstance(estimator, RegionScoreEstimator):
        raise ValueError("score='learned' needs estimator=RegionScoreEstimator(...)")
    check_qkv(q, k, v, enable_gqa=enable_gqa)
    n = q.shape[-2]
    tau = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    k, v = expand_kv(k, q.shape[1]), expand_kv(v, q.shape[1])
    table, valid, ids = _region_layout(n, region_size, region_ids, q.device)
    m = table.shape[0]
    kk = min(top_k, m)
    kmin, kmax = _region_metadata(k, table, valid)
    low = q.dtype in (torch.float16, torch.bfloat16)
    smin, smax = (kmin.float(), kmax.float()) if low else (kmin, kmax)
    log_sizes = valid.sum(-1).to(smin.dtype).log()

    sels, ranks, bounds = [], [], []
    for a in range(0, n, chunk_size):  # selection only: O(C M) scores per chunk
        b = min(a + chunk_size, n)
        qc = q[..., a:b, :]
        # Quest bound: max over the box [kmin, kmax] of q.k is q+ . kmax + q- . kmin.
        # scores in fp32 for bf16/fp16 inputs so that rounding does not change the selection
        qs = qc.float() if low else qc
        bound = tau * (
            qs.clamp(min=0) @ smax.transpose(-1, -2) + qs.clamp(max=0) @ smin.transpose(-1, -2)
        )
        if score == "minmax_bound":
            rank = bound
        elif score == "learned":
            rank = estimator(qc, kmin, kmax).to(bound.dtype)
        else:
            where = (
                generator.device if generator is not None else q.device
            )  # a CPU generator: same draws on every device
            rank = torch.rand(bound.shape, generator=generator, dtype=bound.dtype, device=where).to(
                q.device
            )
        sel_rank = rank
        if include_own_region:
            own = torch.nn.functional.one_hot(ids[a:b], m).bool()
            sel_rank = rank.detach().masked_fill(own, float("inf"))
        sel = sel_rank.topk(kk, dim=-1).indices  # (B, H, C, kk)
        sels.append(sel)
        ranks.append(rank.gather(-1, sel) if score == "learned" else None)
        if return_stats:
            bounds.append(bound)
    sel = torch.cat(sels, dim=-2)
    bias = None
    if score == "learned":
        # straight-through: the forward is unchanged (the bias is exactly zero), and the
        # estimator receives the gradient of the loss with respect to each selected
        # region's log-mass
        est = torch.cat(ranks, dim=-2)
        bias = est - est.detach()
    out, total = _region_major_blocks(q, k, v, sel, table, valid, tau, bias)
    if not return_stats:
        return out
    bound = torch.cat(bounds, dim=-2)
    chosen = torch.zeros_like(bound, dtype=torch.bool).scatter_(-1, sel, True)
    left = (bound + log_sizes).masked_fill(chosen, float("-inf")).logsumexp(-1)
    le = left - total.to(left.dtype)
    return out, RegionStats(sel, le, torch.sigmoid(le), m)


_FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_FLASH_BWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


@dataclass(frozen=True)
class _Tiles:
    """(query, selected region) pairs sorted by (batch-head, region) and cut into tiles.

    Each tile holds up to ``size`` queries that selected the same region, so its attention
    is one dense (size x Rmax) product with that region's keys, read once per tile.
    """

    size: int
    slot: torch.Tensor  # sorted pair -> flat tile slot
    pair_query: torch.Tensor  # sorted pair -> flat query row (bh * N + n)
    slot_query: torch.Tensor  # flat tile slot -> query row (padding slots -> a zero row R)
    pair_slot: torch.Tensor  # (bh, query, k) pair order -> flat tile slot
    group: torch.Tensor  # tile -> flat region row (bh * M + r)
    n_tiles: int


def _make_tiles(sel: torch.Tensor, m: int, size: int) -> _Tiles:
    bsz, h, n, kk = sel.shape
    bh, dev = bsz * h, sel.device
    key = (torch.arange(bh, device=dev)[:, None] * m + sel.reshape(bh, n * kk)).flatten()
    order = torch.argsort(key, stable=True)
    skey = key[order]
    counts = torch.bincount(skey, minlength=bh * m)
    per_group = (counts + size - 1) // size
    tile_start = torch.cumsum(per_group, 0) - per_group
    group_start = torch.cumsum(counts, 0) - counts
    rank = torch.arange(skey.numel(), device=dev) - group_start[skey]
    slot = (tile_start[skey] + rank // size) * size + rank % size
    query = torch.arange(bh * n, device=dev).repeat_interleave(kk)[order]
    n_tiles = int(per_group.sum())
    slot_query = torch.full((n_tiles * size,), bh * n, dtype=torch.long, device=dev)
    slot_query[slot] = query
    pair_slot = torch.empty_like(slot)
    pair_slot[order] = slot
    group = torch.repeat_interleave(torch.arange(bh * m, device=dev), per_group)
    return _Tiles(size, slot, query, slot_query, pair_slot, group, n_tiles)


def _rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x[index]`` along dim 0 with one zero row appended (padding slots point at it)."""
    pad = torch.cat([x, x.new_zeros(1, *x.shape[1:])])
    return pad.index_select(0, index)


def _merge(pair_lse: torch.Tensor, pair_out: torch.Tensor):
    """Log-sum-exp merge over each query's regions: (R, kk), (R, kk, Dv) -> (R, Dv), (R,)."""
    total = pair_lse.logsumexp(dim=-1)
    w = torch.exp(pair_lse - total[:, None])
    return (w[..., None] * pair_out).sum(dim=1), total, w


class _RegionMajorCPU(torch.autograd.Function):
    """Region-major attention on the fused CPU flash kernel, merged by log-sum-exp.

    Backward calls the kernel's backward per tile with the *merged* output and log-sum-exp
    (minus the pair's bias), which is exactly the gradient of one softmax over the union of
    the selected regions; the bias gets ``w_p <dO, o_p - O>``.
    """

    @staticmethod
    def forward(ctx, q, kr, vr, bias, tiles, key_mask, kk, scale):
        # q (R, D) flat queries; kr/vr (G, Rmax, D) region-major keys; bias (R * kk) or None
        d, dv = q.shape[-1], vr.shape[-1]
        acc = torch.float64 if q.dtype == torch.float64 else torch.float32
        qt = _rows(q, tiles.slot_query).view(tiles.n_tiles, 1, tiles.size, d)
        kt = kr.index_select(0, tiles.group).unsqueeze(1)
        vt = vr.index_select(0, tiles.group).unsqueeze(1)
        mask = None if key_mask is None else key_mask[tiles.group][:, None, None, :]
        ot, lt = _FLASH(qt, kt, vt, 0.0, False, attn_mask=mask, scale=scale)
        pair_lse = lt.reshape(-1).index_select(0, tiles.pair_slot).view(-1, kk).to(acc)
        pair_out = ot.reshape(-1, dv).index_select(0, tiles.pair_slot).view(-1, kk, dv).to(acc)
        if bias is not None:
            pair_lse = pair_lse + bias.view(-1, kk).to(acc)
        out, total, w = _merge(pair_lse, pair_out)
        out = out.to(q.dtype)
        ctx.tiles, ctx.kk, ctx.key_mask, ctx.scale = tiles, kk, key_mask, scale
        ctx.save_for_backward(q, kr, vr, bias, out, total, pair_out, w)
        ctx.mark_non_differentiable(total)
        return out, total

    @staticmethod
    def backward(ctx, grad_out, _grad_total):
        q, kr, vr, bias, out, total, pair_out, w = ctx.saved_tensors
        tiles = ctx.tiles
        d, dv = q.shape[-1], vr.shape[-1]
        grad_out = grad_out.contiguous()
        n_slots = tiles.n_tiles * tiles.size
        qt = _rows(q, tiles.slot_query)
        go = _rows(grad_out, tiles.slot_query)
        ot = _rows(out, tiles.slot_query)
        lt = _rows(total, tiles.slot_query)
        if bias is not None:  # the tile's own logits carry no bias: P = exp(S + b - LSE)
            b_slot = bias.new_zeros(n_slots).index_copy_(0, tiles.pair_slot, bias.reshape(-1))
            lt = lt - b_slot.to(lt.dtype)
        shape = (tiles.n_tiles, 1, tiles.size)
        kt = kr.index_select(0, tiles.group).unsqueeze(1)
        vt = vr.index_select(0, tiles.group).unsqueeze(1)
        mask = None if ctx.key_mask is None else ctx.key_mask[tiles.group][:, None, None, :]
        lt_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
        gq, gk, gv = _FLASH_BWD(
            go.view(*shape, dv), qt.view(*shape, d), kt, vt, ot.view(*shape, dv),
            lt.view(shape).to(lt_dtype), 0.0, False, attn_mask=mask, scale=ctx.scale,
        )  # fmt: skip
        dq = torch.zeros_like(q).index_add_(
            0, tiles.pair_query, gq.reshape(-1, d).index_select(0, tiles.slot)
        )
        dkr = torch.zeros_like(kr).index_add_(0, tiles.group, gk.squeeze(1))
        dvr = torch.zeros_like(vr).index_add_(0, tiles.group, gv.squeeze(1))
        dbias = None
        if bias is not None and ctx.needs_input_grad[3]:
            g = grad_out.to(pair_out.dtype)[:, None, :]
            dbias = w * (g * (pair_out - out.to(pair_out.dtype)[:, None, :])).sum(-1)
            dbias = dbias.reshape(-1).to(bias.dtype)
        return dq, dkr, dvr, dbias, None, None, None, None


def _tile_size(mean_pairs: int, rmax: int) -> int:
    """Queries per tile: about half a region's mean number of (query, region) pairs, so that
    most regions need one or two tiles (fewer copies of their keys and larger kernel calls)
    while padding stays small; at least the region size and 16, at most 256."""
    half = max(1, mean_pairs // 2)
    return min(256, max(16, rmax, 1 << (half.bit_length() - 1)))


# queries per block of the region-major pass: the (query, region) pair buffers (gathered
# queries, per-pair outputs and log-sum-exps) exist for one block at a time, so the forward's
# memory stays O(block * k * D) on top of the inputs instead of O(N * k * D)
_QUERY_BLOCK = 4096


def _region_major_blocks(q, k, v, sel, table, valid, tau, bias=None):
    """:func:`_region_major` over blocks of queries (each query's output depends only on its
    own selection, so the blocks are independent); the region-major keys are gathered once."""
    n = q.shape[-2]
    if n <= _QUERY_BLOCK:
        return _region_major(q, k, v, sel, table, valid, tau, bias)
    bsz, h = q.shape[:2]
    m, rmax = table.shape
    kr = k[..., table, :].reshape(bsz * h * m, rmax, k.shape[-1])
    vr = v[..., table, :].reshape(bsz * h * m, rmax, v.shape[-1])
    outs, totals = [], []
    for a in range(0, n, _QUERY_BLOCK):
        b = min(a + _QUERY_BLOCK, n)
        o, t = _region_major(
            q[..., a:b, :], k, v, sel[..., a:b, :], table, valid, tau,
            None if bias is None else bias[..., a:b, :], regions=(kr, vr),
        )  # fmt: skip
        outs.append(o)
        totals.append(t)
    return torch.cat(outs, dim=-2), torch.cat(totals, dim=-1)


def _region_major(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    sel: torch.Tensor,
    table: torch.Tensor,
    valid: torch.Tensor,
    tau: float,
    bias: torch.Tensor | None = None,
    regions: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of each query over its selected regions, evaluated region by region.

    ``regions`` are the region-major keys and values (B H M, Rmax, D) when already gathered.
    Returns the output (B, H, N, Dv) and the row log-sum-exp (B, H, N) of the selected logits.
    """
    bsz, h, n, kk = sel.shape
    m, rmax = table.shape
    d, dv = q.shape[-1], v.shape[-1]
    tiles = _make_tiles(sel, m, _tile_size(n * kk // m, rmax))
    if regions is None:
        kr = k[..., table, :].reshape(bsz * h * m, rmax, d)  # region-major keys, one gather
        vr = v[..., table, :].reshape(bsz * h * m, rmax, dv)
    else:
        kr, vr = regions
    full = bool(valid.all())
    q_flat = q.reshape(bsz * h * n, d)
    flat_bias = None if bias is None else bias.reshape(-1)
    if q.device.type == "cpu" and q.dtype in (torch.float32, torch.float64, torch.bfloat16):
        key_mask = None
        if not full:
            neg = torch.full((), float("-inf"), dtype=q.dtype, device=q.device)
            key_mask = torch.where(valid, torch.zeros((), dtype=q.dtype, device=q.device), neg)
            key_mask = key_mask.repeat(bsz * h, 1)  # per flat region row
        out, total = _RegionMajorCPU.apply(q_flat, kr, vr, flat_bias, tiles, key_mask, kk, tau)
        return out.view(bsz, h, n, dv), total.view(bsz, h, n)
    # any device: the same tiles with plain batched matmuls and autograd
    qt = _rows(q_flat, tiles.slot_query).view(tiles.n_tiles, tiles.size, d)
    kt, vt = kr.index_select(0, tiles.group), vr.index_select(0, tiles.group)
    logits = torch.baddbmm(
        qt.new_zeros(()), qt, kt.transpose(-1, -2), beta=0.0, alpha=tau
    )  # fmt: skip
    if not full:
        logits = logits.masked_fill(
            ~valid.repeat(bsz * h, 1)[tiles.group][:, None, :], float("-inf")
        )
    lg = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    lse = lg.logsumexp(dim=-1)
    probs = torch.exp(lg - lse[..., None]).to(vt.dtype)
    ot = probs @ vt
    pair_lse = lse.reshape(-1).index_select(0, tiles.pair_slot).view(-1, kk)
    pair_out = ot.reshape(-1, dv).index_select(0, tiles.pair_slot).view(-1, kk, dv)
    pair_out = pair_out.to(pair_lse.dtype)
    if flat_bias is not None:
        pair_lse = pair_lse + flat_bias.view(-1, kk).to(pair_lse.dtype)
    out, total, _ = _merge(pair_lse, pair_out)
    return out.to(v.dtype).view(bsz, h, n, dv), total.view(bsz, h, n)


def attend_selected_regions(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    selected: torch.Tensor,
    region_ids: torch.Tensor,
    *,
    scores: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Attention of each query over regions chosen beforehand (e.g. once for all heads).

    Parameters
    ----------
    q, k, v : torch.Tensor
        (B, H, N, D) queries, keys and values (equal head counts).
    selected : torch.Tensor
        Long (B, N, kk) or (B, H, N, kk) region ids per query (consecutive ids as in
        ``region_ids``); a (B, N, kk) selection is shared by all heads.
    region_ids : torch.Tensor
        Long (N,) region of each token, consecutive from 0.
    scores : torch.Tensor, optional
        Importance scores of the selected regions, same shape as ``selected``. When given, a
        straight-through term (exactly zero in the forward pass) lets the gradient of the loss
        with respect to each selected region's log-mass reach the scores.
    scale : float, optional
        Softmax scale, default ``1 / sqrt(D)``.

    Returns
    -------
    torch.Tensor
        (B, H, N, Dv).
    """
    check_qkv(q, k, v, enable_gqa=False)
    bsz, h, n, d = q.shape
    if (
        not isinstance(selected, torch.Tensor)
        or selected.is_floating_point()
        or (selected.dtype == torch.bool)
    ):
        raise TypeError(
            f"selected must be an integer tensor, got {getattr(selected, 'dtype', selected)!r}"
        )
    want = (bsz, n) if selected.ndim == 3 else (bsz, h, n)
    if selected.ndim not in (3, 4) or tuple(selected.shape[:-1]) != want or selected.shape[-1] < 1:
        raise ValueError(f"selected: expected shape (B, [H,] N, k), got {tuple(selected.shape)}")
    if scores is not None and (
        not isinstance(scores, torch.Tensor)
        or not scores.is_floating_point()
        or scores.shape != selected.shape
    ):
        raise ValueError(
            f"scores must be a floating tensor of selected's shape {tuple(selected.shape)}"
        )
    if scale is not None and (
        isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not 0 < scale < math.inf
    ):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    table, valid, _ = _region_layout(n, 1, region_ids, q.device)
    # an id past the last region would gather another region's keys (negative ids wrap around)
    lo, hi = int(selected.min()), int(selected.max())
    if lo < 0 or hi >= table.shape[0]:
        raise ValueError(f"selected holds region ids outside [0, {table.shape[0]}): {lo}..{hi}")
    if selected.ndim == 3:
        selected = selected[:, None].expand(bsz, h, n, selected.shape[-1])
        if scores is not None:
            scores = scores[:, None].expand_as(selected)
    tau = 1.0 / math.sqrt(d) if scale is None else scale
    bias = None if scores is None else scores - scores.detach()
    out, _ = _region_major(q, k, v, selected.contiguous(), table, valid, tau, bias)
    return out
