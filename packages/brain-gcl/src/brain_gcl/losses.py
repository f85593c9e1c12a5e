"""Losses of CIA-GCL and the baselines: supervised contrastive, NT-Xent, environment risks."""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["env_risk_penalty", "nt_xent", "supcon"]


def supcon(z: torch.Tensor, labels: torch.Tensor, tau: float = 0.5) -> torch.Tensor:
    """Supervised contrastive loss (Khosla et al. 2020, L_out) on rows of ``z`` (m, d).

    Positives of anchor a: every other row with the same label. Rows are L2-normalised.
    """
    z = F.normalize(z, dim=1)
    m = len(z)
    eye = torch.eye(m, dtype=torch.bool, device=z.device)
    logits = (z @ z.T / tau).masked_fill(eye, -torch.inf)
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    pos = (labels[:, None] == labels[None, :]) & ~eye
    n_pos = pos.sum(dim=1)
    ok = n_pos > 0
    per = -(log_prob.masked_fill(~pos, 0.0)).sum(dim=1)[ok] / n_pos[ok]
    return per.mean() if ok.any() else z.sum() * 0.0


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, tau: float = 0.5) -> torch.Tensor:
    """GraphCL's NT-Xent: the other view of the same graph is the only positive."""
    labels = torch.arange(len(z1), device=z1.device).repeat(2)
    return supcon(torch.cat([z1, z2]), labels, tau)


def env_risk_penalty(losses: torch.Tensor, env: torch.Tensor, lambda_var: float = 1.0):
    """``mean_e R_e + lambda_var * Var_e(R_e)`` with ``R_e`` the mean loss in environment e.

    Returns
    -------
    (total, risks) : scalar tensor, (E,) tensor of the non-empty environments' risks
    """
    envs = torch.unique(env)
    risks = torch.stack([losses[env == e].mean() for e in envs])  # E environments, E small
    var = risks.var(unbiased=False) if len(risks) > 1 else risks.sum() * 0.0
    return risks.mean() + lambda_var * var, risks
