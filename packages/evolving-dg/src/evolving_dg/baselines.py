"""Baselines sharing SYNC's ``fit(domains, val_domains)`` / ``predict(X, t)`` interface (spec §3):
φ + linear head trained on pooled sources (ERM), on the last ⌈T_s/3⌉ sources (ERMLast), or with
the IRMv1 penalty across source domains (IRM). Same backbone, optimiser, budget and selection.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from evolving_dg.base import EvolvingEstimator
from evolving_dg.networks import make_backbone

__all__ = ["ERM", "IRM", "ERMLast", "irm_penalty"]


def irm_penalty(logits: Tensor, y: Tensor) -> Tensor:
    """IRMv1 penalty ‖∇_{w|w=1} CE(w · logits, y)‖² of one environment (Arjovsky et al., 2019).

    Parameters
    ----------
    logits : Tensor, shape (n, K)
    y : Tensor, shape (n,)
    """
    if not isinstance(logits, Tensor) or not logits.is_floating_point():
        raise TypeError(
            f"logits must be a floating-point tensor, got {getattr(logits, 'dtype', logits)}"
        )
    if logits.ndim != 2 or logits.shape[0] == 0:
        raise ValueError(f"logits must be a non-empty (n, K) tensor, got {tuple(logits.shape)}")
    if (
        not isinstance(y, Tensor)
        or y.is_floating_point()
        or y.is_complex()
        or y.dtype == torch.bool
    ):
        raise TypeError(f"y must be an integer tensor of class ids, got {getattr(y, 'dtype', y)}")
    if y.shape != (logits.shape[0],):
        raise ValueError(
            f"y must have shape ({logits.shape[0]},) like logits, got {tuple(y.shape)}"
        )
    if int(y.min()) < 0 or int(y.max()) >= logits.shape[1]:
        raise ValueError(f"y holds class ids outside [0, {logits.shape[1]})")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits contains NaN or inf")
    w = torch.ones((), requires_grad=True, device=logits.device, dtype=logits.dtype)
    (g,) = torch.autograd.grad(F.cross_entropy(logits * w, y), [w], create_graph=True)
    return g.pow(2)


class _Classifier(nn.Module):
    def __init__(self, input_shape, n_classes, backbone, width):
        super().__init__()
        self.phi = make_backbone(backbone, input_shape, width)
        self.head = nn.Linear(self.phi.n_outputs, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.phi(x))


class ERM(EvolvingEstimator):
    """Empirical risk minimisation on the pooled source domains.

    Parameters
    ----------
    backbone : {"mlp", "cnn"} or nn.Module with ``n_outputs``
    width : int, default=128
    lr : float, default=1e-3
    epochs, iters_per_epoch, batch_per_domain : int
        Each iteration draws ``batch_per_domain`` items from every used source domain.
    random_state : int, default=0
    verbose : int, default=0
    device : str or torch.device, default="cpu"
        Where the network trains and predicts (``"cuda"``); it is initialised on the CPU from
        ``random_state`` and moved, so every device starts from the same weights.
    """

    def __init__(self, backbone="mlp", width: int = 128, lr: float = 1e-3, epochs: int = 30,
                 iters_per_epoch: int = 50, batch_per_domain: int = 64, random_state: int = 0,
                 verbose: int = 0, device: str | torch.device = "cpu") -> None:  # fmt: skip
        self.backbone = backbone
        self.width = width
        self.lr = lr
        self.epochs = epochs
        self.iters_per_epoch = iters_per_epoch
        self.batch_per_domain = batch_per_domain
        self.random_state = random_state
        self.verbose = verbose
        self.device = device

    def _select(self, doms):
        return doms

    def _check_params(self) -> None:
        self._check_common()

    def fit(self, domains, val_domains=None, eval_domains=None):
        """Train on the source domains (see :meth:`SYNC.fit`); returns self."""
        self._check_params()
        doms, vals, shape, K = self._check_fit_input(domains, val_domains)
        evals = self._check_eval(eval_domains, shape, K)
        torch.manual_seed(self.random_state)
        self.n_classes_, self.input_shape_, self.n_source_ = K, shape, len(doms)
        self.net_ = _Classifier(shape, K, self.backbone, self.width)
        used = self._select(doms)
        self._fit_loop_used(used, doms, vals, evals)
        return self

    def _fit_loop_used(self, used, doms, vals, evals=()) -> None:
        self._fit_loop(used, vals, evals)
        # targets continue after *all* source domains, whichever were used for training
        self.next_index_ += len(doms) - len(used)

    def _train_step(self, x: Tensor, y: Tensor, epoch: int) -> dict[str, Tensor]:
        loss = F.cross_entropy(self.net_(x.flatten(0, 1)), y.flatten())
        return {"loss": loss}

    @torch.no_grad()
    def _predict_logits(self, X: Tensor, t: int, transductive: bool) -> Tensor:
        return self.net_.eval()(X)


class ERMLast(ERM):
    """ERM on the last ``ceil(fraction · T_s)`` source domains only (the most recent data)."""

    def __init__(self, backbone="mlp", width: int = 128, lr: float = 1e-3, epochs: int = 30,
                 iters_per_epoch: int = 50, batch_per_domain: int = 64, fraction: float = 1 / 3,
                 random_state: int = 0, verbose: int = 0,
                 device: str | torch.device = "cpu") -> None:  # fmt: skip
        super().__init__(backbone, width, lr, epochs, iters_per_epoch, batch_per_domain,
                         random_state, verbose, device)  # fmt: skip
        self.fraction = fraction

    def _check_params(self) -> None:
        super()._check_params()
        if not isinstance(self.fraction, numbers.Real) or not 0 < self.fraction <= 1:
            raise ValueError(f"fraction must lie in (0, 1], got {self.fraction!r}")

    def _select(self, doms):
        return doms[-math.ceil(self.fraction * len(doms)) :]


class IRM(ERM):
    """IRMv1 with source domains as environments: mean CE + λ · mean penalty, λ = 1 during the
    first ``warmup_epochs`` and ``penalty_weight`` after (loss divided by λ then, as DomainBed)."""

    def __init__(self, backbone="mlp", width: int = 128, lr: float = 1e-3, epochs: int = 30,
                 iters_per_epoch: int = 50, batch_per_domain: int = 64,
                 penalty_weight: float = 100.0, warmup_epochs: int = 1, random_state: int = 0,
                 verbose: int = 0, device: str | torch.device = "cpu") -> None:  # fmt: skip
        super().__init__(backbone, width, lr, epochs, iters_per_epoch, batch_per_domain,
                         random_state, verbose, device)  # fmt: skip
        self.penalty_weight = penalty_weight
        self.warmup_epochs = warmup_epochs

    def _check_params(self) -> None:
        super()._check_params()
        if not isinstance(self.penalty_weight, numbers.Real) or not (
            np.isfinite(self.penalty_weight) and self.penalty_weight >= 0
        ):
            raise ValueError(f"penalty_weight must be >= 0, got {self.penalty_weight!r}")
        if (
            isinstance(self.warmup_epochs, bool)
            or not isinstance(self.warmup_epochs, numbers.Integral)
            or (self.warmup_epochs < 0)
        ):
            raise ValueError(f"warmup_epochs must be an int >= 0, got {self.warmup_epochs!r}")

    def _train_step(self, x: Tensor, y: Tensor, epoch: int) -> dict[str, Tensor]:
        B, T = y.shape
        logits = self.net_(x.flatten(0, 1)).view(B, T, -1)
        ce = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        pen = torch.stack([irm_penalty(logits[:, t], y[:, t]) for t in range(T)]).mean()
        lam = self.penalty_weight if epoch >= self.warmup_epochs else 1.0
        loss = (ce + lam * pen) / max(lam, 1.0)
        return {"loss": loss, "ce": ce.detach(), "penalty": pen.detach()}
