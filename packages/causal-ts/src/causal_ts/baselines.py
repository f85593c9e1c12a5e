"""Non-contrastive baselines with the same fit / decision_function interface.

* :class:`VARResidual`: full VAR one-step forecaster, score = last-step squared error.
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
from causal_ts.discovery import GivenGraphDiscoverer

__all__ = ["IsolationForestWindows", "PCAReconstruction", "VARResidual"]


def _flat(Xs: np.ndarray, window: int) -> np.ndarray:
    w = sliding_windows(Xs, window)
    return w.reshape(w.shape[0], -1)


class VARResidual(BaseWindowDetector):
    """VAR(lag) forecasting-residual detector (all variables feed every equation).

    Parameters
    ----------
    window : int, default=10
        Window length W (> lag); the score of a window is the mean squared one-step error of
        its last point, forecast from the previous ``lag`` points.
    lag : int, default=3
    contamination : float, default=0.01
    nan_policy : {"raise", "ffill"}, default="raise"
    """

    def __init__(
        self, window: int = 10, lag: int = 3, contamination: float = 0.01, nan_policy: str = "raise"
    ) -> None:
        self.window = window
        self.lag = lag
        self.contamination = contamination
        self.nan_policy = nan_policy

    def _fit(self, Xs: np.ndarray) -> None:
        lag = check_int(self.lag, "lag", low=1)
        if lag >= self.window:
            raise ValueError(f"window={self.window} must exceed lag={lag}")
        N = Xs.shape[1]
        self.forecaster_ = GivenGraphDiscoverer(np.ones((N, N), dtype=bool), lag=lag).fit(Xs)

    def _score(self, Xs: np.ndarray) -> np.ndarray:
        w = sliding_windows(Xs, self.window)
        pred = self.forecaster_.predict_next(w[:, :-1])
        return np.mean((w[:, -1] - pred) ** 2, axis=1)


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
