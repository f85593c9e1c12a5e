"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

import math
import time

import torch

from sparse_attn.baselines import dense_attention, sliding_window_attention
from sparse_attn.cca import cca_attention, cca_stats
from sparse_attn.region import region_attention

__all__ = ["clustered_qkv", "demo", "locality_qkv"]


def locality_qkv(
    length: int = 2048, dim: int = 64, beta: float = 1.0, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Locality-dominated (1, 1, L, D) inputs: ``k_t = [cos(t w), sin(t w)]``, ``q_t = beta sqrt2 k_t``.

    The 32 frequencies ``w`` are log-spaced in [10^-2.5, 1]; ``v`` is Gaussian. Attention mass
    then decays with distance, the regime where CCA is close to dense attention.
    """
    gen = torch.Generator().manual_seed(seed)
    t = torch.arange(length, dtype=torch.float32)[:, None]
    omega = torch.logspace(-2.5, 0.0, dim // 2)[None, :]
    k = torch.cat([torch.cos(t * omega), torch.sin(t * omega)], dim=-1)
    q = beta * math.sqrt(2.0) * k
    v = torch.randn(length, dim, generator=gen)
    return q[None, None], k[None, None], v[None, None]


def clustered_qkv(
    length: int = 2048, dim: int = 32, heads: int = 2, region: int = 64, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Clustered (1, H, N, D) inputs: each region's keys share one of 8 centres (spec E8c)."""
    gen = torch.Generator().manual_seed(seed)
    centres = 3.0 * torch.randn(8, dim, generator=gen)
    m = -(-length // region)
    which = torch.randint(0, 8, (heads, m), generator=gen)
    k = centres[which].repeat_interleave(region, 1)[:, :length]
    k = k + 0.5 * torch.randn(heads, length, dim, generator=gen)
    q = centres[torch.randint(0, 8, (heads, length), generator=gen)]
    q = q + 0.5 * torch.randn(heads, length, dim, generator=gen)
    v = torch.randn(heads, length, dim, generator=gen)
    return q[None], k[None], v[None]


def _err(out: torch.Tensor, ref: torch.Tensor, v: torch.Tensor) -> float:
    return ((out - ref).norm(dim=-1).mean() / v.norm(dim=-1).mean()).item()


def _timed(fn) -> tuple[torch.Tensor, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def demo(seed: int = 0) -> str:
    """Compare CCA and region top-k attention with dense attention on generated inputs.

    Parameters
    ----------
    seed : int, default=0
        Random seed for the generated values.

    Returns
    -------
    str
        A plain-text table: method, error vs dense (normalised by mean ||v||), time, pairs.
    """
    length, g, s = 2048, 16, 128
    q, k, v = locality_qkv(length, 64, 1.0, seed)
    ref, t_dense = _timed(lambda: dense_attention(q, k, v))
    cca, t_cca = _timed(lambda: cca_attention(q, k, v, group_size=g, local_window=s))
    swa, t_swa = _timed(lambda: sliding_window_attention(q, k, v, s))
    st = cca_stats(length, g, s)
    rows = [
        ("dense SDPA (causal)", 0.0, t_dense, st.dense_pairs),
        (f"CCA g={g} s={s}", _err(cca, ref, v), t_cca, st.visible_pairs),
        (f"sliding window {s}", _err(swa, ref, v), t_swa, length * s - s * (s - 1) // 2),
    ]
    qc, kc, vc = clustered_qkv(length, 32, 2, 64, seed)
    ref_c, t_dc = _timed(lambda: dense_attention(qc, kc, vc, is_causal=False))
    reg, t_reg = _timed(lambda: region_attention(qc, kc, vc, region_size=64, top_k=8))
    rnd, t_rnd = _timed(
        lambda: region_attention(
            qc,
            kc,
            vc,
            region_size=64,
            top_k=8,
            score="random",
            generator=torch.Generator().manual_seed(seed),
        )
    )
    rows += [
        ("dense SDPA (bidirectional)", 0.0, t_dc, length * length),
        ("region top-8 (min/max bound)", _err(reg, ref_c, vc), t_reg, length * 8 * 64),
        ("region top-8 (random)", _err(rnd, ref_c, vc), t_rnd, length * 8 * 64),
    ]
    lines = [
        f"sparse-attn demo (L={length}; causal rows: locality inputs; bidirectional: clustered)",
        f"{'method':<30}{'err vs dense':>13}{'time [s]':>10}{'pairs':>12}",
    ]
    lines += [f"{n:<30}{e:>13.4f}{t:>10.3f}{p:>12d}" for n, e, t, p in rows]
    return "\n".join(lines) + "\n" + _mil_demo(seed)


def _mil_demo(seed: int) -> str:
    """QuerentMIL vs dense TransMIL-style on one synthetic 4000-patch slide (untrained)."""
    from sparse_attn.mil import ABMIL, QuerentMIL, TransMILStyle
    from sparse_attn.wsi import make_wsi_bags

    bag = make_wsi_bags(1, (4000, 4000), seed=seed)[0]
    torch.manual_seed(seed)
    rows = []
    with torch.no_grad():
        for model in (QuerentMIL(32, 2), TransMILStyle(32, 2), ABMIL(32, 2)):
            model.eval()
            _, t = _timed(lambda m=model: m(bag.features, bag.coords))
            rows.append((type(model).__name__, t))
    q = rows[0][1]
    lines = [
        "slide-level MIL, one synthetic 4000-patch slide (forward, untrained; "
        "trained results: tools/bench/querent_bench.py)",
        f"{'model':<30}{'time [s]':>10}{'vs QuerentMIL':>15}",
    ]
    lines += [f"{n:<30}{t:>10.3f}{t / q:>15.2f}" for n, t in rows]
    return "\n".join(lines)
