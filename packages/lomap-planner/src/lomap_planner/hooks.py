"""LoMAP as a hook for any sampler's denoising loop.

A projector is a callable ``x_t = projector(x_t, x0_hat, alpha_bar)``: after a reverse step
the sampler hands it its current sample ``x_t``, its Tweedie estimate ``x0_hat`` of the clean
sample, and the cumulative signal coefficient ``alpha_bar`` of ``x_t``'s noise level; it
returns ``x_t`` projected onto the local manifold of the offline data (Algorithm 1 of the
LoMAP paper). Nothing else about the sampler is assumed: DDPM, DDIM, a diffusers scheduler
loop or the package's own planner can call it.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import torch

from lomap_planner.lomap import LoMAP

__all__ = ["LoMAPProjector"]


class LoMAPProjector:
    """Callable projection hook ``(x_t, x0_hat, alpha_bar) -> x_t``.

    Parameters
    ----------
    lomap : LoMAP
        Built on the offline windows, in the space the sampler works in.
    condition : callable, optional
        Re-applies the sampler's inpainting constraints to a ``(b * k, horizon, dim)`` tensor
        of noised neighbours, so they share the sample's fixed start and goal.
    seed : int, optional
        Seeds the noise added to the neighbours (reproducible projections).

    Examples
    --------
    Inside a plain DDPM loop, after computing ``x_prev`` and ``x0_hat`` at step ``t``::

        if projector.active(t, n_steps):
            x_prev = projector(x_prev, x0_hat, alpha_bar[t - 1])
    """

    def __init__(
        self, lomap: LoMAP, condition: Callable[[torch.Tensor], torch.Tensor] | None = None,
        seed: int | None = None,
    ) -> None:  # fmt: skip
        if not isinstance(lomap, LoMAP):
            raise TypeError(f"lomap: expected a LoMAP, got {type(lomap).__name__}")
        if condition is not None and not callable(condition):
            raise TypeError(
                f"condition: expected a callable or None, got {type(condition).__name__}"
            )
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0
        ):  # int(1.5) was seed 1
            raise ValueError(f"seed: expected a non-negative int or None, got {seed!r}")
        self.lomap, self.condition = lomap, condition
        self.generator = None if seed is None else torch.Generator().manual_seed(int(seed))

    def active(self, step: int, n_steps: int) -> bool:
        """Whether the LoMAP configuration projects at reverse step ``step`` of ``n_steps``."""
        return self.lomap.active(step, n_steps)

    def __call__(self, x_t: torch.Tensor, x0_hat: torch.Tensor, alpha_bar) -> torch.Tensor:
        """Project ``x_t`` (b, horizon, dim) using neighbours of ``x0_hat``."""
        v = alpha_bar.item() if isinstance(alpha_bar, torch.Tensor) else alpha_bar
        if isinstance(v, bool) or not isinstance(v, numbers.Real):  # float("0.5") was accepted
            raise TypeError(f"alpha_bar: expected a number, got {type(v).__name__}")
        a = float(v)
        return self.lomap.project(
            x_t, x0_hat, a, condition=self.condition, generator=self.generator
        )
