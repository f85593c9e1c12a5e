"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

import time

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Fit CAROTS and three baselines on a small generated VAR series and compare them.

    The test series carries spikes, level shifts, noise bursts and causal breaks
    (:func:`causal_ts.data.make_var`, ``kind="mixed"``); scores are evaluated per window.

    Parameters
    ----------
    seed : int, default=0
        Seed of the generated data and of the models.

    Returns
    -------
    str
        A plain-text table: AUROC / AUPRC / best-F1 and fit time per method.
    """
    from causal_ts.baselines import IsolationForestWindows, PCAReconstruction, VARResidual
    from causal_ts.data import make_var
    from causal_ts.detector import CAROTS
    from causal_ts.metrics import evaluate, window_labels

    window = 10
    d = make_var(n_vars=6, n_train=1500, n_test=1500, factor=3.0, seed=seed)
    y = window_labels(d.y_test, window)
    methods = {
        "CAROTS": CAROTS(window=window, epochs=3, encoder="mlp", random_state=seed),
        "VARResidual": VARResidual(window=window),
        "IsolationForest": IsolationForestWindows(window=window, random_state=seed),
        "PCAReconstruction": PCAReconstruction(window=window),
    }
    lines = [f"{'method':<18} {'AUROC':>6} {'AUPRC':>6} {'F1':>6} {'fit_s':>6}"]
    for name, det in methods.items():
        t0 = time.perf_counter()
        det.fit(d.X_train)
        fit_s = time.perf_counter() - t0
        r = evaluate(det.decision_function(d.X_test), y)
        lines.append(f"{name:<18} {r['AUROC']:6.3f} {r['AUPRC']:6.3f} {r['F1']:6.3f} {fit_s:6.1f}")
    return "\n".join(lines)
