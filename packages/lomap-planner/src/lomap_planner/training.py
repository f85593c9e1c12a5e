"""Training loop for the trajectory diffusion model."""

from __future__ import annotations

import copy
import numbers
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from lomap_planner._checks import check_bool, check_int, check_real
from lomap_planner.diffusion import GaussianDiffusion

__all__ = ["DiffusionTrainer", "goal_conditions", "train_diffusion"]


def goal_conditions(x: torch.Tensor, action_dim: int, goal_features: int = 2) -> dict:
    """Diffuser's Maze2D conditions: the full first state and the last position.

    Parameters
    ----------
    x : Tensor, shape (B, H, C)
        Normalised windows.
    action_dim : int
    goal_features : int, default=2
        Leading observation features fixed at the last step (2 = goal position).

    Returns
    -------
    dict
        ``{0: (B, C - action_dim), H - 1: (B, goal_features)}``, views of ``x``.
    """
    # shapes only: this runs every training step, and a NaN check would sync the device
    if not isinstance(x, torch.Tensor) or x.ndim != 3 or x.shape[1] < 2:
        raise ValueError(
            f"x must be a (B, H >= 2, C) tensor, got {getattr(x, 'shape', type(x).__name__)}"
        )
    C = x.shape[2]
    if (
        isinstance(action_dim, bool)
        or not isinstance(action_dim, numbers.Integral)
        or not 0 <= action_dim < C
    ):
        raise ValueError(f"action_dim must be an int in [0, {C}), got {action_dim!r}")
    if (
        isinstance(goal_features, bool)
        or not isinstance(goal_features, numbers.Integral)
        or not 1 <= goal_features <= C - action_dim
    ):
        raise ValueError(
            f"goal_features must be an int in [1, {C - action_dim}], got {goal_features!r}"
        )
    return {
        0: x[:, 0, action_dim:],
        x.shape[1] - 1: x[:, -1, action_dim : action_dim + goal_features],
    }


class DiffusionTrainer:
    """Adam + EMA training of a :class:`GaussianDiffusion`, resumable from a state dict.

    ``fit(until)`` trains up to step ``until``; ``state_dict()`` holds everything the next
    step depends on (raw and EMA weights, Adam moments, the batch generator and torch's global
    RNG, which the loss draws noise from), so a run stopped at step s and resumed with
    ``load_state_dict`` is the same run as one that never stopped (tested). Diffuser samples
    with the EMA weights: ``ema`` is that model; ``finish()`` copies it into ``diffusion``.

    Parameters
    ----------
    diffusion : GaussianDiffusion
    windows : ndarray or Tensor, shape (n, horizon, transition_dim)
        Normalised to ``[-1, 1]``.
    batch_size : int, default=64
    lr : float, default=2e-4
    ema_decay : float, default=0.995
    seed : int, default=0
        Seeds the batch generator and torch's global RNG (as ``torch.manual_seed``), which the
        loss draws its noise and timesteps from: anything else that draws from the global RNG
        between construction and ``fit`` (building another network, say) changes the run.
    goal_features : int, default=2
        Leading observation features inpainted at the last step: 2 (the goal position, as
        Diffuser's Maze2D models) or the full state (a hierarchical planner's low level,
        which joins two full subgoal states).
    """

    def __init__(
        self,
        diffusion: GaussianDiffusion,
        windows: np.ndarray | torch.Tensor,
        batch_size: int = 64,
        lr: float = 2e-4,
        ema_decay: float = 0.995,
        seed: int = 0,
        goal_features: int = 2,
    ) -> None:
        if not isinstance(diffusion, GaussianDiffusion):
            raise TypeError(f"diffusion must be a GaussianDiffusion, got {type(diffusion).__name__}")  # fmt: skip
        if isinstance(windows, torch.Tensor):
            w = windows.detach().float()
        else:
            arr = np.asarray(windows)
            if arr.dtype.kind not in "fiu":
                raise TypeError(f"windows must be a float array, got dtype {arr.dtype}")
            w = torch.as_tensor(arr, device="cpu").float()
        if w.ndim != 3 or w.shape[1:] != (diffusion.horizon, diffusion.transition_dim):
            raise ValueError(
                f"windows must have shape (n, {diffusion.horizon}, {diffusion.transition_dim})"
            )
        if len(w) == 0:
            raise ValueError("windows is empty")
        if not torch.isfinite(w).all():
            raise ValueError("windows contains NaN or inf")
        batch_size = check_int("batch_size", batch_size, 1)
        lr = check_real("lr", lr, 0.0, strict=True)
        ema_decay = check_real("ema_decay", ema_decay, 0.0)
        if ema_decay >= 1.0:
            raise ValueError(f"ema_decay must be in [0, 1), got {ema_decay}")
        seed = check_int("seed", seed, 0)
        obs_dim = diffusion.transition_dim - diffusion.action_dim
        if isinstance(goal_features, bool) or not isinstance(goal_features, numbers.Integral) or not 1 <= goal_features <= obs_dim:  # fmt: skip
            raise ValueError(
                f"goal_features must be an int in [1, {obs_dim}], got {goal_features!r}"
            )
        self.diffusion, self.windows = diffusion, w
        self.batch_size, self.ema_decay = batch_size, ema_decay
        self.goal_features = int(goal_features)
        self.gen = torch.Generator(device="cpu").manual_seed(seed)
        torch.manual_seed(seed)  # seeds the accelerators' generators too
        params = [p for p in diffusion.model.parameters() if p.requires_grad]
        self.lr = float(lr)
        self.opt = torch.optim.Adam(params, lr=lr)
        self.ema = copy.deepcopy(diffusion.model).requires_grad_(False)
        self.step = 0

    def fit(self, until: int, verbose: bool = False) -> list[float]:
        """Train steps ``step + 1 .. until``; returns their losses.

        Batches are drawn on the CPU and trained on the diffusion model's device (the
        windows are moved there once).
        """
        until = check_int("until", until, 0)
        check_bool("verbose", verbose)
        if until < self.step:
            raise ValueError(f"until={until} is before the current step {self.step}")
        d, losses = self.diffusion, []
        if self.windows.device != d.betas.device:
            self.windows = self.windows.to(d.betas.device)
        w = self.windows
        d.train()
        for _ in tqdm(range(self.step, until), disable=not verbose, desc="train"):
            idx = torch.randint(len(w), (self.batch_size,), generator=self.gen, device="cpu")
            x0 = w[idx.to(w.device)]
            loss = d.loss(x0, goal_conditions(x0, d.action_dim, self.goal_features))
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            with torch.no_grad():
                for pe, pm in zip(self.ema.parameters(), d.model.parameters(), strict=True):
                    pe.lerp_(pm, 1.0 - self.ema_decay)
            losses.append(loss.item())
            self.step += 1
        return losses

    def finish(self) -> GaussianDiffusion:
        """Copy the EMA weights into ``diffusion`` (ends training: raw weights are replaced)."""
        self.diffusion.model.load_state_dict(self.ema.state_dict())
        return self.diffusion.eval()

    def state_dict(self) -> dict:
        """Everything the next step depends on (tensors copied)."""
        return {
            "step": self.step,
            "model": copy.deepcopy(self.diffusion.model.state_dict()),
            "ema": copy.deepcopy(self.ema.state_dict()),
            "optimizer": copy.deepcopy(self.opt.state_dict()),
            "generator": self.gen.get_state(),
            "torch_rng": torch.get_rng_state(),
            **self._accelerator_rng(),
        }

    def _accelerator_rng(self) -> dict:
        """The CUDA generator's state when the model trains there (the loss draws from it)."""
        dev = self.diffusion.betas.device
        return {"cuda_rng": torch.cuda.get_rng_state(dev)} if dev.type == "cuda" else {}

    def load_state_dict(self, state: dict) -> None:
        """Resume from :meth:`state_dict`'s output (weights of the same architecture)."""
        missing = {"step", "model", "ema", "optimizer", "generator", "torch_rng"} - set(state)
        if missing:
            raise ValueError(f"state is missing {sorted(missing)}")
        self.diffusion.model.load_state_dict(state["model"])
        self.ema.load_state_dict(state["ema"])
        self.opt.load_state_dict(state["optimizer"])
        # Adam's state_dict carries the saved run's lr; this trainer's own lr is the one asked for
        saved = {float(g["lr"]) for g in self.opt.param_groups}
        if saved != {self.lr}:
            warnings.warn(
                f"resuming with lr={self.lr:g}; the saved run used lr={sorted(saved)} "
                "(construct the trainer with the saved lr to continue the same run)",
                UserWarning,
                stacklevel=2,
            )
            for g in self.opt.param_groups:
                g["lr"] = self.lr
        self.gen.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        dev = self.diffusion.betas.device
        if "cuda_rng" in state and dev.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], dev)
        self.step = int(state["step"])


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
    the EMA model). For runs longer than one sitting, use :class:`DiffusionTrainer`, which
    this wraps, and save its ``state_dict()``.

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
        See :class:`DiffusionTrainer`.
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
    n_steps = check_int("n_steps", n_steps, 1)
    check_bool("verbose", verbose)
    if isinstance(checkpoints, str) or not all(
        isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in checkpoints
    ):
        raise TypeError(f"checkpoints must be a sequence of int steps, got {checkpoints!r}")
    if on_checkpoint is not None and not callable(on_checkpoint):
        raise TypeError(f"on_checkpoint must be callable, got {type(on_checkpoint).__name__}")
    marks = sorted({int(s) for s in checkpoints})
    if any(not 1 <= s <= n_steps for s in marks):
        raise ValueError(f"checkpoints must lie in [1, n_steps={n_steps}], got {list(checkpoints)}")
    if marks and on_checkpoint is None:
        raise ValueError("checkpoints were given without on_checkpoint")
    trainer = DiffusionTrainer(diffusion, windows, batch_size, lr, ema_decay, seed, goal_features)
    losses = []
    for mark in marks:
        losses += trainer.fit(mark, verbose=verbose)
        on_checkpoint(mark, trainer.ema)
    losses += trainer.fit(n_steps, verbose=verbose)
    trainer.finish()
    return losses
