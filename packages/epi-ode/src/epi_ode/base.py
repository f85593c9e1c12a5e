"""Shared forecaster plumbing: parameters, normalisation, window preparation, prediction."""

from __future__ import annotations

import inspect
import warnings

import numpy as np

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
    def _check_common(self):
        check_int(self.window, "window", 4)
        check_int(self.horizon, "horizon", 1)

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
        Y = check_series(Y_train, "Y_train")
        N = Y.shape[1]
        A = check_adjacency(adjacency, N)
        if Y_val is None:
            cut = round(0.8 * len(Y))
            Y, Yv = Y[:cut], Y[cut:]
        else:
            Yv = check_series(Y_val, "Y_val", n_regions=N)
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
        Xtr, ytr = Z[t_tr[:, None] + rows], Z[t_tr]
        Xva, yva = Z[t_va[:, None] + rows], Z[t_va]
        self.n_regions_, self.scaler_, self.adjacency_ = N, scaler, A
        self.train_series_ = Y
        self._fit_windows(Xtr, ytr, Xva, yva, **fit_params)
        return self

    # ------------------------------------------------------------------ predict
    def _check_fitted(self):
        if not hasattr(self, "scaler_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    def predict(self, context) -> np.ndarray:
        """Forecast ``horizon`` steps after each context's last row.

        Parameters
        ----------
        context : array (W', N) or (n, W', N), W' >= window
            Raw counts (NaN = missing); the last ``window`` rows are used.

        Returns
        -------
        ndarray (N,) or (n, N)
        """
        self._check_fitted()
        single = np.ndim(context) == 2
        X = check_windows(context, "context", self.n_regions_, self.window)[:, -self.window :]
        yhat = self.scaler_.inverse(self._predict_windows(self.scaler_.transform(X)))
        return yhat[0] if single else yhat
