"""Baseline: certified-removal Newton update for L2-regularized logistic regression.

Guo, Goldstein, Hannun & van der Maaten, *Certified Data Removal from Machine Learning Models*
(ICML 2020). With ``L(w; D) = sum_i log(1 + exp(-y_i w^T x_i)) + (lam n / 2) ||w||^2 + b^T w``
and ``b ~ N(0, sigma^2 I)`` (objective perturbation), removing a set ``U`` takes one Newton step
on the remaining data:

    w_minus = w + H_{D \\ U}(w)^{-1} Delta,   Delta = sum_{u in U} (grad l_u(w) + lam w).

The gradient residual of ``w_minus`` on the remaining data is bounded by the data-dependent
``gamma ||X|| ||H^{-1} Delta|| ||X H^{-1} Delta||`` (``gamma = 1/4`` for the logistic loss;
``||X||`` the spectral norm, which removals only lower). The bounds of successive removals add
up; while their sum stays within ``sigma * epsilon / c``, ``c = sqrt(2 log(1.5 / delta))``, the
model is ``(epsilon, delta)``-certified. Past that budget the model is retrained from scratch
with fresh noise and the sum restarts at 0 (Guo et al.'s Algorithm with retraining).
"""

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from sys_unlearn._validation import check_known_ids, check_X, check_X_y, is_real

__all__ = ["NewtonRemovalLogisticRegression"]


class NewtonRemovalLogisticRegression(ClassifierMixin, BaseEstimator):
    """Binary L2-regularized logistic regression with one-step Newton removal.

    Parameters
    ----------
    lam : float, default=1e-3
        Regularization per sample (the objective uses ``lam * n / 2 * ||w||^2``).
    noise : float, default=1.0
        ``sigma``, the scale of the objective perturbation ``b ~ N(0, sigma^2 I)``.
    epsilon, delta : float, default=1.0, 1e-4
        The removal guarantee; with ``noise`` they set the residual budget
        ``noise * epsilon / sqrt(2 log(1.5 / delta))``. ``noise = 0`` disables certification
        (the budget is 0, so every removal retrains).
    fit_intercept : bool, default=True
        Append a constant feature (regularized like the others).
    random_state : int or None, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    residual_norm_ : float
        ``||grad L(w; remaining data)||`` after the last removal (0 right after ``fit`` up to
        the optimizer's tolerance).
    residual_bound_ : float
        Sum of the data-dependent residual bounds since the last (re)training.
    budget_ : float
        ``noise * epsilon / c``: the bound past which the model retrains.
    n_retrains_ : int
        Retrainings triggered by the budget.
    """

    def __init__(
        self,
        lam: float = 1e-3,
        noise: float = 1.0,
        epsilon: float = 1.0,
        delta: float = 1e-4,
        fit_intercept: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.lam = lam
        self.noise = noise
        self.epsilon = epsilon
        self.delta = delta
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> "NewtonRemovalLogisticRegression":
        """Minimize the perturbed objective with L-BFGS on all of ``(X, y)``."""
        X, y = check_X_y(X, y, owner=self)
        if not (is_real(self.lam) and np.isfinite(self.lam) and self.lam > 0):
            raise ValueError(f"lam: must be a positive finite number, got {self.lam!r}")
        if not (is_real(self.noise) and np.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"noise: must be a non-negative finite number, got {self.noise!r}")
        if not (is_real(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"epsilon: must be a positive number, got {self.epsilon!r}")
        if not (is_real(self.delta) and 0 < self.delta < 1):
            raise ValueError(f"delta: must be in (0, 1), got {self.delta!r}")
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError(
                "y: Only binary classification is supported (certified Newton removal is "
                f"binary); got {self.classes_.size} classes"
            )
        self.n_features_in_ = X.shape[1]
        Z = np.hstack([X, np.ones((len(X), 1))]) if self.fit_intercept else X.copy()
        s = np.where(y == self.classes_[1], 1.0, -1.0)
        self._rng = np.random.default_rng(self.random_state)
        self._Z, self._s = Z, s
        self._alive = np.ones(len(Z), dtype=bool)
        self.budget_ = self.noise * self.epsilon / np.sqrt(2 * np.log(1.5 / self.delta))
        self.n_retrains_ = 0
        self._train()
        return self

    def _train(self) -> None:
        """(Re)train on the live rows with fresh noise; the residual bound restarts at 0."""
        self._b = self.noise * self._rng.standard_normal(self._Z.shape[1])
        res = minimize(self._objective, np.zeros(self._Z.shape[1]), jac=True, method="L-BFGS-B")
        w = res.x
        for _ in range(3):  # polish to the exact minimizer: the removal analysis assumes grad = 0
            w = w - np.linalg.solve(self._hessian(w, self._alive), self._objective(w)[1])
        self._set_w(w)
        self.residual_norm_ = float(np.linalg.norm(self._objective(w)[1]))
        self.residual_bound_ = 0.0
        self._x_norm = float(np.linalg.norm(self._Z[self._alive], 2))  # removals only lower it

    def unlearn(self, sample_ids: ArrayLike) -> "NewtonRemovalLogisticRegression":
        """Remove points with one Newton step on the remaining data (``O(n d^2 + d^3)``)."""
        check_is_fitted(self, "coef_")
        ids = check_known_ids(sample_ids, self._alive)
        if ids.size == 0:
            return self
        alive = self._alive.copy()
        alive[ids] = False
        if not alive.any():
            raise ValueError("sample_ids: cannot delete every training point")
        w = self._w
        Zu, su = self._Z[ids], self._s[ids]
        # gradient of the removed points' loss plus their share of the regularizer
        delta = Zu.T @ (-su * expit(-su * (Zu @ w))) + self.lam * len(ids) * w
        step = np.linalg.solve(self._hessian(w, alive), delta)
        bound = 0.25 * self._x_norm * np.linalg.norm(step) * np.linalg.norm(self._Z[alive] @ step)
        self._alive = alive
        self._Z[ids] = 0.0  # erase the deleted rows
        if self.residual_bound_ + bound > self.budget_:
            self.n_retrains_ += 1  # the certificate would lapse: retrain with fresh noise
            self._train()
            return self
        self._set_w(w + step)
        self.residual_bound_ += float(bound)
        self.residual_norm_ = float(np.linalg.norm(self._objective(w + step)[1]))
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary by construction
        return tags

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Logits ``X @ coef_.T + intercept_``, shape (n_samples,)."""
        check_is_fitted(self, "coef_")
        X = check_X(X, n_features=self.n_features_in_, owner=self)
        return X @ self.coef_[0] + self.intercept_[0]

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities, shape (n_samples, 2)."""
        p = expit(self.decision_function(X))
        return np.column_stack([1 - p, p])

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels, shape (n_samples,)."""
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int)]

    @property
    def stored_ids_(self) -> np.ndarray:
        """Ids of all points not yet deleted (the Hessian needs the whole remaining set)."""
        return np.flatnonzero(self._alive)

    def memory_bytes(self) -> int:
        """Bytes stored: the remaining data (features and labels)."""
        check_is_fitted(self, "coef_")
        n = int(self._alive.sum())
        return int(n * (self._Z.shape[1] + 1) * self._Z.itemsize)

    def _objective(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        Z, s = self._Z[self._alive], self._s[self._alive]
        m = s * (Z @ w)
        n = len(Z)
        loss = np.logaddexp(0.0, -m).sum() + 0.5 * self.lam * n * w @ w + self._b @ w
        grad = Z.T @ (-s * expit(-m)) + self.lam * n * w + self._b
        return float(loss), grad

    def _hessian(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        Z = self._Z[rows]
        p = expit(Z @ w)
        return (Z * (p * (1 - p))[:, None]).T @ Z + self.lam * len(Z) * np.eye(len(w))

    def _set_w(self, w: np.ndarray) -> None:
        self._w = w
        if self.fit_intercept:
            self.coef_, self.intercept_ = w[None, :-1].copy(), w[-1:].copy()
        else:
            self.coef_, self.intercept_ = w[None, :].copy(), np.zeros(1)
