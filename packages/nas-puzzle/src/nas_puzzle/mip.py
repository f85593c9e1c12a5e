"""Architecture search as a grouped-knapsack mixed-integer program (paper §4.2, App. B).

Binary x[i, j] = 1 iff layer i uses variant j::

    minimize    sum_ij score[i, j] x[i, j]
    subject to  sum_ij (param_bytes[i, j] + b kv_bytes[i, j]) x[i, j] <= Memory_max
                sum_ij runtime[i, j, b] x[i, j] <= b s / Throughput_min     (throughput, linear form)
                sum_ij runtime[i, j, b] x[i, j] <= Latency_max
                sum_j x[i, j] = 1  for every layer i
                sum_ij x[i, j] y[i, j] <= alpha L  for every earlier solution y  (diversity)

Non-block costs are subtracted from each budget before solving and added back to totals.
Solvers: ``"highs"`` (``scipy.optimize.milp``), ``"cvxpy"`` (cvxpy with its HiGHS/other MIP
back-end) and ``"brute"`` (exhaustive, tiny instances; the test oracle). Every returned solution
is re-verified in plain NumPy ("trust but verify").
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from nas_puzzle.config import BlockConfig, _check_positive_int
from nas_puzzle.cost import CostTable
from nas_puzzle.scoring import ScoreTable

__all__ = [
    "Constraints",
    "InfeasibleError",
    "Solution",
    "SolverError",
    "budget_rows",
    "evaluate_choice",
    "solve",
    "solve_grouped",
    "solve_library_dict",
    "solve_many",
    "sweep_batch_sizes",
]

SOLVERS = ("highs", "cvxpy", "brute")
_EXTRA_KEYS = ("num_params", "param_bytes", "kv_bytes")
# relative to a row's max |coefficient| x layers; HiGHS's MIP feasibility tolerance is 1e-6
_REL_TOL = 1e-6


class InfeasibleError(ValueError):
    """No architecture satisfies the budgets.

    Attributes
    ----------
    smallest_feasible : dict of str -> float
        For each budget, the tightest value that is feasible given the others (for
        ``throughput_min_tok_s`` the *largest* feasible throughput).
    """

    def __init__(self, message: str, smallest_feasible: Mapping[str, float] | None = None):
        super().__init__(message)
        self.smallest_feasible = dict(smallest_feasible or {})


class SolverError(RuntimeError):
    """The solver failed, or timed out without a feasible incumbent, or returned a bad point."""


def _check_budget(value: float | None, name: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name} must be a number or None, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value}")


@dataclass(frozen=True)
class Constraints:
    """Deployment budgets (``None`` = unconstrained).

    Parameters
    ----------
    memory_max_bytes : float, optional
        Weights + b KV caches (+ non-block weights).
    throughput_min_tok_s : float, optional
        Minimum tokens/s at batch size b (tokens per sequence from the scenario).
    latency_max_s : float, optional
        Maximum seconds to prefill + decode one batch.
    extra : mapping of str -> (lo, hi)
        Extra linear ranges on ``"num_params"``, ``"param_bytes"`` or ``"kv_bytes"`` (whole
        model, either bound may be ``None``).
    """

    memory_max_bytes: float | None = None
    throughput_min_tok_s: float | None = None
    latency_max_s: float | None = None
    extra: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_budget(self.memory_max_bytes, "memory_max_bytes")
        _check_budget(self.throughput_min_tok_s, "throughput_min_tok_s")
        _check_budget(self.latency_max_s, "latency_max_s")
        if not isinstance(self.extra, Mapping):
            raise TypeError("extra must be a mapping of name -> (lo, hi)")
        for key, rng in self.extra.items():
            if not isinstance(key, str) or key not in _EXTRA_KEYS:
                raise ValueError(f"unknown extra constraint {key!r}; expected one of {_EXTRA_KEYS}")
            if not (isinstance(rng, (tuple, list)) and len(rng) == 2):
                raise ValueError(f"extra[{key!r}] must be a (lo, hi) pair")
            lo, hi = rng
            for v, n in ((lo, "lo"), (hi, "hi")):
                if v is not None and (
                    isinstance(v, bool)
                    or not isinstance(v, (int, float, np.number))
                    or not math.isfinite(v)
                ):
                    raise ValueError(f"extra[{key!r}] {n} must be finite or None, got {v}")
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"extra[{key!r}] has lo > hi")


@dataclass
class Solution:
    """One chosen architecture.

    Attributes
    ----------
    indices : ndarray of int, shape (L,)
        Column of the chosen variant per layer.
    choices : list of BlockConfig
    objective : float
        Sum of the chosen per-layer scores.
    totals : dict
        Whole-model cost totals (see :meth:`CostTable.model_totals`), empty without costs.
    status : str
        ``"optimal"``, ``"time_limit"`` (feasible incumbent) or ``"heuristic"``.
    solver : str
    batch_size : int or None
    """

    indices: np.ndarray
    choices: list[BlockConfig]
    objective: float
    totals: dict[str, float] = field(default_factory=dict)
    status: str = "optimal"
    solver: str = "highs"
    batch_size: int | None = None

    @property
    def names(self) -> list[str]:
        """Block names per layer."""
        return [c.name for c in self.choices]


# ----------------------------------------------------------------------------- core solver
def _verify(
    idx: np.ndarray,
    rows: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    allowed: np.ndarray,
    previous: Sequence[np.ndarray],
    max_overlap: int | None,
) -> bool:
    L = allowed.shape[0]
    if idx.shape != (L,) or not allowed[np.arange(L), idx].all():
        return False
    vals = rows[:, np.arange(L), idx].sum(1) if len(rows) else np.zeros(0)
    scale = np.abs(rows).reshape(len(rows), -1).max(1) * L + 1e-300 if len(rows) else 0.0
    if np.any(vals > hi + _REL_TOL * scale) or np.any(vals < lo - _REL_TOL * scale):
        return False
    if max_overlap is not None:
        for y in previous:
            if int((idx == y).sum()) > max_overlap:
                return False
    return True


def _solve_highs(obj, rows, lo, hi, allowed, previous, max_overlap, time_limit_s):
    L, K = obj.shape
    n = L * K
    mats = [sparse.kron(sparse.eye(L), np.ones((1, K)))]
    lbs, ubs = [np.ones(L)], [np.ones(L)]
    if len(rows):
        mats.append(sparse.csr_matrix(rows.reshape(len(rows), n)))
        lbs.append(lo)
        ubs.append(hi)
    if max_overlap is not None and previous:
        onehots = np.zeros((len(previous), n))
        for r, y in enumerate(previous):
            onehots[r, np.arange(L) * K + y] = 1.0
        mats.append(sparse.csr_matrix(onehots))
        lbs.append(np.full(len(previous), -np.inf))
        ubs.append(np.full(len(previous), float(max_overlap)))
    cons = LinearConstraint(sparse.vstack(mats).tocsr(), np.concatenate(lbs), np.concatenate(ubs))
    res = milp(
        obj.ravel(),
        constraints=cons,
        integrality=np.ones(n),
        bounds=Bounds(np.zeros(n), allowed.ravel().astype(float)),
        options={"time_limit": float(time_limit_s), "mip_rel_gap": 0.0},
    )
    if res.status == 2:
        return None, "infeasible"
    if res.x is None:
        raise SolverError(f"HiGHS failed: status {res.status}, {res.message}")
    status = "optimal" if res.status == 0 else "time_limit"
    return res.x.reshape(L, K).argmax(1), status


def _cvxpy_solver_name(installed: Sequence[str]) -> str:
    for name in ("HIGHS", "SCIP", "GUROBI", "CPLEX", "CBC", "GLPK_MI", "SCIPY"):
        if name in installed:
            return name
    raise SolverError(f"no cvxpy mixed-integer solver installed (have {list(installed)})")


def _solve_cvxpy(obj, rows, lo, hi, allowed, previous, max_overlap, time_limit_s):
    import cvxpy as cp

    L, K = obj.shape
    x = cp.Variable((L, K), boolean=True)
    cons = [cp.sum(x, axis=1) == 1, x <= allowed.astype(float)]
    for r in range(len(rows)):
        expr = cp.sum(cp.multiply(rows[r], x))
        if np.isfinite(hi[r]):
            cons.append(expr <= hi[r])
        if np.isfinite(lo[r]):
            cons.append(expr >= lo[r])
    if max_overlap is not None:
        for y in previous:
            onehot = np.zeros((L, K))
            onehot[np.arange(L), y] = 1.0
            cons.append(cp.sum(cp.multiply(onehot, x)) <= max_overlap)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(obj, x))), cons)
    name = _cvxpy_solver_name(cp.installed_solvers())
    try:
        prob.solve(solver=name)
    except cp.error.SolverError as e:
        raise SolverError(f"cvxpy/{name} failed: {e}") from e
    if prob.status in ("infeasible", "infeasible_inaccurate"):
        return None, "infeasible"
    if x.value is None:
        raise SolverError(f"cvxpy/{name} returned status {prob.status}")
    return np.asarray(x.value).argmax(1), "optimal"


def _solve_brute(obj, rows, lo, hi, allowed, previous, max_overlap, max_candidates=2_000_000):
    L, _ = obj.shape
    options = [np.flatnonzero(allowed[i]) for i in range(L)]
    n = math.prod(len(o) for o in options)
    if n > max_candidates:
        raise ValueError(f"brute force over {n} architectures exceeds max_candidates")
    cand = np.array(list(itertools.product(*options)), dtype=int).reshape(n, L)
    layer = np.arange(L)
    ok = np.ones(n, dtype=bool)
    for r in range(len(rows)):
        v = rows[r][layer, cand].sum(1)
        ok &= (v <= hi[r]) & (v >= lo[r])
    if max_overlap is not None:
        for y in previous:
            ok &= (cand == y).sum(1) <= max_overlap
    if not ok.any():
        return None, "infeasible"
    total = np.where(ok, obj[layer, cand].sum(1), np.inf)
    return cand[int(np.argmin(total))], "optimal"


def solve_grouped(
    obj: np.ndarray,
    rows: np.ndarray | None = None,
    lo: np.ndarray | None = None,
    hi: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    previous: Sequence[np.ndarray] = (),
    max_overlap: int | None = None,
    solver: str = "highs",
    time_limit_s: float = 60.0,
) -> tuple[np.ndarray, str]:
    """Minimize a grouped-knapsack MIP in array form (one variant per layer).

    Parameters
    ----------
    obj : ndarray, shape (L, K)
        Cost of choosing variant j in layer i (minimized).
    rows : ndarray, shape (m, L, K), optional
        Linear constraint coefficients, with bounds ``lo <= sum_ij rows[r] x <= hi``.
    lo, hi : ndarray, shape (m,)
        Use ``-inf`` / ``inf`` for one-sided rows.
    allowed : ndarray of bool, shape (L, K), optional
        Variants available per layer (ragged menus).
    previous : sequence of int arrays (L,)
        Earlier solutions for the diversity constraint.
    max_overlap : int, optional
        At most this many layers may agree with any earlier solution.
    solver : {"highs", "cvxpy", "brute"}
    time_limit_s : float

    Returns
    -------
    indices : ndarray of int, shape (L,)
    status : str

    Raises
    ------
    InfeasibleError
        When no assignment satisfies the rows.
    """
    obj = np.asarray(obj, dtype=float)
    if obj.ndim != 2 or obj.size == 0:
        raise ValueError(f"obj must be a non-empty (L, K) array, got shape {obj.shape}")
    if not np.all(np.isfinite(obj)):
        raise ValueError("obj contains NaN or inf")
    L, K = obj.shape
    rows = np.zeros((0, L, K)) if rows is None else np.asarray(rows, dtype=float)
    if rows.ndim != 3 or rows.shape[1:] != (L, K):
        raise ValueError(f"rows must have shape (m, {L}, {K}), got {rows.shape}")
    if not np.all(np.isfinite(rows)):
        raise ValueError("rows contains NaN or inf")
    m = rows.shape[0]
    lo = np.full(m, -np.inf) if lo is None else np.asarray(lo, dtype=float)
    hi = np.full(m, np.inf) if hi is None else np.asarray(hi, dtype=float)
    if lo.shape != (m,) or hi.shape != (m,):
        raise ValueError(f"lo and hi must have shape ({m},), got {lo.shape} and {hi.shape}")
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise ValueError("lo and hi contain NaN (use -inf / inf for a one-sided row)")
    allowed = np.ones((L, K), bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if allowed.shape != (L, K):
        raise ValueError(f"allowed must have shape ({L}, {K}), got {allowed.shape}")
    if not allowed.any(1).all():
        raise InfeasibleError("some layer has no allowed variant")
    if max_overlap is not None and (
        isinstance(max_overlap, bool)
        or not isinstance(max_overlap, numbers.Integral)
        or not 0 <= max_overlap <= L
    ):
        raise ValueError(f"max_overlap must be in [0, {L}], got {max_overlap}")
    previous = [np.asarray(y, dtype=int) for y in previous]
    for y in previous:
        if y.shape != (L,) or y.min() < 0 or y.max() >= K:
            raise ValueError(f"previous solutions must be int arrays of shape ({L},) in [0, {K})")
    if (
        isinstance(time_limit_s, bool)
        or not isinstance(time_limit_s, numbers.Real)
        or not time_limit_s > 0
    ):
        raise ValueError(f"time_limit_s must be a positive number, got {time_limit_s!r}")
    time_limit_s = float(time_limit_s)
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    args = (obj, rows, lo, hi, allowed, previous, max_overlap)
    # HiGHS's feasibility tolerances are absolute: a latency row in seconds (~1e-4) could be
    # overrun by 1e-7 s and called feasible, so each row reaches the solver with max |coef| = 1
    unit = np.abs(rows).reshape(m, -1).max(1) if m else np.ones(0)
    unit[unit == 0] = 1.0
    scaled = (obj, rows / unit[:, None, None], lo / unit, hi / unit, allowed, previous, max_overlap)
    if solver == "highs":
        idx, status = _solve_highs(*scaled, time_limit_s)
    elif solver == "cvxpy":
        idx, status = _solve_cvxpy(*scaled, time_limit_s)
    elif solver == "brute":
        idx, status = _solve_brute(*scaled)
    else:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if idx is None:
        raise InfeasibleError("no architecture satisfies the constraints")
    idx = np.asarray(idx, dtype=int)
    if not _verify(idx, *args[1:]):
        raise SolverError(f"{solver} returned a solution that violates the constraints")
    return idx, status


# ----------------------------------------------------------------- constraints from budgets
def budget_rows(
    costs: CostTable, cons: Constraints, batch_size: int
) -> list[tuple[str, np.ndarray, float, float, float]]:
    """Linear rows for the budgets at one batch size.

    Returns
    -------
    list of (name, coef (L, K), lo, hi, offset)
        ``lo <= sum coef x <= hi`` with the non-block ``offset`` already subtracted from the
        user's budget.
    """
    if not isinstance(cons, Constraints):
        raise TypeError(f"cons must be a Constraints, got {type(cons).__name__}")
    out = []
    nb_rt = costs.non_block_runtime_s(batch_size)
    if cons.memory_max_bytes is not None:
        off = costs.non_block["param_bytes"]
        out.append(
            ("memory_max_bytes", costs.memory_bytes(batch_size), -np.inf,
             cons.memory_max_bytes - off, off)
        )  # fmt: skip
    if cons.throughput_min_tok_s is not None:
        budget = batch_size * costs.scenario.tokens_per_sequence / cons.throughput_min_tok_s
        out.append(
            ("throughput_min_tok_s", costs.runtime_s(batch_size), -np.inf, budget - nb_rt, nb_rt)
        )
    if cons.latency_max_s is not None:
        out.append(
            ("latency_max_s", costs.runtime_s(batch_size), -np.inf, cons.latency_max_s - nb_rt,
             nb_rt)
        )  # fmt: skip
    for key, (lo, hi) in cons.extra.items():
        off = costs.non_block.get(key, 0.0)
        out.append(
            (key, getattr(costs, key),
             -np.inf if lo is None else lo - off, np.inf if hi is None else hi - off, off)
        )  # fmt: skip
    return out


def _user_value(name: str, block_value: float, offset: float, costs: CostTable, b: int) -> float:
    total = block_value + offset
    if name == "throughput_min_tok_s":
        return b * costs.scenario.tokens_per_sequence / total
    return total


def _diagnose(
    rows_info, allowed, costs: CostTable, b: int, solver: str, time_limit_s: float
) -> InfeasibleError:
    """Explain infeasibility: the tightest feasible value of each budget given the others."""
    smallest, parts = {}, []
    names = [r[0] for r in rows_info]
    for r, (name, coef, lo, hi, off) in enumerate(rows_info):
        others = [x for k, x in enumerate(rows_info) if k != r]
        sign = -1.0 if np.isfinite(lo) and not np.isfinite(hi) else 1.0  # lower-bound-only row
        try:
            idx, _ = solve_grouped(
                sign * coef,
                np.stack([o[1] for o in others]) if others else None,
                np.array([o[2] for o in others]) if others else None,
                np.array([o[3] for o in others]) if others else None,
                allowed,
                solver="highs" if solver == "brute" else solver,
                time_limit_s=time_limit_s,
            )
        except InfeasibleError:
            continue
        best = float(coef[np.arange(len(idx)), idx].sum())
        if (sign > 0 and best > hi) or (sign < 0 and best < lo):
            val = _user_value(name, best, off, costs, b)
            smallest[name] = val
            if name == "throughput_min_tok_s":
                parts.append(f"{name} exceeds the largest feasible value {val:.6g}")
            elif sign < 0:
                parts.append(f"{name} lower bound exceeds the largest feasible value {val:.6g}")
            else:
                parts.append(f"{name} is below the smallest feasible value {val:.6g}")
        elif sign > 0:
            smallest[name] = _user_value(name, best, off, costs, b)
    ctx = " given the other budgets" if len(names) > 1 else ""
    msg = "; ".join(parts) if parts else f"the budgets {names} cannot be met together"
    return InfeasibleError(f"infeasible at batch_size={b}: {msg}{ctx}", smallest)


def _resolve(scores, costs: CostTable, objective, batch_size: int | None, minimize: bool | None):
    if not isinstance(costs, CostTable):
        raise TypeError(f"costs must be a CostTable, got {type(costs).__name__}")
    if isinstance(objective, str):
        if not isinstance(scores, ScoreTable):
            raise TypeError(f"scores must be a ScoreTable, got {type(scores).__name__}")
        if scores.variants != costs.variants:
            raise ValueError("scores.variants and costs.variants differ (column order must match)")
        if objective not in scores.values:
            raise ValueError(
                f"objective {objective!r} is not a metric of scores {sorted(scores.values)}"
            )
        obj = scores[objective]
        if minimize is None:
            minimize = not objective.endswith("acc")
    else:
        obj = np.asarray(objective, dtype=float)
        minimize = True if minimize is None else minimize
    if obj.shape != costs.param_bytes.shape:
        raise ValueError(f"objective shape {obj.shape} != cost shape {costs.param_bytes.shape}")
    if batch_size is None:
        if len(costs.scenario.batch_sizes) != 1:
            raise ValueError(
                "batch_size is required when costs cover several batch sizes "
                f"{costs.scenario.batch_sizes} (or use sweep_batch_sizes)"
            )
        batch_size = costs.scenario.batch_sizes[0]
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
        raise TypeError(f"batch_size must be an int, got {batch_size!r}")
    if minimize is not None and not isinstance(minimize, bool | np.bool_):
        raise TypeError(f"minimize must be a bool or None, got {minimize!r}")
    batch_size = int(batch_size)
    costs.b_index(batch_size)
    return (obj if minimize else -obj), obj, batch_size


def evaluate_choice(
    indices: Sequence[int], costs: CostTable, batch_size: int, cons: Constraints | None = None
) -> tuple[dict[str, float], list[str]]:
    """Totals of an architecture and the names of the budgets it violates."""
    idx = np.asarray(indices, dtype=int)
    if idx.shape != (costs.n_layers,):
        raise ValueError(f"indices must have shape ({costs.n_layers},), got {idx.shape}")
    totals = costs.model_totals(idx, batch_size)
    bad = []
    for name, coef, lo, hi, _ in budget_rows(costs, cons or Constraints(), batch_size):
        v = coef[np.arange(len(idx)), idx].sum()
        scale = np.abs(coef).max() * len(idx)
        if v > hi + _REL_TOL * scale or v < lo - _REL_TOL * scale:
            bad.append(name)
    return totals, bad


def solve(
    scores: ScoreTable | None,
    costs: CostTable,
    cons: Constraints,
    objective: str | np.ndarray = "kl",
    batch_size: int | None = None,
    solver: str = "highs",
    time_limit_s: float = 60.0,
    minimize: bool | None = None,
    previous: Sequence[Solution | np.ndarray] = (),
    alpha: float | None = None,
    allowed: np.ndarray | None = None,
) -> Solution:
    """Choose one variant per layer that optimizes the summed scores within the budgets.

    Parameters
    ----------
    scores : ScoreTable or None
        Replace-1-block scores (``None`` when ``objective`` is an array).
    costs : CostTable
    cons : Constraints
    objective : str or ndarray (L, K)
        Metric name in ``scores`` (``"kl"``, ``"lm_loss"``, ``"top1_acc"``) or explicit scores.
    batch_size : int, optional
        Required when ``costs`` has several batch sizes.
    solver : {"highs", "cvxpy", "brute"}
    time_limit_s : float
    minimize : bool, optional
        Default: minimize, except for metrics ending in ``"acc"``.
    previous : sequence of Solution or index arrays
        Earlier solutions for the diversity constraint.
    alpha : float in [0, 1], optional
        Diversity: overlap with each earlier solution at most ``floor(alpha * L)`` layers.
    allowed : ndarray of bool (L, K), optional
        Restrict the menu per layer.

    Returns
    -------
    Solution

    Raises
    ------
    InfeasibleError
        With the smallest feasible value of each violated budget in the message.
    """
    obj, raw, b = _resolve(scores, costs, objective, batch_size, minimize)
    L, _ = obj.shape
    max_overlap = None
    if alpha is not None:
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 <= alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
        max_overlap = math.floor(alpha * L + 1e-9)
    prev = [p.indices if isinstance(p, Solution) else np.asarray(p, dtype=int) for p in previous]
    info = budget_rows(costs, cons, b)
    rows = np.stack([r[1] for r in info]) if info else None
    lo = np.array([r[2] for r in info]) if info else None
    hi = np.array([r[3] for r in info]) if info else None
    try:
        idx, status = solve_grouped(obj, rows, lo, hi, allowed, prev, max_overlap, solver,
                                    time_limit_s)  # fmt: skip
    except InfeasibleError:
        if prev and max_overlap is not None:
            raise InfeasibleError(
                f"no further architecture differs from the {len(prev)} earlier ones in at least "
                f"{L - max_overlap} layers within the budgets"
            ) from None
        raise _diagnose(info, allowed, costs, b, solver, time_limit_s) from None
    totals, _ = evaluate_choice(idx, costs, b)
    return Solution(
        indices=idx,
        choices=[costs.variants[j] for j in idx],
        objective=float(raw[np.arange(L), idx].sum()),
        totals=totals,
        status=status,
        solver=solver,
        batch_size=b,
    )


def solve_many(
    scores: ScoreTable | None,
    costs: CostTable,
    cons: Constraints,
    n: int = 5,
    alpha: float = 0.8,
    **kwargs,
) -> list[Solution]:
    """Up to ``n`` diverse solutions; each overlaps every earlier one in <= alpha L layers.

    Stops early when no further diverse solution exists. Keyword arguments go to :func:`solve`.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n <= 0:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    out: list[Solution] = []
    for _ in range(n):
        try:
            out.append(solve(scores, costs, cons, previous=out, alpha=alpha, **kwargs))
        except InfeasibleError:
            if not out:
                raise
            break
    return out


def sweep_batch_sizes(
    scores: ScoreTable | None,
    costs: CostTable,
    cons: Constraints,
    batch_sizes: Sequence[int] | None = None,
    **kwargs,
) -> Solution:
    """Solve for every batch size and keep the best objective (ties: higher throughput).

    ``batch_sizes`` (default: every one the cost table measured) must be measured ones;
    ``kwargs`` go to :func:`solve`. Raises :class:`InfeasibleError` listing each batch size's
    reason when none is feasible.
    """
    if not isinstance(costs, CostTable):
        raise TypeError(f"costs must be a CostTable, got {type(costs).__name__}")
    if "batch_size" in kwargs:
        raise TypeError("sweep_batch_sizes takes batch_sizes, not batch_size")
    if batch_sizes is None:
        batch_sizes = costs.scenario.batch_sizes
    elif isinstance(batch_sizes, str | bytes) or not isinstance(batch_sizes, Sequence):
        raise TypeError(f"batch_sizes must be a sequence of ints, got {batch_sizes!r}")
    batch_sizes = tuple(_check_positive_int(b, "batch_sizes") for b in batch_sizes)
    missing = [b for b in batch_sizes if b not in costs.scenario.batch_sizes]
    if not batch_sizes or missing:
        raise ValueError(f"batch_sizes must be non-empty and measured in costs "
                         f"({costs.scenario.batch_sizes}); not measured: {missing}")  # fmt: skip
    best, errors = None, {}
    for b in batch_sizes:
        try:
            sol = solve(scores, costs, cons, batch_size=b, **kwargs)
        except InfeasibleError as e:
            errors[b] = str(e)
            continue
        sign = -1.0 if kwargs.get("minimize") is False else 1.0
        if isinstance(kwargs.get("objective", "kl"), str) and kwargs.get("minimize") is None:
            sign = -1.0 if kwargs.get("objective", "kl").endswith("acc") else 1.0
        key = (sign * sol.objective, -sol.totals["throughput_tok_s"])
        if best is None or key < best[0]:
            best = (key, sol)
    if best is None:
        raise InfeasibleError(
            "infeasible at every batch size: "
            + " | ".join(f"b={b}: {m}" for b, m in errors.items())
        )
    return best[1]


def _get_path(d: Mapping, path: str, where: str) -> float:
    cur = d
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            raise ValueError(f"{where} has no entry {path!r}")
        cur = cur[part]
    v = float(cur)
    if not math.isfinite(v):
        raise ValueError(f"{where} {path!r} is not finite")
    return v


def solve_library_dict(
    block_library_dict: Mapping,
    objective: str = "metrics.kl_div",
    constraints: Mapping[str, float | tuple[float | None, float | None]] | None = None,
    minimize: bool = True,
    solver: str = "highs",
    time_limit_s: float = 60.0,
) -> dict:
    """Solve on the plain nested-dict format used by the NVIDIA demo library.

    Parameters
    ----------
    block_library_dict : mapping
        ``{layer_id: {variant_id: {"stats": {...}, "metrics": {...}}}}``; menus may differ per
        layer.
    objective : str
        Dotted path of the score, e.g. ``"metrics.kl_div"``.
    constraints : mapping of dotted path -> upper bound or (lo, hi)
        e.g. ``{"stats.runtime_ms": 1234.0}`` (block totals; no non-block offsets here).
    minimize : bool

    Returns
    -------
    dict
        ``{"choices": {layer_id: variant_id}, "objective": float, "totals": {path: float}}``.
    """
    if not isinstance(block_library_dict, Mapping) or not block_library_dict:
        raise ValueError("block_library_dict must be a non-empty mapping")
    if not isinstance(objective, str) or not objective:
        raise TypeError(f"objective must be a dotted path (str), got {objective!r}")
    if not isinstance(minimize, bool | np.bool_):
        raise TypeError(f"minimize must be a bool, got {minimize!r}")
    if constraints is not None and not isinstance(constraints, Mapping):
        raise TypeError(
            f"constraints must be a mapping path -> bound, got {type(constraints).__name__}"
        )
    constraints = dict(constraints or {})
    layers = list(block_library_dict)
    menus = []
    for lay in layers:
        menu = block_library_dict[lay]
        if not isinstance(menu, Mapping) or not menu:
            raise ValueError(f"block_library_dict[{lay!r}] must be a non-empty mapping")
        menus.append(list(menu))
    L, K = len(layers), max(len(m) for m in menus)
    allowed = np.zeros((L, K), bool)
    obj = np.zeros((L, K))
    rows = np.zeros((len(constraints), L, K))
    lo, hi = np.full(len(constraints), -np.inf), np.full(len(constraints), np.inf)
    for r, bound in enumerate(constraints.values()):
        if isinstance(bound, (tuple, list)):
            if len(bound) != 2:
                raise ValueError(f"constraints: a bound is a number or (lo, hi), got {bound!r}")
            lo[r] = -np.inf if bound[0] is None else float(bound[0])
            hi[r] = np.inf if bound[1] is None else float(bound[1])
        else:
            hi[r] = float(bound)
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise ValueError("constraints: a bound is NaN")
    for i, (lay, menu) in enumerate(zip(layers, menus, strict=True)):
        for j, var in enumerate(menu):
            entry = block_library_dict[lay][var]
            where = f"block_library_dict[{lay!r}][{var!r}]"
            allowed[i, j] = True
            obj[i, j] = _get_path(entry, objective, f"objective: {where}")
            for r, path in enumerate(constraints):
                rows[r, i, j] = _get_path(entry, path, f"constraints: {where}")
    sign = 1.0 if minimize else -1.0
    try:
        idx, status = solve_grouped(sign * obj, rows, lo, hi, allowed, solver=solver,
                                    time_limit_s=time_limit_s)  # fmt: skip
    except InfeasibleError:
        mins = {p: float(np.where(allowed, rows[r], np.inf).min(1).sum())
                for r, p in enumerate(constraints)}  # fmt: skip
        raise InfeasibleError(
            "no architecture meets the constraints; smallest achievable block totals "
            + ", ".join(f"{p}={v:.6g}" for p, v in mins.items()),
            mins,
        ) from None
    lay_idx = np.arange(L)
    return {
        "choices": {lay: menus[i][idx[i]] for i, lay in enumerate(layers)},
        "objective": float(obj[lay_idx, idx].sum()),
        "totals": {p: float(rows[r][lay_idx, idx].sum()) for r, p in enumerate(constraints)},
        "status": status,
    }
