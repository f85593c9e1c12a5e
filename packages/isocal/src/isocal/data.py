"""Synthetic miscalibrated classifier outputs with known true probabilities."""

from __future__ import annotations

import numpy as np

from isocal._validation import check_nonnegative_float, check_positive_int

__all__ = ["make_miscalibrated"]


def make_miscalibrated(
    n_samples: int = 2000,
    n_classes: int = 10,
    temperature: float = 2.0,
    concentration: float = 0.5,
    random_state: int | None = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample labels from true probabilities and return overconfident predictions.

    True class probabilities are ``softmax(z)`` with Gaussian logits ``z`` whose
    scale is set by ``concentration``; labels are drawn from them; the
    "classifier" reports ``softmax(temperature * z)`` (``temperature > 1`` is
    overconfident, ``< 1`` underconfident).

    Parameters
    ----------
    n_samples : int, default=2000
    n_classes : int, default=10
    temperature : float, default=2.0
        Sharpening factor applied to the true logits.
    concentration : float, default=0.5
        The logits have standard deviation ``1 / concentration`` (smaller = sharper).
    random_state : int, optional

    Returns
    -------
    probs : ndarray of shape (n_samples, n_classes)
        Miscalibrated predictions.
    y : ndarray of shape (n_samples,)
        Labels drawn from the true probabilities.
    true_probs : ndarray of shape (n_samples, n_classes)
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    n_classes = check_positive_int(n_classes, "n_classes", minimum=2)
    temperature = check_nonnegative_float(temperature, "temperature", strict=True)
    concentration = check_nonnegative_float(concentration, "concentration", strict=True)
    rng = np.random.default_rng(random_state)
    z = rng.normal(scale=1.0 / concentration, size=(n_samples, n_classes))
    true = np.exp(z - z.max(axis=1, keepdims=True))
    true /= true.sum(axis=1, keepdims=True)
    y = (rng.random((n_samples, 1)) > np.cumsum(true, axis=1)).sum(axis=1)
    y = np.minimum(y, n_classes - 1)
    s = temperature * z
    probs = np.exp(s - s.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return probs, y, true
