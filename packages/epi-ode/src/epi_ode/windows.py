"""Sliding forecast windows and the per-region min-max normaliser (Cola-GNN / EARTH protocol)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from epi_ode.validation import check_int, check_series

__all__ = ["MinMax", "Windows", "make_windows", "window_indices"]


@dataclass(frozen=True)
class MinMax:
    """Per-region min-max scaling fitted on training rows (NaN ignored)."""

    low: np.ndarray  # (N,)
    scale: np.ndarray  # (N,), 1 where a region's training values are constant

    @classmethod
    def fit(cls, Y: np.ndarray) -> MinMax:
        low, high = np.nanmin(Y, axis=0), np.nanmax(Y, axis=0)
        scale = high - low
        return cls(low, np.where(scale > 0, scale, 1.0))

    def transform(self, Y: np.ndarray) -> np.ndarray:
        return (Y - self.low) / self.scale

    def inverse(self, Z: np.ndarray) -> np.ndarray:
        return Z * self.scale + self.low


def window_indices(n_steps: int, window: int, horizon: int, first_target: int = 0) -> np.ndarray:
    """Target rows t with a full input window [t - h - W + 1, t - h] inside ``[0, n_steps)``."""
    start = max(window + horizon - 1, first_target)
    return np.arange(start, n_steps)


def _gather(Y: np.ndarray, targets: np.ndarray, window: int, horizon: int):
    rows = targets[:, None] - horizon - window + 1 + np.arange(window)[None]
    return Y[rows], Y[targets]


@dataclass(frozen=True)
class Windows:
    """Chronological train / validation / test windows of one series.

    ``X_*`` are (n, W, N) raw context windows, ``y_*`` the (n, N) raw targets h steps after each
    window's last row, ``t_*`` the target row indices; ``train_end`` and ``val_end`` split the
    series' rows (``Y[:train_end]`` is the training series).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    t_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    t_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    t_test: np.ndarray
    train_end: int
    val_end: int


def make_windows(
    Y, window: int = 20, horizon: int = 4, split: tuple[float, float, float] = (0.5, 0.3, 0.2)
) -> Windows:
    """Split ``Y`` (T, N) chronologically by target row and cut sliding windows.

    Inputs are rows ``[t - h - W + 1, t - h]`` and the target is row ``t``; a validation or test
    window may read rows of the previous split (as in Cola-GNN and EARTH), never later ones.
    """
    window = check_int(window, "window", 1)
    horizon = check_int(horizon, "horizon", 1)
    Y = check_series(Y, "Y")
    if len(split) != 3 or any(not s >= 0 for s in split) or not np.isclose(sum(split), 1.0):
        raise ValueError(f"split must be three non-negative fractions summing to 1, got {split}")
    T = len(Y)
    train_end = round(split[0] * T)
    val_end = round((split[0] + split[1]) * T)
    t_all = window_indices(T, window, horizon)
    parts = [t_all[t_all < train_end], t_all[(t_all >= train_end) & (t_all < val_end)],
             t_all[t_all >= val_end]]  # fmt: skip
    for name, t in zip(("train", "validation", "test"), parts, strict=True):
        if len(t) == 0:
            raise ValueError(
                f"no {name} windows: T={T} is too short for window={window}, horizon={horizon} "
                f"and split={split}"
            )
    out = []
    for t in parts:
        X, y = _gather(Y, t, window, horizon)
        out += [X, y, t]
    return Windows(*out, train_end=train_end, val_end=val_end)
