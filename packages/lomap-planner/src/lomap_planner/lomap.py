"""LoMAP: local manifold approximation and projection (Lee & Choi, ICML 2025, Sec. 4).

At selected reverse-diffusion steps the sample ``x_{i-1}`` is replaced by its
projection onto a low-rank affine subspace fitted to offline trajectories:

1. Tweedie estimate ``x0_hat = E[x_0 | x_{i-1}]`` from the denoiser;
2. ``k`` nearest offline windows of ``x0_hat`` (cosine similarity);
3. forward-diffuse the neighbours to level ``i-1``: ``sqrt(a) n + sqrt(1-a) eps``;
4. PCA of the noisy neighbours, keeping the leading components that explain a
   fraction ``tau`` of the variance;
5. ``x_{i-1} <- mu + U U^T (x_{i-1} - mu)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from lomap_planner.neighbors import NeighborIndex

__all__ = ["OFFICIAL_PROJ_RANGE", "LoMAP", "local_pca", "project_affine"]

# projection windows of the official Maze2D configs (fractions of the reverse chain)
OFFICIAL_PROJ_RANGE = {"umaze": (0.3, 0.8), "medium": (0.3, 0.4), "large": (0.5, 0.8)}


def local_pca(
    samples: torch.Tensor, tau: float = 0.99, rank: int | None = None, batch_rank: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batched PCA of local neighbourhoods.

    Parameters
    ----------
    samples : Tensor, shape (b, k, d)
        ``k`` points per batch element.
    tau : float, default=0.99
        Keep the fewest leading components whose cumulative explained variance
        reaches ``tau`` (ignored when ``rank`` is given).
    rank : int, optional
        Fixed number of components, ``1 <= rank <= min(k - 1, d)``.
    batch_rank : bool, default=False
        Give every element the largest rank found in the batch, as the released code's
        ``LocalManifold.compute_pca`` does (``max_pca``): an element's projection then depends
        on the other elements of its batch. False keeps each element's own rank (the paper's
        per-sample rule). Directions of numerically zero variance are dropped (the released
        code's are scaled to near zero), so elements whose neighbours coincide keep rank 0.

    Returns
    -------
    mean : Tensor, shape (b, d)
    basis : Tensor, shape (b, d, r_max)
        Orthonormal principal directions; columns past an element's own rank are 0.
    n_components : Tensor of int64, shape (b,)
        At most ``k - 1`` (``k`` centred points span at most ``k - 1`` directions; a ``k``-th
        singular vector would be an arbitrary direction of zero variance), and 0 when the
        neighbours coincide, so the projection is then the common point itself.
    """
    if not isinstance(samples, torch.Tensor) or samples.ndim != 3:
        raise ValueError("samples must be a Tensor of shape (b, k, d)")
    if not samples.is_floating_point():
        raise TypeError(f"samples must be a floating tensor, got {samples.dtype}")
    if samples.dtype in (torch.float16, torch.bfloat16):  # no half-precision SVD: float32
        samples = samples.float()
    b, k, d = samples.shape
    if k < 2 or d < 1:
        raise ValueError(f"samples needs k >= 2 points of dim >= 1, got k={k}, d={d}")
    if not torch.isfinite(samples).all():
        raise ValueError("samples contains NaN or inf")
    if rank is not None and not (1 <= rank <= min(k - 1, d)):
        raise ValueError(f"rank must be in [1, min(k - 1, d)] = [1, {min(k - 1, d)}], got {rank}")
    if not (0.0 < tau <= 1.0):
        raise ValueError(f"tau must be in (0, 1], got {tau}")
    mean = samples.mean(1)
    centred = samples - mean[:, None]
    # Thin SVD of the (k, d) centred block: rows of vh are the principal axes and
    # s**2 the variances, without forming the d x d covariance.
    _, s, vh = torch.linalg.svd(centred, full_matrices=False)
    var = s**2
    total = var.sum(1)
    # numerically zero spread (identical neighbours): no direction is supported by the data
    flat = total <= 1e-12 * centred.abs().amax(dim=(1, 2)).clamp_min(1.0) ** 2
    if rank is None:
        frac = var.cumsum(1) / total[:, None].clamp_min(1e-30)
        n_comp = (frac < tau - 1e-12).sum(1) + 1
    else:
        n_comp = torch.full((b,), rank, dtype=torch.long, device=samples.device)
    n_comp = n_comp.clamp(max=min(k - 1, var.shape[1]))
    if not isinstance(batch_rank, bool):
        raise TypeError(f"batch_rank must be a bool, got {type(batch_rank).__name__}")
    if batch_rank:
        n_comp = n_comp.amax().expand(b).clone()
    n_comp = torch.where(flat, torch.zeros_like(n_comp), n_comp)
    r_max = int(n_comp.max())
    keep = torch.arange(r_max, device=samples.device)[None] < n_comp[:, None]  # (b, r_max)
    if batch_rank:  # a direction of (numerically) zero variance is not in the span: drop it
        keep = keep & (var[:, :r_max] > 1e-10 * var[:, :1])
        n_comp = keep.sum(1)
    basis = vh[:, :r_max].transpose(1, 2) * keep[:, None].to(vh.dtype)
    return mean, basis, n_comp


def project_affine(x: torch.Tensor, mean: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """Orthogonal projection onto ``{mean + basis @ c}``: ``mean + U U^T (x - mean)``.

    Parameters
    ----------
    x, mean : Tensor, shape (b, d)
    basis : Tensor, shape (b, d, r), orthonormal (or zero) columns

    Returns
    -------
    Tensor, shape (b, d)
    """
    if x.shape != mean.shape or basis.shape[:2] != x.shape:
        raise ValueError("x, mean must be (b, d) and basis (b, d, r)")
    coef = torch.einsum("bdr,bd->br", basis, x - mean)
    return mean + torch.einsum("bdr,br->bd", basis, coef)


class LoMAP:
    """Training-free manifold projection for a trajectory diffusion sampler.

    Parameters
    ----------
    windows : ndarray or Tensor, shape (n, horizon, transition_dim)
        Offline trajectory windows in the *normalised* space the model samples in.
    n_neighbors : int, default=10
        ``k`` neighbours per projection (official maze2d config: 10).
    tau : float, default=0.99
        Explained-variance threshold of the local PCA (official config: 0.99).
    rank : int, optional
        Fixed subspace rank instead of ``tau``; must not exceed the trajectory
        dimension ``horizon * transition_dim`` nor ``n_neighbors - 1``.
    proj_range : tuple of float, default=(0.5, 0.8)
        Project when the step index ``i`` satisfies ``lo * (N-1) <= i <= hi * (N-1)``
        (``N`` diffusion steps, ``i`` counted from ``N-1`` down to 0), as in the
        official maze2d configs.
    metric : {"cosine", "euclidean"}, default="cosine"
    backend : {"torch", "kdtree"}, default="torch"
    search_weights : array-like of shape (transition_dim,), optional
        Per-feature weights applied to windows and queries for the neighbour
        search only (e.g. 0 on action channels, as the official Maze2D configs'
        ``action_dim_weight: 0``).  The PCA always uses the full windows.
    time_weights : array-like of shape (horizon,), optional
        Per-timestep search weights; with ``search_weights`` they form the outer product
        ``time_weights[:, None] * search_weights[None, :]``.
    dim_weights : array-like of shape (horizon, transition_dim), optional
        The full search-weight array, as the official code builds it (``dim_weights``): it
        replaces ``search_weights`` and ``time_weights``. The official Maze2D configs weight
        only the ``(x, y)`` of the first and last state by 100 and the actions by 0 (see
        :meth:`for_layout`), which no outer product can express.
    search_kwargs : dict, optional
        Passed to :class:`~lomap_planner.neighbors.NeighborIndex` (e.g. ``nprobe``).
    batch_rank : bool, default=False
        Every sample of a batch keeps the largest PCA rank of the batch, as the released code
        does (see :func:`local_pca`); False: each sample its own (per-sample ``tau``).
    """

    @classmethod
    def for_layout(
        cls, layout: str, windows: np.ndarray | torch.Tensor, action_dim: int = 0, **kwargs
    ) -> LoMAP:
        """LoMAP with the official Maze2D configuration of ``layout``.

        Projection windows umaze (0.3, 0.8), medium (0.3, 0.4), large (0.5, 0.8); in the
        search, the ``(x, y)`` of the first and last state (the inpainted start and goal) are
        weighted x100 and the actions (the first ``action_dim`` channels) 0, as the official
        ``dim_weights[[0, -1], :2] = sg_weight`` (its observations come first, ours after the
        actions); k = 10, tau = 0.99, cosine similarity. ``kwargs`` override any of these.
        """
        if layout not in OFFICIAL_PROJ_RANGE:
            raise ValueError(f"layout must be one of {sorted(OFFICIAL_PROJ_RANGE)}, got {layout!r}")
        w = np.asarray(windows)
        if w.ndim != 3:
            raise ValueError("windows must have shape (n, horizon, transition_dim)")
        if w.shape[2] < action_dim + 2:
            raise ValueError(
                f"windows need action_dim + 2 = {action_dim + 2} channels (actions, then x, y)"
            )
        dw = np.ones(w.shape[1:])
        dw[:, :action_dim] = 0.0  # action_dim_weight: 0
        dw[[0, -1], action_dim : action_dim + 2] = 100.0  # sg_weight on the start/goal (x, y)
        cfg = {
            "n_neighbors": 10,
            "tau": 0.99,
            "proj_range": OFFICIAL_PROJ_RANGE[layout],
            "metric": "cosine",
            "dim_weights": dw,
        }
        return cls(windows, **{**cfg, **kwargs})

    def __init__(
        self,
        windows: np.ndarray | torch.Tensor,
        n_neighbors: int = 10,
        tau: float = 0.99,
        rank: int | None = None,
        proj_range: tuple[float, float] = (0.5, 0.8),
        metric: str = "cosine",
        backend: str = "torch",
        search_weights: np.ndarray | None = None,
        time_weights: np.ndarray | None = None,
        dim_weights: np.ndarray | None = None,
        search_kwargs: dict | None = None,
        batch_rank: bool = False,
    ) -> None:
        w = torch.as_tensor(
            np.asarray(windows) if not isinstance(windows, torch.Tensor) else windows
        )
        if w.ndim != 3 or min(w.shape) == 0:
            raise ValueError(
                f"windows must have shape (n, horizon, transition_dim), got {tuple(w.shape)}"
            )
        if not torch.isfinite(w).all():
            raise ValueError("windows contains NaN or inf")
        n, horizon, tdim = w.shape
        dim = horizon * tdim
        if not isinstance(n_neighbors, (int, np.integer)) or not (2 <= n_neighbors <= n):
            raise ValueError(
                f"n_neighbors must be an int in [2, n_windows={n}], got {n_neighbors!r}"
            )
        if not (0.0 < tau <= 1.0):
            raise ValueError(f"tau must be in (0, 1], got {tau}")
        if rank is not None:
            if rank > dim:
                raise ValueError(
                    f"rank={rank} exceeds the trajectory dimension horizon*transition_dim={dim}"
                )
            if not (1 <= rank <= n_neighbors - 1):
                raise ValueError(
                    f"rank must be in [1, n_neighbors - 1 = {n_neighbors - 1}], got {rank}"
                )
        lo, hi = proj_range
        if not (0.0 <= lo < hi <= 1.0):
            raise ValueError(f"proj_range must satisfy 0 <= lo < hi <= 1, got {proj_range}")
        self.windows = w.float()
        self.horizon, self.transition_dim = horizon, tdim
        if search_weights is None:
            self.search_weights = torch.ones(tdim)
        else:
            sw = torch.as_tensor(np.asarray(search_weights, dtype=np.float32))
            if sw.shape != (tdim,) or not torch.isfinite(sw).all() or (sw < 0).any():
                raise ValueError(
                    f"search_weights must be {tdim} finite non-negative numbers, got {tuple(sw.shape)}"
                )
            if not (sw > 0).any():
                raise ValueError("search_weights must have at least one positive entry")
            self.search_weights = sw
        if time_weights is None:
            self.time_weights = torch.ones(horizon)
        else:
            tw = torch.as_tensor(np.asarray(time_weights, dtype=np.float32))
            if tw.shape != (horizon,) or not torch.isfinite(tw).all() or (tw < 0).any():
                raise ValueError(
                    f"time_weights must be {horizon} finite non-negative numbers, "
                    f"got {tuple(tw.shape)}"
                )
            if not (tw > 0).any():
                raise ValueError("time_weights must have at least one positive entry")
            self.time_weights = tw
        if not isinstance(batch_rank, bool):
            raise TypeError(f"batch_rank must be a bool, got {type(batch_rank).__name__}")
        self.batch_rank = batch_rank
        self.n_neighbors, self.tau, self.rank = int(n_neighbors), float(tau), rank
        self.proj_range = (float(lo), float(hi))
        if dim_weights is None:
            self._weights = self.time_weights[:, None] * self.search_weights[None, :]
        else:
            if search_weights is not None or time_weights is not None:
                raise ValueError("dim_weights replaces search_weights and time_weights: give one")
            dw = torch.as_tensor(np.asarray(dim_weights, dtype=np.float32))
            if dw.shape != (horizon, tdim) or not torch.isfinite(dw).all() or (dw < 0).any():
                raise ValueError(
                    f"dim_weights must be a ({horizon}, {tdim}) array of finite non-negative "
                    f"numbers, got {tuple(dw.shape)}"
                )
            if not (dw > 0).any():
                raise ValueError("dim_weights must have at least one positive entry")
            self._weights = dw
        keys = (self.windows * self._weights).reshape(n, dim)
        self.index = NeighborIndex(keys, metric=metric, backend=backend, **(search_kwargs or {}))
        self.last_ranks: torch.Tensor | None = None

    def active(self, i: int, n_timesteps: int) -> bool:
        """Whether to project after the reverse step from level ``i`` to ``i-1``."""
        lo, hi = self.proj_range
        return i > 0 and int(lo * (n_timesteps - 1)) <= i <= int(hi * (n_timesteps - 1))

    @torch.no_grad()
    def project(
        self,
        x: torch.Tensor,
        x0_hat: torch.Tensor,
        alpha_bar: float,
        condition: Callable[[torch.Tensor], torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Project noisy samples onto their local data manifold.

        Parameters
        ----------
        x : Tensor, shape (b, horizon, transition_dim)
            Samples at the noise level ``alpha_bar``.
        x0_hat : Tensor, shape (b, horizon, transition_dim)
            Tweedie estimates of the clean samples (neighbour queries).
        alpha_bar : float
            Cumulative signal coefficient of ``x``'s noise level (1 = clean).
        condition : callable, optional
            Re-applies inpainting constraints to a (b * k, horizon, dim) tensor so the
            neighbours share ``x``'s fixed start/goal.
        generator : torch.Generator, optional

        Returns
        -------
        Tensor, shape like ``x``
        """
        for name, t in (("x", x), ("x0_hat", x0_hat)):
            if not isinstance(t, torch.Tensor) or not t.is_floating_point():
                raise TypeError(f"{name} must be a floating-point tensor")
            if t.ndim != 3 or t.shape[0] == 0 or t.shape[1:] != (self.horizon, self.transition_dim):
                raise ValueError(
                    f"{name} must have shape (b >= 1, {self.horizon}, {self.transition_dim}), "
                    f"got {tuple(t.shape)}"
                )
            if not torch.isfinite(t).all():
                raise ValueError(f"{name} contains NaN or inf")
        if x.shape != x0_hat.shape:
            raise ValueError(f"x0_hat has shape {tuple(x0_hat.shape)}, x {tuple(x.shape)}")
        if isinstance(alpha_bar, bool) or not (0.0 < alpha_bar <= 1.0):
            raise ValueError(f"alpha_bar must be in (0, 1], got {alpha_bar}")
        b, k = x.shape[0], self.n_neighbors
        dtype = x.dtype
        if dtype not in (torch.float32, torch.float64):  # half precision: project in float32
            x, x0_hat = x.float(), x0_hat.float()
        query = (x0_hat.detach().cpu().float() * self._weights).reshape(b, -1)
        _, idx = self.index.search(query, k)
        nb = self.windows[idx.reshape(-1)].to(x)  # (b * k, H, C)
        # CPU noise (a CPU generator), moved to x's device: the same draws on every device
        eps = torch.randn(nb.shape, generator=generator, dtype=nb.dtype, device="cpu")
        nb = alpha_bar**0.5 * nb + (1.0 - alpha_bar) ** 0.5 * eps.to(nb)
        if condition is not None:
            nb = condition(nb)
        mean, basis, ranks = local_pca(
            nb.reshape(b, k, -1),
            tau=self.tau,
            rank=self.rank,
            batch_rank=getattr(self, "batch_rank", False),  # objects pickled before it existed
        )
        self.last_ranks = ranks
        return project_affine(x.reshape(b, -1), mean, basis).reshape(x.shape).to(dtype)
