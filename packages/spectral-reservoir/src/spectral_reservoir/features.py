"""Reservoir model space: a ridge readout fitted per series and period, plus the state maxima.

For period ``p``: ``z_t = [eta_{t-1}; eta_{t-p}]``, ``t = p..L-1``, and
``Theta = (Z^T Z + zeta I)^{-1} Z^T X_{p:L}`` (no intercept), fitted independently per series
(spec §2.3; Bianchi et al. 2021 for the model-space idea). ``eta`` holds the backward state too,
which has already seen ``x_t``: the readout is a representation of the series, not a forecaster.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["model_space_features"]


def model_space_features(
    X: np.ndarray,
    S: np.ndarray,
    periods: np.ndarray,
    ridge: float = 1.0,
    offsets: np.ndarray | None = None,
    skip_regressor: bool = True,
) -> np.ndarray:
    """Features ``[vec Theta^(p); max_t eta_t^(p)]`` concatenated over periods.

    Parameters
    ----------
    X : ndarray (B, C, L)
        Inputs (left-padded where ``offsets`` > 0).
    S : ndarray (B, P, L, E)
        Reservoir states (E = D * H), zero at pad positions.
    periods : ndarray (P,)
    ridge : float
    offsets : ndarray (B,), optional
        First real step of each series.
    skip_regressor : bool, default=True
        ``False`` regresses on ``eta_{t-1}`` alone (the plain model-space ESN baseline).

    Returns
    -------
    ndarray (B, P * (k * E * C + E))
        ``k = 2`` with the skip regressor, else 1.
    """
    X, S, periods, off = _check(X, S, periods, ridge, offsets, skip_regressor)
    B, C, L = X.shape
    E = S.shape[-1]
    k = 2 if skip_regressor else 1
    t_all = np.arange(L)
    valid = t_all[None, :] >= off[:, None]  # (B, L)
    blocks = []
    for j, p in enumerate(np.asarray(periods).tolist()):  # loop over periods, outside any time loop
        Ej = S[:, j]
        start = p if skip_regressor else 1
        theta = np.zeros((B, k * E, C), dtype=S.dtype)
        if start < L:
            lagged = [Ej[:, start - 1 : L - 1]]
            if skip_regressor:
                lagged.append(Ej[:, 0 : L - p])
            Z = np.concatenate(lagged, axis=-1)  # (B, L - start, kE)
            Y = X[:, :, start:].transpose(0, 2, 1)  # (B, L - start, C)
            if off.any():  # rows before a series' own step p are padding: drop them
                m = t_all[None, start:] >= off[:, None] + start
                Zt = (Z * m[..., None]).transpose(0, 2, 1)
            else:
                Zt = Z.transpose(0, 2, 1)
            # batched BLAS Gram matrices: (B, kE, kE) and (B, kE, C)
            G = Zt @ Z + ridge * np.eye(k * E, dtype=S.dtype)
            R = Zt @ Y
            theta = np.linalg.solve(G, R)
        mx = np.where(valid[:, :, None], Ej, -np.inf).max(axis=1)
        blocks.append(np.concatenate([theta.reshape(B, -1), mx], axis=1))
    return np.concatenate(blocks, axis=1)


def _check(X, S, periods, ridge, offsets, skip_regressor):
    """Named errors for every argument; ``S`` in a LAPACK dtype (float16/int become float)."""
    X, S = np.asarray(X), np.asarray(S)
    if X.ndim != 3 or X.size == 0:
        raise ValueError(f"X must be a non-empty (B, C, L) array, got shape {X.shape}")
    B, _, L = X.shape
    if S.ndim != 4 or S.shape[0] != B or S.shape[2] != L or 0 in S.shape:
        raise ValueError(f"S must have shape (B={B}, P, L={L}, E), got {S.shape}")
    for name, a in (("X", X), ("S", S)):
        if a.dtype.kind not in "fiu" or not np.isfinite(a).all():
            raise ValueError(f"{name} must hold finite numbers")
    S = S.astype(np.result_type(S.dtype, np.float32), copy=False)
    periods = np.asarray(periods)
    if periods.shape != (S.shape[1],) or periods.dtype.kind not in "iu" or (periods < 1).any():
        raise ValueError(
            f"periods must be {S.shape[1]} positive integers (one per S[:, j]), got {periods!r}"
        )
    if isinstance(ridge, bool) or not isinstance(ridge, numbers.Real) or not 0 < ridge < np.inf:
        raise ValueError(f"ridge must be a positive finite number, got {ridge!r}")
    if not isinstance(skip_regressor, bool | np.bool_):
        raise TypeError(f"skip_regressor must be a bool, got {skip_regressor!r}")
    off = np.zeros(B, dtype=np.int64) if offsets is None else np.asarray(offsets)
    if off.shape != (B,) or off.dtype.kind not in "iu" or (off < 0).any() or (off >= L).any():
        raise ValueError(f"offsets must be {B} integers in [0, {L}), got {offsets!r}")
    return X, S, periods, off
