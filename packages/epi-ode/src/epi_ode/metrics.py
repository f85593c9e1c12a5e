"""Forecast metrics as the Cola-GNN / EARTH code defines them, on de-normalised counts."""

from __future__ import annotations

import numpy as np

__all__ = ["evaluate", "peak_mae"]


def _pair(y_true, y_pred):
    t = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(y_pred, dtype=np.float64)
    if t.ndim == 1:
        t, p = t[:, None], p.reshape(-1, 1) if p.ndim == 1 else p
    if t.ndim != 2 or t.shape != p.shape:
        raise ValueError(f"y_true {t.shape} and y_pred {p.shape} must both be (n, N)")
    if t.shape[0] == 0:
        raise ValueError("y_true is empty")
    if not np.isfinite(p).all():
        raise ValueError("y_pred contains NaN or inf")
    if np.isinf(t).any():
        raise ValueError("y_true contains inf")
    return t, p


def _pcc(a, b):
    a, b = a - a.mean(), b - b.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / den) if den > 0 else float("nan")


def peak_mae(y_true, y_pred, threshold) -> float:
    """MAE in the peak season: truth and prediction are zeroed where the truth is below
    ``threshold`` (per region, (N,)), then per-region MAEs are averaged."""
    t, p = _pair(y_true, y_pred)
    thr = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (t.shape[1],))
    below = ~(t >= thr)  # NaN truth counts as below: it is ignored
    t0, p0 = np.where(below, 0.0, t), np.where(below, 0.0, p)
    return float(np.abs(t0 - p0).mean(axis=0).mean())


def evaluate(y_true, y_pred, peak_threshold=None) -> dict[str, float]:
    """RMSE, MAE, PCC over all (sample, region) pairs; per-region averages; R2; peak MAE.

    Parameters
    ----------
    y_true, y_pred : array (n, N)
        Observed and forecast counts; NaN truths (missing reports) are left out.
    peak_threshold : array (N,) or float, optional
        Usually the training mean per region; default the test mean per region.

    Returns
    -------
    dict with ``RMSE, MAE, PCC, RMSE_states, PCC_states, R2, peak_MAE``
        PCC and R2 are NaN when undefined (a constant truth or forecast); regions whose PCC
        is undefined are left out of ``PCC_states``.
    """
    t, p = _pair(y_true, y_pred)
    ok = np.isfinite(t)
    if len(t) < 2:
        raise ValueError("y_true needs at least 2 rows (PCC and R2 are undefined on one)")
    if ok.sum() < 2:
        raise ValueError("y_true needs at least 2 observed values (PCC and R2 are undefined)")
    err = np.where(ok, p - t, 0.0)
    n_ok = ok.sum(axis=0)
    rmse_state = np.sqrt((err**2).sum(axis=0) / np.maximum(n_ok, 1))
    pcc_state = [_pcc(t[ok[:, v], v], p[ok[:, v], v]) for v in range(t.shape[1])]
    tt, pp = t[ok], p[ok]
    ss_res, ss_tot = ((tt - pp) ** 2).sum(), ((tt - tt.mean()) ** 2).sum()
    if peak_threshold is None:
        peak_threshold = np.nanmean(t, axis=0)
    return {
        "RMSE": float(np.sqrt((err**2).sum() / ok.sum())),
        "MAE": float(np.abs(err).sum() / ok.sum()),
        "PCC": _pcc(tt, pp),
        "RMSE_states": float(rmse_state[n_ok > 0].mean()),
        "PCC_states": float(np.nanmean(pcc_state))
        if np.isfinite(pcc_state).any()
        else float("nan"),
        "R2": float(1.0 - ss_res / ss_tot) if ss_tot > 0 else float("nan"),
        "peak_MAE": peak_mae(t, p, peak_threshold),
    }
