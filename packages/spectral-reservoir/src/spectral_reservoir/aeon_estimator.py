"""``SARCAeonClassifier``: SARC as an aeon ``BaseClassifier`` (``pip install "spectral-reservoir[aeon]"``).

aeon's base class handles its collection types (3-D numpy, lists of unequal-length series),
the capability tags and the checks aeon's ``check_estimator`` runs; the work is
:class:`~spectral_reservoir.SARCClassifier`'s.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from aeon.classification.base import BaseClassifier

from spectral_reservoir.estimators import SARCClassifier

__all__ = ["SARCAeonClassifier"]


class SARCAeonClassifier(BaseClassifier):
    """SARC for aeon pipelines, benchmarking and ``check_estimator``.

    Parameters are those of :class:`~spectral_reservoir.SARCClassifier` (the common ones are
    listed; the rest keep their defaults).
    """

    _tags: ClassVar[dict] = {
        "capability:multivariate": True,
        "capability:unequal_length": True,
        "X_inner_type": ["np-list", "numpy3D"],
        "algorithm_type": "convolution",
    }

    def __init__(
        self,
        n_reservoir: int = 10,
        input_scaling: float = 1.0,
        spectral_radius: tuple[float, float] = (0.8, 0.8),
        ridge: float = 1.0,
        leaky: float = 0.0,
        period_mode: str = "extended-100",
        normalize: str | bool = "dataset",
        random_state: int = 0,
    ) -> None:
        self.n_reservoir = n_reservoir
        self.input_scaling = input_scaling
        self.spectral_radius = spectral_radius
        self.ridge = ridge
        self.leaky = leaky
        self.period_mode = period_mode
        self.normalize = normalize
        self.random_state = random_state
        super().__init__()

    def _fit(self, X, y):
        params = {k: getattr(self, k) for k in self.get_params()}
        self.estimator_ = SARCClassifier(**params).fit(_collection(X), y)
        return self

    def _predict(self, X) -> np.ndarray:
        return self.estimator_.predict(_collection(X))

    def _predict_proba(self, X) -> np.ndarray:
        scores = self.estimator_.decision_function(_collection(X))
        if scores.ndim == 1:  # binary ridge scores
            scores = np.stack([-scores, scores], axis=1)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    @classmethod
    def _get_test_params(cls, parameter_set: str = "default"):
        return {"n_reservoir": 4, "period_mode": "base"}


def _collection(X):
    return list(X) if isinstance(X, list) else X
