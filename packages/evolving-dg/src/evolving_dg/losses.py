"""SYNC's loss terms as pure functions (spec §2.2–2.5), shaped like ``torch.nn.functional``.

Parametrisations of a diagonal Gaussian by ``(mu, s)``:

* ``"ref"`` — the official code: samples use scale ``exp(s)`` while both KL terms treat
  ``exp(s)`` as a *variance*, ``KL = ½ Σ (μ² + e^s − s − 1)`` against N(0, I);
* ``"consistent"`` — ``s`` is the log-variance everywhere (scale ``exp(s / 2)``).
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor

__all__ = [
    "categorical_kl",
    "gaussian_kl",
    "gaussian_log_density",
    "gumbel_softmax",
    "mws_mutual_information",
    "relaxed_topk_mask",
    "sample_gaussian",
    "supervised_contrastive",
]

_PARAMS = ("ref", "consistent")


def _check_param(param: str) -> None:
    if param not in _PARAMS:
        raise ValueError(f"param must be one of {_PARAMS}, got {param!r}")


def sample_gaussian(mu: Tensor, s: Tensor, param: str = "ref") -> Tensor:
    """Reparameterised sample ``mu + scale * eps`` (scale ``e^s`` for "ref", ``e^{s/2}`` else)."""
    _check_param(param)
    scale = s.exp() if param == "ref" else (0.5 * s).exp()
    return mu + scale * torch.randn_like(mu)


def gaussian_kl(
    mu: Tensor, s: Tensor, mu_p: Tensor | None = None, s_p: Tensor | None = None, param: str = "ref"
) -> Tensor:
    """KL(N(mu, v) || N(mu_p, v_p)) summed over the last axis, with v = e^s (both params treat
    ``e^s`` as the variance in the KL; they differ only in :func:`sample_gaussian`).

    Prior defaults to N(0, I). Shapes broadcast; returns shape ``mu.shape[:-1]``.
    """
    _check_param(param)
    if mu_p is None:
        mu_p, s_p = torch.zeros_like(mu), torch.zeros_like(s)
    return 0.5 * (s_p - s + (s.exp() + (mu - mu_p) ** 2) / s_p.exp() - 1).sum(-1)


def categorical_kl(logits_q: Tensor, logits_p: Tensor) -> Tensor:
    """KL(softmax(q) || softmax(p)) over the last axis."""
    lq, lp = logits_q.log_softmax(-1), logits_p.log_softmax(-1)
    return (lq.exp() * (lq - lp)).sum(-1)


def gaussian_log_density(z: Tensor, mu: Tensor, s: Tensor, param: str = "ref") -> Tensor:
    """Elementwise log N(z; mu, scale²) with the sampling scale of ``param``."""
    _check_param(param)
    log_scale = s if param == "ref" else 0.5 * s
    return -0.5 * ((z - mu) / log_scale.exp()) ** 2 - log_scale - 0.5 * math.log(2 * math.pi)


def mws_mutual_information(
    z_a: Tensor,
    mu_a: Tensor,
    s_a: Tensor,
    z_b: Tensor,
    mu_b: Tensor,
    s_b: Tensor,
    param: str = "ref",
) -> Tensor:
    """Minibatch-weighted-sampling estimate of I(z_a; z_b) per group (spec §2.4).

    Parameters
    ----------
    z_a, mu_a, s_a : Tensor, shape (..., B, d_a)
        One posterior sample per item and that item's posterior parameters; leading axes are
        independent groups (e.g. domains).
    z_b, mu_b, s_b : Tensor, shape (..., B, d_b)

    Returns
    -------
    Tensor, shape (...)
        ``Ĥ(a) + Ĥ(b) − Ĥ(a, b)`` with ``Ĥ = −mean_i [logsumexp_j log q(z_i | x_j) − log B]``.
    """
    B = z_a.shape[-2]
    # (..., B_i, B_j): log q(z_i | x_j), summed over dimensions
    la = gaussian_log_density(z_a[..., :, None, :], mu_a[..., None, :, :], s_a[..., None, :, :], param).sum(-1)  # fmt: skip
    lb = gaussian_log_density(z_b[..., :, None, :], mu_b[..., None, :, :], s_b[..., None, :, :], param).sum(-1)  # fmt: skip
    logB = math.log(B)

    def h(lm):
        return -(torch.logsumexp(lm, -1) - logB).mean(-1)

    return h(la) + h(lb) - h(la + lb)


def supervised_contrastive(
    anchors: Tensor,
    y_anchor: Tensor,
    candidates: Tensor,
    y_candidate: Tensor,
    tau: float = 0.07,
    exclude_same_index: bool = True,
    eps: float = 0.0,
) -> Tensor:
    """SYNC's supervised contrastive loss between two sets (spec §2.5), batched over groups.

    ``ℓ_ij = <a_i, c_j> / tau`` (no normalisation, as the official code); positives
    P_i = {j : y_j = y_i} (minus j = i when ``exclude_same_index``), negatives N_i = {j : y_j ≠ y_i};
    ``loss_i = −(1/|P_i|) Σ_{j∈P_i} [ℓ_ij − log(e^{ℓ_ij} + Σ_{n∈N_i} e^{ℓ_in})]``; anchors
    without positives contribute 0; the result is the mean over anchors.

    Parameters
    ----------
    anchors : Tensor, shape (..., B, d)
    y_anchor : Tensor, shape (..., B)
    candidates : Tensor, shape (..., B2, d)
    y_candidate : Tensor, shape (..., B2)

    eps : float, default=0.0
        Added inside the log of each denominator after the logits are shifted by their row
        maximum: ``log(e^{ℓ_ij − m_i} + Σ_n e^{ℓ_in − m_i} + eps)``. The official code uses
        ``1e-6``, which floors the denominator and bounds the loss of far-off pairs; 0 is the
        formula above.

    Returns
    -------
    Tensor, shape (...)
    """
    if not tau > 0:
        raise ValueError(f"tau must be positive, got {tau}")
    if not (isinstance(eps, numbers.Real) and eps >= 0):
        raise ValueError(f"eps must be a number >= 0, got {eps!r}")
    logits = anchors @ candidates.transpose(-1, -2) / tau  # (..., B, B2)
    same = y_anchor[..., :, None] == y_candidate[..., None, :]
    pos = same.clone()
    if exclude_same_index:
        n = min(pos.shape[-2], pos.shape[-1])
        idx = torch.arange(n, device=pos.device)
        pos[..., idx, idx] = False
    if eps > 0:  # the official form: shifted logits, eps inside the log
        shifted = logits - logits.amax(-1, keepdim=True).detach()
        e = shifted.exp()
        neg = (e * ~same).sum(-1, keepdim=True)
        term = shifted - torch.log(e + neg + eps)
    else:
        neg_lse = torch.logsumexp(logits.masked_fill(same, -torch.inf), -1, keepdim=True)
        term = logits - torch.logaddexp(logits, neg_lse)
    n_pos = pos.sum(-1)
    per = -(term * pos).sum(-1) / n_pos.clamp(min=1)
    return torch.where(n_pos > 0, per, torch.zeros_like(per)).mean(-1)


def gumbel_softmax(logits: Tensor, tau: float, generator: torch.Generator | None = None) -> Tensor:
    """Soft Gumbel-softmax sample over the last axis (own noise so a generator can seed it)."""
    u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)
    g = -torch.log(-torch.log(u.clamp(1e-10, 1 - 1e-7)))
    return ((logits + g) / tau).softmax(-1)


def relaxed_topk_mask(
    scores: Tensor, k: int, tau: float = 0.5, generator: torch.Generator | None = None
) -> Tensor:
    """Relaxed top-k subset (spec §2.5): k rounds of a soft Gumbel-softmax draw over the entries
    not chosen yet; the mask is the running elementwise max. Output in [0, 1]^d, ≈ k ones.

    Parameters
    ----------
    scores : Tensor, shape (..., d)
    k : int, 1 <= k <= d
    """
    d = scores.shape[-1]
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= d:
        raise ValueError(f"k must be an int in [1, {d}], got {k!r}")
    if not tau > 0:
        raise ValueError(f"tau must be positive, got {tau}")
    taken = torch.zeros_like(scores, dtype=torch.bool)
    m = torch.zeros_like(scores)
    for _ in range(k):  # k <= d_z rounds, vectorised over the batch
        s = gumbel_softmax(scores.masked_fill(taken, -torch.inf), tau, generator)
        m = torch.maximum(m, s)
        taken = taken | torch.nn.functional.one_hot(s.argmax(-1), d).bool()
    return m


def expected_topk_mask(
    scores: Tensor, k: int, tau: float = 0.5, n_samples: int = 32, seed: int = 0
) -> Tensor:
    """Monte-Carlo mean of :func:`relaxed_topk_mask` with noise shared by every row.

    The prediction-time mask: the ``n_samples`` Gumbel draws come from a generator seeded with
    ``seed`` on every call and are the same for every row, so a row's mask depends on its own
    scores only -- deterministic, independent of the call order, the row order and the global
    RNG -- and approximates the mask's expectation that training sees.

    Parameters
    ----------
    scores : Tensor, shape (n, d)
    k : int, 1 <= k <= d

    Returns
    -------
    Tensor, shape (n, d)
    """
    d = scores.shape[-1]
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= d:
        raise ValueError(f"k must be an int in [1, {d}], got {k!r}")
    g = torch.Generator().manual_seed(int(seed))
    x = scores.unsqueeze(0).expand(n_samples, *scores.shape)
    taken = torch.zeros_like(x, dtype=torch.bool)
    m = torch.zeros_like(x)
    for _ in range(k):
        # a fixed CPU generator: the same draws, hence the same mask, on every device
        u = torch.rand((n_samples, *([1] * (scores.ndim - 1)), d), generator=g, dtype=x.dtype)
        u = u.to(x.device)
        gum = -torch.log(-torch.log(u.clamp(1e-10, 1 - 1e-7)))
        s = ((x.masked_fill(taken, -torch.inf) + gum) / tau).softmax(-1)
        m = torch.maximum(m, s)
        taken = taken | torch.nn.functional.one_hot(s.argmax(-1), d).bool()
    return m.mean(0)
