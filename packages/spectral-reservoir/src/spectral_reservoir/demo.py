"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """SARC vs the plain bidirectional ESN on a task where the class lives one period apart.

    Returns
    -------
    str
        Accuracy and feature count of both, and the periods SARC found.
    """
    import time

    from spectral_reservoir.data import make_lag_sign
    from spectral_reservoir.estimators import BiESNModelSpace, SARCClassifier

    X, y = make_lag_sign(240, L=200, period=40, seed=seed)
    Xtr, ytr, Xte, yte = X[:120], y[:120], X[120:], y[120:]
    lines = [
        "spectral-reservoir demo: lag-sign task (class = sign of the correlation 40 steps apart), L=200",
        f"{'method':<22}{'test acc':>9}{'features':>10}{'CPU s':>8}",
    ]
    for name, est in (("BiESN (no period skip)", BiESNModelSpace(random_state=seed)),
                      ("SARC", SARCClassifier(random_state=seed))):  # fmt: skip
        t0 = time.process_time()
        acc = est.fit(Xtr, ytr).score(Xte, yte)
        lines.append(
            f"{name:<22}{acc:>9.3f}{est.n_features_out_:>10}{time.process_time() - t0:>8.2f}"
        )
    lines.append(
        f"SARC periods ({len(est.periods_)}): {est.periods_[:12]}{' ...' if len(est.periods_) > 12 else ''}"
    )
    return "\n".join(lines)
