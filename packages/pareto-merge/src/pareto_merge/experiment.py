"""The protocol shared by the demo and the benchmark: pre-train, fine-tune, merge, evaluate."""

import time
from collections.abc import Sequence

import numpy as np
import torch
from torch.func import functional_call

from pareto_merge.baselines import task_arithmetic, ties_merge, tune_task_arithmetic, weight_average
from pareto_merge.moo import hypervolume
from pareto_merge.objectives import cross_entropy_objective, entropy_objective
from pareto_merge.pareto import ParetoMerger, adamerging
from pareto_merge.tasks import finetune, make_digit_tasks, pretrain

__all__ = ["merging_experiment"]


def merging_experiment(
    domains: Sequence[str] = ("rot90", "invert"),
    *,
    objectives: Sequence[str] = ("ce",),
    n_val: int = 100,
    n_points: int = 11,
    n_steps: int = 300,
    rank: int = 4,
    seed: int = 0,
    verbose: bool = False,
) -> dict[str, object]:
    """Run every merging method on generated digit tasks and collect test accuracies.

    Parameters
    ----------
    domains : tasks to merge (see :data:`pareto_merge.tasks.DOMAINS`)
    objectives : subset of {"ce", "entropy"}
        Which per-task losses AdaMerging and Pareto Merging learn from: cross-entropy on
        ``n_val`` labelled training images per task, and/or prediction entropy on the unlabeled
        test images (AdaMerging's setting).
    n_val : int, default=100
    n_points, n_steps, rank, seed, verbose : sweep size and training settings

    Returns
    -------
    dict with keys
        ``tasks``, ``points`` (method -> test accuracy per task), ``times`` (method -> seconds),
        ``fronts`` (objective -> (prefs (n, K), accuracies (n, K))), ``hv`` (method -> hypervolume
        of the test-error points w.r.t. error 1 in every task), ``merge_ms``, ``extra_params``,
        ``model_params``.
    """
    torch.manual_seed(seed)
    source, tasks = make_digit_tasks(tuple(domains), random_state=seed)
    backbone = pretrain(source, seed=seed)
    theta0 = {k: v.detach().clone() for k, v in backbone.state_dict().items()}
    finetuned, heads = zip(
        *(finetune(backbone, t, seed=seed + i) for i, t in enumerate(tasks)), strict=True
    )
    K = len(tasks)

    def accuracy(sd: dict[str, torch.Tensor], k: int, split: str = "test") -> float:
        X, y = (
            (tasks[k].X_test, tasks[k].y_test)
            if split == "test"
            else (tasks[k].X_train, tasks[k].y_train)
        )
        with torch.no_grad():
            return float(
                (heads[k](functional_call(backbone, sd, (X,))).argmax(1) == y).float().mean()
            )

    def accs(sd: dict[str, torch.Tensor]) -> list[float]:
        return [accuracy(sd, k) for k in range(K)]

    def val_score(sd: dict[str, torch.Tensor]) -> float:
        return float(np.mean([accuracy(sd, k, "train") for k in range(K)]))

    losses = {
        "ce": [
            cross_entropy_objective(backbone, t.X_train[:n_val], t.y_train[:n_val], head=heads[k])
            for k, t in enumerate(tasks)
        ],
        "entropy": [
            entropy_objective(backbone, t.X_test, head=heads[k]) for k, t in enumerate(tasks)
        ],
    }
    points: dict[str, list[float]] = {}
    times: dict[str, float] = {}

    def record(name: str, make) -> dict[str, torch.Tensor]:
        t0 = time.perf_counter()
        sd = make()
        times[name] = time.perf_counter() - t0
        points[name] = accs(sd)
        return sd

    points["pre-trained"] = accs(theta0)
    points["individual (upper bound)"] = [accuracy(finetuned[k], k) for k in range(K)]
    record("weight averaging", lambda: weight_average(theta0, finetuned))
    scale = tune_task_arithmetic(theta0, finetuned, val_score)[0]
    record(f"task arithmetic (l={scale:.1f})", lambda: task_arithmetic(theta0, finetuned, scale))
    ties_scale = max(
        (val_score(ties_merge(theta0, finetuned, 0.2, s)), s) for s in (0.5, 0.7, 1.0)
    )[1]
    record(
        f"TIES (d=0.2, l={ties_scale:.1f})", lambda: ties_merge(theta0, finetuned, 0.2, ties_scale)
    )
    fronts = {}
    merge_ms = extra = 0.0
    for obj in objectives:
        record(
            f"AdaMerging [{obj}]",
            lambda obj=obj: adamerging(
                theta0, finetuned, losses[obj], n_steps=n_steps, verbose=verbose
            )[0],
        )
        t0 = time.perf_counter()
        merger = ParetoMerger(
            theta0, finetuned, rank=rank, n_steps=n_steps, random_state=seed, verbose=verbose
        )
        merger.fit(losses[obj])
        times[f"Pareto Merging [{obj}] fit"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        equal = merger.merge(np.full(K, 1.0 / K))
        merge_ms = 1e3 * (time.perf_counter() - t0)
        points[f"Pareto Merging [{obj}] equal pref."] = accs(equal)
        fronts[obj] = merger.front(
            n_points, objectives=[lambda sd, k=k: accuracy(sd, k) for k in range(K)]
        )
        extra = merger.n_extra_parameters()
    ref = np.ones(K)
    hv = {name: hypervolume(1 - np.asarray([p]), ref) for name, p in points.items()}
    for obj, (_, acc) in fronts.items():
        hv[f"Pareto Merging [{obj}] front"] = hypervolume(1 - acc, ref)
    return {
        "tasks": [t.name for t in tasks],
        "points": points,
        "times": times,
        "fronts": fronts,
        "hv": hv,
        "merge_ms": merge_ms,
        "extra_params": extra,
        "model_params": sum(v.numel() for v in theta0.values()),
    }
