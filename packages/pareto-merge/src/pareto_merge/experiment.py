"""The protocol shared by the demo and the benchmark: pre-train, fine-tune, merge, evaluate.

Every method gets the same fine-tuned models, the same per-task objective and the same number of
optimisation steps; fronts are evaluated on one preference lattice.
"""

import time
from collections.abc import Sequence

import numpy as np
import torch
from torch.func import functional_call

from pareto_merge.baselines import (
    task_arithmetic,
    ties_merge,
    tune_task_arithmetic,
    weight_average,
    weighted_task_arithmetic,
)
from pareto_merge.moo import hypervolume
from pareto_merge.objectives import cross_entropy_objective, entropy_objective
from pareto_merge.pareto import ParetoMerger, adamerging, simplex_grid
from pareto_merge.tasks import finetune, make_digit_tasks, pretrain

__all__ = ["merging_experiment"]


def merging_experiment(
    domains: Sequence[str] = ("rot90", "invert"),
    *,
    objective: str = "entropy",
    arch: str = "mlp",
    n_val: int = 100,
    n_points: int = 11,
    n_steps: int = 300,
    rank: int = 4,
    lr: float = 1e-3,
    diversity: float = 1.0,
    adamerging_front: bool = True,
    scalarization: str = "linear",
    alpha: float = 1.0,
    seed: int = 0,
    verbose: bool = False,
) -> dict[str, object]:
    """Run every merging method on generated digit tasks and collect test accuracies.

    Parameters
    ----------
    domains : tasks to merge (see :data:`pareto_merge.tasks.DOMAINS`)
    objective : {"entropy", "ce"}, default="entropy"
        What AdaMerging and Pareto Merging learn from: ``"entropy"`` is the paper's unlabeled
        setting (prediction entropy on the unlabeled test inputs, plus ``diversity`` times the
        marginal-entropy bonus; see :func:`~pareto_merge.entropy_objective`); ``"ce"`` is
        cross-entropy on ``n_val`` labelled training images per task.
    arch : {"mlp", "cnn"}, default="mlp"
        Backbone that is pre-trained, fine-tuned per task and merged.
    n_val : int, default=100
        Labelled images per task for ``"ce"`` and for tuning the baselines' scales.
    n_points : int, default=11
        Preferences on the front (a Das-Dennis lattice for K > 2, see :func:`simplex_grid`).
    n_steps, rank, lr : Pareto Merging / AdaMerging settings (same for every trained method)
    diversity : float, default=1.0
        Marginal-entropy weight of the unlabeled objective.
    adamerging_front : bool, default=True
        Also run AdaMerging once per preference (weighted objectives): the expensive front; and
        the capacity control's front: each preference's AdaMerging merge plus the control's
        learned low-rank term (same parameters and budget as Pareto Merging, no preference).
    scalarization : {"linear", "tchebycheff"}, default="linear"
        Pareto Merging's scalarization (the capacity control uses the same).
    alpha : float, default=1.0
        Dirichlet concentration of the preferences sampled in training (both trained mergers).
    seed, verbose : seed and progress bars

    Returns
    -------
    dict with keys
        ``tasks``; ``points`` (single models: method -> test accuracy per task); ``fronts``
        (method -> (prefs (n, K), accuracies (n, K))); ``hv`` (method -> hypervolume of the
        test errors, reference error 1 per task); ``times`` (method -> seconds);
        ``history`` (method -> training loss per step); ``merge_ms``, ``extra_params``,
        ``model_params``.
    """
    if objective not in ("entropy", "ce"):
        raise ValueError(f"objective: must be 'entropy' or 'ce', got {objective!r}")
    torch.manual_seed(seed)
    source, tasks = make_digit_tasks(tuple(domains), random_state=seed)
    backbone = pretrain(source, seed=seed, arch=arch)
    theta0 = {k: v.detach().clone() for k, v in backbone.state_dict().items()}
    finetuned, heads = zip(
        *(finetune(backbone, t, seed=seed + i) for i, t in enumerate(tasks)), strict=True
    )
    K = len(tasks)
    prefs = simplex_grid(n_points, K)

    def accuracy(sd: dict[str, torch.Tensor], k: int, split: str = "test") -> float:
        if split == "test":
            X, y = tasks[k].X_test, tasks[k].y_test
        else:  # the labelled validation images (first n_val training images)
            X, y = tasks[k].X_train[:n_val], tasks[k].y_train[:n_val]
        with torch.no_grad():
            return float(
                (heads[k](functional_call(backbone, sd, (X,))).argmax(1) == y).float().mean()
            )

    def accs(sd: dict[str, torch.Tensor]) -> list[float]:
        return [accuracy(sd, k) for k in range(K)]

    def val_score(sd: dict[str, torch.Tensor]) -> float:
        return float(np.mean([accuracy(sd, k, "val") for k in range(K)]))

    if objective == "ce":
        losses = [
            cross_entropy_objective(backbone, t.X_train[:n_val], t.y_train[:n_val], head=heads[k])
            for k, t in enumerate(tasks)
        ]
    else:
        losses = [
            entropy_objective(backbone, t.X_test, head=heads[k], diversity=diversity)
            for k, t in enumerate(tasks)
        ]
    points: dict[str, list[float]] = {}
    fronts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    times: dict[str, float] = {}
    history: dict[str, list[float]] = {}

    def record(name: str, make) -> dict[str, torch.Tensor]:
        t0 = time.process_time()
        sd = make()
        times[name] = time.process_time() - t0
        points[name] = accs(sd)
        return sd

    points["pre-trained"] = accs(theta0)
    points["individual (upper bound)"] = [accuracy(finetuned[k], k) for k in range(K)]
    record("weight averaging", lambda: weight_average(theta0, finetuned))
    grid = tuple(np.round(np.linspace(0.1, 1.0, 10), 2))
    scale = tune_task_arithmetic(theta0, finetuned, val_score, grid=grid)[0]
    record("task arithmetic", lambda: task_arithmetic(theta0, finetuned, scale))
    for scope in ("model", "tensor"):
        s_best = max(
            (val_score(ties_merge(theta0, finetuned, 0.2, s, scope)), s) for s in (0.5, 0.7, 1.0)
        )[1]
        record(
            f"TIES per {scope}",
            lambda s=s_best, sc=scope: ties_merge(theta0, finetuned, 0.2, s, sc),
        )
    # the training-free front: preference-weighted task vectors at the tuned scale
    t0 = time.process_time()
    fronts["weighted task arithmetic"] = (
        prefs,
        np.asarray([accs(weighted_task_arithmetic(theta0, finetuned, p, scale)) for p in prefs]),
    )
    times["weighted task arithmetic"] = time.process_time() - t0
    record(
        "AdaMerging",
        lambda: adamerging(theta0, finetuned, losses, n_steps=n_steps, lr=lr, verbose=verbose)[0],
    )
    ada_sds = []
    if adamerging_front:
        t0 = time.process_time()
        ada_sds = [
            adamerging(theta0, finetuned, losses, n_steps=n_steps, lr=lr, preference=p)[0]
            for p in prefs
        ]
        times["AdaMerging per preference"] = time.process_time() - t0
        fronts["AdaMerging per preference"] = (prefs, np.asarray([accs(sd) for sd in ada_sds]))
    merge_ms, extra = 0.0, 0
    for name, conditioned in (
        ("Pareto Merging", True),
        ("capacity control (no preference)", False),
    ):
        t0 = time.process_time()
        merger = ParetoMerger(
            theta0,
            finetuned,
            rank=rank,
            n_steps=n_steps,
            lr=lr,
            conditioned=conditioned,
            scalarization=scalarization,
            alpha=alpha,
            random_state=seed,
            verbose=verbose,
        ).fit(losses)
        times[name] = time.process_time() - t0
        history[name] = merger.history_
        t0 = time.perf_counter()
        equal = merger.merge(np.full(K, 1.0 / K))
        if conditioned:
            merge_ms = 1e3 * (time.perf_counter() - t0)
            extra = merger.n_extra_parameters()
            fronts[name] = merger.front(
                n_points, objectives=[lambda sd, k=k: accuracy(sd, k) for k in range(K)]
            )
            points["Pareto Merging, equal preference"] = accs(equal)
        else:
            points[name] = accs(equal)
            if ada_sds:  # the control's personal term on each preference's AdaMerging merge
                base = merger.base_state_dict()
                delta = {k: equal[k] - base[k] for k in equal if equal[k].is_floating_point()}
                fronts["capacity control on AdaMerging per preference"] = (prefs, np.asarray([
                    accs({k: v + delta[k] if k in delta else v for k, v in sd.items()})
                    for sd in ada_sds
                ]))  # fmt: skip
    ref = np.ones(K)
    hv = {name: hypervolume(1 - np.asarray([p]), ref) for name, p in points.items()}
    for name, (_, acc) in fronts.items():
        hv[f"{name} (front)"] = hypervolume(1 - acc, ref)
    return {
        "tasks": [t.name for t in tasks],
        "points": points,
        "fronts": fronts,
        "hv": hv,
        "times": times,
        "history": history,
        "scale": scale,
        "merge_ms": merge_ms,
        "extra_params": extra,
        "model_params": sum(v.numel() for v in theta0.values()),
    }
