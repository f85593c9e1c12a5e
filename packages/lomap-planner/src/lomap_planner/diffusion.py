"""Diffuser-style Gaussian diffusion over trajectories (Janner et al., 2022).

Trajectories are ``(B, H, act_dim + obs_dim)`` tensors.  Goal-conditioned
planning is inpainting: the observation channels at fixed time indices are
overwritten with the known states after every step (Diffuser Sec. 3.3).
Reward/value guidance shifts the reverse-step mean by ``scale * Sigma * grad J``
(Diffuser Eq. 3).  A :class:`~lomap_planner.lomap.LoMAP` object, if given, projects
the samples at the steps it selects (LoMAP Alg. 1) -- no retraining needed.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from lomap_planner._checks import check_bool, check_int, check_real
from lomap_planner.lomap import LoMAP

__all__ = ["GaussianDiffusion", "apply_conditioning", "cosine_beta_schedule"]

Conditions = dict[int, torch.Tensor]


def cosine_beta_schedule(n_timesteps: int, s: float = 0.008) -> torch.Tensor:
    """Cosine noise schedule (Nichol & Dhariwal, 2021), as used by Diffuser.

    Returns
    -------
    Tensor, shape (n_timesteps,), values in (0, 0.999]
    """
    if isinstance(n_timesteps, bool) or not isinstance(n_timesteps, numbers.Integral):
        raise TypeError(f"n_timesteps must be an int, got {n_timesteps!r}")
    if n_timesteps < 1:
        raise ValueError(f"n_timesteps must be >= 1, got {n_timesteps}")
    if isinstance(s, bool) or not isinstance(s, numbers.Real) or not (np.isfinite(s) and s >= 0):
        raise ValueError(f"s must be a finite number >= 0, got {s!r}")
    steps = np.arange(n_timesteps + 1, dtype=np.float64)
    f = np.cos(((steps / n_timesteps) + s) / (1 + s) * np.pi / 2) ** 2
    betas = 1 - f[1:] / f[:-1]
    return torch.tensor(np.clip(betas, 0, 0.999), dtype=torch.float32, device="cpu")


def apply_conditioning(x: torch.Tensor, conditions: Conditions, action_dim: int) -> torch.Tensor:
    """Overwrite the observation channels at the conditioned time steps.

    Parameters
    ----------
    x : Tensor, shape (B * r, H, act_dim + obs_dim)
        ``r >= 1``: a batch repeated ``r`` times per condition row (row-major), as
        LoMAP's neighbour stacks are.
    conditions : dict[int, Tensor of shape (B, obs_dim) or (B, n <= obs_dim)]
        Time index -> known leading observation features (e.g. position only).
    action_dim : int

    Returns
    -------
    Tensor, a new tensor shaped like ``x``.
    """
    x = x.clone()
    for t, val in conditions.items():
        reps = x.shape[0] // val.shape[0]
        v = val.to(x).repeat_interleave(reps, dim=0)
        x[:, t, action_dim : action_dim + v.shape[1]] = v
    return x


class GaussianDiffusion(nn.Module):
    """DDPM over trajectory windows with inpainting, guidance and optional LoMAP.

    Parameters
    ----------
    model : nn.Module
        Maps ``(x, t)`` with ``x`` of shape (B, H, C) to a tensor of the same shape.
    horizon, transition_dim, action_dim : int
    n_timesteps : int, default=32
    predict_epsilon : bool, default=False
        Diffuser's Maze2D models predict ``x_0`` directly (``False``).
    clip_denoised : bool, default=True
        Clip ``x_0`` estimates to ``[-1, 1]`` (the normalised data range).
    """

    def __init__(
        self,
        model: nn.Module,
        horizon: int,
        transition_dim: int,
        action_dim: int,
        n_timesteps: int = 32,
        predict_epsilon: bool = False,
        clip_denoised: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        horizon = check_int("horizon", horizon, 2)  # a start and a goal step
        transition_dim = check_int("transition_dim", transition_dim, 1)
        action_dim = check_int("action_dim", action_dim, 0)
        if action_dim >= transition_dim:
            raise ValueError(f"action_dim must be in [0, transition_dim), got {action_dim}")
        n_timesteps = check_int("n_timesteps", n_timesteps, 2)
        self.model = model
        self.horizon, self.transition_dim, self.action_dim = horizon, transition_dim, action_dim
        self.n_timesteps = n_timesteps
        self.predict_epsilon = check_bool("predict_epsilon", predict_epsilon)
        self.clip_denoised = check_bool("clip_denoised", clip_denoised)
        betas = cosine_beta_schedule(n_timesteps)
        alphas = 1.0 - betas
        ab = torch.cumprod(alphas, 0)
        ab_prev = torch.cat([torch.ones(1, device=ab.device), ab[:-1]])
        self.register_buffer("betas", betas)
        self.register_buffer("alphas_cumprod", ab)
        self.register_buffer("posterior_variance", betas * (1 - ab_prev) / (1 - ab))
        self.register_buffer("posterior_coef1", betas * ab_prev.sqrt() / (1 - ab))
        self.register_buffer("posterior_coef2", (1 - ab_prev) * alphas.sqrt() / (1 - ab))

    def check_conditions(self, conditions: Conditions, batch: int | None = None) -> int:
        """Shapes of a conditions dict (no value check: this runs every training step).

        Returns the batch size the conditions fix.
        """
        if not isinstance(conditions, dict) or not conditions:
            raise ValueError("conditions must be a dict fixing at least one time step")
        obs_dim = self.transition_dim - self.action_dim
        sizes = set()
        for t_idx, v in conditions.items():
            if isinstance(t_idx, bool) or not isinstance(t_idx, numbers.Integral):
                raise TypeError(f"conditions keys must be int time steps, got {t_idx!r}")
            if not (0 <= t_idx < self.horizon):
                raise ValueError(f"conditions key {t_idx} is outside [0, horizon={self.horizon})")
            if not isinstance(v, torch.Tensor) or v.ndim != 2 or not 1 <= v.shape[1] <= obs_dim:
                got = tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__
                raise ValueError(
                    f"conditions[{t_idx}] must be a (B, n <= {obs_dim}) tensor, got {got}"
                )
            sizes.add(v.shape[0])
        if len(sizes) != 1 or 0 in sizes:
            raise ValueError(f"conditions must share one batch size B >= 1, got {sorted(sizes)}")
        b = sizes.pop()
        if batch is not None and batch % b:
            raise ValueError(f"conditions fix B={b}, which does not divide the batch of {batch}")
        return b

    # ------------------------------------------------------------------ training
    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Forward noising ``sqrt(ab_t) x0 + sqrt(1 - ab_t) noise``."""
        ab = self.alphas_cumprod[t][:, None, None]
        return ab.sqrt() * x0 + (1 - ab).sqrt() * noise

    def loss(self, x0: torch.Tensor, conditions: Conditions) -> torch.Tensor:
        """Denoising loss on a batch of normalised windows (B, H, C)."""
        if x0.ndim != 3 or x0.shape[1:] != (self.horizon, self.transition_dim):
            raise ValueError(
                f"x0 must have shape (B, {self.horizon}, {self.transition_dim}), got {tuple(x0.shape)}"
            )
        self.check_conditions(conditions, x0.shape[0])
        t = torch.randint(0, self.n_timesteps, (x0.shape[0],), device=x0.device)
        noise = torch.randn_like(x0)
        xt = apply_conditioning(self.q_sample(x0, t, noise), conditions, self.action_dim)
        pred = self.model(xt, t)
        if self.predict_epsilon:
            return F.mse_loss(pred, noise)
        return F.mse_loss(apply_conditioning(pred, conditions, self.action_dim), x0)

    # ------------------------------------------------------------------ sampling
    def predict_x0(self, xt: torch.Tensor, t: int) -> torch.Tensor:
        """Tweedie / model estimate of ``x_0`` from ``x_t`` at integer level ``t``."""
        tt = torch.full((xt.shape[0],), t, dtype=torch.long, device=xt.device)
        out = self.model(xt, tt)
        if self.predict_epsilon:
            ab = self.alphas_cumprod[t]
            out = (xt - (1 - ab).sqrt() * out) / ab.sqrt()
        return out.clamp(-1.0, 1.0) if self.clip_denoised else out

    @torch.no_grad()
    def sample(
        self,
        conditions: Conditions,
        guide: Callable[[torch.Tensor], torch.Tensor] | None = None,
        guide_scale: float = 0.0,
        lomap: LoMAP | None = None,
        generator: torch.Generator | None = None,
        return_chain: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Ancestral sampling with inpainting, optional guidance and LoMAP.

        Parameters
        ----------
        conditions : dict[int, Tensor of shape (B, n)]
            Known (normalised) observation features per time index; fixes B.
        guide : callable, optional
            Differentiable ``J(x) -> (B,)`` in the normalised space.
        guide_scale : float, default=0.0
        lomap : LoMAP, optional
            Applies the manifold projection at the steps ``lomap.active`` selects.
        generator : torch.Generator, optional
        return_chain : bool, default=False
            Also return all intermediate samples, shape (N + 1, B, H, C).

        Returns
        -------
        Tensor, shape (B, H, C) (and the chain if requested)
        """
        b = self.check_conditions(conditions)
        for v in conditions.values():
            if not torch.isfinite(v).all():
                raise ValueError("conditions contain NaN or inf")
        guide_scale = check_real("guide_scale", guide_scale, 0.0)
        if guide is not None and not callable(guide):
            raise TypeError(f"guide must be callable or None, got {type(guide).__name__}")
        if lomap is not None and not isinstance(lomap, LoMAP):
            raise TypeError(f"lomap must be a LoMAP or None, got {type(lomap).__name__}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        check_bool("return_chain", return_chain)
        device = self.betas.device
        # noise is drawn where the generator lives (the CPU by default) and moved: a seed gives
        # the same plans on every device
        noise_device = generator.device if generator is not None else torch.device("cpu")
        shape = (b, self.horizon, self.transition_dim)

        def cond(z: torch.Tensor) -> torch.Tensor:
            return apply_conditioning(z, conditions, self.action_dim)

        x = cond(torch.randn(shape, generator=generator, device=noise_device).to(device))
        chain = [x]
        for i in range(self.n_timesteps - 1, -1, -1):
            x0 = self.predict_x0(x, i)
            mean = self.posterior_coef1[i] * x0 + self.posterior_coef2[i] * x
            var = self.posterior_variance[i]
            if guide is not None and guide_scale > 0:
                with torch.enable_grad():
                    xg = x.detach().requires_grad_(True)
                    grad = torch.autograd.grad(guide(xg).sum(), xg)[0]
                mean = mean + guide_scale * var * grad
            if i > 0:
                noise = torch.randn(shape, generator=generator, device=noise_device).to(device)
                x = mean + var.sqrt() * noise
            else:
                x = mean
            x = cond(x)
            if lomap is not None and lomap.active(i, self.n_timesteps):
                x0_next = cond(self.predict_x0(x, i - 1))
                x = cond(
                    lomap.project(x, x0_next, float(self.alphas_cumprod[i - 1]), cond, generator)
                )
            chain.append(x)
        if return_chain:
            return x, torch.stack(chain)
        return x
