"""Synthetic multivariate series with known causal graphs and injected anomalies.

Graph convention everywhere in this package: ``graph[c, e] = True`` iff variable ``c``
causes variable ``e`` (row = cause, column = effect); the diagonal marks self-lags.

Normal data follow the simulators used for the CAROTS synthetic sets (Tank et al.'s VAR
and Lorenz-96, scaled down); anomalies follow the TODS types used there plus the simple
types of the package issue (spike, level shift, noise) and a *causal break*, where one
effect variable stops following its parents while keeping a plausible marginal.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.integrate import odeint
from sklearn.utils import Bunch

from causal_ts._validation import (
    check_fraction,
    check_graph,
    check_int,
    check_positive,
    check_rng,
    check_series,
)

__all__ = [
    "ANOMALY_KINDS",
    "TODS_FACTORS",
    "dag_var_coefficients",
    "inject_anomalies",
    "inject_causal_break",
    "lorenz96_derivative",
    "make_lorenz96",
    "make_var",
    "simulate_lorenz96",
    "simulate_var",
    "simulate_var_process",
    "sliding_windows",
    "var_coefficients",
]

#: anomaly kinds understood by :func:`inject_anomalies`
ANOMALY_KINDS = (
    "point_global",
    "point_contextual",
    "collective_global",
    "collective_trend",
    "spike",
    "level_shift",
    "noise",
)


def sliding_windows(X: Any, window: int, stride: int = 1) -> np.ndarray:
    """Stack the windows of a series.

    Parameters
    ----------
    X : array-like of shape (T, N)
    window : int
        Window length W (>= 1, <= T).
    stride : int, default=1

    Returns
    -------
    numpy.ndarray of shape (n_windows, W, N)
        ``out[k] = X[k*stride : k*stride + W]``; a copy, never a view of ``X``.
    """
    X = check_series(X, "X")
    window = check_int(window, "window", low=1)
    stride = check_int(stride, "stride", low=1)
    if window > X.shape[0]:
        raise ValueError(f"window={window} is longer than the series (T={X.shape[0]})")
    view = sliding_window_view(X, window, axis=0)[::stride]  # (n, N, W)
    return np.ascontiguousarray(view.transpose(0, 2, 1))


# --------------------------------------------------------------------------- VAR
def var_coefficients(
    n_vars: int,
    lag: int = 3,
    sparsity: float = 0.3,
    beta_value: float = 1.0,
    auto_corr: float = 3.0,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Random stable VAR(lag) coefficients in the style of Tank et al. / CAROTS.

    Every variable gets self-weight ``auto_corr`` and weight ``beta_value`` on
    ``max(floor(sparsity * n_vars) - 1, 1)`` random other parents; the same matrix is used
    for every lag. If the companion matrix's spectral radius exceeds 0.97, the coefficients
    are divided by the radius and multiplied by 0.7 (the CAROTS variant of the generator),
    repeated until the radius is <= 0.97.

    Returns
    -------
    coefs : numpy.ndarray of shape (lag, N, N)
        ``coefs[l, c, e]`` multiplies ``x[t-l-1, c]`` in the equation of ``x[t, e]``.
    graph : numpy.ndarray of shape (N, N), bool
        ``graph[c, e]`` = c causes e (diagonal True).
    """
    n_vars = check_int(n_vars, "n_vars", low=1)
    lag = check_int(lag, "lag", low=1)
    sparsity = check_fraction(sparsity, "sparsity")
    check_positive(auto_corr, "auto_corr", allow_zero=True)
    rng = check_rng(seed)
    effect_by_cause = np.eye(n_vars) * auto_corr  # row = effect, as in the simulator
    # at least one parent so that small systems still have a causal structure (our choice)
    n_parents = max(int(sparsity * n_vars) - 1, 1 if n_vars > 1 else 0)
    for e in range(n_vars):
        others = np.delete(np.arange(n_vars), e)
        parents = rng.choice(others, size=min(n_parents, others.size), replace=False)
        effect_by_cause[e, parents] = beta_value
    graph = effect_by_cause.T != 0
    coefs = np.repeat(effect_by_cause.T[None], lag, axis=0)
    # Scaling every coefficient by s does not scale the companion radius by s when lag > 1,
    # so the CAROTS rescaling step (divide by the radius, multiply by 0.7) is repeated until
    # the process is stable (radius <= 0.97).
    for _ in range(100):  # converges in a few steps
        radius = _companion_radius(coefs)
        if radius <= 0.97:
            break
        coefs = coefs / radius * 0.7
    return coefs, graph


def _companion_radius(coefs: np.ndarray) -> float:
    """Spectral radius of the VAR companion matrix."""
    lag, n, _ = coefs.shape
    top = np.concatenate([coefs[i].T for i in range(lag)], axis=1)  # (N, lag*N), row = effect
    comp = np.zeros((lag * n, lag * n))
    comp[:n] = top
    comp[n:, :-n] = np.eye((lag - 1) * n)
    return float(np.max(np.abs(np.linalg.eigvals(comp))))


def dag_var_coefficients(
    n_vars: int,
    n_parents: int = 2,
    signal: float = 9.0,
    root_ar: float = 0.9,
    sd: float = 0.1,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """VAR(1) coefficients over a random DAG whose edges carry most of each effect's variance.

    Variables are put in a random order; each of the last ``n_vars - n_parents`` draws
    ``n_parents`` parents among the variables before it and no self-dependence, every other
    variable is a root with autoregression ``root_ar``. An effect's incoming weights (random
    signs and sizes) are scaled so that, at stationarity, its parents' part has variance
    ``signal * sd**2``: ``signal`` times the innovation variance. Every effect is then
    mostly its parents, and replacing it by an independent run (a causal break) raises its
    one-step residual variance from ``sd**2`` to about ``(2 signal + 1) sd**2``, where the
    Tank-style :func:`var_coefficients` (rescaled to radius 0.7) leaves it near ``sd**2``.
    The coefficient matrix is triangular in the variable order, so the process is stable for
    any ``signal`` (spectral radius ``root_ar``).

    Returns
    -------
    coefs : numpy.ndarray of shape (1, N, N)
        ``coefs[0, c, e]`` multiplies ``x[t-1, c]`` in the equation of ``x[t, e]``.
    graph : numpy.ndarray of shape (N, N), bool
        ``graph[c, e]`` = c causes e (diagonal True for the roots).
    """
    from scipy.linalg import solve_discrete_lyapunov

    n_vars = check_int(n_vars, "n_vars", low=2)
    n_parents = check_int(n_parents, "n_parents", low=1)
    if n_parents >= n_vars:
        raise ValueError(f"n_parents={n_parents} must be below n_vars={n_vars}")
    check_positive(signal, "signal")
    check_positive(sd, "sd")
    root_ar = float(root_ar)
    if not 0.0 <= root_ar < 1.0:
        raise ValueError(f"root_ar must be in [0, 1); got {root_ar}")
    rng = check_rng(seed)
    order = rng.permutation(n_vars)
    A = np.zeros((n_vars, n_vars))  # in order positions; row = effect, x_t = A x_{t-1} + eps
    for i in range(n_vars):
        if i < n_parents:
            A[i, i] = root_ar
            continue
        parents = rng.choice(i, size=n_parents, replace=False)
        w = rng.choice([-1.0, 1.0], size=n_parents) * rng.uniform(0.5, 1.5, size=n_parents)
        # stationary covariance of the variables before i (they never depend on i or later)
        cov = solve_discrete_lyapunov(A[:i, :i], sd**2 * np.eye(i))
        var = w @ cov[np.ix_(parents, parents)] @ w
        A[i, parents] = w * np.sqrt(signal * sd**2 / var)
    inv = np.empty(n_vars, dtype=int)
    inv[order] = np.arange(n_vars)
    effect_by_cause = A[np.ix_(inv, inv)]  # back to variable indices
    coefs = effect_by_cause.T[None].copy()
    return coefs, coefs[0] != 0


def simulate_var_process(
    coefs: np.ndarray,
    T: int,
    sd: float = 0.1,
    burn_in: int = 100,
    seed: int | None = 0,
    offsets: np.ndarray | None = None,
) -> np.ndarray:
    """Simulate ``x_t = sum_l x_{t-l} @ coefs[l-1] + eps_t (+ offsets_t)``.

    Parameters
    ----------
    coefs : numpy.ndarray of shape (lag, N, N)
        ``coefs[l, c, e]`` as returned by :func:`var_coefficients`.
    T : int
        Number of returned steps (after ``burn_in`` discarded steps).
    sd : float
        Innovation standard deviation.
    offsets : numpy.ndarray of shape (T, N), optional
        Added to ``x_t`` inside the recursion (a do-style intervention: the effects of a
        shifted variable respond through the dynamics).

    Returns
    -------
    numpy.ndarray of shape (T, N)
    """
    coefs = np.asarray(coefs, dtype=float)
    if coefs.ndim != 3 or coefs.shape[1] != coefs.shape[2]:
        raise ValueError(f"coefs must have shape (lag, N, N); got {coefs.shape}")
    T = check_int(T, "T", low=1)
    burn_in = check_int(burn_in, "burn_in", low=0)
    sd = check_positive(sd, "sd", allow_zero=True)
    lag, n, _ = coefs.shape
    if offsets is not None:
        offsets = np.asarray(offsets, dtype=float)
        if offsets.shape != (T, n):
            raise ValueError(f"offsets must have shape {(T, n)}; got {offsets.shape}")
    rng = check_rng(seed)
    total = T + burn_in
    eps = rng.normal(scale=sd, size=(total, n))
    X = np.zeros((total + lag, n))
    X[:lag] = rng.normal(scale=sd, size=(lag, n))
    flat = coefs.reshape(lag * n, n)  # rows ordered (lag 1 vars, lag 2 vars, ...)
    # sequential by nature (each step needs the previous ones); N-vectorized
    for t in range(lag, total + lag):
        past = X[t - lag : t][::-1].reshape(-1)
        X[t] = past @ flat + eps[t - lag]
        if offsets is not None and t - lag >= burn_in:
            X[t] += offsets[t - lag - burn_in]
    return X[lag + burn_in :]


def simulate_var(
    n_vars: int = 10,
    T: int = 8000,
    lag: int = 3,
    sparsity: float = 0.3,
    beta_value: float = 1.0,
    auto_corr: float = 3.0,
    sd: float = 0.1,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate a sparse stable VAR series (Tank et al. style, CAROTS rescaling).

    Returns
    -------
    X : numpy.ndarray of shape (T, n_vars)
    graph : numpy.ndarray of shape (n_vars, n_vars), bool
        ``graph[c, e]`` = c causes e; diagonal True.
    """
    rng = check_rng(seed)
    coefs, graph = var_coefficients(n_vars, lag, sparsity, beta_value, auto_corr, rng)
    return simulate_var_process(coefs, T, sd=sd, seed=rng), graph


# ---------------------------------------------------------------------- Lorenz-96
def lorenz96_derivative(x: np.ndarray, t: float = 0.0, F: float = 10.0) -> np.ndarray:
    """Lorenz-96 vector field ``dx_i/dt = (x_{i+1} - x_{i-2}) x_{i-1} - x_i + F``.

    Parameters
    ----------
    x : numpy.ndarray of shape (N,) or (B, N)
    t : float
        Unused (``odeint`` signature).
    F : float
        Forcing constant.

    Returns
    -------
    numpy.ndarray of the same shape as ``x``
    """
    x = np.asarray(x, dtype=float)
    return (np.roll(x, -1, axis=-1) - np.roll(x, 2, axis=-1)) * np.roll(x, 1, axis=-1) - x + F


def simulate_lorenz96(
    n_vars: int = 10,
    T: int = 6000,
    F: float = 10.0,
    dt: float = 0.1,
    sd: float = 0.1,
    burn_in: int = 1000,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Integrate Lorenz-96 with ``scipy.integrate.odeint`` and add observation noise.

    Returns
    -------
    X : numpy.ndarray of shape (T, n_vars)
    graph : numpy.ndarray of shape (n_vars, n_vars), bool
        Parents of ``i`` are ``i-2, i-1, i+1`` (cyclic) plus itself; ``graph[c, e]`` = c
        causes e.
    """
    n_vars = check_int(n_vars, "n_vars", low=4)
    T = check_int(T, "T", low=1)
    burn_in = check_int(burn_in, "burn_in", low=0)
    dt = check_positive(dt, "dt")
    sd = check_positive(sd, "sd", allow_zero=True)
    rng = check_rng(seed)
    x0 = rng.normal(scale=0.01, size=n_vars)
    t = np.linspace(0, (T + burn_in) * dt, T + burn_in)
    idx = np.arange(n_vars)
    plus1, minus1, minus2 = (idx + 1) % n_vars, (idx - 1) % n_vars, (idx - 2) % n_vars
    F = float(F)

    def rhs(x: np.ndarray, _t: float) -> np.ndarray:
        # same field as lorenz96_derivative; precomputed indices are ~10x faster than np.roll
        return (x[plus1] - x[minus2]) * x[minus1] - x + F

    X = odeint(rhs, x0, t)
    X = X[burn_in:] + rng.normal(scale=sd, size=(T, n_vars))
    graph = np.eye(n_vars, dtype=bool)
    for shift in (-2, -1, 1):
        graph[(idx + shift) % n_vars, idx] = True
    return X, graph


# ------------------------------------------------------------------- anomalies
def _square_wave(length: int) -> np.ndarray:
    """Five-harmonic square-like wave used by TODS' collective-global outliers."""
    t = np.arange(length)[:, None]
    k = np.arange(5)[None, :]
    return np.sum(np.sin(2 * np.pi * 0.04 * (2 * k + 1) * t) / (2 * k + 1), axis=1)


# the factors of the TODS generator's multivariate example, per kind (raw units)
TODS_FACTORS = {"point_global": 3.5, "point_contextual": 2.5, "collective_global": 1.5,
                "collective_trend": 0.5}  # fmt: skip


def _tods(X, out, labels, kind, variables, centres, factor, radius, rng) -> None:
    """TODS' raw-unit recipes, in place on ``out`` (see ``inject_anomalies``)."""
    T = len(X)
    hi, lo = X.max(axis=0), X.min(axis=0)
    wave = factor * _square_wave(T) if kind == "collective_global" else None
    for j in variables:
        for c in centres:
            a, b = max(0, c - radius), min(T, c + radius)
            if kind in ("point_global", "point_contextual"):
                x = X[c, j] * factor * X[a:b, j].std()
                if kind == "point_global":  # at least as extreme as the series
                    x = hi[j] if 0 <= x < hi[j] else lo[j] if lo[j] < x < 0 else x
                elif x > hi[j] or x < lo[j]:  # contextual: pulled back inside the range
                    x = (hi[j] if x > hi[j] else lo[j]) * min(0.95, abs(rng.normal()))
                out[c, j] = x
                labels[c] = 1
            elif kind == "collective_global":
                out[a:b, j] = wave[a:b]
                labels[a:b] = 1
            else:  # collective_trend: a ramp, and the series stays shifted after it
                ramp = rng.choice([-1.0, 1.0]) * factor * np.arange(b - a)
                out[a:b, j] += ramp
                out[b:, j] += ramp[-1]
                labels[a:b] = 1


def inject_anomalies(
    X: Any,
    kind: str,
    n_vars: int = 2,
    ratio: float = 0.01,
    factor: float = 2.0,
    radius: int = 5,
    seed: int | None = 0,
    recipe: str = "std",
) -> tuple[np.ndarray, np.ndarray, Bunch]:
    """Inject anomalies of one type into a copy of ``X``.

    Parameters
    ----------
    X : array-like of shape (T, N)
    kind : str
        One of :data:`ANOMALY_KINDS`:

        * ``"point_global"``: at ``round(T*ratio)`` points set ``x = mean + factor*std``;
        * ``"spike"``: as point_global with a random sign per point;
        * ``"point_contextual"``: ``x = local mean + factor * local std`` over
          ``[t - radius, t + radius)``;
        * ``"collective_global"``: segments ``[t - radius, t + radius)`` replaced by a
          square-like wave of amplitude ``3*std`` around the mean;
        * ``"collective_trend"``: add a ramp ``±factor*std*k/radius``, ``k = 0..2r-1``;
        * ``"level_shift"``: add ``±factor*std`` on the segment;
        * ``"noise"``: add ``N(0, (factor*std)^2)`` on the segment.

        Segment kinds use ``max(1, round(T*ratio/(2*radius)))`` segments.
    n_vars : int
        Number of anomalous variables (chosen without replacement).
    ratio, factor, radius : float, float, int
        Anomaly density, magnitude in standard deviations, half segment length.
    seed : int or None
    recipe : {"std", "tods"}, default="std"
        ``"std"``: the recipes above, magnitudes in units of each variable's std.
        ``"tods"``: the raw-unit recipes of TODS' multivariate generator (Lai et al., NeurIPS
        2021 benchmarks), for the four TODS kinds only, ``factor`` then in TODS' own units
        (:data:`TODS_FACTORS` holds its example's value per kind): point global and point
        contextual set
        ``x = x * factor * local std`` (local std over ``[t - radius, t + radius)``), pushed to
        the variable's max / min (global) or pulled inside ``[min, max]`` (contextual);
        collective global replaces segments by a five-harmonic square wave of amplitude
        ``factor`` in raw units; collective trend adds a ramp of ``±factor`` per step and
        keeps the final offset for the rest of the series (only the ramp is labelled).

    Returns
    -------
    X_new : numpy.ndarray of shape (T, N)
    labels : numpy.ndarray of shape (T,), int
        1 on every modified time step.
    info : sklearn.utils.Bunch
        ``variables`` (chosen columns), ``centres`` (anomaly centres), ``kind``.
    """
    X = check_series(X, "X")
    T, N = X.shape
    if kind not in ANOMALY_KINDS:
        raise ValueError(f"kind must be one of {ANOMALY_KINDS}; got {kind!r}")
    n_vars = check_int(n_vars, "n_vars", low=1)
    if n_vars > N:
        raise ValueError(f"n_vars={n_vars} exceeds the number of variables ({N})")
    ratio = check_fraction(ratio, "ratio", low_open=True)
    factor = check_positive(factor, "factor")
    radius = check_int(radius, "radius", low=1)
    if T <= 2 * radius:
        raise ValueError(f"X has {T} steps; need more than 2*radius={2 * radius}")
    if recipe not in ("std", "tods"):
        raise ValueError(f"recipe must be 'std' or 'tods'; got {recipe!r}")
    if recipe == "tods" and kind not in TODS_FACTORS:
        raise ValueError(f"recipe='tods' has the kinds {tuple(TODS_FACTORS)}; got {kind!r}")
    rng = check_rng(seed)
    out = X.copy()
    labels = np.zeros(T, dtype=int)
    variables = rng.choice(N, size=n_vars, replace=False)
    mean, std = X.mean(axis=0), X.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    point = kind in ("point_global", "point_contextual", "spike")
    n_centres = max(1, round(T * ratio)) if point else max(1, round(T * ratio / (2 * radius)))
    candidates = np.arange(radius, T - radius)
    centres = np.sort(rng.choice(candidates, size=min(n_centres, candidates.size), replace=False))
    if recipe == "tods":
        _tods(X, out, labels, kind, variables, centres, factor, radius, rng)
        return out, labels, Bunch(variables=variables, centres=centres, kind=kind)
    v = variables[None, :]
    if point:
        c = centres[:, None]
        if kind == "point_global":
            out[c, v] = mean[v] + factor * std[v]
        elif kind == "spike":
            sign = rng.choice([-1.0, 1.0], size=(centres.size, n_vars))
            out[c, v] = mean[v] + sign * factor * std[v]
        else:
            seg = sliding_window_view(X, 2 * radius, axis=0)[centres - radius]  # (C, N, 2r)
            loc_mean, loc_std = seg.mean(axis=2), seg.std(axis=2)
            out[c, v] = loc_mean[:, variables] + factor * loc_std[:, variables]
        labels[centres] = 1
    else:
        offs = np.arange(-radius, radius)
        rows = (centres[:, None] + offs[None, :])[:, :, None]  # (C, 2r, 1)
        cols = variables[None, None, :]
        shape = (centres.size, 2 * radius, n_vars)
        if kind == "collective_global":
            wave = _square_wave(2 * radius)[None, :, None]
            out[rows, cols] = mean[cols] + 3.0 * std[cols] * wave
        elif kind == "collective_trend":
            sign = rng.choice([-1.0, 1.0], size=(1, 1, n_vars))
            ramp = np.arange(2 * radius)[None, :, None] / radius
            out[rows, cols] += sign * factor * std[cols] * ramp
        elif kind == "level_shift":
            sign = rng.choice([-1.0, 1.0], size=(centres.size, 1, n_vars))
            out[rows, cols] += sign * factor * std[cols] * np.ones(shape)
        else:  # noise
            out[rows, cols] += rng.normal(size=shape) * factor * std[cols]
        labels[rows.ravel()] = 1
    return out, labels, Bunch(variables=variables, centres=centres, kind=kind)


def inject_causal_break(
    X: Any,
    graph: Any,
    X_independent: Any,
    n_segments: int = 5,
    length: int = 20,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray, Bunch]:
    """Cut effect variables loose from their parents on a few segments.

    On each segment ``[t0, t0 + length)`` one effect ``e`` (a variable with at least one
    parent other than itself) is replaced by the same stretch of ``e`` from an independent
    run of the same process: its marginal stays plausible but the parents' influence is gone.

    Parameters
    ----------
    X : array-like of shape (T, N)
    graph : array-like of shape (N, N)
        ``graph[c, e]`` = c causes e.
    X_independent : array-like of shape (T, N)
        An independent simulation of the same process.
    n_segments, length : int
    seed : int or None

    Returns
    -------
    X_new : numpy.ndarray of shape (T, N)
    labels : numpy.ndarray of shape (T,), int
    info : sklearn.utils.Bunch
        ``variables`` (effect per segment), ``starts`` (segment starts), ``kind``.
    """
    X = check_series(X, "X")
    T, N = X.shape
    X_independent = check_series(X_independent, "X_independent")
    if X_independent.shape != X.shape:
        raise ValueError(
            f"X_independent must have the shape of X {X.shape}; got {X_independent.shape}"
        )
    graph = check_graph(graph, N, "graph")
    n_segments = check_int(n_segments, "n_segments", low=1)
    length = check_int(length, "length", low=1)
    if length * n_segments > T:
        raise ValueError(f"n_segments*length={n_segments * length} exceeds T={T}")
    has_parent = (graph & ~np.eye(N, dtype=bool)).any(axis=0)
    effects = np.flatnonzero(has_parent)
    if effects.size == 0:
        raise ValueError("graph has no variable with a parent other than itself")
    rng = check_rng(seed)
    # non-overlapping segments: one random start inside each of n_segments equal blocks
    block = T // n_segments
    starts = np.arange(n_segments) * block + rng.integers(0, block - length + 1, n_segments)
    variables = rng.choice(effects, size=n_segments)
    out = X.copy()
    labels = np.zeros(T, dtype=int)
    rows = starts[:, None] + np.arange(length)[None, :]
    out[rows, variables[:, None]] = X_independent[rows, variables[:, None]]
    labels[rows.ravel()] = 1
    return out, labels, Bunch(variables=variables, starts=starts, kind="causal_break")


def _make(
    simulate: Any,
    n_train: int,
    n_test: int,
    kind: str,
    n_anomalous_vars: int,
    ratio: float,
    factor: float,
    radius: int,
    n_breaks: int,
    break_length: int,
    seed: int | None,
    recipe: str = "std",
) -> Bunch:
    kinds = ("mixed", "causal_break", *ANOMALY_KINDS)
    if kind not in kinds:
        raise ValueError(f"kind must be one of {kinds}; got {kind!r}")
    n_train = check_int(n_train, "n_train", low=1)
    n_test = check_int(n_test, "n_test", low=1)
    rng = check_rng(seed)
    X, X_alt, graph = simulate(n_train + n_test, rng)
    X_train, X_test = X[:n_train], X[n_train:]
    infos = []
    y = np.zeros(n_test, dtype=int)
    if kind in ANOMALY_KINDS:
        X_test, y, info = inject_anomalies(
            X_test, kind, n_anomalous_vars, ratio, factor, radius, seed=rng, recipe=recipe
        )
        infos.append(info)
    else:
        if kind == "mixed":
            for sub in ("spike", "level_shift", "noise"):
                X_test, lab, info = inject_anomalies(
                    X_test, sub, n_anomalous_vars, ratio / 3, factor, radius, seed=rng
                )
                y |= lab
                infos.append(info)
        X_test, lab, info = inject_causal_break(
            X_test, graph, X_alt[n_train:], n_breaks, break_length, seed=rng
        )
        y |= lab
        infos.append(info)
    return Bunch(X_train=X_train, X_test=X_test, y_test=y, graph=graph, anomalies=infos, kind=kind)


def make_var(
    n_vars: int = 10,
    n_train: int = 4000,
    n_test: int = 4000,
    kind: str = "mixed",
    lag: int = 3,
    sparsity: float = 0.3,
    n_anomalous_vars: int = 2,
    ratio: float = 0.01,
    factor: float = 2.0,
    radius: int = 5,
    n_breaks: int = 5,
    break_length: int = 20,
    n_interventions: int = 0,
    intervention_length: int = 20,
    intervention_shift: float = 3.0,
    design: str = "tank",
    signal: float = 9.0,
    seed: int | None = 0,
    recipe: str = "std",
) -> Bunch:
    """Normal VAR training data and a labelled test series with injected anomalies.

    Parameters
    ----------
    kind : str
        ``"mixed"`` (spike + level shift + noise + causal break), ``"causal_break"``, or
        one of :data:`ANOMALY_KINDS`.
    n_interventions : int, default=0
        Number of *normal* causal interventions in the test part: for
        ``intervention_length`` steps the variable with the most children receives an extra
        ``intervention_shift * 0.1`` (0.1 = innovation std; default 3 std, large enough to be
        seen, so that flagging it is a real false alarm) inside the simulator, so its
        effects respond through the true dynamics. Labelled 0 (the change is consistent with
        the causal mechanism) and marked in ``intervention``.
    design : {"tank", "dag"}, default="tank"
        ``"tank"``: :func:`var_coefficients` (Tank et al. / CAROTS style, ``lag``,
        ``sparsity``). ``"dag"``: :func:`dag_var_coefficients` (VAR(1) over a random DAG with
        2 parents per effect, ``lag`` and ``sparsity`` unused) in which each effect's
        parents carry ``signal`` times the innovation variance: the design where a causal
        break is visible to a forecaster at all.
    signal : float, default=9.0
        ``design="dag"`` only.
    n_train, n_test, lag, sparsity, n_anomalous_vars, ratio, factor, radius, n_breaks, seed
        As in :func:`simulate_var`, :func:`inject_anomalies` and :func:`inject_causal_break`.
    recipe : {"std", "tods"}, default="std"
        The anomaly recipe of :func:`inject_anomalies` (``"tods"``: raw units, the four TODS
        kinds).

    Returns
    -------
    sklearn.utils.Bunch
        ``X_train`` (n_train, N), ``X_test`` (n_test, N), ``y_test`` (n_test,) point labels,
        ``graph`` (N, N) true graph (row = cause), ``anomalies`` (list of info Bunches),
        ``intervention`` (n_test,) 0/1 mask of intervened steps.
    """
    n_interventions = check_int(n_interventions, "n_interventions", low=0)
    intervention_length = check_int(intervention_length, "intervention_length", low=1)
    if n_interventions * intervention_length > n_test:
        raise ValueError("n_interventions * intervention_length exceeds n_test")
    mask = np.zeros(n_train + n_test, dtype=int)

    if design not in ("tank", "dag"):
        raise ValueError(f"design must be 'tank' or 'dag'; got {design!r}")
    check_positive(signal, "signal")

    def simulate(T: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if design == "dag":
            coefs, graph = dag_var_coefficients(n_vars, signal=signal, seed=rng)
        else:
            coefs, graph = var_coefficients(n_vars, lag, sparsity, seed=rng)
        offsets = None
        if n_interventions:
            children = (graph & ~np.eye(n_vars, dtype=bool)).sum(axis=1)
            cause = int(np.argmax(children))
            block = n_test // n_interventions
            starts = n_train + np.arange(n_interventions) * block
            # a spawned child generator leaves the parent stream (and so the data) unchanged
            child = rng.spawn(1)[0]
            starts += child.integers(0, block - intervention_length + 1, n_interventions)
            rows = (starts[:, None] + np.arange(intervention_length)).ravel()
            offsets = np.zeros((T, n_vars))
            offsets[rows, cause] = intervention_shift * 0.1
            mask[rows] = 1
        X = simulate_var_process(coefs, T, seed=rng, offsets=offsets)
        X_alt = simulate_var_process(coefs, T, seed=rng)
        return X, X_alt, graph

    out = _make(
        simulate, n_train, n_test, kind, n_anomalous_vars, ratio, factor, radius, n_breaks,
        break_length, seed, recipe,
    )  # fmt: skip
    out["intervention"] = mask[n_train:]
    return out


def make_lorenz96(
    n_vars: int = 10,
    n_train: int = 3000,
    n_test: int = 3000,
    kind: str = "mixed",
    F: float = 10.0,
    n_anomalous_vars: int = 2,
    ratio: float = 0.01,
    factor: float = 2.0,
    radius: int = 5,
    n_breaks: int = 5,
    break_length: int = 20,
    seed: int | None = 0,
    recipe: str = "std",
) -> Bunch:
    """Normal Lorenz-96 training data and a labelled test series with injected anomalies.

    Same parameters (``recipe`` included) and return layout as :func:`make_var`; the
    causal-break replacement comes from a Lorenz-96 run started from a different initial
    state.
    """
    if isinstance(F, bool) or not isinstance(F, numbers.Real) or not np.isfinite(F):
        raise ValueError(f"F must be a finite number, got {F!r}")

    def simulate(T: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        X, graph = simulate_lorenz96(n_vars, T, F=F, seed=rng)
        X_alt, _ = simulate_lorenz96(n_vars, T, F=F, seed=rng)
        return X, X_alt, graph

    return _make(
        simulate, n_train, n_test, kind, n_anomalous_vars, ratio, factor, radius, n_breaks,
        break_length, seed, recipe,
    )  # fmt: skip
