"""Baselines behind the same ``fit(Y_train, adjacency, Y_val)`` / ``predict(context)`` interface:
persistence, ridge AR, a shared GRU, a small Cola-GNN, and mechanistic SIR fits (per region and
on the mobility network) re-fitted at every forecast origin."""

from __future__ import annotations

import numbers

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from epi_ode.base import BaseForecaster, ffill
from epi_ode.forecaster import NeuralCDEForecaster
from epi_ode.training import train_network
from epi_ode.validation import check_adjacency, check_int

__all__ = [
    "ARRidge",
    "ColaGNNLite",
    "GRUForecaster",
    "LSTMForecaster",
    "NetworkSIRFit",
    "NeuralCDEForecaster",
    "Persistence",
    "RegionSEIRFit",
    "RegionSIRFit",
]


class Persistence(BaseForecaster):
    """``y_{t+h} = y_t`` (the last observed value of each region)."""

    def __init__(self, window: int = 20, horizon: int = 4, output: str = "direct"):
        self.window, self.horizon, self.output = window, horizon, output

    def _fit_windows(self, Xtr, ytr, Xva, yva):
        pass

    def _predict_windows(self, Z):
        last = ffill(Z)[:, -1]
        return np.repeat(last[:, None], self._n_out, axis=1) if self._n_out > 1 else last


class ARRidge(BaseForecaster):
    """Per-region linear autoregression on the (forward-filled) window, ridge-penalised."""

    def __init__(self, window: int = 20, horizon: int = 4, alpha: float = 0.1,
                 output: str = "direct"):  # fmt: skip
        self.window, self.horizon, self.alpha, self.output = window, horizon, alpha, output

    def _fit_windows(self, Xtr, ytr, Xva, yva):
        if (
            isinstance(self.alpha, bool)
            or not isinstance(self.alpha, numbers.Real)
            or not (np.isfinite(self.alpha) and self.alpha >= 0)
        ):
            raise ValueError(f"alpha must be a non-negative number, got {self.alpha!r}")
        X = ffill(Xtr).transpose(2, 0, 1)  # (N, n, W)
        X = np.concatenate([X, np.ones((*X.shape[:2], 1))], axis=-1)
        Y = ytr if ytr.ndim == 3 else ytr[:, None]  # (n, k, N): one ridge per step ahead
        reg = self.alpha * np.eye(X.shape[-1])
        reg[-1, -1] = 0.0  # no penalty on the intercept
        coefs = []
        for j in range(Y.shape[1]):
            y = Y[:, j].T  # (N, n)
            ok = np.isfinite(y)
            Xj, y = X * ok[..., None], np.where(ok, y, 0.0)
            gram = Xj.transpose(0, 2, 1) @ Xj + reg
            coefs.append(np.linalg.solve(gram, (Xj.transpose(0, 2, 1) @ y[..., None]))[..., 0])
        self.coef_ = coefs[0] if ytr.ndim == 2 else np.stack(coefs, axis=1)  # (N, [k,] W+1)

    def _predict_windows(self, Z):
        X = ffill(Z)
        if self.coef_.ndim == 2:
            return np.einsum("nwv,vw->nv", X, self.coef_[:, :-1]) + self.coef_[:, -1]
        return np.einsum("nwv,vkw->nkv", X, self.coef_[..., :-1]) + self.coef_[..., -1].T


class _TorchForecaster(BaseForecaster):
    """Shared fit/predict for the small recurrent baselines (inputs forward-filled)."""

    def _module(self) -> nn.Module:
        raise NotImplementedError

    def _fit_windows(self, Xtr, ytr, Xva, yva):
        for name in ("hidden", "epochs", "batch_size", "patience"):
            setattr(self, f"_{name}", check_int(getattr(self, name), name, 1))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.random_state)
            self.model_ = self._module().to(self._device)  # built on the CPU, then moved
            self.history_ = train_network(
                self.model_, ffill(Xtr), ytr, ffill(Xva), yva, epochs=self._epochs, lr=self.lr,
                weight_decay=self.weight_decay, batch_size=self._batch_size,
                patience=self._patience, seed=self.random_state, verbose=self.verbose,
                desc=type(self).__name__,
            )  # fmt: skip

    @torch.no_grad()
    def _predict_windows(self, Z):
        self.model_.eval()
        x = torch.as_tensor(ffill(Z), dtype=torch.float32, device=self._device)
        return self.model_(x).double().cpu().numpy()


def _steps(out: torch.Tensor) -> torch.Tensor:
    """(B, N, k) head output as (B, N) for one step or (B, k, N) for a trajectory."""
    return out.squeeze(-1) if out.shape[-1] == 1 else out.transpose(1, 2)


class _GRUNet(nn.Module):
    def __init__(self, hidden, n_out=1):
        super().__init__()
        self.rnn = nn.GRU(1, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):  # (B, W, N) -> (B, N) or (B, k, N)
        B, W, N = x.shape
        _, h = self.rnn(x.permute(0, 2, 1).reshape(B * N, W, 1))
        return _steps(self.out(h[-1]).view(B, N, -1))


class GRUForecaster(_TorchForecaster):
    """One GRU shared by all regions over each region's window, then a linear head."""

    def __init__(self, window: int = 20, horizon: int = 4, hidden: int = 32, epochs: int = 200,
                 lr: float = 1e-3, weight_decay: float = 5e-4, batch_size: int = 32,
                 patience: int = 30, random_state: int = 0, verbose: int = 0,
                 output: str = "direct", device: str | torch.device = "cpu"):  # fmt: skip
        self.window, self.horizon, self.hidden, self.epochs = window, horizon, hidden, epochs
        self.lr, self.weight_decay, self.batch_size = lr, weight_decay, batch_size
        self.patience, self.random_state, self.verbose = patience, random_state, verbose
        self.output, self.device = output, device

    def _module(self):
        return _GRUNet(self._hidden, self._n_out)


class _LSTMNet(nn.Module):
    def __init__(self, hidden, n_out=1):
        super().__init__()
        self.rnn = nn.LSTM(1, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):  # (B, W, N) -> (B, N) or (B, k, N)
        B, W, N = x.shape
        _, (h, _) = self.rnn(x.permute(0, 2, 1).reshape(B * N, W, 1))
        return _steps(self.out(h[-1]).view(B, N, -1))


class LSTMForecaster(GRUForecaster):
    """One LSTM shared by all regions over each region's window, then a linear head."""

    def _module(self):
        return _LSTMNet(self._hidden, self._n_out)


class _ColaNet(nn.Module):
    """Cola-GNN's structure, small: GRU per region, location-aware attention gated with the
    geographic graph, one graph propagation, output + autoregressive skip."""

    def __init__(self, n_nodes, hidden, adjacency, ar_window, n_out=1):
        super().__init__()
        self.rnn = nn.GRU(1, hidden, batch_first=True)
        self.ws, self.wt = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden, bias=False)
        self.v = nn.Linear(hidden, 1, bias=False)
        self.gate = nn.Linear(n_nodes, n_nodes)
        self.prop = nn.Linear(hidden, hidden)
        self.out = nn.Linear(2 * hidden, n_out)
        self.ar = nn.Linear(ar_window, n_out)
        A = torch.as_tensor(adjacency, dtype=torch.float32)
        self.register_buffer("a_geo", A / A.sum(1, keepdim=True))

    def forward(self, x):
        B, W, N = x.shape
        _, h = self.rnn(x.permute(0, 2, 1).reshape(B * N, W, 1))
        h = h[-1].view(B, N, -1)
        score = self.v(torch.tanh(self.ws(h)[:, :, None] + self.wt(h)[:, None])).squeeze(-1)
        a_att = torch.softmax(score, dim=-1)
        g = torch.sigmoid(self.gate(a_att))
        a = g * self.a_geo + (1 - g) * a_att
        hg = F.elu(self.prop(a @ h))
        ar = self.ar(x[:, -self.ar.in_features :].transpose(1, 2))  # (B, N, k)
        return _steps(self.out(torch.cat([h, hg], dim=-1)) + ar)


class ColaGNNLite(_TorchForecaster):
    """Small Cola-GNN (Deng et al., CIKM 2020): the graph recurrent baseline."""

    def __init__(self, window: int = 20, horizon: int = 4, hidden: int = 32, ar_window: int = 4,
                 epochs: int = 200, lr: float = 1e-3, weight_decay: float = 5e-4,
                 batch_size: int = 32, patience: int = 30, random_state: int = 0,
                 verbose: int = 0, output: str = "direct",
                 device: str | torch.device = "cpu"):  # fmt: skip
        self.window, self.horizon, self.hidden, self.ar_window = window, horizon, hidden, ar_window
        self.output, self.device = output, device
        self.epochs, self.lr, self.weight_decay, self.batch_size = (
            epochs,
            lr,
            weight_decay,
            batch_size,
        )
        self.patience, self.random_state, self.verbose = patience, random_state, verbose

    def _module(self):
        ar = check_int(self.ar_window, "ar_window", 1, self.window)
        return _ColaNet(self.n_regions_, self._hidden, self.adjacency_, ar, self._n_out)


class NetworkSIRFit(BaseForecaster):
    """Mechanistic metapopulation SIR re-fitted at every forecast origin (spec §3).

    In population fractions, day by day: ``lambda_v = beta_v sum_u M_vu i_u``,
    ``new_v = s_v (1 - exp(-lambda_v))``, recoveries ``i_v (1 - exp(-gamma))``; weekly reported
    cases ``kappa_v * sum_7days new_v`` (kappa = reporting rate x population). Per context
    window, beta_v, gamma, kappa_v and the initial s_v, i_v are fitted by L-BFGS to the window's
    normalised squared error (all windows at once: their losses are separable), and the fitted
    system is integrated ``horizon`` more steps.

    Parameters
    ----------
    mobility : array (N, N) or None
        Row-stochastic mixing matrix; None uses the row-normalised adjacency.
    coupled : bool
        False fits independent per-region SIRs (``M = I``): the classic per-region fit.
    steps_per_period : int
        Days per reported step (7 for weekly data).
    max_iter : int
        L-BFGS iterations.
    compartments : {"sir", "seir"}
        ``"seir"`` adds an exposed compartment: new infections enter E and become infectious
        at a fitted rate ``sigma`` (mean latency 1-14 days); reported cases are the E -> I flow.
    output : {"direct", "trajectory"}
        Step h only, or the simulated steps 1..h.
    """

    def __init__(self, window: int = 20, horizon: int = 4, mobility=None, coupled: bool = True,
                 steps_per_period: int = 7, max_iter: int = 200, output: str = "direct",
                 compartments: str = "sir"):  # fmt: skip
        self.window, self.horizon, self.mobility, self.coupled = window, horizon, mobility, coupled
        self.steps_per_period, self.max_iter, self.output = steps_per_period, max_iter, output
        self.compartments = compartments

    def _fit_windows(self, Xtr, ytr, Xva, yva):
        check_int(self.steps_per_period, "steps_per_period", 1)
        check_int(self.max_iter, "max_iter", 1)
        if self.compartments not in ("sir", "seir"):
            raise ValueError(f"compartments must be 'sir' or 'seir', got {self.compartments!r}")
        N = self.n_regions_
        if not self.coupled:
            M = np.eye(N)
        elif self.mobility is None:
            M = self.adjacency_ / self.adjacency_.sum(axis=1, keepdims=True)
        else:
            M = check_adjacency(self.mobility, N, "mobility")
            M = M / M.sum(axis=1, keepdims=True)
        self.mobility_ = M

    def _simulate(self, p, n_steps):
        """Weekly incidence (n, n_steps, N) of the fitted systems; p: constrained params."""
        M = torch.as_tensor(self.mobility_, dtype=torch.float64)
        beta, gamma, kappa, s, i, sigma = p
        decay = 1.0 - torch.exp(-gamma)
        seir = self.compartments == "seir"
        e = torch.zeros_like(i)
        onset = 1.0 - torch.exp(-sigma) if seir else None
        weeks = []
        for _ in range(n_steps):  # sequential in time; all windows and regions vectorised
            week = torch.zeros_like(s)
            for _ in range(self.steps_per_period):
                new = s * (1.0 - torch.exp(-beta * (i @ M.T)))
                rec = i * decay
                if seir:  # infections wait in E; the reported flow is E -> I
                    flow = e * onset
                    s, e, i = s - new, e + new - flow, i + flow - rec
                    week = week + flow
                else:
                    s, i = s - new, i + new - rec
                    week = week + new
            weeks.append(week)
        return kappa[:, None] * torch.stack(weeks, dim=1)

    @staticmethod
    def _constrain(raw):
        b, g, k, s, i, z = raw
        return (2.0 * torch.sigmoid(b), 1 / 30 + (1 - 1 / 30) * torch.sigmoid(g), torch.exp(k),
                torch.sigmoid(s), 1e-7 + 0.1 * torch.sigmoid(i),
                1 / 14 + (1 - 1 / 14) * torch.sigmoid(z))  # latency 1-14 days (SEIR only)  # fmt: skip

    def _predict_windows(self, Z):
        Y = torch.as_tensor(np.clip(Z, 0.0, None), dtype=torch.float64)  # normalised >= 0
        n, W, N = Y.shape
        ok = ~torch.isnan(Y)
        Yf = torch.nan_to_num(Y)
        logit = lambda p: float(np.log(p / (1 - p)))  # noqa: E731
        f64 = dict(dtype=torch.float64)
        raw = [torch.full((n, N), logit(0.2), **f64),  # beta 0.4 / day
               torch.full((n, 1), logit((0.25 - 1 / 30) / (1 - 1 / 30)), **f64),
               torch.log(Yf.amax(dim=1) + 1e-3) + np.log(100.0),
               torch.full((n, N), logit(0.6), **f64), torch.full((n, N), logit(0.01), **f64),
               torch.full((n, 1), logit(0.3), **f64)]  # fmt: skip
        raw = [r.clone().requires_grad_(True) for r in raw]
        opt = torch.optim.LBFGS(raw, max_iter=self.max_iter, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            pred = self._simulate(self._constrain(raw), W)
            loss = ((pred - Yf) ** 2)[ok].sum() / n
            loss.backward()
            return loss

        opt.step(closure)
        with torch.no_grad():
            path = self._simulate(self._constrain(raw), W + self.horizon)
        last = ffill(Z)[:, -1]
        if self._n_out > 1:  # the simulated trajectory, steps 1..h
            out = path[:, -self.horizon :].numpy()
            return np.where(np.isfinite(out), out, last[:, None])
        out = path[:, -1].numpy()
        return np.where(np.isfinite(out), out, last)


def RegionSIRFit(window: int = 20, horizon: int = 4, steps_per_period: int = 7,
                 max_iter: int = 200, output: str = "direct") -> NetworkSIRFit:  # fmt: skip
    """Independent SIR per region (no mobility coupling), re-fitted at every origin."""
    return NetworkSIRFit(window, horizon, coupled=False, steps_per_period=steps_per_period,
                         max_iter=max_iter, output=output)  # fmt: skip


def RegionSEIRFit(window: int = 20, horizon: int = 4, steps_per_period: int = 7,
                  max_iter: int = 200, output: str = "direct") -> NetworkSIRFit:  # fmt: skip
    """Independent SEIR per region (an exposed compartment), re-fitted at every origin."""
    return NetworkSIRFit(window, horizon, coupled=False, steps_per_period=steps_per_period,
                         max_iter=max_iter, output=output, compartments="seir")  # fmt: skip
