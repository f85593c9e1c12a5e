"""Seeded metapopulation SIRS simulator with seasonal forcing and a gravity mobility graph.

Daily chain (spec §5.1), every region at once:

    lambda_v(t) = beta_v(t) * sum_u M_vu I_u / P_u + eps,
    beta_v(t)   = R0_v * gamma * (1 + a cos(2 pi (t - theta_v) / 365)),
    new infections ~ Bin(S_v, 1 - exp(-lambda_v)),  recoveries ~ Bin(I_v, 1 - exp(-gamma)),
    waning ~ Bin(R_v, 1 - exp(-omega)),

all drawn from the state at the start of the day and applied together (the deterministic mode
uses their expectations). Reported weekly cases ~ NegBin(mean rho_v * weekly infections,
dispersion 20).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from epi_ode.validation import check_int

__all__ = ["Simulation", "simulate_metapopulation"]


@dataclass(frozen=True)
class Simulation:
    """Output of :func:`simulate_metapopulation`.

    Attributes
    ----------
    cases : ndarray (T, N)
        Reported weekly cases (NaN where ``missing_rate`` dropped a report).
    infections : ndarray (T, N)
        True weekly new infections.
    adjacency : ndarray (N, N)
        Symmetric 3-nearest-neighbour graph with self-loops (the "geographic" graph).
    mobility : ndarray (N, N)
        Row-stochastic mixing matrix M = (1 - phi) I + phi * gravity.
    population : ndarray (N,)
    compartments : ndarray (T, N, 3)
        S, I, R at the end of each week.
    coords : ndarray (N, 2)
    params : dict
        The drawn R0, theta, rho and the fixed rates.
    """

    cases: np.ndarray
    infections: np.ndarray
    adjacency: np.ndarray
    mobility: np.ndarray
    population: np.ndarray
    compartments: np.ndarray
    coords: np.ndarray
    params: dict


def _knn_graph(coords: np.ndarray, k: int) -> np.ndarray:
    d = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    n = len(coords)
    A = np.eye(n)
    if n > 1:
        nbr = np.argsort(d, axis=1)[:, : min(k, n - 1)]
        A[np.repeat(np.arange(n), nbr.shape[1]), nbr.ravel()] = 1.0
    return np.maximum(A, A.T)


def simulate_metapopulation(
    n_regions: int = 10,
    n_weeks: int = 520,
    seed: int = 0,
    *,
    phi: float = 0.05,
    seasonal_amplitude: float = 0.3,
    gamma: float = 0.25,
    waning: float = 1.0 / 730.0,
    importation: float = 1e-7,
    r0_range: tuple[float, float] = (1.3, 1.8),
    rho_range: tuple[float, float] = (0.2, 0.5),
    dispersion: float | None = 20.0,
    stochastic: bool = True,
    burn_in_weeks: int = 104,
    initial_infected=None,
    missing_rate: float = 0.0,
) -> Simulation:
    """Simulate weekly reported cases of a seasonal SIRS epidemic on ``n_regions`` regions.

    Parameters
    ----------
    n_regions, n_weeks : int
        Regions N and reported weeks T (after ``burn_in_weeks`` discarded weeks).
    seed : int
        Seeds every draw (geometry, parameters, epidemic, reporting, missingness).
    phi : float in [0, 1]
        Share of contacts made through the gravity mobility graph; 0 decouples the regions.
    seasonal_amplitude : float in [0, 1)
        ``a`` in the seasonal transmission rate.
    gamma, waning, importation : float
        Daily recovery rate, daily loss of immunity (0: plain SIR), external force of infection.
    r0_range, rho_range : (low, high)
        Uniform ranges of each region's R0 and reporting rate.
    dispersion : float or None
        Negative-binomial dispersion of the reports; None reports ``rho * infections`` exactly.
    stochastic : bool
        Binomial daily transitions (integers) or their expectations (real numbers).
    initial_infected : array (N,) or None
        Infected at day 0; default ``max(1, 1e-5 P_v)``.
    missing_rate : float in [0, 1)
        Probability that a weekly report is missing (NaN), independently.

    Returns
    -------
    Simulation
    """
    n_regions = check_int(n_regions, "n_regions", 1)
    n_weeks = check_int(n_weeks, "n_weeks", 1)
    burn_in_weeks = check_int(burn_in_weeks, "burn_in_weeks", 0)
    for name, v, lo, hi in (
        ("phi", phi, 0.0, 1.0),
        ("seasonal_amplitude", seasonal_amplitude, 0.0, 0.999),
        ("gamma", gamma, 1e-9, 50.0),
        ("waning", waning, 0.0, 50.0),
        ("importation", importation, 0.0, 1.0),
        ("missing_rate", missing_rate, 0.0, 0.999),
    ):
        if not isinstance(v, int | float) or not np.isfinite(v) or not lo <= v <= hi:
            raise ValueError(f"{name} must be a number in [{lo}, {hi}], got {v!r}")
    for name, (lo, hi) in (("r0_range", r0_range), ("rho_range", rho_range)):
        if not (0 < lo <= hi) or not np.isfinite(hi):
            raise ValueError(f"{name} must be (low, high) with 0 < low <= high, got {(lo, hi)}")
    if dispersion is not None and not dispersion > 0:
        raise ValueError(f"dispersion must be positive or None, got {dispersion}")
    rng = np.random.default_rng(seed)
    N = n_regions
    coords = rng.uniform(size=(N, 2))
    P = np.round(10.0 ** rng.uniform(5.0, 6.3, size=N))
    A = _knn_graph(coords, 3)
    dist = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    g = np.sqrt(P[:, None] * P[None]) / (dist + 0.05) ** 2
    np.fill_diagonal(g, 0.0)
    rows = g.sum(axis=1, keepdims=True)
    g = np.divide(g, rows, out=np.zeros_like(g), where=rows > 0)
    g[rows[:, 0] == 0] = np.eye(N)[rows[:, 0] == 0]  # a lone region mixes only with itself
    M = (1.0 - phi) * np.eye(N) + phi * g
    r0 = rng.uniform(*r0_range, size=N)
    theta = rng.uniform(0.0, 60.0, size=N)
    rho = rng.uniform(*rho_range, size=N)
    if initial_infected is None:
        Inf = np.maximum(1.0, np.round(1e-5 * P))
    else:
        Inf = np.array(initial_infected, dtype=np.float64).reshape(-1)
        if Inf.shape != (N,) or not np.isfinite(Inf).all() or (Inf < 0).any() or (Inf > P).any():
            raise ValueError(f"initial_infected must be (N,)={N} values in [0, population]")
        if stochastic:
            Inf = np.round(Inf)
    S, R = P - Inf, np.zeros(N)
    p_rec, p_wane = 1.0 - np.exp(-gamma), 1.0 - np.exp(-waning)
    days = 7 * (burn_in_weeks + n_weeks)
    inf_w = np.zeros((burn_in_weeks + n_weeks, N))
    comp = np.zeros((burn_in_weeks + n_weeks, N, 3))
    for t in range(days):  # the chain is sequential in time; regions are vectorised
        beta = r0 * gamma * (1.0 + seasonal_amplitude * np.cos(2 * np.pi * (t - theta) / 365.0))
        lam = beta * (M @ (Inf / P)) + importation
        p_inf = 1.0 - np.exp(-lam)
        if stochastic:
            new_i = rng.binomial(S.astype(np.int64), p_inf)
            new_r = rng.binomial(Inf.astype(np.int64), p_rec)
            new_s = rng.binomial(R.astype(np.int64), p_wane)
        else:
            new_i, new_r, new_s = S * p_inf, Inf * p_rec, R * p_wane
        S, Inf, R = S - new_i + new_s, Inf + new_i - new_r, R + new_r - new_s
        inf_w[t // 7] += new_i
        if t % 7 == 6:
            comp[t // 7] = np.stack([S, Inf, R], axis=-1)
    inf_w, comp = inf_w[burn_in_weeks:], comp[burn_in_weeks:]
    mean = rho * inf_w
    if dispersion is None:
        cases = mean.copy()
    else:  # NegBin(n=dispersion, p=n/(n+mean)) has the requested mean
        cases = rng.negative_binomial(dispersion, dispersion / (dispersion + mean)).astype(float)
    if missing_rate > 0:
        cases[rng.uniform(size=cases.shape) < missing_rate] = np.nan
    params = {"R0": r0, "theta": theta, "rho": rho, "gamma": gamma, "waning": waning, "phi": phi,
              "seasonal_amplitude": seasonal_amplitude}  # fmt: skip
    return Simulation(cases, inf_w, A, M, P, comp, coords, params)
