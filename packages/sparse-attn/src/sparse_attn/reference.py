"""Slow loop implementations written straight from the definitions (for tests and checks).

They loop over batch, heads and tokens in Python; use them only on tiny inputs.
"""

from __future__ import annotations

import math

import torch

__all__ = ["naive_cca_attention", "naive_region_attention"]


def naive_cca_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    group_size: int,
    local_window: int,
    scale: float | None = None,
    core_bias: float = 0.0,
    window_rule: str = "partition",
) -> torch.Tensor:
    """CCA token by token (paper Eqs. 1-4 with the partition rule of ``cca_attention``).

    Parameters
    ----------
    q : torch.Tensor
        (B, Hq, L, D).
    k, v : torch.Tensor
        (B, Hkv, L, D), (B, Hkv, L, Dv).
    group_size, local_window : int
        g and s.
    scale : float, optional
        Softmax and pooling scale, default ``1 / sqrt(D)``.
    core_bias : float, default=0.0
        Added to every core-token logit.
    window_rule : {"partition", "paper"}, default="partition"
        ``"paper"`` starts the raw window one token earlier once a core token is visible.

    Returns
    -------
    torch.Tensor
        (B, Hq, L, Dv).
    """
    g, s = group_size, local_window
    bsz, hq, length, d = q.shape
    r = hq // k.shape[1]
    k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
    tau = 1 / math.sqrt(d) if scale is None else scale
    m = max(0, (length - s) // g)
    out = q.new_zeros(bsz, hq, length, v.shape[-1])
    for b in range(bsz):
        for h in range(hq):
            cores_k, cores_v = [], []
            for j in range(m):
                grp = slice(j * g, j * g + g)
                a = torch.softmax(tau * k[b, h, grp] @ q[b, h, j * g + g - 1], dim=0)
                cores_k.append(a @ k[b, h, grp])
                cores_v.append(a @ v[b, h, grp])
            for t in range(length):
                n = min(m, max(0, (t + 1 - s) // g))
                lo = n * g - 1 if (window_rule == "paper" and n > 0) else n * g
                keys = torch.stack([*cores_k[:n], *k[b, h, lo : t + 1]])
                vals = torch.stack([*cores_v[:n], *v[b, h, lo : t + 1]])
                logits = tau * keys @ q[b, h, t]
                logits[:n] += core_bias
                out[b, h, t] = torch.softmax(logits, 0) @ vals
    return out


def naive_region_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    region_ids: torch.Tensor,
    top_k: int,
    scale: float | None = None,
    include_own_region: bool = True,
) -> torch.Tensor:
    """Region top-k attention with the min/max bound score, query by query.

    Parameters
    ----------
    q : torch.Tensor
        (B, Hq, N, D).
    k, v : torch.Tensor
        (B, Hkv, N, D), (B, Hkv, N, Dv).
    region_ids : torch.Tensor
        Long (N,) region of every token (values 0..M-1, all present).
    top_k : int
        Regions per query.
    scale : float, optional
        Default ``1 / sqrt(D)``.
    include_own_region : bool, default=True
        Force the query's own region.

    Returns
    -------
    torch.Tensor
        (B, Hq, N, Dv).
    """
    bsz, hq, n, d = q.shape
    r = hq // k.shape[1]
    k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
    tau = 1 / math.sqrt(d) if scale is None else scale
    m = int(region_ids.max()) + 1
    out = q.new_zeros(bsz, hq, n, v.shape[-1])
    for b in range(bsz):
        for h in range(hq):
            boxes = []  # (kmin, kmax) of every region
            for reg in range(m):
                kr = k[b, h, region_ids == reg]
                boxes.append((kr.amin(0), kr.amax(0)))
            for t in range(n):
                qt = q[b, h, t]
                ub = torch.stack([torch.maximum(qt * lo, qt * hi).sum() for lo, hi in boxes])
                if include_own_region:
                    ub[region_ids[t]] = float("inf")
                chosen = ub.topk(min(top_k, m)).indices
                sel = torch.isin(region_ids, chosen)
                p = torch.softmax(tau * k[b, h, sel] @ qt, 0)
                out[b, h, t] = p @ v[b, h, sel]
    return out
