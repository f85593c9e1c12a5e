"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

import time

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Calibrate a random forest on the digits data set and compare calibrators.

    The forest is trained on half of ``sklearn.datasets.load_digits``; the
    calibrators are fitted on a quarter and scored on the last quarter.

    Parameters
    ----------
    seed : int, default=0
        Seed of the split and of the forest.

    Returns
    -------
    str
        A plain-text table: log loss, top-label ECE (15 bins), accuracy and fit
        time of each calibrator, with log-loss ratios to one-vs-rest isotonic.
    """
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split
    from threadpoolctl import threadpool_limits

    from isocal.calibrators import (
        FIRCalibrator,
        NAFIRCalibrator,
        OvRIsotonicCalibrator,
        SCIRCalibrator,
    )
    from isocal.metrics import accuracy, log_loss, top_label_ece
    from isocal.scaling import TemperatureScaling

    with threadpool_limits(1):
        X, y = load_digits(return_X_y=True)
        X_tr, X_rest, y_tr, y_rest = train_test_split(
            X, y, test_size=0.5, random_state=seed, stratify=y
        )
        X_cal, X_te, y_cal, y_te = train_test_split(
            X_rest, y_rest, test_size=0.5, random_state=seed, stratify=y_rest
        )
        forest = RandomForestClassifier(n_estimators=50, random_state=seed).fit(X_tr, y_tr)
        P_cal, P_te = forest.predict_proba(X_cal), forest.predict_proba(X_te)
        rows = [("uncalibrated", P_te, 0.0)]
        methods = [
            ("temperature", TemperatureScaling()),
            ("OvR isotonic", OvRIsotonicCalibrator()),
            ("FIR", FIRCalibrator()),
            ("NA-FIR", NAFIRCalibrator()),
            ("SCIR", SCIRCalibrator()),
        ]
        for name, cal in methods:
            t0 = time.perf_counter()
            cal.fit(P_cal, y_cal)
            rows.append((name, cal.predict_proba(P_te), time.perf_counter() - t0))
    base = log_loss(y_te, rows[2][1])
    lines = [
        f"isocal demo: digits, random forest, n_cal={len(y_cal)}, n_test={len(y_te)}, seed={seed}",
        f"{'method':<14}{'log loss':>10}{'vs OvR':>8}{'ECE':>8}{'acc':>8}{'fit ms':>9}",
    ]
    for name, Q, dt in rows:
        ll = log_loss(y_te, Q)
        lines.append(
            f"{name:<14}{ll:>10.4f}{ll / base:>8.2f}{top_label_ece(y_te, Q):>8.4f}"
            f"{accuracy(y_te, Q):>8.3f}{1000 * dt:>9.1f}"
        )
    return "\n".join(lines)
