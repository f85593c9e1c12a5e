"""Normalization-aware isotonic fit: one monotone map shared by all classes,
optimized *through* the row normalization (the NA-FIR problem).

Given probabilities ``P`` (n, K) and labels ``y``, find a non-decreasing
``f > 0`` on the probability values minimizing the log loss of the normalized
output ``q_ik = f(p_ik) / sum_j f(p_ij)``:

    min_f  sum_i w_i [ log sum_j f(p_ij) - sum_k t_ik log f(p_ik) ],

with targets ``t_i = (1 - lam) e_{y_i} + lam / K``: the one-hot label mixed
with a uniform pseudo-label of total weight ``prior_count`` samples,
``lam = prior_count / (sum(w) + prior_count)``.

Why the prior. Without it (``prior_count = 0``) the problem has no minimizer
whenever the lowest probability values carry no labels: ``log f`` there drifts
to -inf and the fitted map, and any test log loss, depends on when the solver
stops. With one pseudo-sample spread over the n*K entries the objective is
coercive, the optimum is unique and finite, and an unsupported region is
assigned about ``1 / (n K)`` probability -- the "one more observation" rule of
Laplace smoothing. Its effect where labels exist is O(1/n).

Writing ``f = exp(phi)`` makes the objective convex (a log-sum-exp minus a
linear term) with linear constraints (``phi`` non-decreasing). We solve it by
scaled gradient projection: a damped diagonal-Newton step, a weighted isotonic
projection (scikit-learn's PAV) in the same metric, and an Armijo search.

Sparse formulation. Each row touches K of the M knots, so ``C`` (n x M, K
non-zeros per row, duplicates summed) gives every quantity by sparse products:
``Z = C exp(phi)`` (row normalizers), gradient ``e^phi * C^T(w/Z) - target
mass`` and the diagonal Hessian ``e^phi * C^T(w/Z) - e^{2 phi} * C^T(w/Z^2)``.
No dense (n, K) intermediate is formed in the loop. Above ``max_bins`` distinct
values the knots are quantile bins (:mod:`isocal._binning`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.isotonic import isotonic_regression

from isocal._binning import quantile_bins
from isocal._validation import (
    check_labels,
    check_nonnegative_float,
    check_positive_int,
    check_probs,
    check_sample_weight,
)

__all__ = ["normalized_isotonic_logloss", "normalized_isotonic_objective"]


def normalized_isotonic_objective(
    phi: np.ndarray,
    index: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    prior_count: float = 0.0,
) -> float:
    """Weighted mean (smoothed) log loss of ``softmax(phi[index])``: the NA-FIR objective.

    Parameters
    ----------
    phi : ndarray of shape (M,)
        Log of the shared map at each knot.
    index : ndarray of shape (n, K), int
        Knot of each ``p_ij``.
    y : ndarray of shape (n,), int
        Labels.
    w : ndarray of shape (n,)
        Sample weights.
    prior_count : float, default=0.0
        Weight of the uniform pseudo-label (in samples); 0 gives the plain log loss.

    Returns
    -------
    float
    """
    S = phi[index]
    S = S - logsumexp(S, axis=1, keepdims=True)
    lam = prior_count / (w.sum() + prior_count)
    per_row = -(1 - lam) * S[np.arange(S.shape[0]), y] - lam * S.mean(axis=1)
    return float(w @ per_row / w.sum())


def normalized_isotonic_logloss(
    P: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray | None = None,
    max_iter: int = 500,
    tol: float = 1e-8,
    prior_count: float = 1.0,
    max_bins: int | None = 16384,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Solve the NA-FIR problem.

    Parameters
    ----------
    P : ndarray of shape (n, K)
        Probabilities (rows on the simplex).
    y : ndarray of shape (n,), int
        Labels in ``[0, K)``; classes may be absent.
    sample_weight : ndarray of shape (n,), optional
        Non-negative weights (default ones).
    max_iter : int, default=500
        Iteration cap.
    tol : float, default=1e-8
        Stop when the predicted decrease ``-grad . direction`` of the mean loss
        falls below ``tol``.
    prior_count : float, default=1.0
        Weight, in samples, of the uniform pseudo-label (see the module doc).
        ``0`` is the unregularized problem, which may have no minimizer.
    max_bins : int or None, default=16384
        Knot budget: above it the values are pooled into quantile bins. ``None``
        always fits every distinct value.

    Returns
    -------
    knots : ndarray of shape (M,)
        Increasing probability values at which ``phi`` is fitted.
    phi : ndarray of shape (M,)
        Non-decreasing log-map at the knots, shifted so ``max(phi) = 0``.
    info : dict
        ``objective`` (weighted mean smoothed log loss), ``n_iter``, ``success``.
    """
    P = check_probs(P, "P")  # public entry: validated here too (a cheap copy)
    n, K = P.shape
    y = check_labels(y, n, K, require_all=False)
    w = check_sample_weight(sample_weight, n)
    max_iter = check_positive_int(max_iter, "max_iter")
    prior_count = check_nonnegative_float(prior_count, "prior_count")
    if max_bins is not None:
        max_bins = check_positive_int(max_bins, "max_bins", 2)
    knots, flat = quantile_bins(
        P.ravel(), max_bins, np.repeat(w, K), focus=P[np.arange(n), y], focus_weights=w
    )
    M = knots.size
    lam = prior_count / (w.sum() + prior_count)
    wn = w / w.sum()
    C = sp.csr_matrix((np.ones(n * K), flat, np.arange(0, n * K + 1, K)), shape=(n, M))
    CT = C.T.tocsr()  # scatter-by-knot form; one conversion, reused every iteration
    target = (1 - lam) * np.bincount(flat[np.arange(n) * K + y], weights=wn, minlength=M)
    target += (lam / K) * (CT @ wn)
    if M == 1:
        return knots, np.zeros(1), {"objective": float(np.log(K)), "n_iter": 0, "success": True}

    def evaluate(phi: np.ndarray) -> tuple[float, np.ndarray]:
        Z = C @ np.exp(phi)
        return float(wn @ np.log(Z) - target @ phi), Z

    # Warm start: the identity map, floored where the prior alone sets the value.
    phi = np.log(knots + lam / K + 1e-300)
    phi -= phi.max()
    obj, Z = evaluate(phi)
    damping = 1e-3  # relative (Levenberg-Marquardt style): scales the diagonal Hessian
    n_iter, success = 0, False
    while n_iter < max_iter:
        n_iter += 1
        e = np.exp(phi)
        soft = e * (CT @ (wn / Z))
        grad = soft - target
        hess = soft - e * e * (CT @ (wn / (Z * Z)))
        # Scaled gradient projection: a diagonal Newton step projected back onto the
        # monotone cone in the same diagonal metric (weighted PAV); any positive metric
        # gives a descent direction. The damping is relative to the curvature: knots
        # that only the prior supports have curvature ~ prior / (n K), and an absolute
        # damping would freeze them for many iterations.
        hess = np.maximum(hess, 0.0)
        metric = (1.0 + damping) * hess + 1e-12 * hess.max()
        direction = isotonic_regression(phi - grad / metric, sample_weight=metric) - phi
        slope = float(grad @ direction)
        if -slope <= tol:
            success = True
            break
        step = 1.0
        while True:
            cand = phi + step * direction
            cand_obj, cand_Z = evaluate(cand)
            if cand_obj <= obj + 1e-4 * step * slope:
                break
            step *= 0.5
            if step < 1e-10:
                break
        if step < 1e-10:
            success = True  # no further progress possible at machine precision
            break
        damping = damping * 0.3 if step == 1.0 else min(damping * 4.0, 1e6)
        cand = np.maximum.accumulate(cand)
        # the objective is shift-invariant: keep max(phi) = 0 so exp never overflows
        shift = cand[-1]
        phi, obj, Z = cand - shift, cand_obj, cand_Z * np.exp(-shift)
    info = {"objective": obj, "n_iter": n_iter, "success": success}
    return knots, phi - phi.max(), info
