"""FreqRes: echo-state reservoirs with a period-p skip connection, all periods in one pass.

``h_t = (1 - a) tanh(W_in x_t + W_s h_{t-1} + W_c^(p) h_{t-p}) + a h_{t-1}`` (SARC §3; spec §2.2),
``h_t = 0`` for ``t < 0``. The backward reservoir runs the same recursion on the reversed series
with its own ``W_s, W_c`` (``W_in`` shared) and is reversed back.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["ReservoirWeights", "freqres_states", "make_weights", "scaled_random", "states_batch"]


def scaled_random(
    n: int, radius: float, connectivity: float, rng: np.random.Generator
) -> np.ndarray:
    """An ``n x n`` N(0, 1) matrix, entries kept with probability ``connectivity``, rescaled to
    spectral radius ``radius`` (max |eigenvalue|)."""
    w = rng.standard_normal((n, n))
    if connectivity < 1:
        w *= rng.random((n, n)) < connectivity
    r = np.abs(np.linalg.eigvals(w)).max()
    return w * (radius / r) if r > 0 else w


@dataclass(frozen=True)
class ReservoirWeights:
    """Fixed random weights of one SARC model.

    Attributes
    ----------
    W_in : ndarray (H, C)
    W_s : ndarray (D, H, H)
        Sequential weights per direction (D = 2 if bidirectional).
    W_c : ndarray (D, P, H, H)
        Cyclic (period-skip) weights per direction and period (zeros for a plain ESN).
    periods : ndarray (P,) of int
    """

    W_in: np.ndarray
    W_s: np.ndarray
    W_c: np.ndarray
    periods: np.ndarray

    def __post_init__(self) -> None:
        # weights a user builds by hand are checked here, once, not inside the state loops
        arrs = {}
        for name in ("W_in", "W_s", "W_c"):
            a = np.asarray(getattr(self, name))
            if a.dtype.kind not in "fiu" or a.dtype == bool:
                raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
            if a.size and not np.isfinite(a).all():
                raise ValueError(f"{name} contains NaN or inf")
            arrs[name] = a.astype(np.float64)
        W_in, W_s, W_c = arrs["W_in"], arrs["W_s"], arrs["W_c"]
        if W_in.ndim != 2 or W_in.size == 0:
            raise ValueError(f"W_in must be a non-empty (H, C) array, got shape {W_in.shape}")
        h = W_in.shape[0]
        if W_s.ndim != 3 or W_s.shape[0] not in (1, 2) or W_s.shape[1:] != (h, h):
            raise ValueError(f"W_s must have shape (D, {h}, {h}) with D in (1, 2), got {W_s.shape}")
        p = np.asarray(self.periods)
        if p.ndim != 1 or p.size == 0 or p.dtype.kind not in "iu" or (p < 1).any():
            raise ValueError(
                f"periods must be a non-empty 1-D array of ints >= 1, got {self.periods!r}"
            )
        want = (W_s.shape[0], p.size, h, h)
        if W_c.shape != want:
            raise ValueError(
                f"W_c must have shape {want} (D, P = len(periods), H, H), got {W_c.shape}"
            )
        for name, a in (
            ("W_in", W_in),
            ("W_s", W_s),
            ("W_c", W_c),
            ("periods", p.astype(np.int64)),
        ):
            object.__setattr__(self, name, a)


def make_weights(
    n_inputs: int,
    periods,
    n_reservoir: int = 10,
    input_scaling: float = 1.0,
    spectral_radius: tuple[float, float] = (0.8, 0.8),
    connectivity: float | None = None,
    bidirectional: bool = True,
    cyclic: bool = True,
    rng: np.random.Generator | int | None = 0,
) -> ReservoirWeights:
    """Draw ``W_in ~ input_scaling * N(0, 1)`` and the sparse, radius-scaled recurrent matrices.

    ``connectivity`` defaults to ``min(1, 10 / n_reservoir)``; ``cyclic=False`` sets ``W_c = 0``.
    """
    for name, v in (("n_inputs", n_inputs), ("n_reservoir", n_reservoir)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    if (
        isinstance(input_scaling, bool)
        or not isinstance(input_scaling, numbers.Real)
        or not (np.isfinite(input_scaling) and input_scaling > 0)
    ):
        raise ValueError(f"input_scaling must be a finite number > 0, got {input_scaling!r}")
    rng = np.random.default_rng(rng)
    H = int(n_reservoir)
    q = min(1.0, 10.0 / H) if connectivity is None else float(connectivity)
    periods = np.asarray(periods, dtype=np.int64)
    D = 2 if bidirectional else 1
    W_in = input_scaling * rng.standard_normal((H, int(n_inputs)))
    W_s = np.stack([scaled_random(H, spectral_radius[0], q, rng) for _ in range(D)])
    if cyclic:
        W_c = np.stack(
            [
                np.stack([scaled_random(H, spectral_radius[1], q, rng) for _ in periods])
                for _ in range(D)
            ]
        )
    else:
        W_c = np.zeros((D, len(periods), H, H))
    return ReservoirWeights(W_in, W_s, W_c, periods)


def freqres_states(
    x: np.ndarray,
    period: int,
    W_in: np.ndarray,
    W_s: np.ndarray,
    W_c: np.ndarray,
    leaky: float = 0.0,
) -> np.ndarray:
    """Reference loop: forward states (L, H) of one series ``x`` (C, L) for one period.

    ``h_t = (1 - a) tanh(W_in x_t + W_s h_{t-1} + W_c h_{t-p}) + a h_{t-1}`` with zeros before
    the start; ``W_in`` (H, C), ``W_s`` and ``W_c`` (H, H), ``a = leaky`` in [0, 1).
    """
    x = np.asarray(x)
    if x.dtype.kind not in "iuf" or x.ndim != 2 or 0 in x.shape:
        raise ValueError(f"x must be a non-empty numeric (C, L) array, got {x.dtype} {x.shape}")
    x = x.astype(np.float64)
    if not np.isfinite(x).all():
        raise ValueError("x contains NaN or inf")
    if isinstance(period, bool) or not isinstance(period, int | np.integer) or period < 1:
        raise ValueError(f"period must be a positive int, got {period!r}")
    W_in, W_s, W_c = (np.asarray(w, dtype=np.float64) for w in (W_in, W_s, W_c))
    H = W_s.shape[0] if W_s.ndim == 2 else -1
    for name, w, shape in (("W_in", W_in, (H, x.shape[0])), ("W_s", W_s, (H, H)),
                           ("W_c", W_c, (H, H))):  # fmt: skip
        if H < 1 or w.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {w.shape}")
        if not np.isfinite(w).all():
            raise ValueError(f"{name} contains NaN or inf")
    if isinstance(leaky, bool) or not (isinstance(leaky, int | float | np.floating)
                                       and 0.0 <= leaky < 1.0):  # fmt: skip
        raise ValueError(f"leaky must be in [0, 1), got {leaky!r}")
    L = x.shape[1]
    h = np.zeros((L, H))
    for t in range(L):
        prev = h[t - 1] if t >= 1 else np.zeros(H)
        skip = h[t - period] if t >= period else np.zeros(H)
        h[t] = (1 - leaky) * np.tanh(W_in @ x[:, t] + W_s @ prev + W_c @ skip) + leaky * prev
    return h


def _run(
    U: np.ndarray, W_s: np.ndarray, W_c: np.ndarray, periods: np.ndarray, leaky: float
) -> np.ndarray:
    """States (B, P, L, H) of inputs ``U = W_in x_t`` given as (B, L, H), all periods at once.

    The compiled kernel (numba) runs the recursion with the series innermost (every update a
    vector operation over the batch) and a rational ``tanh`` (|error| <= 3e-8): the states
    agree with the numpy loop (vectorised over series and periods, ``np.tanh``) to about 1e-7;
    without numba that loop is used.
    """
    if _numba_run is not None:
        return _numba_run(
            np.ascontiguousarray(U), np.ascontiguousarray(W_s), np.ascontiguousarray(W_c),
            np.ascontiguousarray(periods, dtype=np.int64), float(leaky),
        )  # fmt: skip
    return _numpy_run(U, W_s, W_c, periods, leaky)


def _numpy_run(
    U: np.ndarray, W_s: np.ndarray, W_c: np.ndarray, periods: np.ndarray, leaky: float
) -> np.ndarray:
    """The reference vectorised loop over time (see :func:`_run`); returns (B, P, L, H)."""
    B, L, H = U.shape
    P = len(periods)
    pmax = int(periods.max()) if P else 1
    # trajectory with pmax zero rows in front: h_{t-p} is row t + pmax - p, gathered per period
    traj = np.zeros((L + pmax, B, P, H), dtype=U.dtype)
    cols = np.arange(P)
    Wc_T = np.ascontiguousarray(np.transpose(W_c, (0, 2, 1)))  # (P, H, H): h @ W_c^T per period
    prev = np.zeros((B, P, H), dtype=U.dtype)
    for t in range(L):
        skip = traj[t + pmax - periods, :, cols, :]  # (P, B, H)
        pre = U[:, t][:, None, :] + prev @ W_s.T + np.matmul(skip, Wc_T).transpose(1, 0, 2)
        h = (1 - leaky) * np.tanh(pre) + leaky * prev
        traj[t + pmax] = h
        prev = h
    return traj[pmax:].transpose(1, 2, 0, 3)


def _rational_tanh(x):  # pragma: no cover - compiled by numba
    """Odd rational approximation of tanh (Eigen's), |error| <= 3e-8, clamped at |x| = 9.

    Vectorises where a libm ``tanh`` call per element does not: the recursion is tanh-bound.
    """
    x = min(max(x, -9.0), 9.0)
    x2 = x * x
    p = x2 * -2.76076847742355e-16 + 2.00018790482477e-13
    p = x2 * p + -8.60467152213735e-11
    p = x2 * p + 5.12229709037114e-08
    p = x2 * p + 1.48572235717979e-05
    p = x2 * p + 6.37261928875436e-04
    p = x2 * p + 4.89352455891786e-03
    q = x2 * 1.19825839466702e-06 + 1.18534705686654e-04
    q = x2 * q + 2.26843463243900e-03
    q = x2 * q + 4.89352518554385e-03
    return x * p / q


_tanh = _rational_tanh  # rebound to its compiled form below; the kernel reads the global


def _kernel(U, W_s, W_c, periods, leaky):  # pragma: no cover - compiled by numba
    """Series innermost, so every update is a vector operation over the batch."""
    L, H, B = U.shape
    P = periods.shape[0]
    out = np.zeros((P, L, H, B), dtype=U.dtype)
    tmp = np.empty(B, dtype=U.dtype)
    for p in range(P):
        per = periods[p]
        h = out[p]
        for t in range(L):
            for i in range(H):
                for b in range(B):
                    tmp[b] = U[t, i, b]
                if t >= 1:
                    for j in range(H):
                        w = W_s[i, j]
                        for b in range(B):
                            tmp[b] += w * h[t - 1, j, b]
                if t >= per:
                    for j in range(H):
                        w = W_c[p, i, j]
                        for b in range(B):
                            tmp[b] += w * h[t - per, j, b]
                if t >= 1:
                    for b in range(B):
                        h[t, i, b] = (1.0 - leaky) * _tanh(tmp[b]) + leaky * h[t - 1, i, b]
                else:
                    for b in range(B):
                        h[t, i, b] = (1.0 - leaky) * _tanh(tmp[b])
    return out


try:  # numba compiles the recursion; the numpy loop is the fallback and the reference
    import numba

    # a global, not an argument: a dispatcher passed as an argument enters the cache key with
    # its identity, so every process compiled (and cached) a new specialisation, and a stale
    # index entry then failed to load ("underlying object has vanished")
    _tanh = numba.njit(fastmath=True, inline="always", cache=True)(_rational_tanh)
    _compiled = numba.njit(fastmath=True, cache=True)(_kernel)

    def _numba_run(U, W_s, W_c, periods, leaky):
        Ut = np.ascontiguousarray(U.transpose(1, 2, 0))  # (L, H, B)
        out = _compiled(Ut, W_s, W_c, periods, leaky)
        return np.ascontiguousarray(out.transpose(3, 0, 1, 2))  # (B, P, L, H)
except ImportError:  # pragma: no cover - numba is a declared dependency
    _numba_run = None


def states_batch(
    X: np.ndarray, weights: ReservoirWeights, leaky: float = 0.0, offsets: np.ndarray | None = None
) -> np.ndarray:
    """Concatenated [forward; backward] states of a batch, every period in one pass.

    Parameters
    ----------
    X : ndarray (B, C, L)
        Left-padded with zeros where ``offsets`` (B,) > 0 (series ``i`` starts at ``offsets[i]``).
    weights : ReservoirWeights
    leaky : float

    Returns
    -------
    ndarray (B, P, L, D * H)
        States, zero at pad positions.
    """
    X = np.asarray(X)
    if X.ndim != 3 or X.size == 0 or X.shape[1] != weights.W_in.shape[1]:
        raise ValueError(
            f"X must be a non-empty (B, {weights.W_in.shape[1]}, L) array, got shape {X.shape}"
        )
    if X.dtype.kind not in "fiu" or not np.isfinite(X).all():
        raise ValueError("X must hold finite numbers")
    if isinstance(leaky, bool) or not isinstance(leaky, numbers.Real) or not 0 <= leaky < 1:
        raise ValueError(f"leaky must be in [0, 1), got {leaky!r}")
    L = X.shape[2]
    U = np.einsum("hc,bcl->blh", weights.W_in, X)
    outs = [_run(U, weights.W_s[0], weights.W_c[0], weights.periods, leaky)]
    if weights.W_s.shape[0] == 2:
        # left padding reversed is trailing padding: the backward run starts at each series'
        # last step; the states it leaves on the pad are zeroed below
        back = _run(U[:, ::-1], weights.W_s[1], weights.W_c[1], weights.periods, leaky)
        outs.append(back[:, :, ::-1])
    S = np.concatenate(outs, axis=-1)  # (B, P, L, DH)
    if offsets is not None and np.any(offsets):
        S *= (np.arange(L)[None, :] >= offsets[:, None])[:, None, :, None]
    return S
