"""Minimal Adam optimiser.

``torch.optim`` imports ``torch._dynamo`` the first time an optimiser is built,
which costs tens of seconds per process on a machine without bytecode caching;
the few-thousand-parameter policies here need only the plain Adam update
(Kingma & Ba, 2015), written out below with the same defaults as ``torch.optim.Adam``.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

__all__ = ["Adam"]


class Adam:
    """Adam with per-group learning rates (no weight decay, no amsgrad).

    Parameters
    ----------
    groups : iterable of dict
        Each ``{"params": iterable of Parameter, "lr": float}``.
    betas : tuple of float, default=(0.9, 0.999)
    eps : float, default=1e-8
    """

    def __init__(
        self, groups: Iterable[dict], betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ):
        self.groups = [{"params": list(g["params"]), "lr": float(g["lr"])} for g in groups]
        for g in self.groups:
            if not g["lr"] > 0:
                raise ValueError(f"lr must be positive, got {g['lr']}")
        self.betas, self.eps, self.t = betas, eps, 0
        self.state: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def zero_grad(self) -> None:
        """Drop all gradients."""
        for g in self.groups:
            for p in g["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One bias-corrected Adam update of every parameter that has a gradient."""
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        for g in self.groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                m, v = self.state.setdefault(id(p), (torch.zeros_like(p), torch.zeros_like(p)))
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                p.addcdiv_(m / c1, (v / c2).sqrt_().add_(self.eps), value=-g["lr"])
