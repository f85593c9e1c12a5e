"""Selection and evaluation metrics (spec §2.7)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.stats

from cost_model.dataset import CostDataset

__all__ = ["TuneResult", "evaluate", "evaluate_scores", "select", "tune"]


def evaluate_scores(
    ds: CostDataset, scores: np.ndarray, ks: tuple[int, ...] = (1, 5), per_matrix: bool = False
) -> dict:
    """Metrics of given per-row scores on a dataset (lower score = predicted faster).

    Per matrix with candidate set C (its rows, which must include the default): top-k
    speedup = t(default) / best measured among the k best-scored; oracle = t(default) / min t;
    aggregated by geometric mean. Also the fraction of the oracle log-speedup captured by
    top-1, pairwise ranking accuracy and mean Kendall tau.

    Returns
    -------
    dict
        ``top{k}`` (geomean speedups), ``oracle``, ``max_top1``, ``captured``, ``pair_acc``,
        ``tau``; with ``per_matrix=True`` also ``top{k}_per_matrix``: each matrix's speedup
        (list, matrix order), for matrix-level resampling.
    """
    if not isinstance(ds, CostDataset):
        raise TypeError(f"ds must be a CostDataset, got {type(ds).__name__}")
    ks = _check_ks(ks)
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
    if per_matrix:
        out.update({f"top{k}_per_matrix": np.exp(v).tolist() for k, v in logs.items()})
    out["oracle"] = float(np.exp(np.mean(orc)))
    if 1 in logs:
        out["max_top1"] = float(np.exp(np.max(logs[1])))
        o = np.sum(orc)
        out["captured"] = float(np.sum(logs[1]) / o) if o > 0 else 1.0
    out["pair_acc"] = agree / total if total else float("nan")
    out["tau"] = float(np.nanmean(taus)) if taus else float("nan")
    return out


def _check_ks(ks: object) -> tuple[int, ...]:
    if isinstance(ks, (str, bytes)) or not hasattr(ks, "__iter__"):
        raise TypeError(f"ks must be a sequence of ints, got {ks!r}")
    ks = tuple(ks)
    if not ks:
        raise ValueError("ks must not be empty")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError(f"ks must hold ints, got {k!r}")
        if k < 1:
            raise ValueError(f"ks must be >= 1, got {k}")
    return tuple(int(k) for k in ks)


def evaluate(model: object, ds: CostDataset, ks: tuple[int, ...] = (1, 5)) -> dict:
    """:func:`evaluate_scores` with ``model.score(ds)`` (any object with ``score(ds)``)."""
    if not callable(getattr(model, "score", None)):
        raise TypeError("model must have a score(ds) method, as CognateModel has")
    if not isinstance(ds, CostDataset):
        raise TypeError(f"ds must be a CostDataset, got {type(ds).__name__}")
    ks = _check_ks(ks)
    return evaluate_scores(ds, model.score(ds), ks)


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
    """Score ``n_candidates`` sampled configurations of ``space`` and return the best ``k``.

    ``model`` is anything with ``predict(A, configs, *, space, hardware, dense_width)`` (lower
    score = predicted faster), as for :func:`tune`; the candidates are
    ``space.sample(n_candidates, seed=seed, include_default=True)`` and ties keep their order.

    Returns
    -------
    list of dict
        ``k`` configurations, best first.
    """
    if not callable(getattr(model, "predict", None)):
        raise TypeError("model must have a predict(A, configs, *, space, hardware, ...) method")
    if not callable(getattr(space, "sample", None)):
        raise TypeError(f"space must be a ScheduleSpace, got {type(space).__name__}")
    if not isinstance(hardware, str):
        raise TypeError(f"hardware must be a str, got {hardware!r}")
    for name, v in (("n_candidates", n_candidates), ("k", k), ("seed", seed)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {v!r}")
    if n_candidates < 1 or not 1 <= k <= n_candidates:
        raise ValueError(f"need 1 <= k <= n_candidates, got k={k}, n_candidates={n_candidates}")
    cands = space.sample(int(n_candidates), seed=int(seed), include_default=True)
    scores = np.asarray(
        model.predict(A, cands, space=space, hardware=hardware, dense_width=dense_width),
        dtype=float,
    )
    if scores.shape != (len(cands),) or not np.isfinite(scores).all():
        raise ValueError(f"model.predict must return {len(cands)} finite scores")
    return [cands[i] for i in np.argsort(scores, kind="stable")[: int(k)]]


@dataclass
class TuneResult:
    """What :func:`tune` found.

    Attributes
    ----------
    config : dict
        The fastest measured configuration.
    runtime_s : float
        Its measured (or simulated) runtime.
    measurements : list of Measurement
        Every measurement taken, in the order the model ranked the configurations.
    n_candidates : int
        Size of the candidate set the model scored.
    """

    config: dict
    runtime_s: float
    measurements: list
    n_candidates: int


def tune(
    model: object,
    A: object,
    backend: object,
    op: str,
    *,
    budget: int,
    candidates: list[dict] | None = None,
    include_default: bool = True,
    dense_width: int = 64,
    timer: object | None = None,
    seed: int = 0,
) -> TuneResult:
    """Model-guided tuning: score every candidate, measure only the ``budget`` best-scored ones.

    The loop of a learned-cost-model autotuner (TVM / Ansor style): the model ranks the whole
    candidate set, the backend measures the top of the ranking, and the fastest measurement is
    returned. ``budget / len(candidates)`` is the fraction of measurements spent.

    Parameters
    ----------
    model : object with ``predict(A, configs, *, space, hardware, dense_width)``
        A fitted :class:`~cost_model.models.CognateModel` (lower score = predicted faster), or
        any object with that method.
    A : sparse matrix
    backend : a backend of :mod:`cost_model.kernels` (real or simulated)
    op : {"spmm", "sddmm"}
    budget : int
        Configurations to measure, ``1 <= budget <= len(candidates)``.
    candidates : list of dict, optional
        Configurations of ``backend.space(op)``; default: the whole space (``enumerate()``).
    include_default : bool, default=True
        Spend one of the measurements on the default configuration, so that the result is never
        slower than the default as measured (with ``budget=1`` only the default is measured:
        pass ``include_default=False`` to measure the model's first choice).
    dense_width : int, default=64
    timer : Timer, optional
        Passed to :func:`~cost_model.kernels.measure` (real backends).
    seed : int, default=0
        Seed of the dense operands.

    Returns
    -------
    TuneResult
    """
    from cost_model.kernels import measure

    if not callable(getattr(model, "predict", None)):
        raise TypeError("model must have a predict(A, configs, *, space, hardware, ...) method")
    space = backend.space(op)  # type: ignore[attr-defined]
    cands = space.enumerate() if candidates is None else [space.check(c) for c in candidates]
    if not cands:
        raise ValueError("candidates is empty")
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
        raise TypeError(f"budget must be an int, got {budget!r}")
    if not 1 <= budget <= len(cands):
        raise ValueError(f"budget must be in [1, {len(cands)}] (the candidates), got {budget}")
    scores = np.asarray(
        model.predict(A, cands, space=space, hardware=backend.hardware, dense_width=dense_width),  # type: ignore[attr-defined]
        dtype=float,
    )
    if scores.shape != (len(cands),) or not np.isfinite(scores).all():
        raise ValueError(f"model.predict must return {len(cands)} finite scores")
    default = space.default()
    ranked = [cands[i] for i in np.argsort(scores, kind="stable")]
    if include_default:  # the default is measured once, after the model's choices
        ranked = [c for c in ranked if c != default][: budget - 1]
        picked = [*ranked, default]
    else:
        picked = ranked[:budget]
    ms = measure(backend, op, A, picked, dense_width=dense_width, timer=timer, seed=seed)
    best = min(ms, key=lambda m: m.runtime_s)
    return TuneResult(dict(best.config), float(best.runtime_s), ms, len(cands))
