"""Evaluation: accuracy, balance of predictions and pseudolabels, TRZSL harmonic mean."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["evaluate", "expected_calibration_error", "harmonic_mean", "pseudolabel_report"]


def harmonic_mean(acc_seen: float, acc_unseen: float) -> float:
    """``H = 2 a_s a_u / (a_s + a_u)`` (0 when both are 0)."""
    for name, v in (("acc_seen", acc_seen), ("acc_unseen", acc_unseen)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v <= 1:
            raise ValueError(f"{name} must be an accuracy in [0, 1], got {v!r}")
    s = acc_seen + acc_unseen
    return 0.0 if s == 0 else 2 * acc_seen * acc_unseen / s


def evaluate(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    proba: np.ndarray | None = None,
    seen: np.ndarray | None = None,
    n_classes: int | None = None,
) -> dict:
    """Accuracy, balanced accuracy, per-class recall, prediction balance (and H in TRZSL).

    Parameters
    ----------
    y_true, y_pred : ndarray (n,)
    proba : ndarray (n, C), optional
        Adds the mean negative log-likelihood.
    seen : ndarray of int, optional
        Seen classes (TRZSL): adds ``acc_seen``, ``acc_unseen`` (accuracy over the test images of
        each split, predictions over all classes) and their harmonic mean ``H``.
    n_classes : int, optional

    Returns
    -------
    dict
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1 or len(y_true) == 0:
        raise ValueError("y_true and y_pred must be non-empty 1-D arrays of the same length")
    for name, a in (("y_true", y_true), ("y_pred", y_pred)):
        if a.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integer class ids, got dtype {a.dtype}")
        if a.min() < 0:
            raise ValueError(f"{name} holds negative class ids")
    if n_classes is not None and (
        isinstance(n_classes, bool) or not isinstance(n_classes, int | np.integer) or n_classes < 1
    ):
        raise ValueError(f"n_classes must be a positive int, got {n_classes!r}")
    c = int(n_classes or max(y_true.max(), y_pred.max()) + 1)
    if max(y_true.max(), y_pred.max()) >= c:
        raise ValueError(f"y_true, y_pred: class ids must be < n_classes={c}")
    recall = np.array(
        [(y_pred[y_true == k] == k).mean() if (y_true == k).any() else np.nan for k in range(c)]
    )
    counts = np.bincount(y_pred, minlength=c)
    out = {
        "accuracy": float((y_true == y_pred).mean()),
        "balanced_accuracy": float(np.nanmean(recall)),
        "per_class_recall": recall,
        "min_recall": float(np.nanmin(recall)),
        "pred_counts": counts,
        "max_min_ratio": float(counts.max() / max(counts.min(), 1)),
    }
    if proba is not None:
        p = np.asarray(proba)
        if p.shape != (len(y_true), c):
            raise ValueError(f"proba must have shape ({len(y_true)}, {c})")
        if not np.isfinite(p).all():
            raise ValueError("proba contains NaN or inf")
        out["nll"] = float(-np.log(np.clip(p[np.arange(len(y_true)), y_true], 1e-12, None)).mean())
        out["ece"] = expected_calibration_error(y_true, p)
    if seen is not None:
        s = np.isin(y_true, np.asarray(seen))
        a_s = float((y_pred[s] == y_true[s]).mean()) if s.any() else 0.0
        a_u = float((y_pred[~s] == y_true[~s]).mean()) if (~s).any() else 0.0
        out.update(acc_seen=a_s, acc_unseen=a_u, H=harmonic_mean(a_s, a_u))
    return out


def expected_calibration_error(y_true: np.ndarray, proba: np.ndarray, n_bins: int = 15) -> float:
    """Top-label expected calibration error with ``n_bins`` equal-width confidence bins.

    ``ECE = Σ_b (n_b / n) |acc_b − conf_b|`` over the bins of the predicted class's probability
    (Guo et al., 2017); restrict the rows to a group of classes for the spec's group ECE (C2).

    Parameters
    ----------
    y_true : ndarray (n,) of int
    proba : ndarray (n, C)
        Class probabilities (rows need not be renormalised; the top entry is the confidence).
    n_bins : int, default=15
    """
    y = np.asarray(y_true)
    p = np.asarray(proba, dtype=float)
    if y.ndim != 1 or len(y) == 0:
        raise ValueError("y_true must be a non-empty 1-D array")
    if y.dtype.kind not in "iu":
        raise TypeError(f"y_true must hold integer class ids, got dtype {y.dtype}")
    if p.ndim != 2 or p.shape[0] != len(y):
        raise ValueError(f"proba must have shape ({len(y)}, C), got {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError("proba must be finite and non-negative")
    if y.min() < 0 or y.max() >= p.shape[1]:
        raise ValueError(f"y_true: class ids must lie in [0, {p.shape[1]})")
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive int, got {n_bins!r}")
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(float)
    # bin b holds confidences in (b/B, (b+1)/B]; confidence 0 goes to the first bin
    b = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    n_b = np.bincount(b, minlength=n_bins)
    gap = np.abs(np.bincount(b, correct, n_bins) - np.bincount(b, conf, n_bins))
    return float(gap.sum() / len(y)) if n_b.sum() else 0.0


def _int_labels(a, name: str) -> np.ndarray:
    """A non-empty 1-D array of non-negative integer class ids (whole floats accepted)."""
    a = np.asarray(a)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of class ids, got shape {a.shape}")
    if a.dtype.kind == "f":
        if not np.isfinite(a).all() or np.any(a != np.round(a)):
            raise ValueError(f"{name} must hold whole class ids (no NaN or fractions)")
        a = a.astype(np.int64)
    elif a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer class ids, got dtype {a.dtype}")
    if (a < 0).any():
        raise ValueError(f"{name} holds negative class ids")
    return a


def pseudolabel_report(pseudo: np.ndarray, truth: np.ndarray, n_classes: int | None = None) -> dict:
    """Balance and quality of a set of pseudolabels.

    Returns
    -------
    dict
        ``counts``, ``max_min_ratio``, ``kl_to_uniform`` of the label histogram, ``accuracy``,
        ``min_recall`` (worst class's share of its true images that got the right pseudolabel).
    """
    pseudo, truth = _int_labels(pseudo, "pseudo"), _int_labels(truth, "truth")
    if pseudo.shape != truth.shape:
        raise ValueError("pseudo and truth must be 1-D arrays of the same length")
    c = int(n_classes or (max(pseudo.max(initial=0), truth.max(initial=0)) + 1))
    counts = np.bincount(pseudo, minlength=c)
    freq = counts / max(counts.sum(), 1)
    kl = float(np.sum(np.where(freq > 0, freq * np.log(np.clip(freq * c, 1e-12, None)), 0.0)))
    rec = [(pseudo[truth == k] == k).mean() if (truth == k).any() else np.nan for k in range(c)]
    return {
        "counts": counts,
        "max_min_ratio": float(counts.max() / max(counts.min(), 1)),
        "kl_to_uniform": kl,
        "accuracy": float((pseudo == truth).mean()) if len(pseudo) else float("nan"),
        "min_recall": float(np.nanmin(rec)) if len(pseudo) else float("nan"),
    }
