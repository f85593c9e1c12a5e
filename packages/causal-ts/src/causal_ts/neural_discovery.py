"""Optional neural Granger discoverer, a small CUTS+-style stand-in (torch).

The paper's discoverer (CUTS+) learns edge logits ``G`` jointly with a neural forecaster
whose inputs are masked by graphs sampled from ``sigmoid(G)``, with a sparsity penalty.
This light version keeps that idea in a few lines: one small MLP per effect variable, its
lagged inputs masked by Gumbel-sigmoid samples of ``sigmoid(G)``, trained full-batch on
MSE + ``lambda_s * mean(sigmoid(G))`` with ``lambda_s`` decaying geometrically from
``sparsity[0]`` to ``sparsity[1]``. Edges with ``sigmoid(G) > threshold`` form the graph.
Not the full CUTS+ (no GRU message passing, no alternating optimisation, no imputation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from causal_ts._validation import check_fraction, check_int, check_positive, check_series
from causal_ts.discovery import _finish_edge_scores, constant_columns

__all__ = ["NeuralGrangerDiscoverer"]


class NeuralGrangerDiscoverer(BaseEstimator):
    """Neural Granger causal discovery with masked per-effect MLP forecasters.

    Parameters
    ----------
    lag : int, default=3
        Input steps of the forecaster.
    hidden_dim : int, default=16
    epochs : int, default=300
        Full-batch Adam steps.
    lr : float, default=1e-2
    sparsity : (float, float), default=(0.5, 0.05)
        Start and end weight of the mean edge-probability penalty (geometric decay). CUTS+
        uses 0.1 -> 0.01; with this single-optimiser version that leaves too many edges
        above 0.5 (edge F1 0.36 vs 0.78 on a 10-variable VAR), hence the larger default.
    threshold : float, default=0.5
        Edge iff ``sigmoid(G) > threshold``.
    temperature : float, default=0.5
        Gumbel-sigmoid temperature of the sampled masks.
    random_state : int or None, default=0
    device : str or torch.device, default="cpu"
        Where the forecasters train and predict (``"cuda"``). Weights and Gumbel noise are drawn
        from a CPU generator and moved, so every device trains on the same draws.

    Attributes
    ----------
    graph_ : numpy.ndarray of shape (N, N), bool
        ``graph_[c, e]`` = c Granger-causes e (row = cause); diagonal True.
    edge_scores_ : numpy.ndarray of shape (N, N)
        ``sigmoid(G)`` (1 on the diagonal).
    lag_ : int
    loss_curve_ : list of float
    """

    def __init__(
        self,
        lag: int = 3,
        hidden_dim: int = 16,
        epochs: int = 300,
        lr: float = 1e-2,
        sparsity: tuple[float, float] = (0.5, 0.05),
        threshold: float = 0.5,
        temperature: float = 0.5,
        random_state: int | None = 0,
        device: str | torch.device = "cpu",
    ) -> None:
        self.lag = lag
        self.hidden_dim = hidden_dim
        self.epochs = epochs
        self.lr = lr
        self.sparsity = sparsity
        self.threshold = threshold
        self.temperature = temperature
        self.random_state = random_state
        self.device = device

    def _forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x (B, lag, N), mask (N_cause, N_effect) -> forecasts (B, N)."""
        inp = torch.einsum("blc,ce->belc", x, mask)
        h = torch.nn.functional.gelu(torch.einsum("belc,elch->beh", inp, self._w1) + self._b1)
        return torch.einsum("beh,eh->be", h, self._w2) + self._b2

    def fit(self, X: Any, y: Any = None) -> NeuralGrangerDiscoverer:
        """Learn edge logits and forecasters on a (standardised) normal series.

        Parameters
        ----------
        X : array-like of shape (T, N)
        y : ignored

        Returns
        -------
        self
        """
        lag = check_int(self.lag, "lag", low=1)
        hidden = check_int(self.hidden_dim, "hidden_dim", low=1)
        epochs = check_int(self.epochs, "epochs", low=1)
        lr = check_positive(self.lr, "lr")
        thr = check_fraction(self.threshold, "threshold", low_open=True, high_open=True)
        temp = check_positive(self.temperature, "temperature")
        if len(self.sparsity) != 2:
            raise ValueError(f"sparsity must be a (start, end) pair; got {self.sparsity!r}")
        s0, s1 = (check_positive(v, "sparsity", allow_zero=True) for v in self.sparsity)
        try:
            dev = torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device must name a torch device, got {self.device!r}") from exc
        X = check_series(X, "X")
        T, N = X.shape
        if T <= lag + 1:
            raise ValueError(f"X has {T} time steps; need more than lag + 1 = {lag + 1}")
        windows = np.lib.stride_tricks.sliding_window_view(X, lag + 1, axis=0)
        windows = torch.as_tensor(
            windows.transpose(0, 2, 1).copy(), dtype=torch.float32, device=dev
        )
        x, target = windows[:, :lag], windows[:, lag]
        gen = torch.Generator().manual_seed(0 if self.random_state is None else self.random_state)
        scale = (lag * N) ** -0.5
        self._w1 = (torch.randn(N, lag, N, hidden, generator=gen) * scale).to(dev).requires_grad_()
        self._b1 = torch.zeros(N, hidden, device=dev, requires_grad=True)
        self._w2 = (torch.randn(N, hidden, generator=gen) * hidden**-0.5).to(dev).requires_grad_()
        self._b2 = torch.zeros(N, device=dev, requires_grad=True)
        logits = torch.ones(N, N, device=dev, requires_grad=True)  # every edge likely on at first
        eye = torch.eye(N, device=dev)
        opt = torch.optim.Adam([self._w1, self._b1, self._w2, self._b2, logits], lr=lr)
        self.loss_curve_: list[float] = []
        for step in range(epochs):
            lam = s0 * (s1 / s0) ** (step / max(epochs - 1, 1)) if s0 > 0 else 0.0
            u = torch.rand(N, N, generator=gen).to(dev).clamp(1e-6, 1 - 1e-6)
            noise = torch.log(u) - torch.log1p(-u)  # logistic noise: Gumbel-sigmoid sample
            mask = torch.sigmoid((logits + noise) / temp) * (1 - eye) + eye
            mse = torch.mean((self._forward(x, mask) - target) ** 2)
            loss = mse + lam * torch.sigmoid(logits)[eye == 0].mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.loss_curve_.append(mse.item())
        probs = torch.sigmoid(logits).detach().cpu().numpy().astype(float)
        probs = _finish_edge_scores(probs, constant_columns(X))
        self.edge_scores_ = probs
        self.graph_ = probs > thr
        self.lag_ = lag
        self.n_features_in_ = N
        self._mask = torch.as_tensor(
            self.graph_ | np.eye(N, dtype=bool), dtype=torch.float32, device=dev
        )
        for p in (self._w1, self._b1, self._w2, self._b2):
            p.requires_grad_(False)
        return self

    def predict_next(self, prefix: Any) -> np.ndarray:
        """One-step forecast with the hard learned graph as input mask.

        Parameters
        ----------
        prefix : array-like of shape (B, L, N), L >= ``lag_``

        Returns
        -------
        numpy.ndarray of shape (B, N)
        """
        if not hasattr(self, "graph_"):
            raise NotFittedError("NeuralGrangerDiscoverer is not fitted; call fit(X) first")
        x = np.asarray(prefix, dtype=np.float32)
        if x.ndim != 3 or x.shape[2] != self.n_features_in_:
            raise ValueError(f"prefix must have shape (B, L, {self.n_features_in_}); got {x.shape}")
        if x.shape[1] < self.lag_:
            raise ValueError(f"prefix has {x.shape[1]} steps; need at least lag_={self.lag_}")
        with torch.no_grad():
            x = torch.from_numpy(x[:, -self.lag_ :].copy()).to(self._mask.device)
            out = self._forward(x, self._mask)
        return out.cpu().numpy().astype(np.float64)
