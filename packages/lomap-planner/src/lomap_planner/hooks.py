"""LoMAP as a hook for any sampler's denoising loop.

A projector is a callable ``x_t = projector(x_t, x0_hat, alpha_bar)``: after a reverse step
the sampler hands it its current sample ``x_t``, its Tweedie estimate ``x0_hat`` of the clean
sample, and the cumulative signal coefficient ``alpha_bar`` of ``x_t``'s noise level; it
returns ``x_t`` projected onto the local manifold of the offline data (Algorithm 1 of the
LoMAP paper). Nothing else about the sampler is assumed: DDPM, DDIM, a diffusers scheduler
loop or the package's own planner can call it.
"""

from __future__ import annotations

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
        self.lomap, self.condition = lomap, condition
        self.generator = None if seed is None else torch.Generator().manual_seed(int(seed))

    def active(self, step: int, n_steps: int) -> bool:
        """Whether the LoMAP configuration projects at reverse step ``step`` of ``n_steps``."""
        return self.lomap.active(step, n_steps)

    def __call__(self, x_t: torch.Tensor, x0_hat: torch.Tensor, alpha_bar) -> torch.Tensor:
        """Project ``x_t`` (b, horizon, dim) using neighbours of ``x0_hat``."""
        a = float(alpha_bar.item() if isinstance(alpha_bar, torch.Tensor) else alpha_bar)
        return self.lomap.project(
            x_t, x0_hat, a, condition=self.condition, generator=self.generator
        )
