"""EARTH as a forecaster: normalisation, the DTW graph from training data, training, prediction."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from epi_ode.base import BaseForecaster, ffill
from epi_ode.dtw import dtw_graph
from epi_ode.model import EARTH
from epi_ode.training import train_network
from epi_ode.validation import check_int, check_windows

__all__ = ["EARTHForecaster", "NeuralCDEForecaster"]


class _FromCoeffs(nn.Module):
    """EARTH called on precomputed control-spline coefficients (for the training loop)."""

    def __init__(self, earth: EARTH):
        super().__init__()
        self.earth = earth

    def forward(self, coeffs):
        return self.earth.forward_coeffs(coeffs)


class EARTHForecaster(BaseForecaster):
    """Fit EARTH on a (T, N) count series and forecast ``horizon`` steps ahead.

    Parameters
    ----------
    window, horizon : int
        Context length W (>= 4) and forecast horizon h.
    hidden, heads : int
        Latent width and readout heads (CPU default 16 / 4; the reference uses 128).
    epochs, lr, weight_decay, batch_size, patience :
        Adam with L1 loss on min-max normalised values; the best validation epoch is kept.
    dtw_neighbors, dtw_radius, dtw_keep :
        Semantic graph from the *training* series (``dtw_neighbors=0`` turns it off).
    infection, use_eano, use_gltg, use_cross_attention, solver, adjoint, time_channel,
    ar_source, persistence_init, sir_bias, dropout, sir_dropout :
        Passed to :class:`~epi_ode.model.EARTH`.
    output : {"direct", "trajectory"}
        ``"direct"``: the network forecasts step h only (the reference); ``"trajectory"``: it
        forecasts steps 1..h at once, and ``predict(context, horizon=k)`` returns them (rolling
        forward beyond h).
    rtol, atol : float
        Tolerances of the adaptive ``dopri5`` solver.
    random_state : int
        Seeds the initialisation, dropout and batch order (global torch RNG is left untouched).
    verbose : int
        0 silences the progress bar.
    device : str or torch.device, default="cpu"
        Where the model trains and predicts (``"cuda"``); it is built on the CPU from
        ``random_state`` and moved, so every device starts from the same weights.
    num_threads : int or None
        torch intra-op threads during fit/predict (restored afterwards).

    Attributes
    ----------
    model_ : EARTH
    history_ : list of dict
        Per-epoch ``train_loss``, ``val_loss`` (normalised L1) and CPU ``seconds``.
    semantic_graph_ : ndarray (N, N)
    """

    def __init__(self, window: int = 20, horizon: int = 4, hidden: int = 16, heads: int = 4,
                 epochs: int = 60, lr: float = 1e-3, weight_decay: float = 5e-4,
                 batch_size: int = 32, patience: int = 15, dtw_neighbors: int = 5,
                 dtw_radius: int = 6, dtw_keep: str = "nearest", infection: str = "concat",
                 use_eano: bool = True, use_gltg: bool = True, use_cross_attention: bool = True,
                 solver: str = "rk4", adjoint: bool = False, time_channel: bool = True,
                 ar_source: str = "values", persistence_init: bool = True, dropout: float = 0.5,
                 sir_dropout: float = 0.4, random_state: int = 0, verbose: int = 0,
                 num_threads: int | None = None, output: str = "direct", rtol: float = 1e-3,
                 atol: float = 1e-4, sir_bias: bool = True,
                 device: str | torch.device = "cpu"):  # fmt: skip
        self.window, self.horizon, self.hidden, self.heads = window, horizon, hidden, heads
        self.rtol, self.atol = rtol, atol
        self.epochs, self.lr, self.weight_decay = epochs, lr, weight_decay
        self.batch_size, self.patience = batch_size, patience
        self.dtw_neighbors, self.dtw_radius, self.dtw_keep = dtw_neighbors, dtw_radius, dtw_keep
        self.infection, self.use_eano, self.use_gltg = infection, use_eano, use_gltg
        self.use_cross_attention, self.solver, self.adjoint = use_cross_attention, solver, adjoint
        self.time_channel, self.ar_source = time_channel, ar_source
        self.persistence_init, self.sir_bias = persistence_init, sir_bias
        self.dropout, self.sir_dropout = dropout, sir_dropout
        self.random_state, self.verbose, self.num_threads = random_state, verbose, num_threads
        self.output, self.device = output, device

    def _check_common(self):
        super()._check_common()
        for name in ("epochs", "batch_size", "patience", "dtw_radius"):
            check_int(getattr(self, name), name, 1 if name != "dtw_radius" else 0)
        check_int(self.dtw_neighbors, "dtw_neighbors", 0)
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if (
                not isinstance(v, int | float)
                or not np.isfinite(v)
                or v < 0
                or (name == "lr" and v == 0)
            ):
                raise ValueError(
                    f"{name} must be a finite {'positive' if name == 'lr' else 'non-negative'} number, got {v!r}"
                )

    def _build(self) -> EARTH:
        return EARTH(self.n_regions_, self.adjacency_, hidden=self.hidden, heads=self.heads,
                     infection=self.infection, use_eano=self.use_eano, use_gltg=self.use_gltg,
                     use_cross_attention=self.use_cross_attention, dropout=self.dropout,
                     sir_dropout=self.sir_dropout, solver=self.solver, adjoint=self.adjoint,
                     time_channel=self.time_channel, ar_source=self.ar_source,
                     persistence_init=self.persistence_init, rtol=self.rtol, atol=self.atol,
                     n_out=self._n_out, sir_bias=self.sir_bias)  # fmt: skip

    def _threads(self):
        old = torch.get_num_threads()
        if self.num_threads is not None:
            torch.set_num_threads(check_int(self.num_threads, "num_threads", 1))
        return old

    def _fit_windows(self, Xtr, ytr, Xva, yva):
        old = self._threads()
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.random_state)
                model = self._build().to(self._device)  # built on the CPU, then moved
                k = min(self.dtw_neighbors, self.n_regions_ - 1)
                if k > 0 and self.use_gltg:
                    train = ffill(self.train_series_[None])[0]
                    self.semantic_graph_ = dtw_graph(train, k=k, radius=self.dtw_radius,
                                                     keep=self.dtw_keep)  # fmt: skip
                    model.set_semantic_graph(self.semantic_graph_)
                else:
                    self.semantic_graph_ = np.zeros((self.n_regions_, self.n_regions_))
                # spline coefficients depend on the data only: computed once, not every step
                self.history_ = train_network(
                    _FromCoeffs(model), self._coeffs(model, Xtr), ytr, self._coeffs(model, Xva), yva, epochs=self.epochs, lr=self.lr,
                    weight_decay=self.weight_decay, batch_size=self.batch_size,
                    patience=self.patience, seed=self.random_state, verbose=self.verbose,
                    desc=type(self).__name__,
                )  # fmt: skip
        finally:
            torch.set_num_threads(old)
        self.model_ = model

    @staticmethod
    @torch.no_grad()
    def _coeffs(model: EARTH, Z: np.ndarray) -> torch.Tensor:
        return model.control_coeffs(
            torch.as_tensor(Z, dtype=torch.float32, device=model.adjacency.device)
        )[0]

    @torch.no_grad()
    def _predict_windows(self, Z: np.ndarray) -> np.ndarray:
        old = self._threads()
        try:
            self.model_.eval()
            out = [self.model_.forward_coeffs(self._coeffs(self.model_, Z[k : k + 256]))
                   for k in range(0, len(Z), 256)]  # fmt: skip
        finally:
            torch.set_num_threads(old)
        return torch.cat(out).double().cpu().numpy()

    def graph_trace(self, context) -> np.ndarray:
        """Transmission graph A_t along the solve for one context, (W, N, N)."""
        self._check_fitted()
        X = check_windows(context, "context", self.n_regions_, self.window)
        if len(X) != 1:
            raise ValueError("graph_trace takes one context window (W', N)")
        Z = self.scaler_.transform(X[:, -self.window :])
        self.model_.eval()
        z = torch.as_tensor(Z, dtype=torch.float32, device=self._device)
        return self.model_.graph_trace(z)[:, 0].cpu().numpy()


class NeuralCDEForecaster(EARTHForecaster):
    """The same graph-free neural CDE without EARTH's ideas (no EANO, no GLTG, no attention):
    the "plain neural ODE" baseline with EARTH's encoder, training and readout."""

    def __init__(self, window: int = 20, horizon: int = 4, hidden: int = 16, epochs: int = 60,
                 lr: float = 1e-3, weight_decay: float = 5e-4, batch_size: int = 32,
                 patience: int = 15, solver: str = "rk4", dropout: float = 0.5,
                 random_state: int = 0, verbose: int = 0, num_threads: int | None = None,
                 output: str = "direct", device: str | torch.device = "cpu"):  # fmt: skip
        super().__init__(window=window, horizon=horizon, hidden=hidden, heads=1, epochs=epochs,
                         lr=lr, weight_decay=weight_decay, batch_size=batch_size,
                         patience=patience, dtw_neighbors=0, use_eano=False, use_gltg=False,
                         use_cross_attention=False, solver=solver, dropout=dropout,
                         random_state=random_state, verbose=verbose,
                         num_threads=num_threads, output=output, device=device)  # fmt: skip
