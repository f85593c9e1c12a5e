"""Data generators: the paper's synthetic hard-margin stream."""

import numpy as np

from sys_unlearn._validation import is_int

__all__ = ["make_margin_stream"]


def make_margin_stream(
    n_samples: int = 200_000,
    n_features: int = 100,
    *,
    margin: float = 0.1,
    label_noise: float = 0.0,
    random_state: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm points separated by a hard margin, like the paper's "Margin" data set.

    A direction ``u`` is drawn uniformly on the sphere; each ``x`` is a uniform direction whose
    component along ``u`` is pushed out to ``|u^T x| >= margin`` (the orthogonal part is rescaled
    so that ``||x|| = 1``), and ``y = sign(u^T x)``, flipped with probability ``label_noise``.

    Parameters
    ----------
    n_samples : int, default=200_000
    n_features : int, default=100
    margin : float, default=0.1
        ``gamma`` in [0, 1).
    label_noise : float, default=0.0
        Flip probability in [0, 0.5).
    random_state : int or None, default=0

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), labels in {0, 1}
    """
    if not (is_int(n_samples) and n_samples >= 1):
        raise ValueError(f"n_samples: must be a positive int, got {n_samples!r}")
    if not (is_int(n_features) and n_features >= 2):
        raise ValueError(f"n_features: must be an int >= 2, got {n_features!r}")
    if not 0 <= margin < 1:
        raise ValueError(f"margin: must be in [0, 1), got {margin!r}")
    if not 0 <= label_noise < 0.5:
        raise ValueError(f"label_noise: must be in [0, 0.5), got {label_noise!r}")
    rng = np.random.default_rng(random_state)
    u = rng.standard_normal(n_features)
    u /= np.linalg.norm(u)
    X = rng.standard_normal((n_samples, n_features))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    a = X @ u
    t = np.sign(a + (a == 0)) * (margin + (1 - margin) * np.abs(a))
    perp = X - a[:, None] * u
    norm = np.linalg.norm(perp, axis=1, keepdims=True)
    X = perp * (np.sqrt(1 - t**2)[:, None] / np.maximum(norm, 1e-12)) + t[:, None] * u
    y = (t > 0).astype(np.int64)
    flip = rng.random(n_samples) < label_noise
    y[flip] = 1 - y[flip]
    return X, y
