"""Causal discoverers: a causal graph plus a one-step forecaster learned on normal data.

This is stage 1 of CAROTS (paper method section, Fig. 1a): a forecasting-based causal discovery
model is fit on the normal training series and frozen. It supplies the graph used by both
augmentors and the forecaster used by the causality-preserving augmentor and by the
anomaly score. The paper uses CUTS+; the default here is a linear VAR with Granger F-tests
(statsmodels' ``test_causality`` statistic for all pairs at once), see the package README for the difference.

Graph convention: ``graph_[c, e] = True`` iff variable ``c`` Granger-causes ``e``
(row = cause, column = effect); the diagonal (self-lags) is True for non-constant variables.

Every discoverer exposes ``fit(X) -> self``, ``graph_``, ``edge_scores_``, ``lag_`` and
``predict_next(prefix) -> (B, N)``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from causal_ts._validation import check_fraction, check_graph, check_int, check_series
from causal_ts.data import sliding_windows

__all__ = [
    "GivenGraphDiscoverer",
    "VARGrangerDiscoverer",
    "constant_columns",
    "granger_pvalues_lstsq",
    "granger_pvalues_wald",
    "reduce_windows",
    "step_errors",
]


def constant_columns(X: np.ndarray) -> np.ndarray:
    """Boolean mask (N,) of constant or near-constant columns.

    A column whose range is at most ``1e-9`` of its largest magnitude carries fewer than
    7 of float64's digits of signal (``1e6 + 1e-4 noise``, say): its standardised values are
    rounding noise, so it is treated as constant.
    """
    return np.ptp(X, axis=0) <= 1e-9 * np.abs(X).max(axis=0)


def _finish_edge_scores(scores: np.ndarray, const: np.ndarray) -> np.ndarray:
    """Set the diagonal of ``scores`` to 1 and the rows/columns of constant columns to 0."""
    np.fill_diagonal(scores, 1.0)
    scores[const, :] = 0.0
    scores[:, const] = 0.0
    return scores


def _standardise(X: np.ndarray) -> np.ndarray:
    """Columns centred and scaled to unit variance (constant columns only centred).

    Granger statistics are invariant to a per-column affine map (the intercept absorbs the
    shift, the coefficients the scale), but the Gram matrix of a series at level 1e6 with unit
    spread loses 12 digits to the offset: centring first keeps the statistics exact.
    """
    Xc = X - X.mean(axis=0)
    sd = Xc.std(axis=0)
    return Xc / np.where(sd > 0, sd, 1.0)


def _lag_matrix(X: np.ndarray, lag: int) -> tuple[np.ndarray, np.ndarray]:
    """Regressors ``Z[t - lag, l*N + c] = X[t-l-1, c]`` and targets ``X[lag:]``."""
    T = X.shape[0]
    Z = np.concatenate([X[lag - k - 1 : T - k - 1] for k in range(lag)], axis=1)
    return Z, X[lag:]


def granger_pvalues_wald(X: np.ndarray, lag: int) -> np.ndarray:
    """All pairwise Granger F-test p-values of a VAR(``lag``) with intercept, in one pass.

    The statistic of statsmodels' ``VARResults.test_causality(caused=e, causing=[c],
    kind="f")`` for every pair at once: with ``G = (Z'Z)^-1`` of the VAR's design (intercept,
    then the lags, lag 1 first), OLS coefficients ``B``, residual variances
    ``S_ee = U_e'U_e / df`` (``df = T - lag - (1 + N lag)``) and ``b`` the ``lag``
    coefficients of cause ``c`` in effect ``e``'s equation, the Wald statistic is
    ``b' (S_ee G_cc)^-1 b`` and ``F = Wald / lag`` with ``(lag, N df)`` degrees of freedom
    (statsmodels' system-wide denominator). Equal to statsmodels' p-values to float precision
    (tested) at ``N`` small ``lag x lag`` inverses instead of ``N (N - 1)`` Kronecker-sized
    covariance builds.

    Parameters
    ----------
    X : numpy.ndarray of shape (T, N)
    lag : int

    Returns
    -------
    numpy.ndarray of shape (N, N)
        ``p[c, e]``; the diagonal is 1.

    Raises
    ------
    numpy.linalg.LinAlgError
        If the design is singular (collinear or duplicated channels).
    """
    from scipy.stats import f as f_dist

    X = _standardise(np.asarray(X, dtype=np.float64))
    N = X.shape[1]
    Z, Y = _lag_matrix(X, lag)
    design = np.column_stack([np.ones(Z.shape[0]), Z])
    G = np.linalg.inv(design.T @ design)
    B = G @ (design.T @ Y)  # (1 + N lag, N)
    U = Y - design @ B
    df = Z.shape[0] - design.shape[1]
    s_ee = np.einsum("te,te->e", U, U) / df
    idx = 1 + np.arange(lag)[None, :] * N + np.arange(N)[:, None]  # (N causes, lag) rows
    G_cc = G[idx[:, :, None], idx[:, None, :]]  # (N, lag, lag)
    b = B[idx]  # (N causes, lag, N effects)
    wald = np.einsum("cle,clm,cme->ce", b, np.linalg.inv(G_cc), b) / s_ee[None, :]
    pvalues = f_dist.sf(np.maximum(wald, 0.0) / lag, lag, N * df)
    np.fill_diagonal(pvalues, 1.0)
    return pvalues


def granger_pvalues_lstsq(X: np.ndarray, lag: int, ridge: float = 0.0) -> np.ndarray:
    """Pairwise Granger F-test p-values by nested least squares on one shared Gram matrix.

    For effect e the full model regresses ``x_e`` on an intercept and ``lag`` lags of every
    variable; the restricted model drops cause c's lags. ``F = ((RSS_r - RSS_f) / lag) /
    (RSS_f / df)``, ``df = T - lag - (1 + N lag)``; the p-value is ``F.sf(F, lag, df)``. This is
    the statistic of statsmodels' ``VARResults.test_causality(kind="f")`` for one caused and
    one causing variable (statsmodels uses ``N * df`` denominator degrees of freedom; the
    p-values agree closely for long series, tested).

    Parameters
    ----------
    X : numpy.ndarray of shape (T, N)
    lag : int
    ridge : float, default=0.0
        Added to the diagonal of the lag block of the Gram matrix (relative to its mean
        diagonal) -- keeps collinear or duplicated channels solvable.

    Returns
    -------
    numpy.ndarray of shape (N, N)
        ``p[c, e]``; the diagonal is 1.
    """
    from scipy.stats import f as f_dist

    X = _standardise(np.asarray(X, dtype=np.float64))
    N = X.shape[1]
    Z, Y = _lag_matrix(X, lag)
    design = np.column_stack([np.ones(Z.shape[0]), Z])
    gram, moment = design.T @ design, design.T @ Y
    if ridge:
        diag = np.arange(1, gram.shape[0])
        gram[diag, diag] += ridge * float(np.mean(np.diag(gram)[1:]))
    yy = np.einsum("te,te->e", Y, Y)
    df = Z.shape[0] - design.shape[1]

    def rss(cols: np.ndarray, e: int) -> float:
        sub = gram[np.ix_(cols, cols)]
        beta = np.linalg.lstsq(sub, moment[cols, e], rcond=None)[0]
        return float(yy[e] - beta @ moment[cols, e])

    all_cols = np.arange(design.shape[1])
    pvalues = np.ones((N, N))
    for e in range(N):
        rss_f = max(rss(all_cols, e), 1e-300)
        for c in range(N):
            if c == e:
                continue
            drop = 1 + np.arange(lag) * N + c
            rss_r = rss(np.setdiff1d(all_cols, drop), e)
            stat = max(rss_r - rss_f, 0.0) / lag / (rss_f / df)
            pvalues[c, e] = float(f_dist.sf(stat, lag, df))
    return pvalues


class _GraphForecasterMixin:
    """Restricted linear forecaster: each effect regressed on the lags of its parents."""

    intercept_: np.ndarray
    coef_: np.ndarray
    lag_: int
    n_features_in_: int

    def _fit_forecaster(self, X: np.ndarray, graph: np.ndarray, lag: int) -> None:
        N = X.shape[1]
        mu = X.mean(axis=0)  # fit on centred data (a level of 1e6 costs the Gram 12 digits)
        Z, Y = _lag_matrix(X - mu, lag)
        self.intercept_ = Y.mean(axis=0)
        self.coef_ = np.zeros((lag, N, N))
        # equation-by-equation OLS through one shared Gram matrix: N tiny solves instead of N
        # least-squares passes over the data (much faster, and immune to BLAS-thread stalls)
        design = np.column_stack([np.ones(Z.shape[0]), Z])
        gram, moment = design.T @ design, design.T @ Y
        for e in range(N):
            parents = np.flatnonzero(graph[:, e])
            if parents.size == 0:
                continue
            cols = np.concatenate([[0], 1 + (np.arange(lag)[:, None] * N + parents).ravel()])
            sub = gram[np.ix_(cols, cols)]
            try:
                beta = np.linalg.solve(sub, moment[cols, e])
            except np.linalg.LinAlgError:  # collinear regressors: minimum-norm solution
                beta = np.linalg.lstsq(sub, moment[cols, e], rcond=None)[0]
            self.intercept_[e] = beta[0]
            self.coef_[:, parents, e] = beta[1:].reshape(lag, parents.size)
        # back to raw units: x_e - mu_e = b0 + sum coef (x - mu)
        self.intercept_ = self.intercept_ + mu - np.einsum("lce,c->e", self.coef_, mu)
        self.lag_ = lag
        self.n_features_in_ = N

    def predict_next(self, prefix: Any) -> np.ndarray:
        """One-step forecast of the step after each prefix.

        Parameters
        ----------
        prefix : array-like of shape (B, L, N), L >= ``lag_``
            Past values in time order (last row = most recent).

        Returns
        -------
        numpy.ndarray of shape (B, N)
            ``intercept_ + sum_l prefix[:, L-1-l] @ coef_[l]``.
        """
        if not hasattr(self, "coef_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(X) first")
        x = np.asarray(prefix, dtype=float)
        if x.ndim != 3:
            raise ValueError(f"prefix must be 3-D of shape (B, L, N); got shape {x.shape}")
        if x.shape[2] != self.n_features_in_:
            raise ValueError(
                f"prefix has {x.shape[2]} variables; the discoverer was fit on "
                f"{self.n_features_in_}"
            )
        if x.shape[1] < self.lag_:
            raise ValueError(f"prefix has {x.shape[1]} steps; need at least lag_={self.lag_}")
        recent = x[:, ::-1][:, : self.lag_]  # (B, lag, N), lag 1 first
        return self.intercept_ + np.einsum("bln,lne->be", recent, self.coef_)


class VARGrangerDiscoverer(_GraphForecasterMixin, BaseEstimator):
    """VAR(p) + pairwise Granger F-tests (statsmodels' statistic), restricted-OLS forecaster.

    Parameters
    ----------
    lag : int, default=3
        VAR order p.
    alpha : float, default=0.01
        Significance level of the Granger tests: ``graph_[c, e]`` iff p-value < alpha.
    correction : {None, "bonferroni"}, default=None
        ``"bonferroni"`` divides ``alpha`` by the number of tests N(N-1).
    restricted : bool, default=True
        If True each effect is refit on the lags of its parents (and itself) only;
        if False the full VAR is used as forecaster (the graph is unchanged).

    Attributes
    ----------
    graph_ : numpy.ndarray of shape (N, N), bool
        ``graph_[c, e]`` = c Granger-causes e (row = cause); diagonal True except for
        constant columns, whose rows and columns are all False.
    edge_scores_ : numpy.ndarray of shape (N, N)
        ``1 - p-value`` for every tested pair (0 on untested pairs, 1 on the diagonal).
    pvalues_ : numpy.ndarray of shape (N, N)
    intercept_ : numpy.ndarray of shape (N,)
    coef_ : numpy.ndarray of shape (lag, N, N)
        ``coef_[l, c, e]`` multiplies ``x[t-l-1, c]`` in the forecast of ``x[t, e]``.
    lag_ : int
    """

    def __init__(
        self,
        lag: int = 3,
        alpha: float = 0.01,
        correction: str | None = None,
        restricted: bool = True,
    ) -> None:
        self.lag = lag
        self.alpha = alpha
        self.correction = correction
        self.restricted = restricted

    def fit(self, X: Any, y: Any = None) -> VARGrangerDiscoverer:
        """Fit the VAR, run the N(N-1) Granger tests and the forecaster.

        Parameters
        ----------
        X : array-like of shape (T, N)
            Normal training series (ideally standardised).
        y : ignored

        Returns
        -------
        self
        """
        lag = check_int(self.lag, "lag", low=1)
        alpha = check_fraction(self.alpha, "alpha", low_open=True)
        if self.correction not in (None, "bonferroni"):
            raise ValueError(f"correction must be None or 'bonferroni'; got {self.correction!r}")
        X = check_series(X, "X")
        T, N = X.shape
        min_len = (N * lag + 1) * 2
        if T <= min_len:
            raise ValueError(
                f"X has {T} time steps; the VAR({lag}) on {N} variables needs more than {min_len}"
            )
        const = constant_columns(X)
        if const.any():
            warnings.warn(
                f"constant or near-constant columns {np.flatnonzero(const).tolist()} (range "
                "<= 1e-9 of their level) are excluded from the "
                "Granger tests and the VAR (their graph rows/columns are False)",
                UserWarning,
                stacklevel=2,
            )
        active = np.flatnonzero(~const)
        pvalues = np.ones((N, N))
        if active.size >= 2:
            Xa = X[:, active]
            try:
                if np.linalg.cond(np.corrcoef(Xa, rowvar=False)) > 1e10:
                    raise np.linalg.LinAlgError("collinear channels")
                sub = granger_pvalues_wald(Xa, lag)
            except np.linalg.LinAlgError:
                warnings.warn(
                    "collinear or duplicated channels: the VAR is singular; the Granger "
                    "tests fall back to ridge-regularised least squares",
                    UserWarning,
                    stacklevel=2,
                )
                sub = granger_pvalues_lstsq(Xa, lag, ridge=1e-6)
            pvalues[np.ix_(active, active)] = sub
        n_tests = max(active.size * (active.size - 1), 1)
        level = alpha / n_tests if self.correction == "bonferroni" else alpha
        graph = pvalues < level
        np.fill_diagonal(graph, False)
        graph[active, active] = True
        self.pvalues_ = pvalues
        self.edge_scores_ = _finish_edge_scores(1.0 - pvalues, const)
        self.graph_ = graph
        forecast_graph = graph.copy()
        if not self.restricted:
            forecast_graph[np.ix_(active, active)] = True
        self._fit_forecaster(X, forecast_graph, lag)
        return self


class GivenGraphDiscoverer(_GraphForecasterMixin, BaseEstimator):
    """A user-supplied graph with the restricted linear (VAR) forecaster.

    Parameters
    ----------
    graph : array-like of shape (N, N)
        ``graph[c, e]`` = c causes e (row = cause). Self-loops are added for the forecaster.
    lag : int, default=3

    Attributes
    ----------
    graph_, edge_scores_, intercept_, coef_, lag_ : as in :class:`VARGrangerDiscoverer`.
    """

    def __init__(self, graph: Any = None, lag: int = 3) -> None:
        self.graph = graph
        self.lag = lag

    def fit(self, X: Any, y: Any = None) -> GivenGraphDiscoverer:
        """Check the graph against ``X`` and fit the forecaster.

        Parameters
        ----------
        X : array-like of shape (T, N)
        y : ignored

        Returns
        -------
        self
        """
        lag = check_int(self.lag, "lag", low=1)
        X = check_series(X, "X")
        T, N = X.shape
        if self.graph is None:
            raise ValueError("graph must be given (an (N, N) boolean matrix)")
        graph = check_graph(self.graph, N, "graph")
        if T <= lag + 1:
            raise ValueError(f"X has {T} time steps; need more than lag + 1 = {lag + 1}")
        self.graph_ = graph.copy()
        self.edge_scores_ = graph.astype(float)
        forecast_graph = graph | np.eye(N, dtype=bool)
        forecast_graph[:, constant_columns(X)] = False
        self._fit_forecaster(X, forecast_graph, lag)
        return self


def step_errors(forecaster: Any, Xs: np.ndarray) -> np.ndarray:
    """One-step forecast error of every step of a series, mean over variables.

    Parameters
    ----------
    forecaster : fitted discoverer
        Anything with ``lag_`` and ``predict_next``.
    Xs : numpy.ndarray of shape (T, N)
        The (standardised) series.

    Returns
    -------
    numpy.ndarray of shape (T,)
        Step t's squared error, predicted from steps t - lag .. t - 1; 0 for the first ``lag``.
    """
    lag = forecaster.lag_
    err = np.zeros(Xs.shape[0])
    if Xs.shape[0] > lag:
        pred = forecaster.predict_next(sliding_windows(Xs[:-1], lag))
        err[lag:] = np.mean((Xs[lag:] - pred) ** 2, axis=1)
    return err


def reduce_windows(values: np.ndarray, window: int, how: str) -> np.ndarray:
    """Max, mean or last value of every stride-1 window of a (T,) series, (T - W + 1,)."""
    steps = np.lib.stride_tricks.sliding_window_view(values, window)
    if how == "last":
        return steps[:, -1].copy()
    return steps.max(axis=1) if how == "max" else steps.mean(axis=1)
