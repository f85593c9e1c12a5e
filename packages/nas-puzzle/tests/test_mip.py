import math

import numpy as np
import pytest

import nas_puzzle as npz
from nas_puzzle import baselines
from nas_puzzle.mip import budget_rows, evaluate_choice

CFG = npz.DecoderConfig(d_model=32, n_layers=5, n_heads=4, n_kv_heads=4, ffn_intermediate=64,
                        max_seq_len=32)  # fmt: skip


def _tables(seed: int = 0, batch_sizes=(1, 8)):
    """Analytic costs of a 5-layer model + random (positive) scores, 6 variants per layer."""
    space = npz.SearchSpace.from_names(CFG, ["gqa4", "gqa1", "noop"], ["ffn64", "ffn16"])
    scen = npz.Scenario(batch_sizes=batch_sizes, prefill_len=16, decode_len=16)
    costs = npz.estimate(space, CFG, scen)
    rng = np.random.default_rng(seed)
    kl = rng.random((CFG.n_layers, len(space.variants())))
    kl[:, 0] = 0.0  # parent variant is free of error
    return space, npz.ScoreTable(space.variants(), {"kl": kl}), costs


def _brute_objective(obj, rows, lo, hi):
    idx, _ = npz.solve_grouped(obj, rows, lo, hi, solver="brute")
    return obj[np.arange(len(idx)), idx].sum()


def test_highs_matches_brute_force_on_random_instances():
    """A1: 50 random grouped knapsacks, L = 5, K = 6, 2-3 budgets."""
    rng = np.random.default_rng(0)
    n_feasible = 0
    for _ in range(50):
        L, K, m = 5, 6, int(rng.integers(2, 4))
        obj = rng.normal(size=(L, K))
        rows = rng.random((m, L, K))
        hi = rows.min(2).sum(1) + rng.random(m) * (rows.max(2).sum(1) - rows.min(2).sum(1))
        lo = np.full(m, -np.inf)
        try:
            ref = _brute_objective(obj, rows, lo, hi)
        except npz.InfeasibleError:
            with pytest.raises(npz.InfeasibleError):
                npz.solve_grouped(obj, rows, lo, hi)
            continue
        n_feasible += 1
        idx, status = npz.solve_grouped(obj, rows, lo, hi)
        assert status == "optimal"
        assert obj[np.arange(L), idx].sum() == pytest.approx(ref, abs=1e-9)
        assert np.all(rows[:, np.arange(L), idx].sum(1) <= hi + 1e-9)
    assert n_feasible >= 25


@pytest.mark.parametrize("solver", ["highs", "brute"])
def test_tiny_budget_rows_are_not_overrun_within_an_absolute_tolerance(solver):
    # a latency row in seconds: both layers at 1e-4 s overrun the budget by 5e-8 s, which an
    # absolute 1e-7 feasibility tolerance would accept (the CI machine hit this in the README)
    obj = np.array([[0.0, -1.0], [0.0, -1.0]])
    rows = np.array([[[0.0, 1e-4], [0.0, 1e-4]]])
    idx, status = npz.solve_grouped(obj, rows, None, np.array([2e-4 - 5e-8]), solver=solver)
    assert status == "optimal" and sorted(idx.tolist()) == [0, 1]


def test_cvxpy_agrees_with_highs():
    rng = np.random.default_rng(1)
    for _ in range(5):
        obj, rows = rng.normal(size=(5, 6)), rng.random((2, 5, 6))
        hi = rows.mean(2).sum(1)
        a, _ = npz.solve_grouped(obj, rows, None, hi, solver="highs")
        b, _ = npz.solve_grouped(obj, rows, None, hi, solver="cvxpy")
        pick = np.arange(5)
        assert obj[pick, a].sum() == pytest.approx(obj[pick, b].sum(), abs=1e-6)


@pytest.mark.parametrize("solver", ["highs", "brute"])
def test_budgets_never_exceeded_with_cost_tables(solver):
    _, scores, costs = _tables()
    par = costs.model_totals([0] * CFG.n_layers, 8)
    n_solved = 0
    for frac in (0.9, 0.7, 0.5, 0.35):
        cons = npz.Constraints(
            latency_max_s=frac * par["runtime_s"], memory_max_bytes=0.8 * par["memory_bytes"]
        )
        try:
            sol = npz.solve(scores, costs, cons, batch_size=8, solver=solver)
        except npz.InfeasibleError:
            with pytest.raises(npz.InfeasibleError):
                npz.solve(scores, costs, cons, batch_size=8, solver="brute")
            continue
        assert sol.totals["runtime_s"] <= cons.latency_max_s * (1 + 1e-9)
        assert sol.totals["memory_bytes"] <= cons.memory_max_bytes * (1 + 1e-9)
        _, bad = evaluate_choice(sol.indices, costs, 8, cons)
        assert bad == []
        # optimal: no other feasible architecture is better (brute force)
        ref = npz.solve(scores, costs, cons, batch_size=8, solver="brute")
        n_solved += 1
        assert sol.objective == pytest.approx(ref.objective, abs=1e-12)
        # baselines are feasible and never better than the MIP
        for fn in (baselines.best_homogeneous, baselines.greedy, baselines.random_from_library):
            try:
                base = fn(scores, costs, cons, batch_size=8)
            except npz.InfeasibleError:
                continue
            assert evaluate_choice(base.indices, costs, 8, cons)[1] == []
            assert base.objective >= sol.objective - 1e-12
    assert n_solved >= 3
    cons = npz.Constraints(throughput_min_tok_s=1.5 * par["throughput_tok_s"])
    sol = npz.solve(scores, costs, cons, batch_size=8, solver=solver)
    assert sol.totals["throughput_tok_s"] >= cons.throughput_min_tok_s * (1 - 1e-9)


def test_best_homogeneous_is_homogeneous_and_max_params_maximizes_params():
    _, scores, costs = _tables()
    par = costs.model_totals([0] * CFG.n_layers, 8)
    cons = npz.Constraints(latency_max_s=0.6 * par["runtime_s"])
    u = baselines.best_homogeneous(scores, costs, cons, batch_size=8)
    assert len(set(u.indices.tolist())) == 1
    mp = baselines.max_params(scores, costs, cons, batch_size=8)
    ref = npz.solve(None, costs, cons, objective=-costs.num_params, batch_size=8, solver="brute")
    assert mp.totals["num_params"] == pytest.approx(-ref.objective + costs.non_block["num_params"])


def test_infeasible_budget_names_smallest_feasible_value():
    _, scores, costs = _tables()
    par = costs.model_totals([0] * CFG.n_layers, 8)
    with pytest.raises(npz.InfeasibleError, match="latency_max_s is below the smallest") as e:
        npz.solve(scores, costs, npz.Constraints(latency_max_s=1e-3 * par["runtime_s"]),
                  batch_size=8)  # fmt: skip
    smallest = e.value.smallest_feasible["latency_max_s"]
    ok = npz.solve(scores, costs, npz.Constraints(latency_max_s=smallest * (1 + 1e-9)),
                   batch_size=8)  # fmt: skip
    assert ok.totals["runtime_s"] == pytest.approx(smallest)
    with pytest.raises(npz.InfeasibleError):
        npz.solve(scores, costs, npz.Constraints(latency_max_s=smallest * (1 - 1e-6)),
                  batch_size=8)  # fmt: skip
    # jointly infeasible: each budget alone is fine, together they are not
    fast = costs.model_totals([costs.variants.index(npz.BlockConfig.from_name("noop/ffn16"))]
                              * CFG.n_layers, 8)  # fmt: skip
    cons = npz.Constraints(latency_max_s=fast["runtime_s"] * 1.0001,
                           extra={"num_params": (0.9 * par["num_params"], None)})  # fmt: skip
    with pytest.raises(npz.InfeasibleError, match="given the other budgets"):
        npz.solve(scores, costs, cons, batch_size=8)
    with pytest.raises(npz.InfeasibleError, match="throughput_min_tok_s exceeds the largest"):
        npz.solve(scores, costs, npz.Constraints(throughput_min_tok_s=1e12), batch_size=8)


def test_diversity_constraint():
    """A2: solve_many(n=5, alpha=0.8) on L = 10."""
    cfg = npz.DecoderConfig(d_model=32, n_layers=10, n_heads=4, n_kv_heads=4,
                            ffn_intermediate=64, max_seq_len=32)  # fmt: skip
    space = npz.SearchSpace.from_names(cfg, ["gqa4", "gqa1", "noop"], ["ffn64", "ffn16"])
    costs = npz.estimate(space, cfg, npz.Scenario(batch_sizes=(8,), prefill_len=16, decode_len=16))
    kl = np.random.default_rng(3).random((10, 6))
    scores = npz.ScoreTable(space.variants(), {"kl": kl})
    par = costs.model_totals([0] * 10, 8)
    sols = npz.solve_many(scores, costs, npz.Constraints(latency_max_s=0.7 * par["runtime_s"]),
                          n=5, alpha=0.8)  # fmt: skip
    assert len(sols) == 5
    need = math.ceil(0.2 * 10)
    for a in range(5):
        for b in range(a):
            assert (sols[a].indices != sols[b].indices).sum() >= need
    objs = [s.objective for s in sols]
    assert objs == sorted(objs)


def test_sweep_and_batch_size_handling():
    _, scores, costs = _tables(batch_sizes=(1, 8))
    par1 = costs.model_totals([0] * CFG.n_layers, 1)
    cons = npz.Constraints(throughput_min_tok_s=1.2 * par1["throughput_tok_s"])
    best = npz.sweep_batch_sizes(scores, costs, cons)
    assert best.batch_size in (1, 8)
    with pytest.raises(ValueError, match="batch_size is required"):
        npz.solve(scores, costs, cons)
    with pytest.raises(ValueError, match="batch_size=4"):
        npz.solve(scores, costs, cons, batch_size=4)
    with pytest.raises(npz.InfeasibleError, match="every batch size"):
        npz.sweep_batch_sizes(scores, costs, npz.Constraints(throughput_min_tok_s=1e15))


def test_library_dict_format_ragged():
    lib = {
        "L0": {"a": {"stats": {"ms": 3.0}, "metrics": {"kl_div": 0.0}},
               "b": {"stats": {"ms": 1.0}, "metrics": {"kl_div": 0.5}}},
        "L1": {"a": {"stats": {"ms": 3.0}, "metrics": {"kl_div": 0.0}},
               "b": {"stats": {"ms": 2.0}, "metrics": {"kl_div": 0.1}},
               "c": {"stats": {"ms": 0.5}, "metrics": {"kl_div": 0.9}}},
    }  # fmt: skip
    out = npz.solve_library_dict(lib, constraints={"stats.ms": 5.0})
    assert out["choices"] == {"L0": "a", "L1": "b"}
    assert out["totals"]["stats.ms"] == 5.0
    with pytest.raises(npz.InfeasibleError, match=r"stats\.ms=1\.5"):
        npz.solve_library_dict(lib, constraints={"stats.ms": 1.0})
    with pytest.raises(ValueError, match=r"metrics\.mmlu"):
        npz.solve_library_dict(lib, objective="metrics.mmlu")


def test_bad_input():
    _, scores, costs = _tables()
    with pytest.raises(ValueError, match="latency_max_s"):
        npz.Constraints(latency_max_s=-1.0)
    with pytest.raises(ValueError, match="memory_max_bytes"):
        npz.Constraints(memory_max_bytes=float("nan"))
    with pytest.raises(ValueError, match="unknown extra constraint 'flops'"):
        npz.Constraints(extra={"flops": (None, 1.0)})
    with pytest.raises(ValueError, match="solver"):
        npz.solve(scores, costs, npz.Constraints(), batch_size=8, solver="gurobi")
    with pytest.raises(ValueError, match="alpha"):
        npz.solve(scores, costs, npz.Constraints(), batch_size=8, alpha=1.5)
    with pytest.raises(ValueError, match="metric"):
        npz.solve(scores, costs, npz.Constraints(), batch_size=8, objective="mmlu")
    with pytest.raises(ValueError, match="obj contains NaN"):
        npz.solve_grouped(np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="rows must have shape"):
        npz.solve_grouped(np.zeros((2, 2)), np.zeros((1, 3, 2)), None, np.ones(1))
    with pytest.raises(ValueError, match=r"values\['kl'\]"):
        npz.ScoreTable(scores.variants, {"kl": np.zeros((5, 2))})
    other = npz.ScoreTable(list(reversed(scores.variants)), {"kl": scores["kl"]})
    with pytest.raises(ValueError, match="variants differ"):
        npz.solve(other, costs, npz.Constraints(), batch_size=8)
    assert budget_rows(costs, npz.Constraints(), 8) == []


def test_noop_only_and_depth_pruning_baselines():
    space = npz.SearchSpace.from_names(CFG, ["gqa4", "gqa1", "noop"], ["ffn64", "ffn16", "noop"])
    costs = npz.estimate(space, CFG, npz.Scenario(batch_sizes=(8,), prefill_len=16, decode_len=16))
    rng = np.random.default_rng(0)
    kl = rng.random((CFG.n_layers, len(space.variants())))
    kl[:, 0] = 0.0
    scores = npz.ScoreTable(space.variants(), {"kl": kl})
    parent = CFG.parent_block
    par = costs.model_totals([0] * CFG.n_layers, 8)
    cons = npz.Constraints(latency_max_s=0.6 * par["runtime_s"])
    sol = baselines.noop_only(scores, costs, cons, parent)
    names = [v.name for v in sol.choices]
    assert all(n in ("gqa4/ffn64", "gqa4/noop", "noop/ffn64", "noop/noop") for n in names)
    # equals brute force over the same restricted menu
    menu = np.array(
        [v.name in ("gqa4/ffn64", "gqa4/noop", "noop/ffn64", "noop/noop") for v in space.variants()]
    )
    ref = npz.solve(
        scores, costs, cons, solver="brute", allowed=np.repeat(menu[None], CFG.n_layers, 0)
    )
    assert sol.objective == pytest.approx(ref.objective)
    assert sol.totals["runtime_s"] <= cons.latency_max_s * (1 + 1e-9)
    imp = np.array([0.5, 0.1, 0.4, 0.2, 0.3])
    dp = baselines.depth_pruning(imp, scores, costs, cons, parent)
    dropped = [i for i, v in enumerate(dp.choices) if v.name == "noop/noop"]
    kept = [i for i, v in enumerate(dp.choices) if v.name == "gqa4/ffn64"]
    assert len(dropped) + len(kept) == CFG.n_layers and dropped
    assert max(imp[dropped]) <= min(imp[kept])  # least important blocks go first
    assert dp.totals["runtime_s"] <= cons.latency_max_s * (1 + 1e-9)
    with pytest.raises(ValueError, match="importance"):
        baselines.depth_pruning(imp[:2], scores, costs, cons, parent)


def test_block_importance_shape(parent, corpus):
    imp = baselines.block_importance(parent, corpus[1][:64].reshape(4, 16))
    assert imp.shape == (parent.cfg.n_layers,) and np.isfinite(imp).all() and (imp >= -1e-6).all()


def test_width_pruning_is_the_widest_uniform_shape_that_fits():
    space = npz.SearchSpace.from_names(
        CFG, ["gqa4", "gqa1", "linear", "noop"], ["ffn64", "ffn32", "ffn16", "linear", "noop"]
    )
    costs = npz.estimate(space, CFG, npz.Scenario(batch_sizes=(8,), prefill_len=16, decode_len=16))
    kl = np.random.default_rng(1).random((CFG.n_layers, len(space.variants())))
    scores = npz.ScoreTable(space.variants(), {"kl": kl})
    par = costs.model_totals([space.index(CFG.parent_block)] * CFG.n_layers, 8)["runtime_s"]
    for frac in (1.0, 0.985, 0.97, 0.96, 0.95):  # parent, FFN narrowed, KV heads cut, both
        cons = npz.Constraints(latency_max_s=frac * par)
        sol = baselines.width_pruning(scores, costs, cons)
        assert len({v.name for v in sol.choices}) == 1  # homogeneous
        v = sol.choices[0]
        assert v.attention.kind == "gqa" and v.ffn.kind == "swiglu"
        # brute force: no other GQA + SwiGLU homogeneous shape that fits has more parameters
        fits = [
            w
            for j, w in enumerate(space.variants())
            if w.attention.kind == "gqa"
            and w.ffn.kind == "swiglu"
            and costs.model_totals([j] * CFG.n_layers, 8)["runtime_s"] <= frac * par * (1 + 1e-9)
        ]
        assert npz.variant_num_params(CFG, v) == max(npz.variant_num_params(CFG, w) for w in fits)
    assert (
        baselines.width_pruning(scores, costs, npz.Constraints(latency_max_s=par)).choices[0]
        == CFG.parent_block
    )
    with pytest.raises(npz.InfeasibleError):
        baselines.width_pruning(scores, costs, npz.Constraints(latency_max_s=0.9 * par))
