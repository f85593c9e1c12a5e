"""Check of QT-DoG's analytical assumption (Sec. 3.2): rounding error Delta/s ~ U(-1/2, 1/2).

Under it, E[L(w + Delta)] ~ L(w) + (s^2/24) tr(H), i.e. QAT penalises curvature.
"""

from __future__ import annotations

import torch
from torch import nn

from qat_dg.quant import quantized_modules

__all__ = ["rounding_noise_stats"]


@torch.no_grad()
def rounding_noise_stats(model: nn.Module) -> dict[str, dict[str, float]]:
    """Per-layer statistics of the normalised rounding error ``(w_hat - w) / s``.

    Parameters
    ----------
    model : nn.Module
        A quantized model.

    Returns
    -------
    dict
        ``{layer: {"mean", "var", "frac_clipped", "n"}}`` over the unclipped weights; the uniform
        assumption predicts mean 0 and variance 1/12 ~ 0.0833.

    Raises
    ------
    ValueError
        If ``model`` holds no quantized layer.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    net = getattr(model, "network", model)
    out = {}
    for name, m in quantized_modules(net):
        w = m.weight
        s = m.quantizer.step.clamp_min(1e-8)
        s_b = s.reshape(-1, *([1] * (w.ndim - 1))) if s.ndim == 1 else s
        q_n, q_p = m.quantizer.qrange
        v = w / s_b
        inside = (v >= -q_n) & (v <= q_p)
        err = (v.round() - v)[inside]
        out[name] = {
            "mean": float(err.mean()) if err.numel() else float("nan"),
            "var": float(err.var(unbiased=False)) if err.numel() else float("nan"),
            "frac_clipped": float(1.0 - inside.float().mean()),
            "n": int(err.numel()),
        }
    if not out:
        raise ValueError("model has no quantized layers")
    return out
