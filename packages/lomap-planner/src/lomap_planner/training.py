"""Training loop for the trajectory diffusion model."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from lomap_planner.diffusion import GaussianDiffusion

__all__ = ["goal_conditions", "train_diffusion"]


def goal_conditions(x: torch.Tensor, action_dim: int, goal_features: int = 2) -> dict:
    """Diffuser's Maze2D conditions: the full first state and the last position.

    Parameters
    ----------
    x : Tensor, shape (B, H, C)
        Normalised windows.
    action_dim : int
    goal_features : int, default=2
        Leading observation features fixed at the last step (2 = goal position).
    """
    return {
        0: x[:, 0, action_dim:],
        x.shape[1] - 1: x[:, -1, action_dim : action_dim + goal_features],
    }


def train_diffusion(
    diffusion: GaussianDiffusion,
    windows: np.ndarray | torch.Tensor,
    n_steps: int = 2000,
    batch_size: int = 64,
    lr: float = 2e-4,
    ema_decay: float = 0.995,
    seed: int = 0,
    verbose: bool = False,
    goal_features: int = 2,
    checkpoints: Sequence[int] = (),
    on_checkpoint: Callable[[int, torch.nn.Module], None] | None = None,
) -> list[float]:
    """Fit the denoiser on normalised windows with Adam; keeps an EMA of the weights.

    The EMA weights are copied into ``diffusion`` at the end (Diffuser samples with
    the EMA model).

    Parameters
    ----------
    diffusion : GaussianDiffusion
    windows : ndarray or Tensor, shape (n, horizon, transition_dim)
        Normalised to ``[-1, 1]``.
    n_steps, batch_size : int
    lr : float
    ema_decay : float, default=0.995
    seed : int
    verbose : bool
        Show a progress bar.
    goal_features : int, default=2
        Leading observation features inpainted at the last step: 2 (the goal position, as
        Diffuser's Maze2D models) or the full state (a hierarchical planner's low level,
        which joins two full subgoal states).
    checkpoints : sequence of int, default=()
        Steps (1..n_steps) after which ``on_checkpoint(step, ema_model)`` is called with the
        EMA denoiser at that step, so one run yields a training curve. The callback must
        copy what it keeps (``ema_model.state_dict()`` is live).
    on_checkpoint : callable, optional
        Required when ``checkpoints`` is not empty.

    Returns
    -------
    list of float
        The training loss per step.
    """
    w = torch.as_tensor(np.asarray(windows) if not isinstance(windows, torch.Tensor) else windows)
    w = w.float()
    if w.ndim != 3 or w.shape[1:] != (diffusion.horizon, diffusion.transition_dim):
        raise ValueError(
            f"windows must have shape (n, {diffusion.horizon}, {diffusion.transition_dim})"
        )
    if len(w) == 0:
        raise ValueError("windows is empty")
    if not torch.isfinite(w).all():
        raise ValueError("windows contains NaN or inf")
    if n_steps < 1 or batch_size < 1:
        raise ValueError("n_steps and batch_size must be >= 1")
    if not (0.0 <= ema_decay < 1.0):
        raise ValueError(f"ema_decay must be in [0, 1), got {ema_decay}")
    obs_dim = diffusion.transition_dim - diffusion.action_dim
    if not isinstance(goal_features, (int, np.integer)) or not 1 <= goal_features <= obs_dim:
        raise ValueError(f"goal_features must be an int in [1, {obs_dim}], got {goal_features!r}")
    marks = sorted({int(s) for s in checkpoints})
    if any(not 1 <= s <= n_steps for s in marks):
        raise ValueError(f"checkpoints must lie in [1, n_steps={n_steps}], got {list(checkpoints)}")
    if marks and on_checkpoint is None:
        raise ValueError("checkpoints were given without on_checkpoint")
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam([p for p in diffusion.model.parameters() if p.requires_grad], lr=lr)
    ema = copy.deepcopy(diffusion.model).requires_grad_(False)
    losses = []
    diffusion.train()
    for step in tqdm(range(1, n_steps + 1), disable=not verbose, desc="train"):
        x0 = w[torch.randint(len(w), (batch_size,), generator=gen)]
        loss = diffusion.loss(x0, goal_conditions(x0, diffusion.action_dim, goal_features))
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), diffusion.model.parameters(), strict=True):
                pe.lerp_(pm, 1.0 - ema_decay)
        losses.append(loss.item())
        if marks and step == marks[0]:
            marks.pop(0)
            on_checkpoint(step, ema)
    diffusion.model.load_state_dict(ema.state_dict())
    diffusion.eval()
    return losses
