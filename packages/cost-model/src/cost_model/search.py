"""Selection and evaluation metrics (spec §2.7)."""

from __future__ import annotations

import numpy as np
import scipy.stats

from cost_model.dataset import CostDataset

__all__ = ["evaluate", "evaluate_scores", "select"]


def evaluate_scores(ds: CostDataset, scores: np.ndarray, ks: tuple[int, ...] = (1, 5)) -> dict:
    """Metrics of given per-row scores on a dataset (lower score = predicted faster).

    Per matrix with candidate set C (its rows, which must include the default): top-k
    speedup = t(default) / best measured among the k best-scored; oracle = t(default) / min t;
    aggregated by geometric mean. Also the fraction of the oracle log-speedup captured by
    top-1, pairwise ranking accuracy and mean Kendall tau.

    Returns
    -------
    dict
        ``top{k}`` (geomean speedups), ``oracle``, ``max_top1``, ``captured``, ``pair_acc``,
        ``tau``.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (len(ds),):
        raise ValueError(f"scores must have shape ({len(ds)},), got {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores contains NaN or inf")
    logs = {k: [] for k in ks}
    orc, taus, agree, total = [], [], 0, 0
    for mi in range(ds.n_matrices):
        r = ds.rows_of(mi)
        d = r[ds.is_default[r]]
        if d.size == 0:
            raise ValueError(f"matrix {mi} has no default configuration row")
        t = ds.runtime[r]
        t_def = ds.runtime[d[0]]
        order = np.argsort(scores[r], kind="stable")
        for k in ks:
            logs[k].append(np.log(t_def / t[order[:k]].min()))
        orc.append(np.log(t_def / t.min()))
        if r.size > 1:
            taus.append(scipy.stats.kendalltau(scores[r], t).statistic)
            ds_ = np.sign(scores[r][:, None] - scores[r][None, :])
            dt = np.sign(t[:, None] - t[None, :])
            m = dt != 0
            agree += int((ds_[m] == dt[m]).sum())
            total += int(m.sum())
    out = {f"top{k}": float(np.exp(np.mean(v))) for k, v in logs.items()}
    out["oracle"] = float(np.exp(np.mean(orc)))
    if 1 in logs:
        out["max_top1"] = float(np.exp(np.max(logs[1])))
        o = np.sum(orc)
        out["captured"] = float(np.sum(logs[1]) / o) if o > 0 else 1.0
    out["pair_acc"] = agree / total if total else float("nan")
    out["tau"] = float(np.nanmean(taus)) if taus else float("nan")
    return out


def evaluate(model: object, ds: CostDataset, ks: tuple[int, ...] = (1, 5)) -> dict:
    """:func:`evaluate_scores` with ``model.score(ds)``."""
    return evaluate_scores(ds, model.score(ds), ks)  # type: ignore[attr-defined]


def select(
    model: object,
    A: object,
    space: object,
    *,
    hardware: str,
    n_candidates: int = 256,
    k: int = 1,
    seed: int = 0,
    dense_width: int = 64,
) -> list[dict]:
    """Score ``n_candidates`` sampled configurations of ``space`` and return the best ``k``."""
    cands = space.sample(n_candidates, seed=seed, include_default=True)  # type: ignore[attr-defined]
    return model.rank_schedules(
        A,
        cands,
        k=k,
        space=space,
        hardware=hardware,  # type: ignore[attr-defined]
        dense_width=dense_width,
    )
