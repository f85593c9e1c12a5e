"""Normalization-aware isotonic fit: one monotone map shared by all classes,
optimized *through* the row normalization (the NA-FIR problem).

Given probabilities ``P`` (n, K) and labels ``y``, find a non-decreasing
``f >= 0`` on the observed probability values minimizing the log loss of the
normalized output ``q_ik = f(p_ik) / sum_j f(p_ij)``:

    min_f  sum_i w_i [ log sum_j f(p_ij) - log f(p_{i, y_i}) ].

Writing ``f = exp(phi)`` makes the objective convex (a log-sum-exp minus a
linear term) and keeps the constraint linear (``phi`` non-decreasing), so the
problem is a convex program with a unique optimal objective value. We solve it
by scaled gradient projection: a damped diagonal-Newton step followed by a
weighted isotonic projection (scikit-learn's PAV) in the same diagonal metric,
with an Armijo line search. Each iteration is O(n K) vectorized work, which
scales to millions of distinct values where a generic QP/exp-cone solver or
L-BFGS-B over the increments do not.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from sklearn.isotonic import isotonic_regression

__all__ = ["normalized_isotonic_logloss", "normalized_isotonic_objective"]


def normalized_isotonic_objective(
    phi: np.ndarray, index: np.ndarray, y: np.ndarray, w: np.ndarray
) -> float:
    """Weighted mean log loss of ``softmax(phi[index])`` (the NA-FIR objective).

    Parameters
    ----------
    phi : ndarray of shape (M,)
        Log of the shared map at each distinct probability value.
    index : ndarray of shape (n, K), int
        Position of each ``p_ij`` among the distinct values.
    y : ndarray of shape (n,), int
        Labels.
    w : ndarray of shape (n,)
        Sample weights.

    Returns
    -------
    float
    """
    S = phi[index]
    per_row = logsumexp(S, axis=1) - S[np.arange(S.shape[0]), y]
    return float(w @ per_row / w.sum())


def normalized_isotonic_logloss(
    P: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray | None = None,
    max_iter: int = 500,
    tol: float = 1e-8,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Solve the NA-FIR problem.

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Probabilities (validated by the caller).
    y : ndarray of shape (n,), int
        Labels in ``[0, K)``.
    sample_weight : ndarray of shape (n,), optional
        Non-negative weights (default ones).
    max_iter : int, default=500
        Iteration cap.
    tol : float, default=1e-8
        Stop when the predicted decrease ``-grad . direction`` of the mean log loss
        falls below ``tol`` (the objective is then within about ``tol`` of optimal).

    Returns
    -------
    thresholds : ndarray of shape (M,)
        Sorted distinct probability values.
    phi : ndarray of shape (M,)
        Non-decreasing log-map at the thresholds, shifted so ``max(phi) = 0``.
    info : dict
        ``objective`` (weighted mean log loss), ``n_iter``, ``success``.
    """
    n, K = P.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    thresholds, inverse = np.unique(P, return_inverse=True)
    index = inverse.reshape(n, K)
    M = thresholds.size
    wn = w / w.sum()
    # Label mass landing on each distinct value: the linear part of the gradient.
    label_mass = np.bincount(index[np.arange(n), y], weights=wn, minlength=M)
    if M == 1:
        return (
            thresholds,
            np.zeros(1),
            {"objective": float(np.log(K)), "n_iter": 0, "success": True},
        )

    # Start from the identity map on the log scale (phi = log p), a sensible warm start.
    phi = np.log(np.clip(thresholds, 1e-12, None))
    rows = np.arange(n)
    flat = index.ravel()

    def evaluate(phi: np.ndarray) -> tuple[float, np.ndarray]:
        S = phi[index]
        lse = logsumexp(S, axis=1, keepdims=True)
        S -= lse  # log of the normalized output
        return float(-(wn @ S[rows, y])), S

    obj, S = evaluate(phi)
    damping = 1e-3
    n_iter, success = 0, False
    while n_iter < max_iter:
        n_iter += 1
        soft = np.exp(S)
        grad = np.bincount(flat, weights=(soft * wn[:, None]).ravel(), minlength=M) - label_mass
        hess = np.bincount(flat, weights=(soft * (1 - soft) * wn[:, None]).ravel(), minlength=M)
        # Scaled gradient projection: a diagonal Newton step projected back onto the
        # monotone cone in the same diagonal metric (weighted PAV). Damping keeps the
        # metric positive definite; any such metric gives a descent direction.
        metric = hess + damping
        target = phi - grad / metric
        direction = isotonic_regression(target, sample_weight=metric) - phi
        slope = float(grad @ direction)
        if -slope <= tol:
            success = True
            break
        step = 1.0
        while True:
            cand = phi + step * direction
            cand_obj, cand_S = evaluate(cand)
            if cand_obj <= obj + 1e-4 * step * slope:
                break
            step *= 0.5
            if step < 1e-10:
                break
        if step < 1e-10:
            success = True  # no further progress possible at machine precision
            break
        damping = max(damping * (0.3 if step == 1.0 else 4.0), 1e-10)
        phi, obj, S = np.maximum.accumulate(cand), cand_obj, cand_S
    info = {"objective": obj, "n_iter": n_iter, "success": success}
    phi = phi - phi.max()
    return thresholds, phi, info
