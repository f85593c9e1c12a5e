"""Shared forecaster plumbing: parameters, normalisation, window preparation, prediction."""

from __future__ import annotations

import copy
import inspect
import warnings

import numpy as np
import torch

from epi_ode.validation import check_adjacency, check_int, check_series, check_windows
from epi_ode.windows import MinMax, window_indices

__all__ = ["BaseForecaster", "ffill"]


def ffill(X: np.ndarray) -> np.ndarray:
    """Forward-fill NaN along axis -2 (time) of (..., W, N), then back-fill leading NaN."""
    X = X.copy()
    W = X.shape[-2]
    idx = np.where(np.isnan(X), 0, np.arange(W)[:, None])
    np.maximum.accumulate(idx, axis=-2, out=idx)
    X = np.take_along_axis(X, idx, axis=-2)
    first = np.argmax(~np.isnan(X), axis=-2)[..., None, :]  # first observed step
    return np.where(np.isnan(X), np.take_along_axis(X, first, axis=-2), X)


class BaseForecaster:
    """``fit(Y_train, adjacency, Y_val=None)`` / ``predict(context)`` for every model here.

    Subclasses implement ``_fit_windows(Xtr, ytr, Xva, yva)`` on min-max normalised arrays
    ((n, W, N) windows with NaN for missing reports, (n, N) targets) and
    ``_predict_windows(X) -> (n, N)`` on normalised windows.
    """

    window: int
    horizon: int

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [
            p
            for p in sig.parameters
            if p != "self" and sig.parameters[p].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
        ]

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters (scikit-learn convention)."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters; unknown names raise ``ValueError``."""
        valid = set(self._param_names())
        for k in params:
            if k not in valid:
                raise ValueError(f"unknown parameter {k!r} for {type(self).__name__}")
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # ------------------------------------------------------------------ fit
    @property
    def _device(self) -> torch.device:
        return torch.device(getattr(self, "device", "cpu"))

    def _check_common(self):
        try:
            torch.device(getattr(self, "device", "cpu"))
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device must name a torch device, got {self.device!r}") from exc
        check_int(self.window, "window", 4)
        check_int(self.horizon, "horizon", 1)
        if self._output() not in ("direct", "trajectory"):
            raise ValueError(f"output must be 'direct' or 'trajectory', got {self._output()!r}")

    def _output(self) -> str:
        return getattr(self, "output", "direct")

    @property
    def _n_out(self) -> int:
        """Forecast steps the network emits: 1 (direct, step h) or h (trajectory, steps 1..h)."""
        return self.horizon if self._output() == "trajectory" else 1

    def fit(self, Y_train, adjacency, Y_val=None, **fit_params):
        """Fit on a training series and select on a validation series.

        Parameters
        ----------
        Y_train : array (T, N)
            Counts; NaN marks a missing report. Never modified.
        adjacency : array (N, N)
            Static region graph (non-negative).
        Y_val : array (T_val, N), optional
            The rows right after ``Y_train`` (targets for early stopping and model selection);
            default: the last 20 % of ``Y_train``'s rows.

        Returns
        -------
        self
        """
        self._check_common()
        Y = check_series(Y_train, "Y_train", nonnegative=True)
        N = Y.shape[1]
        A = check_adjacency(adjacency, N)
        if Y_val is None:
            cut = round(0.8 * len(Y))
            Y, Yv = Y[:cut], Y[cut:]
        else:
            Yv = check_series(Y_val, "Y_val", n_regions=N, nonnegative=True)
        need = self.window + self.horizon + 2
        if len(Y) < need:
            raise ValueError(
                f"Y_train needs at least window + horizon + 2 = {need} rows, got {len(Y)}"
            )
        scaler = MinMax.fit(Y)
        const = np.flatnonzero(np.nanmax(Y, axis=0) == np.nanmin(Y, axis=0))
        if const.size:
            warnings.warn(
                f"regions {const.tolist()} are constant in Y_train: scale 1", stacklevel=2
            )
        Z = scaler.transform(np.concatenate([Y, Yv]))
        t_tr = window_indices(len(Y), self.window, self.horizon)
        t_va = window_indices(len(Z), self.window, self.horizon, first_target=len(Y))
        if len(t_va) == 0:
            raise ValueError("Y_val leaves no validation window")
        rows = np.arange(self.window) - self.horizon - self.window + 1
        Xtr, Xva = Z[t_tr[:, None] + rows], Z[t_va[:, None] + rows]
        if self._output() == "trajectory":  # targets: steps 1..h after each window, (n, h, N)
            ahead = np.arange(self.horizon) - self.horizon + 1
            ytr, yva = Z[t_tr[:, None] + ahead], Z[t_va[:, None] + ahead]
        else:
            ytr, yva = Z[t_tr], Z[t_va]
        # fit a shallow copy and adopt its state only on success: a rejected fit (a bad
        # hyper-parameter found while training) leaves an already fitted model unchanged
        fitted = copy.copy(self)
        fitted.n_regions_, fitted.scaler_, fitted.adjacency_ = N, scaler, A
        fitted.train_series_ = Y
        fitted._fit_windows(Xtr, ytr, Xva, yva, **fit_params)
        self.__dict__.update(fitted.__dict__)
        return self

    # ------------------------------------------------------------------ predict
    def _check_fitted(self):
        if not hasattr(self, "scaler_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    def predict(self, context, horizon: int | None = None) -> np.ndarray:
        """Forecast after each context's last row: step ``h`` directly, or a trajectory.

        Parameters
        ----------
        context : array (W', N) or (n, W', N), W' >= window
            Raw counts (NaN = missing); the last ``window`` rows are used.
        horizon : int, optional
            ``None``: the forecast ``h = self.horizon`` steps ahead, shape (N,) or (n, N).
            An int ``k``: the whole trajectory of steps 1..k, shape (k, N) or (n, k, N). A model
            fitted with ``output="trajectory"`` emits steps 1..h at once and rolls forward in
            blocks of h beyond that (its forecasts become the next context); a direct model can
            roll out only when ``h == 1``.

        Returns
        -------
        ndarray
            Non-negative forecasts (counts cannot be negative; the network's raw output is
            clipped at 0).
        """
        self._check_fitted()
        single = np.ndim(context) == 2
        X = check_windows(context, "context", self.n_regions_, self.window)[:, -self.window :]
        if np.nanmin(X) < 0:
            raise ValueError("context contains negative counts")
        Z = self.scaler_.transform(X)
        if horizon is None:
            out = self._predict_windows(Z)
            out = out[:, -1] if out.ndim == 3 else out
        else:
            k = check_int(horizon, "horizon", 1)
            if self._output() == "direct" and self.horizon != 1:
                raise ValueError(
                    f"horizon: this model forecasts {self.horizon} steps ahead directly "
                    f"(output='direct'); fit it with output='trajectory' (or horizon=1) for a "
                    f"{k}-step trajectory"
                )
            steps: list[np.ndarray] = []
            while sum(s.shape[1] for s in steps) < k:
                out = self._predict_windows(Z)
                block = out if out.ndim == 3 else out[:, None]
                steps.append(block)
                Z = np.concatenate([Z, block], axis=1)[:, -self.window :]
            out = np.concatenate(steps, axis=1)[:, :k]
        yhat = np.maximum(self.scaler_.inverse(out), 0.0)
        return yhat[0] if single else yhat
