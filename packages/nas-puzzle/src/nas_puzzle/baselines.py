"""Baseline architecture choosers compared with the MIP (spec §3, paper App. F.2).

All return a :class:`~nas_puzzle.mip.Solution` that respects the same budgets as the MIP.

* :func:`uniform` — the same variant in every layer, best one meeting the budgets
  (homogeneous, Minitron-style pruning with library weights).
* :func:`greedy` — paper F.2.2: budgets split equally over layers, easiest layers first,
  leftover budget passed on.
* :func:`random_from_library` — paper F.2.4: uniformly random variant per layer,
  rejection-sampled until the budgets hold.
* :func:`max_params` — paper F.2.3: data-free, maximize parameters within the budgets (MIP).
"""

from __future__ import annotations

import numpy as np

from nas_puzzle.cost import CostTable
from nas_puzzle.mip import (
    Constraints,
    InfeasibleError,
    Solution,
    _resolve,
    budget_rows,
    evaluate_choice,
    solve,
)
from nas_puzzle.scoring import ScoreTable

__all__ = ["greedy", "max_params", "random_from_library", "uniform"]


def _solution(idx, costs: CostTable, raw: np.ndarray, b: int, name: str) -> Solution:
    idx = np.asarray(idx, dtype=int)
    totals, _ = evaluate_choice(idx, costs, b)
    return Solution(
        indices=idx,
        choices=[costs.variants[j] for j in idx],
        objective=float(raw[np.arange(len(idx)), idx].sum()),
        totals=totals,
        status="heuristic",
        solver=name,
        batch_size=b,
    )


def _feasible(cand: np.ndarray, rows) -> np.ndarray:
    """cand: (N, L) index arrays -> (N,) bool."""
    ok = np.ones(len(cand), dtype=bool)
    layer = np.arange(cand.shape[1])
    for _, coef, lo, hi, _ in rows:
        v = coef[layer, cand].sum(1)
        tol = 1e-9 * np.abs(coef).max() * cand.shape[1]
        ok &= (v <= hi + tol) & (v >= lo - tol)
    return ok


def uniform(
    scores: ScoreTable,
    costs: CostTable,
    cons: Constraints,
    objective: str = "kl",
    batch_size: int | None = None,
) -> Solution:
    """Best homogeneous architecture (one variant repeated in all layers) within the budgets."""
    obj, raw, b = _resolve(scores, costs, objective, batch_size, None)
    L, K = obj.shape
    cand = np.repeat(np.arange(K)[:, None], L, axis=1)
    ok = _feasible(cand, budget_rows(costs, cons, b))
    if not ok.any():
        raise InfeasibleError("no homogeneous architecture meets the budgets")
    total = np.where(ok, obj.sum(0), np.inf)
    return _solution(cand[int(np.argmin(total))], costs, raw, b, "uniform")


def greedy(
    scores: ScoreTable,
    costs: CostTable,
    cons: Constraints,
    objective: str = "kl",
    batch_size: int | None = None,
) -> Solution:
    """Paper F.2.2 greedy: equal per-layer budget shares, easiest layers first, carry leftovers."""
    obj, raw, b = _resolve(scores, costs, objective, batch_size, None)
    L, _ = obj.shape
    rows = [r for r in budget_rows(costs, cons, b) if np.isfinite(r[3])]
    order = np.argsort(obj.mean(1), kind="stable")  # lowest mean score = easiest layer
    share = np.array([r[3] / L for r in rows])
    left = np.zeros(len(rows))
    idx = np.zeros(L, dtype=int)
    for i in order:
        allow = share + left
        fits = np.ones(obj.shape[1], dtype=bool)
        for r, row in enumerate(rows):
            fits &= row[1][i] <= allow[r] + 1e-12 * abs(allow[r])
        if not fits.any():
            raise InfeasibleError(f"greedy found no variant for layer {i} within its budget share")
        j = int(np.argmin(np.where(fits, obj[i], np.inf)))
        idx[i] = j
        left = allow - np.array([row[1][i, j] for row in rows])
    return _solution(idx, costs, raw, b, "greedy")


def random_from_library(
    scores: ScoreTable,
    costs: CostTable,
    cons: Constraints,
    objective: str = "kl",
    batch_size: int | None = None,
    seed: int = 0,
    max_tries: int = 1_000_000,
) -> Solution:
    """Uniformly random variant per layer, rejection-sampled until the budgets hold."""
    obj, raw, b = _resolve(scores, costs, objective, batch_size, None)
    L, K = obj.shape
    rows = budget_rows(costs, cons, b)
    rng = np.random.default_rng(seed)
    tried = 0
    while tried < max_tries:
        cand = rng.integers(0, K, size=(min(4096, max_tries - tried), L))
        tried += len(cand)
        ok = np.flatnonzero(_feasible(cand, rows))
        if ok.size:
            return _solution(cand[ok[0]], costs, raw, b, "random")
    raise InfeasibleError(f"no random architecture met the budgets in {max_tries} tries")


def max_params(
    scores: ScoreTable | None,
    costs: CostTable,
    cons: Constraints,
    objective: str = "kl",
    batch_size: int | None = None,
) -> Solution:
    """Data-free heuristic: the most parameters that fit (MIP with score = -num_params)."""
    sol = solve(None, costs, cons, objective=-costs.num_params, batch_size=batch_size)
    if scores is not None:
        _, raw, _ = _resolve(scores, costs, objective, sol.batch_size, None)
        sol.objective = float(raw[np.arange(len(sol.indices)), sol.indices].sum())
    sol.solver, sol.status = "max_params", "heuristic"
    return sol
