"""Invariance-aware augmentation (spec §2.3; the paper's Algorithm 1 steps 7-11, Eqs. (8)-(10)):
keep the invariant subgraph, mix the spurious part with a same-label partner's spurious part."""

from __future__ import annotations

import torch

__all__ = ["choose_partners", "mix_spurious"]


def choose_partners(y: torch.Tensor, sites: torch.Tensor | None, generator: torch.Generator,
                    prefer_other_site: bool = True) -> torch.Tensor:  # fmt: skip
    """For each subject in the batch, a random same-label partner (index into the batch).

    Prefers a partner from another site when ``sites`` is given and one exists; a subject alone in
    its class gets itself (no mixing partner).
    """
    B = len(y)
    same = (y[:, None] == y[None, :]) & ~torch.eye(B, dtype=torch.bool, device=y.device)
    cand = same
    if sites is not None and prefer_other_site:
        other = same & (sites[:, None] != sites[None, :])
        cand = torch.where(other.any(dim=1, keepdim=True), other, same)
    cand = cand | (~cand.any(dim=1, keepdim=True) & torch.eye(B, dtype=torch.bool, device=y.device))
    # drawn from the (CPU) generator, then moved: the same partners on every device
    noise = torch.rand(B, B, generator=generator).to(y.device)
    return torch.where(cand, noise, -1.0).argmax(dim=1)


def _sym_bernoulli(shape, p, generator, device=None):
    u = torch.rand(shape, generator=generator).to(device)
    u = torch.triu(u, diagonal=1)
    u = u + u.transpose(-1, -2)
    return u < p


def mix_spurious(A_inv, A_sp, M_inv, partners, p_keep, q_add, generator):
    """Positive view ``A_pos = A_inv + (B_p * A_sp + B_q * A_sp[partner])`` off the invariant edges.

    Where both the own and the partner's spurious edge are kept, their weights are averaged.

    Parameters
    ----------
    A_inv, A_sp : (B, n, n)
        Invariant and spurious parts of each graph (A = A_inv + A_sp).
    M_inv : (B, n, n) bool
    partners : (B,) long
    """
    shape = A_sp.shape
    keep = _sym_bernoulli(shape, p_keep, generator, A_sp.device) & (A_sp > 0)
    other = A_sp[partners]
    add = _sym_bernoulli(shape, q_add, generator, A_sp.device) & (other > 0)
    both = keep & add
    mixed = torch.where(keep, A_sp, 0.0) + torch.where(add, other, 0.0)
    mixed = torch.where(both, mixed / 2, mixed)
    return A_inv + torch.where(M_inv, 0.0, mixed)
