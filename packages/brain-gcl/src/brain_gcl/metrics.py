"""The six metrics of the paper's tables and their average."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

__all__ = ["brain_report", "edge_recovery"]


def brain_report(y_true, proba) -> dict[str, float]:
    """accuracy, precision, recall, f1, bacc, auc (positive class 1) and ``avg`` of the six."""
    y = np.asarray(y_true)
    if y.dtype == object or not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise TypeError(f"y_true must hold 0/1 labels, got dtype {y.dtype}")
    if y.ndim != 1 or not np.isin(y, (0, 1)).all():
        raise ValueError("y_true must be a 1-D array of 0/1 labels (no NaN)")
    y = y.astype(int)
    p = np.asarray(proba)
    if p.dtype == object or not np.issubdtype(p.dtype, np.number):
        raise TypeError(f"proba must hold numbers, got dtype {p.dtype}")
    p = p.astype(float)
    if p.ndim == 2:
        if p.shape[1] != 2:
            raise ValueError(f"proba must be (m, 2) or (m,), got {p.shape}")
        p = p[:, 1]
    if p.shape != y.shape or len(y) == 0:
        raise ValueError(f"y_true {y.shape} and proba {p.shape} must match and be non-empty")
    if not np.isfinite(p).all():
        raise ValueError("proba contains NaN or inf")
    if len(np.unique(y)) < 2:
        raise ValueError("y_true holds a single class; AUC (and the average) is undefined")
    pred = (p >= 0.5).astype(int)
    out = {
        "accuracy": accuracy_score(y, pred),
        "precision": precision_score(y, pred, zero_division=0),
        "recall": recall_score(y, pred, zero_division=0),
        "f1": f1_score(y, pred, zero_division=0),
        "bacc": balanced_accuracy_score(y, pred),
        "auc": roc_auc_score(y, p),
    }
    out = {k: float(v) for k, v in out.items()}
    out["avg"] = float(np.mean(list(out.values())))
    return out


def edge_recovery(scores, truth_edges, graphs_A=None) -> dict[str, float]:
    """How well edge scores (m, n, n) find planted edges (n, n): AUROC over existing edges
    (all subjects pooled) and precision at |planted edges present| per subject, averaged."""
    S = np.asarray(scores, dtype=float)
    T = np.asarray(truth_edges)
    if S.ndim == 2:
        S = S[None]
    if S.ndim != 3 or S.shape[1] != S.shape[2] or len(S) == 0:
        raise ValueError(f"scores must be (m, n, n) with m >= 1, got {np.shape(scores)}")
    if T.shape != S.shape[1:] or not np.isin(T, (0, 1)).all():
        raise ValueError(f"truth_edges must be a ({S.shape[1]}, {S.shape[1]}) 0/1 mask")
    T = T.astype(bool)
    if not np.isfinite(S).all():
        raise ValueError("scores contains NaN or inf")
    exists = np.ones_like(S, dtype=bool) if graphs_A is None else np.asarray(graphs_A) > 0
    if exists.shape != S.shape:
        raise ValueError(f"graphs_A {np.shape(graphs_A)} must have the shape of scores {S.shape}")
    iu, ju = np.triu_indices(S.shape[1], k=1)
    s, e = S[:, iu, ju], exists[:, iu, ju]
    t = np.broadcast_to(T[iu, ju], s.shape)
    auc = roc_auc_score(t[e], s[e]) if 0 < t[e].sum() < e.sum() else float("nan")
    prec = []
    for k in range(len(s)):  # per subject: top-|planted present| edges
        m = e[k] & np.isfinite(s[k])
        npos = int((t[k] & m).sum())
        if npos:
            top = np.argsort(-np.where(m, s[k], -np.inf))[:npos]
            prec.append(t[k][top].mean())
    return {"auroc": float(auc), "precision_at_k": float(np.mean(prec)) if prec else float("nan")}
