"""Non-contrastive baselines with the same fit / decision_function interface.

* :class:`VARResidual`: full VAR one-step forecaster, score = the max (or mean, or last)
  over the window's steps of the squared one-step error.
* :class:`IsolationForestWindows`: scikit-learn Isolation Forest on flattened windows.
* :class:`PCAReconstruction`: PCA on flattened windows, score = reconstruction error.

The contrastive baseline without causality is
:class:`causal_ts.detector.PlainOneClassContrastive`.
"""

from __future__ import annotations

import numpy as np
from sklearn.decomposition import PCA
from sklearn.ensemble import IsolationForest

from causal_ts._validation import check_fraction, check_int
from causal_ts.base import BaseWindowDetector
from causal_ts.data import sliding_windows
from causal_ts.discovery import GivenGraphDiscoverer, reduce_windows, step_errors

__all__ = ["IsolationForestWindows", "PCAReconstruction", "VARResidual"]


def _flat(Xs: np.ndarray, window: int) -> np.ndarray:
    w = sliding_windows(Xs, window)
    return w.reshape(w.shape[0], -1)


class VARResidual(BaseWindowDetector):
    """VAR(lag) forecasting-residual detector (all variables feed every equation).

    Parameters
    ----------
    window : int, default=10
        Window length W (> lag).
    lag : int, default=3
    reduce : {"max", "mean", "last"}, default="max"
        The window score: max or mean over its steps of the mean squared one-step error (each
        step forecast from its ``lag`` predecessors), or the last step's only.
    contamination : float, default=0.01
    nan_policy : {"raise", "ffill"}, default="raise"
    """

    def __init__(
        self,
        window: int = 10,
        lag: int = 3,
        reduce: str = "max",
        contamination: float = 0.01,
        nan_policy: str = "raise",
    ) -> None:
        self.window = window
        self.lag = lag
        self.reduce = reduce
        self.contamination = contamination
        self.nan_policy = nan_policy

    def _fit(self, Xs: np.ndarray) -> None:
        lag = check_int(self.lag, "lag", low=1)
        if self.reduce not in ("max", "mean", "last"):
            raise ValueError(f"reduce must be 'max', 'mean' or 'last'; got {self.reduce!r}")
        if lag >= self.window:
            raise ValueError(f"window={self.window} must exceed lag={lag}")
        N = Xs.shape[1]
        self.forecaster_ = GivenGraphDiscoverer(np.ones((N, N), dtype=bool), lag=lag).fit(Xs)

    def _score(self, Xs: np.ndarray) -> np.ndarray:
        return reduce_windows(step_errors(self.forecaster_, Xs), self.window, self.reduce)


class IsolationForestWindows(BaseWindowDetector):
    """Isolation Forest on flattened windows (score = negated ``score_samples``).

    Parameters
    ----------
    window : int, default=10
    n_estimators : int, default=100
    max_samples : int or "auto", default="auto"
    contamination : float, default=0.01
    nan_policy : {"raise", "ffill"}, default="raise"
    random_state : int or None, default=0
    """

    def __init__(
        self,
        window: int = 10,
        n_estimators: int = 100,
        max_samples: int | str = "auto",
        contamination: float = 0.01,
        nan_policy: str = "raise",
        random_state: int | None = 0,
    ) -> None:
        self.window = window
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.contamination = contamination
        self.nan_policy = nan_policy
        self.random_state = random_state

    def _fit(self, Xs: np.ndarray) -> None:
        n = check_int(self.n_estimators, "n_estimators", low=1)
        self.forest_ = IsolationForest(
            n_estimators=n, max_samples=self.max_samples, random_state=self.random_state
        ).fit(_flat(Xs, self.window))

    def _score(self, Xs: np.ndarray) -> np.ndarray:
        return -self.forest_.score_samples(_flat(Xs, self.window))


class PCAReconstruction(BaseWindowDetector):
    """PCA reconstruction error of flattened windows.

    Parameters
    ----------
    window : int, default=10
    n_components : int or float, default=0.9
        Passed to ``sklearn.decomposition.PCA`` (a float keeps that variance fraction).
    contamination : float, default=0.01
    nan_policy : {"raise", "ffill"}, default="raise"
    """

    def __init__(
        self,
        window: int = 10,
        n_components: int | float = 0.9,
        contamination: float = 0.01,
        nan_policy: str = "raise",
    ) -> None:
        self.window = window
        self.n_components = n_components
        self.contamination = contamination
        self.nan_policy = nan_policy

    def _fit(self, Xs: np.ndarray) -> None:
        if isinstance(self.n_components, float):
            check_fraction(self.n_components, "n_components", low_open=True, high_open=True)
        else:
            check_int(self.n_components, "n_components", low=1)
        self.pca_ = PCA(n_components=self.n_components).fit(_flat(Xs, self.window))

    def _score(self, Xs: np.ndarray) -> np.ndarray:
        F = _flat(Xs, self.window)
        recon = self.pca_.inverse_transform(self.pca_.transform(F))
        return np.mean((F - recon) ** 2, axis=1)
