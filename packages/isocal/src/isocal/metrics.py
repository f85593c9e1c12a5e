"""Calibration metrics: log loss, Brier score, accuracy, top-label / classwise / adaptive ECE.

All take integer labels ``y`` of shape (n,) and probabilities ``probs`` of
shape (n, K) whose rows sum to 1.
"""

from __future__ import annotations

import numpy as np

from isocal._validation import check_labels, check_positive_int, check_probs

__all__ = [
    "accuracy",
    "adaptive_ece",
    "binned_calibration_error",
    "brier_score",
    "classwise_ece",
    "log_loss",
    "top_label_ece",
]


def _inputs(y: object, probs: object, sum_tol: float) -> tuple[np.ndarray, np.ndarray]:
    P = check_probs(probs, "probs", sum_tol=sum_tol)
    labels = check_labels(y, P.shape[0], P.shape[1], "y", require_all=False)
    return labels, P


def log_loss(y: object, probs: object, eps: float = 1e-15, sum_tol: float = 1e-5) -> float:
    """Mean negative log-likelihood ``-mean_i log max(p_{i, y_i}, eps)``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Integer labels.
    probs : array-like of shape (n, K)
        Predicted probabilities.
    eps : float, default=1e-15
        Floor on the probability of the true class (keeps the loss finite).
    sum_tol : float, default=1e-5
        Tolerance on row sums.

    Returns
    -------
    float
    """
    labels, P = _inputs(y, probs, sum_tol)
    if not (0 < eps < 1):
        raise ValueError(f"eps: must lie in (0, 1), got {eps}")
    return float(-np.mean(np.log(np.maximum(P[np.arange(len(labels)), labels], eps))))


def brier_score(y: object, probs: object, sum_tol: float = 1e-5) -> float:
    """Multi-class Brier score ``mean_i sum_k (p_ik - 1[y_i = k])^2`` (range [0, 2])."""
    labels, P = _inputs(y, probs, sum_tol)
    onehot = np.zeros_like(P)
    onehot[np.arange(len(labels)), labels] = 1.0
    return float(np.mean(np.sum((P - onehot) ** 2, axis=1)))


def accuracy(y: object, probs: object, sum_tol: float = 1e-5) -> float:
    """Fraction of samples whose most probable class is the label."""
    labels, P = _inputs(y, probs, sum_tol)
    return float(np.mean(np.argmax(P, axis=1) == labels))


def binned_calibration_error(
    scores: np.ndarray, hits: np.ndarray, n_bins: int = 15, strategy: str = "uniform"
) -> float:
    """``sum_b (|B_b| / n) * |mean(hits in b) - mean(scores in b)|``.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Predicted probabilities of an event, in [0, 1].
    hits : ndarray of shape (n,)
        0/1 outcomes of the event.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins on [0, 1] (right-closed, as in Guo et al. 2017), or
        equal-mass bins (adaptive ECE).

    Returns
    -------
    float
    """
    n_bins = check_positive_int(n_bins, "n_bins")
    scores = np.asarray(scores, dtype=np.float64)
    hits = np.asarray(hits, dtype=np.float64)
    n = scores.shape[0]
    if n == 0:
        raise ValueError("scores: empty input")
    if strategy == "uniform":
        # Bin b holds scores in (b/n_bins, (b+1)/n_bins]; 0 goes to the first bin.
        b = np.clip(np.ceil(scores * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    elif strategy == "quantile":
        order = np.argsort(scores, kind="stable")
        b = np.empty(n, dtype=np.int64)
        b[order] = np.minimum(np.arange(n) * n_bins // n, n_bins - 1)
    else:
        raise ValueError(f"strategy: must be 'uniform' or 'quantile', got {strategy!r}")
    gap = np.bincount(b, weights=hits, minlength=n_bins) - np.bincount(
        b, weights=scores, minlength=n_bins
    )
    return float(np.sum(np.abs(gap)) / n)


def top_label_ece(y: object, probs: object, n_bins: int = 15, sum_tol: float = 1e-5) -> float:
    """Top-label (confidence) ECE with ``n_bins`` equal-width bins (Guo et al., 2017)."""
    labels, P = _inputs(y, probs, sum_tol)
    pred = np.argmax(P, axis=1)
    conf = P[np.arange(len(labels)), pred]
    return binned_calibration_error(conf, pred == labels, n_bins, "uniform")


def adaptive_ece(y: object, probs: object, n_bins: int = 15, sum_tol: float = 1e-5) -> float:
    """Top-label ECE with ``n_bins`` equal-mass bins (Nixon et al., 2019)."""
    labels, P = _inputs(y, probs, sum_tol)
    pred = np.argmax(P, axis=1)
    conf = P[np.arange(len(labels)), pred]
    return binned_calibration_error(conf, pred == labels, n_bins, "quantile")


def classwise_ece(y: object, probs: object, n_bins: int = 15, sum_tol: float = 1e-5) -> float:
    """Mean over classes of the equal-width binned ECE of ``p_k`` vs ``1[y = k]`` (Kull et al., 2019)."""
    labels, P = _inputs(y, probs, sum_tol)
    K = P.shape[1]
    return float(
        np.mean([binned_calibration_error(P[:, k], labels == k, n_bins) for k in range(K)])
    )
