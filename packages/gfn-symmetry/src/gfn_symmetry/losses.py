"""GFlowNet training objectives on padded trajectory tensors (functional forms).

A batch of ``B`` complete trajectories ``s_0 -> ... -> s_n -> s_f`` is stored
padded to ``T = max(n) + 1`` transitions (the last real transition of each row
is ``STOP``):

* ``log_pf`` (B, T): :math:`\\log P_F(s_{t+1} \\mid s_t)`, STOP included;
* ``log_pb`` (B, T): :math:`\\log P_B(s_t \\mid s_{t+1})`, 0 for the STOP step;
* ``log_flow`` (B, T): :math:`\\log F(s_t)` for ``t = 0..n``;
* ``log_reward`` (B,): :math:`\\log R(x)` (already symmetry-corrected if wanted);
* ``lengths`` (B,): number of real transitions ``n + 1``.

Entries past ``lengths`` are ignored.  With the sink's flow set to the reward,
every objective is a mean of squared log-ratios
:math:`\\log F(s_i) + \\sum_{t=i}^{j-1} (\\log P_F - \\log P_B) - \\log F(s_j)`:
TB uses the pair ``(0, sink)`` with ``F(s_0) = Z``, DB the adjacent pairs and
SubTB all pairs weighted by :math:`\\lambda^{j-i}` (Madan et al., 2023).
"""

from __future__ import annotations

import math
import numbers

import torch

__all__ = [
    "detailed_balance_loss",
    "subtrajectory_balance_loss",
    "trajectory_balance_loss",
]


def _check(
    log_pf: torch.Tensor, log_pb: torch.Tensor, log_reward: torch.Tensor, lengths: torch.Tensor
) -> torch.Tensor:
    for name, t in (("log_pf", log_pf), ("log_pb", log_pb), ("log_reward", log_reward)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor")
    if log_pf.ndim != 2:
        raise ValueError(f"log_pf must have shape (B, T), got {tuple(log_pf.shape)}")
    if log_pb.shape != log_pf.shape:
        raise ValueError(
            f"log_pb shape {tuple(log_pb.shape)} != log_pf shape {tuple(log_pf.shape)}"
        )
    B, T = log_pf.shape
    if B == 0:
        raise ValueError("log_pf is empty (no trajectories)")
    if log_reward.shape != (B,):
        raise ValueError(f"log_reward must have shape ({B},), got {tuple(log_reward.shape)}")
    if lengths.shape != (B,):
        raise ValueError(f"lengths must have shape ({B},), got {tuple(lengths.shape)}")
    lengths = lengths.long()
    if bool(((lengths < 1) | (lengths > T)).any()):
        raise ValueError(f"lengths must lie in [1, {T}]")
    if not bool(torch.isfinite(log_reward).all()):
        raise ValueError("log_reward contains NaN or inf")
    mask = _mask(lengths, T)
    for name, t in (("log_pf", log_pf), ("log_pb", log_pb)):
        if not bool(torch.isfinite(t[mask]).all()):
            raise ValueError(f"{name} contains NaN or inf within the trajectories' lengths")
    return lengths


def _mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    return torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def trajectory_balance_loss(
    log_z: torch.Tensor,
    log_pf: torch.Tensor,
    log_pb: torch.Tensor,
    log_reward: torch.Tensor,
    lengths: torch.Tensor,
) -> torch.Tensor:
    """Trajectory balance (Malkin et al., 2022), mean over the batch.

    :math:`(\\log Z + \\sum_t \\log P_F - \\log R(x) - \\sum_t \\log P_B)^2`.

    Parameters
    ----------
    log_z : Tensor, shape () or (1,)
    log_pf, log_pb : Tensor, shape (B, T)
    log_reward : Tensor, shape (B,)
    lengths : LongTensor, shape (B,)

    Returns
    -------
    Tensor, shape ()
    """
    lengths = _check(log_pf, log_pb, log_reward, lengths)
    if log_z.numel() != 1:
        raise ValueError(f"log_z must be a scalar, got shape {tuple(log_z.shape)}")
    if not bool(torch.isfinite(log_z).all()):
        raise ValueError("log_z is NaN or inf")
    m = _mask(lengths, log_pf.shape[1])
    diff = torch.where(m, log_pf - log_pb, torch.zeros_like(log_pf)).sum(1)
    return (log_z.reshape(()) + diff - log_reward).pow(2).mean()


def _extended_flow(
    log_flow: torch.Tensor, log_reward: torch.Tensor, lengths: torch.Tensor
) -> torch.Tensor:
    # (B, T+1): F(s_0..s_n), then the sink's flow R(x) at column lengths[b].
    B, _T = log_flow.shape
    ext = torch.cat([log_flow, log_flow.new_zeros(B, 1)], dim=1)
    return ext.scatter(1, lengths.unsqueeze(1), log_reward.unsqueeze(1).to(ext.dtype))


def detailed_balance_loss(
    log_flow: torch.Tensor,
    log_pf: torch.Tensor,
    log_pb: torch.Tensor,
    log_reward: torch.Tensor,
    lengths: torch.Tensor,
) -> torch.Tensor:
    """Detailed balance (Bengio et al., 2023), mean over all real transitions.

    :math:`(\\log F(s_t) + \\log P_F(s_{t+1}|s_t) - \\log F(s_{t+1}) - \\log P_B(s_t|s_{t+1}))^2`
    with :math:`F(s_f) := R(x)` on the STOP transition.

    Parameters
    ----------
    log_flow, log_pf, log_pb : Tensor, shape (B, T)
    log_reward : Tensor, shape (B,)
    lengths : LongTensor, shape (B,)

    Returns
    -------
    Tensor, shape ()
    """
    lengths = _check(log_pf, log_pb, log_reward, lengths)
    if not isinstance(log_flow, torch.Tensor) or not log_flow.is_floating_point():
        raise TypeError("log_flow must be a floating-point tensor")
    if log_flow.shape != log_pf.shape:
        raise ValueError(
            f"log_flow shape {tuple(log_flow.shape)} != log_pf shape {tuple(log_pf.shape)}"
        )
    if not bool(torch.isfinite(log_flow[_mask(lengths, log_pf.shape[1])]).all()):
        raise ValueError("log_flow contains NaN or inf within the trajectories' lengths")
    ext = _extended_flow(log_flow, log_reward, lengths)
    res = ext[:, :-1] + log_pf - ext[:, 1:] - log_pb
    m = _mask(lengths, log_pf.shape[1])
    return res.pow(2)[m].mean()


def subtrajectory_balance_loss(
    log_flow: torch.Tensor,
    log_pf: torch.Tensor,
    log_pb: torch.Tensor,
    log_reward: torch.Tensor,
    lengths: torch.Tensor,
    lamda: float = 0.9,
) -> torch.Tensor:
    """Sub-trajectory balance (Madan et al., 2023) with geometric weights.

    Every pair ``0 <= i < j <= n + 1`` of a trajectory contributes
    :math:`\\lambda^{j-i}(\\log F(s_i) + \\sum_{t=i}^{j-1}(\\log P_F - \\log P_B) - \\log F(s_j))^2`,
    normalised by the trajectory's total weight; the result is the batch mean.

    Parameters
    ----------
    log_flow, log_pf, log_pb : Tensor, shape (B, T)
    log_reward : Tensor, shape (B,)
    lengths : LongTensor, shape (B,)
    lamda : float, default=0.9
        Positive weight base.

    Returns
    -------
    Tensor, shape ()
    """
    lengths = _check(log_pf, log_pb, log_reward, lengths)
    if not isinstance(log_flow, torch.Tensor) or not log_flow.is_floating_point():
        raise TypeError("log_flow must be a floating-point tensor")
    if log_flow.shape != log_pf.shape:
        raise ValueError(
            f"log_flow shape {tuple(log_flow.shape)} != log_pf shape {tuple(log_pf.shape)}"
        )
    if not bool(torch.isfinite(log_flow[_mask(lengths, log_pf.shape[1])]).all()):
        raise ValueError("log_flow contains NaN or inf within the trajectories' lengths")
    if isinstance(lamda, bool) or not (
        isinstance(lamda, numbers.Real) and lamda > 0 and math.isfinite(lamda)
    ):
        raise ValueError(f"lamda must be a positive float, got {lamda!r}")
    B, T = log_pf.shape
    m = _mask(lengths, T)
    step = torch.where(m, log_pf - log_pb, torch.zeros_like(log_pf))
    cum = torch.cat([step.new_zeros(B, 1), step.cumsum(1)], dim=1)  # (B, T+1)
    ext = _extended_flow(log_flow, log_reward, lengths)
    # res[b, i, j] = F_i + cum_j - cum_i - F_j
    a = ext - cum
    res = a.unsqueeze(2) - a.unsqueeze(1)
    idx = torch.arange(T + 1, device=step.device)
    gap = (idx.unsqueeze(0) - idx.unsqueeze(1)).to(step.dtype)  # j - i
    valid = (gap > 0).unsqueeze(0) & (idx.view(1, 1, -1) <= lengths.view(-1, 1, 1))
    w = torch.where(valid, float(lamda) ** gap.unsqueeze(0), torch.zeros_like(res))
    per_traj = (w * res.pow(2)).sum((1, 2)) / w.sum((1, 2))
    return per_traj.mean()
