"""Prominent periods of a series: HP detrending, wavelet bands, one periodogram peak per band.

SARC §3 ("prominent frequencies"); the detrend / wavelet / top-k details follow the released
``extract_period`` module as described in the project spec §2.1.
"""

from __future__ import annotations

import numpy as np
import pywt
from scipy import sparse
from scipy.signal import periodogram
from scipy.sparse.linalg import splu

__all__ = ["extract_periods", "hp_filter", "parse_mode", "wavelet_components"]


def hp_filter(u: np.ndarray, lamb: float = 1600.0) -> tuple[np.ndarray, np.ndarray]:
    """Hodrick-Prescott filter: ``trend = (I + lamb D2^T D2)^{-1} u``, ``cycle = u - trend``.

    Parameters
    ----------
    u : ndarray (L,) or (n, L)
        One series, or several of equal length (one sparse factorisation serves all rows).
    lamb : float, default=1600

    Returns
    -------
    cycle, trend : ndarray, shaped like ``u``
    """
    u = np.asarray(u, dtype=np.float64)
    if u.ndim not in (1, 2) or u.shape[-1] < 3 or u.size == 0 or not np.isfinite(u).all():
        raise ValueError("u must be finite, of shape (L,) or (n, L), with L >= 3")
    if not lamb > 0:
        raise ValueError(f"lamb must be > 0, got {lamb!r}")
    n = u.shape[-1]
    d2 = sparse.diags(
        [np.ones(n - 2), -2 * np.ones(n - 2), np.ones(n - 2)], [0, 1, 2], shape=(n - 2, n)
    )
    trend = splu((sparse.eye(n) + lamb * (d2.T @ d2)).tocsc()).solve(np.ascontiguousarray(u.T)).T
    return u - trend, trend


def wavelet_components(c: np.ndarray, wavelet: str = "db4") -> list[np.ndarray]:
    """Full-depth DWT of ``c`` along its last axis, each band reconstructed alone (cropped to
    the length of ``c``). The bands sum to ``c`` (perfect reconstruction).
    """
    c = np.asarray(c, dtype=np.float64)
    if c.ndim not in (1, 2) or c.size == 0 or c.shape[-1] < 2 or not np.isfinite(c).all():
        raise ValueError(f"c must be finite, of shape (L,) or (n, L) with L >= 2, got {c.shape}")
    L = c.shape[-1]
    level = pywt.dwt_max_level(L, pywt.Wavelet(wavelet).dec_len)
    coeffs = pywt.wavedec(c, wavelet, level=max(level, 1), axis=-1)
    out = []
    for j in range(len(coeffs)):
        only = [np.zeros_like(a) if i != j else a for i, a in enumerate(coeffs)]
        out.append(pywt.waverec(only, wavelet, axis=-1)[..., :L])
    return out


def parse_mode(mode: str) -> tuple[str, int]:
    """``"base"`` -> ("base", 0); ``"extended-100"`` -> ("extended", 100); ``"all-50"`` -> ("all", 50)."""
    if not isinstance(mode, str):
        raise TypeError(f"period_mode must be a str, got {type(mode).__name__}")
    if mode == "base":
        return "base", 0
    kind, _, k = mode.partition("-")
    if kind not in ("extended", "all") or not k.isdigit() or int(k) < 2:
        raise ValueError(
            f"period_mode must be 'base', 'extended-K' or 'all-K' with K >= 2, got {mode!r}"
        )
    return kind, int(k)


def _component_spectra(U: np.ndarray, wavelet: str, hp_lambda: float) -> np.ndarray:
    """Periodogram of each component (trend, wavelet bands), averaged over the rows of U (n, L)."""
    cycle, trend = hp_filter(U, hp_lambda)
    comps = [trend, *wavelet_components(cycle, wavelet)]
    return np.stack([periodogram(x, fs=1.0, axis=-1)[1].mean(0) for x in comps])


def extract_periods(
    X: np.ndarray,
    mode: str = "extended-100",
    top_k: int = 1,
    wavelet: str = "db4",
    hp_lambda: float = 1600.0,
) -> list[int]:
    """Prominent periods of a series or of a set of equal-length series.

    Parameters
    ----------
    X : ndarray (L,), (n, L) or (n, C, L)
        One series, or many: their component periodograms are averaged over series and channels
        before the peaks are taken (``period_source="mean"``).
    mode : str, default="extended-100"
        ``"base"``: the peaks only; ``"extended-K"``: plus the multiples of each peak period ``p``
        below ``min(L, K)`` if ``p <= L/5``, else below ``L``; ``"all-K"``: every lag 1..min(K, L-1)
        (no spectral analysis).
    top_k : int, default=1
        Peaks per component.
    wavelet : str, default="db4"
    hp_lambda : float, default=1600

    Returns
    -------
    list of int
        Sorted periods; ``1..min(9, L-1)`` when no component has a usable peak.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[None, None]
    elif X.ndim == 2:
        X = X[:, None]
    if X.ndim != 3 or X.size == 0 or not np.isfinite(X).all():
        raise ValueError("X must be a finite (L,), (n, L) or (n, C, L) array")
    L = X.shape[-1]
    if L < 3:
        raise ValueError(f"series length must be >= 3, got {L}")
    if isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1:
        raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
    kind, kappa = parse_mode(mode)
    if kind == "all":
        return list(range(1, min(kappa, L - 1) + 1))
    spec = _component_spectra(X.reshape(-1, L), wavelet, hp_lambda)  # (n_comp, L//2 + 1)
    freqs = np.arange(spec.shape[1]) / L
    base: set[int] = set()
    floor = 1e-12 * max(float(np.mean(X**2)), np.finfo(float).tiny)
    for row in spec:
        if row.max() <= floor:  # a band with round-off power only (e.g. a constant series)
            continue
        for j in np.argsort(-row, kind="stable")[:top_k]:
            # filter after the top-k choice: a component peaking at f = 0 contributes nothing
            if freqs[j] >= 1.0 / (L - 1):
                base.add(round(1.0 / float(freqs[j])))
    if not base:
        return list(range(1, min(9, L - 1) + 1))
    out = set(base)
    if kind == "extended":
        for p in base:
            limit = min(L, kappa) if p <= L / 5 else L
            out.update(range(p, limit, p))
    return sorted(out)
