"""Evaluation metrics for window-level anomaly scores (CAROTS protocol).

Scores and labels are per window (stride 1); a window is anomalous iff any of its points
is. Reported: AUROC, AUPRC as the trapezoidal area under the precision-recall curve (not
average precision, which is returned separately as ``AP``), best F1 over all thresholds of
the test scores (an oracle threshold, common in MTSAD papers) and F1 after point adjustment
at that same threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from sklearn.metrics import auc, average_precision_score, precision_recall_curve, roc_auc_score

from causal_ts._validation import check_int

__all__ = [
    "auprc_trapezoid",
    "auroc",
    "average_precision",
    "best_f1",
    "evaluate",
    "point_adjust",
    "precision_recall_f1",
    "window_labels",
]


def _check_labels(labels: Any, name: str = "labels") -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {y.shape}")
    if y.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isin(y, (0, 1)).all():
        raise ValueError(f"{name} must contain only 0 and 1")
    return y.astype(int)


def _check_scores_labels(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D; got shape {s.shape}")
    y = _check_labels(labels)
    if s.shape != y.shape:
        raise ValueError(f"scores ({s.size}) and labels ({y.size}) have different lengths")
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN/inf (drop the first window-1 points of point scores)")
    if y.min() == y.max():
        raise ValueError("labels must contain both classes")
    return s, y


def window_labels(labels: Any, window: int) -> np.ndarray:
    """Window labels from point labels: window k (points k..k+W-1) is 1 iff any point is.

    Parameters
    ----------
    labels : array-like of shape (T,)
    window : int

    Returns
    -------
    numpy.ndarray of shape (T - window + 1,)
    """
    y = _check_labels(labels)
    window = check_int(window, "window", low=1)
    if window > y.size:
        raise ValueError(f"window={window} is longer than labels ({y.size})")
    return sliding_window_view(y, window).max(axis=1)


def auroc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve (``sklearn.metrics.roc_auc_score``)."""
    s, y = _check_scores_labels(scores, labels)
    return float(roc_auc_score(y, s))


def auprc_trapezoid(scores: Any, labels: Any) -> float:
    """Trapezoidal area under the precision-recall curve (the CAROTS "AUPRC")."""
    s, y = _check_scores_labels(scores, labels)
    precision, recall, _ = precision_recall_curve(y, s)
    return float(auc(recall, precision))


def average_precision(scores: Any, labels: Any) -> float:
    """Step-wise average precision (``sklearn.metrics.average_precision_score``)."""
    s, y = _check_scores_labels(scores, labels)
    return float(average_precision_score(y, s))


def precision_recall_f1(pred: Any, labels: Any) -> tuple[float, float, float]:
    """Precision, recall and F1 of binary predictions (0 when undefined)."""
    p = _check_labels(pred, "pred")
    y = _check_labels(labels)
    if p.shape != y.shape:
        raise ValueError(f"pred ({p.size}) and labels ({y.size}) have different lengths")
    tp = float(np.sum(p & y))
    precision = tp / max(p.sum(), 1)
    recall = tp / max(y.sum(), 1)
    f1 = 2 * precision * recall / (precision + recall) if tp > 0 else 0.0
    return precision, recall, f1


def best_f1(scores: Any, labels: Any) -> dict[str, float]:
    """Best F1 over all thresholds of the precision-recall curve.

    Returns
    -------
    dict
        ``F1``, ``Precision``, ``Recall`` and ``threshold`` (predict ``score >= threshold``).
    """
    s, y = _check_scores_labels(scores, labels)
    precision, recall, thresholds = precision_recall_curve(y, s)
    precision, recall = precision[:-1], recall[:-1]  # the last point has no threshold
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros_like(denom), where=denom > 0)
    k = int(np.argmax(f1))
    return {
        "F1": float(f1[k]),
        "Precision": float(precision[k]),
        "Recall": float(recall[k]),
        "threshold": float(thresholds[k]),
    }


def point_adjust(pred: Any, labels: Any) -> np.ndarray:
    """Point adjustment: a whole true anomaly segment counts as found if any point in it is.

    Parameters
    ----------
    pred : array-like of shape (T,), 0/1
    labels : array-like of shape (T,), 0/1

    Returns
    -------
    numpy.ndarray of shape (T,), int
        ``pred`` with every contiguous segment of ``labels == 1`` that contains at least one
        predicted point set to 1 entirely (the input is not modified).
    """
    p = _check_labels(pred, "pred")
    y = _check_labels(labels)
    if p.shape != y.shape:
        raise ValueError(f"pred ({p.size}) and labels ({y.size}) have different lengths")
    starts = (y == 1) & (np.concatenate([[0], y[:-1]]) == 0)
    seg_id = np.cumsum(starts) * y  # 0 outside segments, k inside the k-th segment
    hit = np.bincount(seg_id, weights=p * y, minlength=seg_id.max() + 1) > 0
    hit[0] = False
    return np.where(hit[seg_id], 1, p)


def evaluate(scores: Any, labels: Any) -> dict[str, float]:
    """All metrics of the CAROTS protocol for window scores and window labels.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Higher = more anomalous.
    labels : array-like of shape (n,), 0/1

    Returns
    -------
    dict
        ``AUROC``, ``AUPRC`` (trapezoid), ``AP``, ``F1``, ``Precision``, ``Recall``,
        ``F1_PA``, ``Precision_PA``, ``Recall_PA`` and ``threshold`` (best-F1 threshold,
        also used for the point-adjusted scores).
    """
    s, y = _check_scores_labels(scores, labels)
    out = {"AUROC": auroc(s, y), "AUPRC": auprc_trapezoid(s, y), "AP": average_precision(s, y)}
    best = best_f1(s, y)
    out.update({k: best[k] for k in ("F1", "Precision", "Recall")})
    pa = point_adjust((s >= best["threshold"]).astype(int), y)
    out["Precision_PA"], out["Recall_PA"], out["F1_PA"] = precision_recall_f1(pa, y)
    out["threshold"] = best["threshold"]
    return out
