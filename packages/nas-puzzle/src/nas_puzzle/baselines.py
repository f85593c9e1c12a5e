"""Baseline architecture choosers compared with the MIP (spec §3, paper App. F.2).

All return a :class:`~nas_puzzle.mip.Solution` that respects the same budgets as the MIP.

* :func:`best_homogeneous` — the same library variant in every layer, the best-scored one that
  meets the budgets (any variant: linear or no-op sub-blocks included).
* :func:`width_pruning` — Minitron-style uniform width pruning (Muralidharan et al., 2024):
  every layer keeps full attention structure (GQA) and a SwiGLU FFN, narrowed by the same
  amount; the widest such homogeneous shape (most parameters) that fits wins. Score-free; the
  bench realizes it with the training-free activation-importance weights (channel contribution,
  mean-pooled KV heads), no BLD, then distils it like every other child.
* :func:`greedy` — paper F.2.2: budgets split equally over layers, easiest layers first,
  leftover budget passed on.
* :func:`random_from_library` — paper F.2.4: uniformly random variant per layer,
  rejection-sampled until the budgets hold.
* :func:`max_params` — paper F.2.3: data-free, maximize parameters within the budgets (MIP).
* :func:`noop_only` — the same MIP over a menu of {parent, attention removed, FFN removed,
  block removed} per layer: how far layer/sub-layer removal alone gets, scored as Puzzle is.
* :func:`depth_pruning` — ShortGPT (Men et al., 2024): drop whole blocks in increasing order of
  block importance ``BI_i = 1 - mean cos(x_i, x_{i+1})`` until the budgets hold.
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

__all__ = [
    "best_homogeneous",
    "block_importance",
    "depth_pruning",
    "greedy",
    "max_params",
    "noop_only",
    "random_from_library",
    "width_pruning",
]


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


def _homogeneous(costs: CostTable, cons: Constraints, b: int, L: int):
    """Every one-variant-everywhere architecture, (K, L), and whether it meets the budgets."""
    cand = np.repeat(np.arange(len(costs.variants))[:, None], L, axis=1)
    return cand, _feasible(cand, budget_rows(costs, cons, b))


def best_homogeneous(
    scores: ScoreTable,
    costs: CostTable,
    cons: Constraints,
    objective: str = "kl",
    batch_size: int | None = None,
) -> Solution:
    """Best homogeneous architecture (one variant repeated in all layers) within the budgets."""
    obj, raw, b = _resolve(scores, costs, objective, batch_size, None)
    cand, ok = _homogeneous(costs, cons, b, obj.shape[0])
    if not ok.any():
        raise InfeasibleError("no homogeneous architecture meets the budgets")
    total = np.where(ok, obj.sum(0), np.inf)
    return _solution(cand[int(np.argmin(total))], costs, raw, b, "best_homogeneous")


def width_pruning(
    scores: ScoreTable,
    costs: CostTable,
    cons: Constraints,
    objective: str = "kl",
    batch_size: int | None = None,
) -> Solution:
    """Minitron-style uniform width pruning: the widest homogeneous GQA + SwiGLU shape that fits.

    Raises
    ------
    InfeasibleError
        If no narrowed shape meets the budgets (then only removing sub-blocks can).
    """
    _, raw, b = _resolve(scores, costs, objective, batch_size, None)
    width = np.array([v.attention.kind == "gqa" and v.ffn.kind == "swiglu" for v in costs.variants])
    cand, ok = _homogeneous(costs, cons, b, raw.shape[0])
    ok &= width
    if not ok.any():
        raise InfeasibleError("no uniformly narrowed GQA + SwiGLU shape meets the budgets")
    n = np.where(ok, costs.num_params.sum(0), -np.inf)
    # ties in parameter count (e.g. fewer KV heads vs narrower FFN): the cheaper runtime wins
    rt = costs.runtime_s(b).sum(0)
    best = min(np.flatnonzero(n == n.max()), key=lambda j: rt[j])
    return _solution(cand[best], costs, raw, b, "width_pruning")


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


def _noop_menu(costs: CostTable, parent_block) -> np.ndarray:
    """(K,) bool: the parent block and its variants with no-op attention and/or FFN."""
    pa, pf = parent_block.attention, parent_block.ffn
    return np.array(
        [
            (v.attention == pa or v.attention.kind == "noop")
            and (v.ffn == pf or v.ffn.kind == "noop")
            for v in costs.variants
        ]
    )


def noop_only(
    scores: ScoreTable, costs: CostTable, cons: Constraints, parent_block, objective: str = "kl",
    batch_size: int | None = None,
) -> Solution:  # fmt: skip
    """The Puzzle MIP restricted to keeping or removing parent sub-blocks (no trained variants)."""
    menu = _noop_menu(costs, parent_block)
    if not menu.any():
        raise ValueError("the library has neither the parent block nor no-op variants")
    L = scores[objective].shape[0]
    sol = solve(scores, costs, cons, objective=objective, batch_size=batch_size,
                allowed=np.repeat(menu[None], L, axis=0))  # fmt: skip
    sol.solver = "noop_only"
    return sol


def block_importance(parent, tokens) -> np.ndarray:
    """ShortGPT block importance ``1 - mean_token cos(x_i, x_{i+1})`` per layer (L,)."""
    import torch

    from nas_puzzle.bld import parent_activations

    with torch.no_grad():
        ins, _ = parent_activations(parent, tokens)
        return np.array(
            [
                float(1 - torch.nn.functional.cosine_similarity(ins[i], ins[i + 1], dim=-1).mean())
                for i in range(len(ins) - 1)
            ]
        )


def depth_pruning(
    importance: np.ndarray, scores: ScoreTable, costs: CostTable, cons: Constraints, parent_block,
    objective: str = "kl", batch_size: int | None = None,
) -> Solution:  # fmt: skip
    """ShortGPT: remove the least important whole blocks (no-op/no-op) until the budgets hold."""
    _, raw, b = _resolve(scores, costs, objective, batch_size, None)
    L = raw.shape[0]
    imp = np.asarray(importance, dtype=float)
    if imp.shape != (L,) or not np.isfinite(imp).all():
        raise ValueError(f"importance must be a finite ({L},) array")
    names = [v.name for v in costs.variants]
    keep, drop = names.index(parent_block.name), names.index("noop/noop")
    rows = budget_rows(costs, cons, b)
    idx = np.full(L, keep)
    for i in np.argsort(imp, kind="stable"):
        if _feasible(idx[None], rows)[0]:
            break
        idx[i] = drop
    if not _feasible(idx[None], rows)[0]:
        raise InfeasibleError("depth pruning cannot meet the budgets even with every block removed")
    return _solution(idx, costs, raw, b, "depth_pruning")
