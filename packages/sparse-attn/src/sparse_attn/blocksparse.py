"""Block-sparse CCA on CPU: no dense mask, fully masked blocks never computed.

For a query block ``[a, b)`` (``b - a <= s``) with ``na = n(a)`` and ``nb = n(b - 1)`` visible
core tokens at its first and last query, the keys a query may see split into four pieces:

* ``core``  -- core tokens ``[0, na)``: visible to every query of the block (no mask);
* ``raw``   -- raw tokens ``[nb g, a)``: inside every query's window (no mask);
* ``bound`` -- the staircase edge, core tokens ``[na, nb)`` and raw tokens ``[na g, nb g)``:
  the only piece that needs a mask (``<= (b - a) (1 + 1/g)`` keys);
* ``diag``  -- raw tokens ``[a, b)``: the causal triangle (the kernel's ``is_causal`` path).

Each piece runs through PyTorch's fused CPU flash-attention kernel, which also returns the
row log-sum-exp; the pieces are merged by log-sum-exp (the split-KV rule of FlashAttention).
The backward pass calls the kernel's backward per piece with the *merged* output and
log-sum-exp, which gives exactly the gradient of one softmax over the union of the pieces.
Only ``q, k, v``, the core tokens, the output and the log-sum-exp are saved: the memory of a
fused SDPA call plus the ``L / g`` core tokens.
"""

from __future__ import annotations

from functools import lru_cache

import torch
from torch.profiler import record_function

__all__ = ["blocksparse_cca"]

_fwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


def _n(t: int, g: int, s: int, m: int) -> int:
    return min(m, max(0, (t + 1 - s) // g))


@lru_cache(maxsize=64)
def _bound_pattern(offset: int, size: int, na: int, nb: int, g: int, s: int, m: int):
    """Visibility of the ``bound`` piece for a block of ``size`` queries starting at ``offset``.

    Depends on the block only through ``((a + 1 - s) mod g, size, na, nb, m)`` after shifting,
    so a long sequence builds a handful of distinct masks. Returns (visible, row_has_any).
    """
    t = torch.arange(offset, offset + size, device="cpu")  # a CPU cache, moved per call
    n = torch.div(t + 1 - s, g, rounding_mode="floor").clamp(0, m)
    cj = torch.arange(na, nb, device="cpu")
    u = torch.arange(na * g, nb * g, device="cpu")
    core = cj[None] < n[:, None]
    raw = (u[None] >= (n * g)[:, None]) & (u[None] <= t[:, None])
    vis = torch.cat([core, raw], dim=1)
    return vis, vis.any(dim=1)


def _pieces(a: int, b: int, g: int, s: int, m: int) -> list[tuple[str, int, int]]:
    na, nb = _n(a, g, s, m), _n(b - 1, g, s, m)
    out = []
    if na > 0:
        out.append(("core", 0, na))
    if nb * g < a:
        out.append(("raw", nb * g, a))
    if nb > na:
        out.append(("bound", na, nb))
    out.append(("diag", a, b))
    return out


def _bound_mask(a: int, b: int, na: int, nb: int, g: int, s: int, m: int, bias, dtype, device):
    # shift the block so the cache key is small: the pattern only depends on relative positions
    shift = 0 if a + 1 - s < 0 else ((a + 1 - s) // g) * g
    m_eff = min(m, max(0, (b - s) // g))  # a larger m never clamps inside this block
    j = shift // g
    vis, any_row = _bound_pattern(a - shift, b - a, na - j, nb - j, g, s, m_eff - j)
    vis, any_row = vis.to(device), any_row.to(device)
    add = torch.zeros(vis.shape[1], dtype=dtype, device=device)
    add[: nb - na] = bias
    neg = torch.tensor(float("-inf"), dtype=dtype, device=device)
    return torch.where(vis, add[None, :], neg), any_row


def _kv(kind: str, lo: int, hi: int, g: int, k, v, ck, cv):
    if kind == "core":
        return ck[..., lo:hi, :], cv[..., lo:hi, :]
    if kind == "bound":
        return (
            torch.cat([ck[..., lo:hi, :], k[..., lo * g : hi * g, :]], dim=-2),
            torch.cat([cv[..., lo:hi, :], v[..., lo * g : hi * g, :]], dim=-2),
        )
    return k[..., lo:hi, :], v[..., lo:hi, :]


class _BlockSparseCCA(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, core_k, core_v, g, s, m, scale, bias, chunk):
        length = q.shape[-2]
        lse_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
        out = torch.empty(q.shape[:-1] + v.shape[-1:], dtype=q.dtype, device=q.device)
        lse = torch.empty(q.shape[:-1], dtype=lse_dtype, device=q.device)
        for a in range(0, length, chunk):
            b = min(a + chunk, length)
            qb = q[..., a:b, :]
            outs, lses = [], []
            for kind, lo, hi in _pieces(a, b, g, s, m):
                kk, vv = _kv(kind, lo, hi, g, k, v, core_k, core_v)
                mask, any_row = None, None
                if kind == "bound":
                    with record_function("cca.bound_mask"):
                        mask, any_row = _bound_mask(a, b, lo, hi, g, s, m, bias, q.dtype, q.device)
                with record_function(f"cca.flash.{kind}"):
                    o, piece_lse = _fwd(
                        qb, kk, vv, 0.0, kind == "diag", attn_mask=mask, scale=scale
                    )
                if kind == "core":
                    piece_lse = piece_lse + bias
                elif any_row is not None:  # the kernel reports 0, not -inf, for empty rows
                    piece_lse = piece_lse.masked_fill(~any_row, float("-inf"))
                outs.append(o)
                lses.append(piece_lse.to(lse_dtype))
            with record_function("cca.merge"):  # named phases for torch.profiler (attn_bench)
                stacked = torch.stack(lses)
                total = torch.logsumexp(stacked, dim=0)
                weights = torch.exp(stacked - total)
                merged = sum(
                    w[..., None] * o.to(lse_dtype) for w, o in zip(weights, outs, strict=True)
                )
                out[..., a:b, :] = merged.to(q.dtype)
                lse[..., a:b] = total
        ctx.save_for_backward(q, k, v, core_k, core_v, out, lse)
        ctx.cfg = (g, s, m, scale, bias, chunk)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, core_k, core_v, out, lse = ctx.saved_tensors
        g, s, m, scale, bias, chunk = ctx.cfg
        grad_out = grad_out.contiguous()
        dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        dck, dcv = torch.zeros_like(core_k), torch.zeros_like(core_v)
        length = q.shape[-2]
        for a in range(0, length, chunk):
            b = min(a + chunk, length)
            qb, ob, lb, gb = q[..., a:b, :], out[..., a:b, :], lse[..., a:b], grad_out[..., a:b, :]
            for kind, lo, hi in _pieces(a, b, g, s, m):
                kk, vv = _kv(kind, lo, hi, g, k, v, core_k, core_v)
                mask = None
                if kind == "bound":
                    mask, _ = _bound_mask(a, b, lo, hi, g, s, m, bias, q.dtype, q.device)
                # probabilities of this piece under the merged softmax: exp(S + bias - LSE)
                lse_piece = lb - bias if kind == "core" else lb
                gq, gk, gv = _bwd(
                    gb, qb, kk, vv, ob, lse_piece, 0.0, kind == "diag", attn_mask=mask, scale=scale
                )
                dq[..., a:b, :] += gq
                if kind == "core":
                    dck[..., lo:hi, :] += gk
                    dcv[..., lo:hi, :] += gv
                elif kind == "bound":
                    c = hi - lo
                    dck[..., lo:hi, :] += gk[..., :c, :]
                    dcv[..., lo:hi, :] += gv[..., :c, :]
                    dk[..., lo * g : hi * g, :] += gk[..., c:, :]
                    dv[..., lo * g : hi * g, :] += gv[..., c:, :]
                else:
                    dk[..., lo:hi, :] += gk
                    dv[..., lo:hi, :] += gv
        return dq, dk, dv, dck, dcv, None, None, None, None, None, None


def blocksparse_cca(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    core_k: torch.Tensor,
    core_v: torch.Tensor,
    *,
    group_size: int,
    local_window: int,
    num_core: int,
    scale: float,
    core_bias: float = 0.0,
    chunk_size: int = 256,
) -> torch.Tensor:
    """CCA attention from precomputed core tokens, block-sparse on the CPU flash kernel.

    Parameters
    ----------
    q, k, v : torch.Tensor
        (B, H, L, D) CPU tensors with the same number of heads (expand GQA first).
    core_k, core_v : torch.Tensor
        (B, H, m, D) core tokens (differentiable: gradients flow back into the pooling).
    group_size, local_window, num_core : int
        ``g``, ``s`` and ``m``.
    scale : float
        Softmax scale.
    core_bias : float, default=0.0
        Added to every core logit.
    chunk_size : int, default=256
        Query block; capped at ``local_window`` so that no window edge reaches the diagonal.

    Returns
    -------
    torch.Tensor
        (B, H, L, Dv).
    """
    chunk = max(1, min(chunk_size, local_window))
    return _BlockSparseCCA.apply(
        q, k, v, core_k, core_v, group_size, local_window, num_core, float(scale),
        float(core_bias), chunk,
    )  # fmt: skip
