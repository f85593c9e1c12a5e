"""Parametric baselines: temperature, vector and matrix scaling, Dirichlet (ODIR).

All fit a linear map of scores followed by a softmax by minimizing the weighted
mean log loss with L-BFGS (exact gradients). Inputs are probabilities (the
scores are then ``log p``) or, with ``inputs="logits"``, raw logits.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import log_softmax

from isocal._base import BaseCalibrator
from isocal._validation import check_nonnegative_float, check_positive_int

__all__ = ["DirichletCalibrator", "MatrixScaling", "TemperatureScaling", "VectorScaling"]

_LOG_EPS = 1e-12  # floor before log so that zero probabilities give finite scores


def _scores(P: np.ndarray, inputs: str) -> np.ndarray:
    return P if inputs == "logits" else np.log(np.clip(P, _LOG_EPS, None))


def _softmax_rows(Z: np.ndarray) -> np.ndarray:
    return np.exp(log_softmax(Z, axis=1))


class TemperatureScaling(BaseCalibrator):
    """Temperature scaling (Guo et al., 2017): ``softmax(z / T)``.

    Parameters
    ----------
    inputs : {"probs", "logits"}, default="probs"
        What ``fit``/``predict_proba`` receive; probabilities are mapped to
        ``log p`` (equivalent to logits up to a per-row constant).
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` when ``inputs="probs"``.

    Attributes
    ----------
    temperature_ : float
    """

    _accepts_logits = True
    _requires_all_classes = False  # one shared parameter: absent classes are fine

    def __init__(self, inputs: str = "probs", sum_tol: float = 1e-5) -> None:
        self.inputs = inputs
        self.sum_tol = sum_tol

    def _fit(self, P: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        Z = _scores(P, self.inputs)
        Z = Z - Z.max(axis=1, keepdims=True)
        wn = w / w.sum()
        rows = np.arange(len(y))

        def nll(log_beta: float) -> float:
            # beta is capped below float overflow: an infinite beta times the zero logit of a
            # row's top class would be NaN (the search interval doubles towards large beta)
            with np.errstate(over="ignore"):
                beta = np.exp(min(log_beta, 700.0))
                return float(-(wn @ log_softmax(beta * Z, axis=1)[rows, y]))

        # The loss is convex in beta = 1/T, hence unimodal in log(beta). The search interval
        # doubles while the optimum sits on its edge, so logits on any scale (1e6 x, 1e-6 x)
        # reach their optimum: T is not capped.
        lo, hi = -7.0, 7.0
        for _ in range(8):
            res = minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-9})
            at_lo, at_hi = res.x < lo + 1e-3, res.x > hi - 1e-3
            if not (at_lo or at_hi):
                break
            lo, hi = (2 * lo if at_lo else lo), (2 * hi if at_hi else hi)
        self.temperature_ = float(np.exp(-res.x))

    def _predict(self, P: np.ndarray) -> np.ndarray:
        return _softmax_rows(_scores(P, self.inputs) / self.temperature_)


class _LinearScaling(BaseCalibrator):
    """Softmax of ``Z @ W.T + b`` with W full or diagonal; shared L-BFGS fit."""

    _accepts_logits = True
    _diagonal = False

    def _penalty(self, W: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        return 0.0, np.zeros_like(W), np.zeros_like(b)

    def _fit(self, P: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        max_iter = check_positive_int(self.max_iter, "max_iter")
        Z = _scores(P, self.inputs)
        n, K = Z.shape
        wn = w / w.sum()
        onehot = np.zeros((n, K))
        onehot[np.arange(n), y] = 1.0
        n_w = K if self._diagonal else K * K

        def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
            W = np.diag(theta[:K]) if self._diagonal else theta[:n_w].reshape(K, K)
            b = theta[n_w:]
            logq = log_softmax(Z @ W.T + b, axis=1)
            loss = -float(np.sum(wn[:, None] * onehot * logq))
            G = (np.exp(logq) - onehot) * wn[:, None]
            gW = G.T @ Z
            gb = G.sum(axis=0)
            pen, pW, pb = self._penalty(W, b)
            gW, gb = gW + pW, gb + pb
            gW = np.diag(gW) if self._diagonal else gW.ravel()
            return loss + pen, np.concatenate([gW, gb])

        theta0 = np.concatenate([np.ones(K) if self._diagonal else np.eye(K).ravel(), np.zeros(K)])
        res = minimize(fun, theta0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
        theta = res.x
        self.coef_ = np.diag(theta[:K]) if self._diagonal else theta[:n_w].reshape(K, K)
        self.intercept_ = theta[n_w:]
        self.n_iter_ = int(res.nit)

    def _predict(self, P: np.ndarray) -> np.ndarray:
        return _softmax_rows(_scores(P, self.inputs) @ self.coef_.T + self.intercept_)


class VectorScaling(_LinearScaling):
    """Vector scaling: ``softmax(a * z + b)`` with per-class ``a`` and ``b``.

    Parameters
    ----------
    inputs : {"probs", "logits"}, default="probs"
        See :class:`TemperatureScaling`.
    max_iter : int, default=1000
        L-BFGS iteration cap.
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` when ``inputs="probs"``.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        Diagonal matrix ``diag(a)``.
    intercept_ : ndarray of shape (K,)
    """

    _diagonal = True

    def __init__(self, inputs: str = "probs", max_iter: int = 1000, sum_tol: float = 1e-5) -> None:
        self.inputs = inputs
        self.max_iter = max_iter
        self.sum_tol = sum_tol


class MatrixScaling(_LinearScaling):
    """Matrix scaling: ``softmax(W z + b)`` with an optional L2 penalty on ``W - I``.

    Parameters
    ----------
    inputs : {"probs", "logits"}, default="probs"
        See :class:`TemperatureScaling`.
    l2 : float, default=0.0
        Penalty ``l2 * ||W - I||_F^2 / K^2`` (0 = classic unregularized matrix scaling).
    max_iter : int, default=1000
        L-BFGS iteration cap.
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` when ``inputs="probs"``.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
    intercept_ : ndarray of shape (K,)
    """

    def __init__(
        self, inputs: str = "probs", l2: float = 0.0, max_iter: int = 1000, sum_tol: float = 1e-5
    ) -> None:
        self.inputs = inputs
        self.l2 = l2
        self.max_iter = max_iter
        self.sum_tol = sum_tol

    def _penalty(self, W: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        lam = check_nonnegative_float(self.l2, "l2")
        K = W.shape[0]
        D = W - np.eye(K)
        return lam * float(np.sum(D**2)) / K**2, 2 * lam * D / K**2, np.zeros_like(b)


class DirichletCalibrator(_LinearScaling):
    """Dirichlet calibration with ODIR regularization (Kull et al., 2019).

    Matrix scaling on log-probabilities with the Off-Diagonal and Intercept
    Regularization ``lam / (K (K - 1)) * sum_{i != j} W_ij^2 + mu / K * sum_j b_j^2``.

    Parameters
    ----------
    reg_lambda : float, default=0.1
        Off-diagonal penalty ``lambda``.
    reg_mu : float, default=0.1
        Intercept penalty ``mu``.
    max_iter : int, default=1000
        L-BFGS iteration cap.
    sum_tol : float, default=1e-5
        Tolerance on ``|row sum - 1|`` of the input probabilities.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
    intercept_ : ndarray of shape (K,)
    """

    inputs = "probs"

    def __init__(
        self,
        reg_lambda: float = 1e-1,
        reg_mu: float = 1e-1,
        max_iter: int = 1000,
        sum_tol: float = 1e-5,
    ) -> None:
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.sum_tol = sum_tol

    _accepts_logits = False

    def _penalty(self, W: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        lam = check_nonnegative_float(self.reg_lambda, "reg_lambda")
        mu = check_nonnegative_float(self.reg_mu, "reg_mu")
        K = W.shape[0]
        off = W * (1 - np.eye(K))
        c_off = lam / (K * (K - 1))
        pen = c_off * float(np.sum(off**2)) + mu / K * float(b @ b)
        return pen, 2 * c_off * off, 2 * mu / K * b
