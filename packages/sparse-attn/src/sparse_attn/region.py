"""Query-aware region top-k attention (Querent-style, Guo et al., ICML 2025), bidirectional.

Tokens are partitioned into regions; each region is summarised by the element-wise min and
max of its keys (region metadata); every query scores every region from that metadata
(importance estimation) and attends densely, with one softmax, to the keys of its top-k regions
only. The default score is the parameter-free min/max upper bound of Quest (Tang et al., 2024),
for which the dense-attention mass left out is bounded (see ``return_stats``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from sparse_attn.validation import check_positive_int, check_qkv, expand_kv, softmax_hp

__all__ = [
    "RegionScoreEstimator",
    "RegionStats",
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
    check_positive_int(tile, "tile")
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
        Long (M, Rmax) token indices per region and their bool validity.

    Returns
    -------
    kmin, kmax : torch.Tensor
        (B, H, M, D) each.
    """
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
    check_positive_int(region_size, "region_size")
    check_positive_int(top_k, "top_k")
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
    kmin, kmax = region_metadata(k, table, valid)
    rmax = table.shape[1]
    k_rows = k[..., table, :].reshape(-1, rmax * k.shape[-1])
    v_rows = v[..., table, :].reshape(-1, rmax * v.shape[-1])
    row_base = (torch.arange(q.shape[0] * q.shape[1], device=q.device) * m).view(
        q.shape[0], q.shape[1], 1, 1
    )
    low = q.dtype in (torch.float16, torch.bfloat16)
    smin, smax = (kmin.float(), kmax.float()) if low else (kmin, kmax)
    log_sizes = valid.sum(-1).to(smin.dtype).log()

    outs, sels, log_eps = [], [], []
    for a in range(0, n, chunk_size):
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
            rank = torch.rand(bound.shape, generator=generator, dtype=bound.dtype).to(q.device)
        if include_own_region:
            own = torch.nn.functional.one_hot(ids[a:b], m).bool()
            rank = rank.masked_fill(own, float("inf"))
        sel = rank.topk(kk, dim=-1).indices  # (B, H, C, kk)
        # copy whole selected regions as rows of (B*H*M, Rmax*D): index_select is a memcpy
        rows = (sel + row_base).flatten()
        shape = (*sel.shape[:-1], kk * rmax, -1)
        ks = k_rows.index_select(0, rows).view(shape)  # (B, H, C, kk * Rmax, D)
        vs = v_rows.index_select(0, rows).view(shape)
        tok_valid = valid[sel].flatten(-2)
        logits = torch.einsum("bhcd,bhcnd->bhcn", qc, ks) * tau
        logits = logits.masked_fill(~tok_valid, float("-inf"))
        probs = softmax_hp(logits).to(vs.dtype)
        outs.append(torch.einsum("bhcn,bhcnd->bhcd", probs, vs))
        if return_stats:
            sels.append(sel)
            chosen = torch.zeros_like(bound, dtype=torch.bool).scatter_(-1, sel, True)
            left = (bound + log_sizes).masked_fill(chosen, float("-inf")).logsumexp(-1)
            log_eps.append(left - logits.to(left.dtype).logsumexp(-1))
    out = torch.cat(outs, dim=-2)
    if not return_stats:
        return out
    le = torch.cat(log_eps, dim=-1)
    stats = RegionStats(torch.cat(sels, dim=-2), le, torch.sigmoid(le), m)
    return out, stats
