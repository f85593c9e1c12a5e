"""Algorithm 2: system-aware unlearning for general function classes by selective sampling.

Lu, Sekhari & Sridharan (ICML 2025), Sec. 5, generalize Algorithm 1 from linear classes to any
class ``F`` reachable through a *regression oracle* (least squares over ``F``). Our reading, as
the paper's pseudocode was not readable here (see the README):

* the oracle fits ``f_hat`` on the stored (queried) points, labels coded +-1;
* the *width* ``Delta(x)`` measures how far a function that still fits the stored points almost
  as well as ``f_hat`` can move at ``x`` (the confidence set
  ``{f : sum_Q (f - f_hat)^2 <= beta}``); it is computed through the oracle by a weighted
  perturbation: refit on the stored points and labels plus ``(x, f_hat(x) + 1)`` with weight
  ``w``, read ``delta = g(x) - f_hat(x)``, and convert
  ``lev = delta / (w (1 - delta))``, ``Delta(x) = sqrt(beta * lev)``. For oracles that are
  linear in their parameters (ridge, kernel ridge, random features + ridge) this is exact:
  ``lev = phi(x)^T A^{-1} phi(x)``, the leverage of Algorithm 1;
* **disagreement**: query ``x`` iff the confidence interval ``f_hat(x) +- Delta(x)`` contains
  the decision boundary 0, i.e. ``|f_hat(x)| <= Delta(x)``, and the width is not negligible,
  ``Delta(x) > tau = horizon ** -kappa`` (the width floor bounds memory).

Memory bound. Each query has ``lev >= tau^2 / beta``. For a linear oracle with
``||x|| <= 1`` and ridge ``lambda >= 1``, the elliptical potential lemma gives
``|Q| <= 2 d log(1 + T / (d lambda)) / min(1, tau^2 / beta)`` -- tested.

Incremental oracle. ``features=`` (a data-independent feature map such as
``sklearn.kernel_approximation.RBFSampler`` or ``PolynomialFeatures``) makes the oracle ridge
regression on ``phi(x)``: the sampler then runs in closed form on the features, block-vectorized
like the default linear oracle, and a deletion's replay costs ``O(|Q| D^2)`` (milliseconds)
instead of ``|Q|`` refits of a general regressor. The map is fitted on one all-zero row, so it
cannot depend on (deleted) data; a map whose fit needs data (``Nystroem``) is rejected.

Exact unlearning for any oracle. The query rule depends on labels through ``f_hat``, so
deleting a stored point can change what a fresh run would store. ``unlearn`` therefore replays
the sampler over the surviving stored points in stream order: the result is *by construction*
the state of the algorithm run on ``S' = Q \\ U`` (a subset of ``S \\ U``), which is exactly the
system-aware guarantee, at the cost of ``O(|Q|)`` oracle fits -- small, since ``Q`` is.
"""

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.linear_model import Ridge
from sklearn.utils.validation import check_is_fitted
from tqdm.auto import tqdm

from sys_unlearn._validation import check_ids, check_sample_ids, check_X, check_X_y, is_int, is_real

__all__ = ["OracleSelectiveSamplingClassifier", "memory_bound"]


def memory_bound(n_features: int, horizon: int, tau: float, beta: float, reg: float) -> float:
    """Upper bound on the stored points of Algorithm 2 with a linear ridge oracle.

    Valid for ``||x|| <= 1`` and ``reg >= 1`` (elliptical potential lemma).

    Parameters
    ----------
    n_features : int
        ``d`` (the oracle's feature dimension, intercept included if it has one).
    horizon : int
        Stream length ``T``.
    tau : float
        Width floor.
    beta : float
        Confidence radius.
    reg : float
        Ridge ``lambda``.

    Returns
    -------
    float
    """
    for name, value in (("n_features", n_features), ("horizon", horizon)):
        if not is_int(value) or value < 1:
            raise ValueError(f"{name}: must be a positive int, got {value!r}")
    for name, value in (("tau", tau), ("beta", beta), ("reg", reg)):
        if not is_real(value) or not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name}: must be a positive finite number, got {value!r}")
    c = min(1.0, tau**2 / beta)
    return 2.0 * n_features * np.log(1.0 + horizon / (n_features * reg)) / c


class OracleSelectiveSamplingClassifier(ClassifierMixin, BaseEstimator):
    """Disagreement-based selective sampling over a regression oracle (binary).

    Parameters
    ----------
    oracle : sklearn regressor or None, default=None
        The regression oracle; must accept ``sample_weight`` in ``fit``. ``None`` means
        ``Ridge(alpha=1.0, fit_intercept=False)`` (Algorithm 1's class).
    kappa : float, default=0.5
        Width floor ``tau = horizon ** -kappa``, ``kappa`` in ``(0, 1]``.
    beta : float, default=1.0
        Squared radius of the confidence set.
    weight : float, default=1.0
        Weight ``w`` of the perturbing point in the width computation.
    horizon : int or None, default=None
        Stream length ``T``; ``fit`` defaults it to ``n_samples``.
    features : sklearn transformer or None, default=None
        A data-independent feature map ``phi`` (e.g. ``RBFSampler(n_components=50,
        random_state=0)``): the oracle becomes ridge regression on ``phi(x)``, solved
        incrementally in closed form. Mutually exclusive with ``oracle``.
    verbose : int, default=0
        ``1`` shows a progress bar over the stream.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    oracle_ : the oracle fitted on the stored points (``None`` before any query)
    features_ : the fitted feature map (``None`` without ``features``)
    stored_ids_ : ndarray of shape (n_stored,)
    threshold_ : float
        ``tau``.
    """

    def __init__(
        self,
        oracle: RegressorMixin | None = None,
        kappa: float = 0.5,
        beta: float = 1.0,
        weight: float = 1.0,
        horizon: int | None = None,
        features=None,
        verbose: int = 0,
    ) -> None:
        self.oracle = oracle
        self.kappa = kappa
        self.beta = beta
        self.weight = weight
        self.horizon = horizon
        self.features = features
        self.verbose = verbose

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_ids: ArrayLike | None = None
    ) -> "OracleSelectiveSamplingClassifier":
        """Read the stream once, storing the points in the disagreement region.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), two classes
        sample_ids : array-like of int of shape (n_samples,), optional
            Distinct ids for deletion requests (default: row numbers).

        Returns
        -------
        self
        """
        X, y = check_X_y(X, y, owner=self)
        ids = check_sample_ids(sample_ids, len(X))
        for name, value in (("kappa", self.kappa), ("beta", self.beta), ("weight", self.weight)):
            if not (is_real(value) and np.isfinite(value) and value > 0):
                raise ValueError(f"{name}: must be a positive finite number, got {value!r}")
        if self.kappa > 1:
            raise ValueError(f"kappa: must be in (0, 1], got {self.kappa!r}")
        if self.horizon is not None and not (is_int(self.horizon) and self.horizon >= 1):
            raise ValueError(f"horizon: must be a positive int or None, got {self.horizon!r}")
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(
                "y: Only binary classification is supported (Algorithm 2 is binary); got "
                f"{classes.size} classes"
            )
        before = dict(self.__dict__)
        self.features_ = self._fit_features(X.shape[1])
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        self.horizon_ = int(self.horizon or len(X))
        self.threshold_ = float(self.horizon_) ** (-self.kappa)
        s = np.where(y == classes[1], 1.0, -1.0)
        keep = self._run(X, s, np.arange(len(X)), disable=not self.verbose)
        if keep.size == 0:
            # with nothing stored f_hat = 0, so a point is skipped only when its width is below
            # the floor: no point of this stream can ever be queried at this input scale
            tau = self.threshold_
            self.__dict__.clear()
            self.__dict__.update(before)  # a rejected fit leaves the estimator as it was
            top = float(np.sqrt(np.max(np.einsum("ij,ij->i", X, X))))
            raise ValueError(
                f"X: no point's confidence width exceeds the floor tau = horizon^-kappa = "
                f"{tau:.3g} (largest row norm {top:.3g}), so Algorithm 2 would store nothing "
                "and predict a constant; the analysis assumes ||x|| <= 1: rescale X so that "
                "its largest row norm is about 1"
            )
        self._set_state(X[keep], s[keep], ids[keep])
        return self

    def unlearn(self, sample_ids: ArrayLike) -> "OracleSelectiveSamplingClassifier":
        """Delete points by id: drop the stored ones and replay the sampler over the rest.

        Parameters
        ----------
        sample_ids : int or array-like of int

        Returns
        -------
        self
        """
        check_is_fitted(self, "classes_")
        ids = check_ids(sample_ids)
        hit = np.isin(self._ids, ids)
        if hit.any():
            X, s, kept_ids = self._X[~hit], self._s[~hit], self._ids[~hit]
            self._X[hit], self._s[hit] = 0.0, 0.0  # erase before the buffers are released
            keep = self._run(X, s, np.arange(len(X)), disable=True)
            self._set_state(X[keep], s[keep], kept_ids[keep])
        return self

    @property
    def stored_ids_(self) -> np.ndarray:
        """Ids of the stored points, in stream order."""
        check_is_fitted(self, "classes_")
        return self._ids.copy()

    def stored_state(self) -> dict[str, np.ndarray]:
        """The stored points, labels and ids (the oracle is a function of them)."""
        check_is_fitted(self, "classes_")
        return {"ids": self._ids.copy(), "X": self._X.copy(), "y": self._s.copy()}

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """``f_hat(x)``, shape (n_samples,)."""
        check_is_fitted(self, "classes_")
        X = check_X(X, n_features=self.n_features_in_, owner=self)
        if self.oracle_ is None:
            return np.zeros(len(X))
        return self.oracle_.predict(self._phi(X))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels, shape (n_samples,)."""
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int)]

    def width(self, X: ArrayLike) -> np.ndarray:
        """The confidence width ``Delta(x)`` given the stored points, shape (n_samples,)."""
        check_is_fitted(self, "classes_")
        X = check_X(X, n_features=self.n_features_in_, owner=self)
        f_hat = self.decision_function(X)
        XQ, P = self._phi(self._X), self._phi(X)
        return np.array([self._width(XQ, self._s, x, f) for x, f in zip(P, f_hat, strict=True)])

    def memory_bytes(self) -> int:
        """Bytes stored: the queried points, labels and ids."""
        check_is_fitted(self, "classes_")
        return int(self._X.nbytes + self._s.nbytes + self._ids.nbytes)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary by construction
        return tags

    # ------------------------------------------------------------------ internals
    def _base(self) -> RegressorMixin:
        return Ridge(alpha=1.0, fit_intercept=False) if self.oracle is None else self.oracle

    def _fit_features(self, n_features: int):
        if self.features is None:
            return None
        if self.oracle is not None:
            raise ValueError("features: give either a feature map or an oracle, not both")
        if not hasattr(self.features, "transform"):
            raise TypeError("features: expected a scikit-learn transformer")
        try:  # one all-zero row: the map cannot depend on (deletable) data
            return clone(self.features).fit(np.zeros((1, n_features)))
        except ValueError as exc:
            raise ValueError(
                f"features: the map must be data-independent (fit on one zero row failed: {exc})"
            ) from exc

    def _phi(self, X: np.ndarray) -> np.ndarray:
        return X if self.features_ is None else np.asarray(self.features_.transform(X), float)

    def _fit_oracle(self, X: np.ndarray, t: np.ndarray, w: np.ndarray | None = None):
        return clone(self._base()).fit(X, t, sample_weight=w)

    def _width(self, XQ: np.ndarray, sQ: np.ndarray, x: np.ndarray, fx: float) -> float:
        """Perturbation width: refit on Q's labels plus (x, f_hat(x) + 1) with weight w.

        For ridge, ``g(x) - f_hat(x) = w lev / (1 + w lev)`` exactly (Sherman-Morrison).
        """
        w = float(self.weight)
        Xp = np.vstack([XQ, x[None]])
        tp = np.append(sQ, fx + 1.0)
        sw = np.append(np.ones(len(XQ)), w)
        delta = float(self._fit_oracle(Xp, tp, sw).predict(x[None])[0]) - fx
        delta = min(max(delta, 0.0), 1.0 - 1e-12)
        lev = delta / (w * (1.0 - delta))
        return float(np.sqrt(self.beta * lev))

    def _run(self, X: np.ndarray, s: np.ndarray, order: np.ndarray, disable: bool) -> np.ndarray:
        """One pass of the sampler; returns the indices (into X) it stores."""
        if self.oracle is None:
            return self._run_ridge(self._phi(X[order]), s[order])
        picked: list[int] = []
        oracle = None
        for t in tqdm(order, disable=disable, desc="selective sampling", leave=False):
            x = X[t]
            fx = 0.0 if oracle is None else float(oracle.predict(x[None])[0])
            width = self._width(X[picked], s[picked], x, fx)
            if abs(fx) <= width and width > self.threshold_:
                picked.append(int(t))
                oracle = self._fit_oracle(X[picked], s[picked])
        return np.asarray(picked, dtype=np.int64)

    def _run_ridge(self, X: np.ndarray, s: np.ndarray) -> np.ndarray:
        """The default ridge oracle in closed form, block-vectorized like Algorithm 1.

        ``f_hat(x) = x^T A^{-1} b`` and ``lev = x^T A^{-1} x``; after a query of ``(z, s_z)``,
        with ``u = A^{-1} z`` and ``den = 1 + z^T u``, later points update by
        ``lev -= c^2 / den`` and ``f_hat += c (s_z - u^T b) / den`` where ``c = x^T u``.
        """
        d = X.shape[1]
        A_inv, b = np.eye(d), np.zeros(d)  # Ridge(alpha=1, fit_intercept=False)
        w, beta, tau = float(self.weight), float(self.beta), self.threshold_
        picked: list[int] = []
        for start in range(0, len(X), 1024):
            Xc = X[start : start + 1024]
            lev = np.sum((Xc @ A_inv) * Xc, axis=1)
            f = Xc @ (A_inv @ b)
            pos = 0
            while True:
                # the perturbation width, through the same formula the generic path inverts
                delta = np.minimum(w * lev[pos:] / (1.0 + w * lev[pos:]), 1.0 - 1e-12)
                width = np.sqrt(beta * delta / (w * (1.0 - delta)))
                hit = np.flatnonzero((np.abs(f[pos:]) <= width) & (width > tau))
                if hit.size == 0:
                    break
                j = pos + hit[0]
                z = Xc[j]
                u = A_inv @ z
                den = 1.0 + z @ u
                coef = (s[start + j] - u @ b) / den
                A_inv = A_inv - np.outer(u, u) / den
                b = b + s[start + j] * z
                pos = j + 1
                c = Xc[pos:] @ u
                lev[pos:] -= c**2 / den
                f[pos:] += c * coef
                picked.append(start + j)
        return np.asarray(picked, dtype=np.int64)

    def _set_state(self, X: np.ndarray, s: np.ndarray, ids: np.ndarray) -> None:
        self._X, self._s, self._ids = X.copy(), s.copy(), ids.copy()
        self.oracle_ = self._fit_oracle(self._phi(self._X), self._s) if len(self._X) else None
