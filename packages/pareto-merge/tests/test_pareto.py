import copy

import numpy as np
import pytest
import torch

from pareto_merge import (
    ParetoMerger,
    adamerging,
    check_preference,
    cross_entropy_objective,
    entropy_objective,
    simplex_grid,
    task_arithmetic,
)


def quadratic_objectives(ft):
    """L_k(theta) = ||theta - theta_k||^2 over floating entries: the minimizer for preference
    gamma under linear scalarization is sum_k gamma_k theta_k, a closed form to test against."""

    def make(target):
        return lambda p: sum(((p[k] - target[k]) ** 2).sum() for k in target)

    return [make({k: v for k, v in sd.items() if v.is_floating_point()}) for sd in ft]


def test_untrained_merger_is_the_base_merge(models):
    _, theta0, ft = models
    merger = ParetoMerger(theta0, ft, rank=2, base="task_arithmetic", init_scale=0.3)
    ta = task_arithmetic(theta0, ft, scale=0.3)
    for pref in ([1, 0, 0], [0.2, 0.3, 0.5]):
        merged = merger.merge(pref)
        assert list(merged) == list(theta0)
        for k in ta:
            torch.testing.assert_close(merged[k], ta[k])
            assert merged[k].dtype == theta0[k].dtype


def test_base_state_dict_is_the_merge_without_the_personal_term(models):
    _, theta0, ft = models
    merger = ParetoMerger(theta0, ft, rank=2, n_steps=20, lr=2e-2, random_state=0)
    np.testing.assert_equal(
        {k: v.numpy() for k, v in merger.base_state_dict().items()},
        {k: v.numpy() for k, v in merger.merge([0.5, 0.25, 0.25]).items()},
    )  # G starts at zero
    merger.fit(quadratic_objectives(ft))
    base, coef = merger.base_state_dict(), merger._weights.coefficients().detach()
    for i, k in enumerate(merger._weights.keys):  # theta_0 + sum_k lambda_k tau_k, key by key
        want = merger._weights.theta0[k] + torch.tensordot(coef[:, i], merger._weights.tau[k], 1)
        torch.testing.assert_close(base[k], want.to(base[k].dtype))
    a, b = merger.merge([1, 0, 0]), merger.merge([0, 0, 1])
    moved = [k for k in base if not torch.equal(a[k] - base[k], b[k] - base[k])]
    assert moved and set(moved) <= set(merger._weights.lowrank)


def test_preference_steers_towards_each_task(models):
    _, theta0, ft = models
    before = copy.deepcopy([theta0, *ft])
    objectives = quadratic_objectives(ft)
    merger = ParetoMerger(
        theta0, ft, rank=3, scalarization="linear", n_steps=400, lr=2e-2, reg=0.0, random_state=0
    ).fit(objectives)
    for k in range(3):
        pref = np.eye(3)[k] * 0.8 + 0.2 / 3
        losses = [float(f(merger.merge(pref))) for f in objectives]
        assert int(np.argmin(losses)) == k  # the preferred task is served best
    prefs, values = merger.front(6)
    assert prefs.shape == values.shape and prefs.shape[1] == 3
    np.testing.assert_allclose(prefs.sum(1), 1)
    for a, b in zip(before, [theta0, *ft], strict=True):
        for key in a:
            assert torch.equal(a[key], b[key])
    assert merger.history_[-1] < merger.history_[0]
    assert merger.n_extra_parameters() > 0


def test_tchebycheff_training_runs_and_is_deterministic(models):
    _, theta0, ft = models
    objectives = quadratic_objectives(ft)
    a = ParetoMerger(theta0, ft, n_steps=20, random_state=3).fit(objectives).merge([0.5, 0.5, 0])
    b = ParetoMerger(theta0, ft, n_steps=20, random_state=3).fit(objectives).merge([0.5, 0.5, 0])
    for k in a:
        assert torch.equal(a[k], b[k])


def test_adamerging_reduces_entropy_and_objectives_are_differentiable(models):
    model, theta0, ft = models
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
    objectives = [entropy_objective(model, x) for _ in ft]
    start = float(sum(f(task_arithmetic(theta0, ft, 0.3)) for f in objectives))
    merged, coef = adamerging(theta0, ft, objectives, n_steps=30, lr=1e-2)
    assert coef.shape == (3, sum(v.is_floating_point() for v in theta0.values()))
    assert float(sum(f(merged) for f in objectives)) < start
    y = torch.randint(0, 3, (32,))
    ce = cross_entropy_objective(model, x, y)
    params = {k: v.clone().requires_grad_(k.startswith("fc")) for k, v in theta0.items()}
    ce(params).backward()
    assert params["fc1.weight"].grad is not None


def test_simplex_grid():
    g = simplex_grid(5, 2)
    np.testing.assert_allclose(g[:, 0], [0, 0.25, 0.5, 0.75, 1])
    g3 = simplex_grid(10, 3)
    assert len(g3) >= 10
    np.testing.assert_allclose(g3.sum(1), 1)
    assert (g3 >= 0).all() and len(np.unique(g3, axis=0)) == len(g3)
    with pytest.raises(ValueError, match="n_points"):
        simplex_grid(1, 2)


def test_bad_preferences_and_settings(models):
    _, theta0, ft = models
    merger = ParetoMerger(theta0, ft)
    for bad in ([0.5, 0.5], [0.5, 0.6, -0.1], [0.2, 0.2, 0.2], [np.nan, 0.5, 0.5], [[1, 0, 0]]):
        with pytest.raises(ValueError, match="preference"):
            merger.merge(bad)
    assert check_preference([0, 0, 1], 3).tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="objectives"):
        merger.fit(quadratic_objectives(ft)[:2])
    with pytest.raises(ValueError, match="objectives"):
        merger.front(3)
    for kwargs, name in [
        ({"rank": -1}, "rank"),
        ({"base": "x"}, "base"),
        ({"scalarization": "x"}, "scalarization"),
        ({"alpha": 0}, "alpha"),
        ({"n_steps": 0}, "n_steps"),
        ({"lr": -1.0}, "lr"),
    ]:
        with pytest.raises(ValueError, match=name):
            ParetoMerger(theta0, ft, **kwargs)
    with pytest.raises(ValueError, match="empty task list"):
        ParetoMerger(theta0, [])
    with pytest.raises(ValueError, match="inputs"):
        entropy_objective(torch.nn.Linear(2, 2), torch.empty(0, 2))


def test_batchnorm_statistics_are_merged_but_not_learned(models):
    model, theta0, ft = models
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(1))
    objectives = [entropy_objective(model, x) for _ in ft]
    merger = ParetoMerger(theta0, ft, n_steps=5, lr=1e-2).fit(objectives)
    ta = task_arithmetic(theta0, ft, 0.3)
    merged = merger.merge([0.6, 0.2, 0.2])
    torch.testing.assert_close(merged["bn.running_mean"], ta["bn.running_mean"])
    assert not torch.allclose(merged["fc1.weight"], ta["fc1.weight"])
    with pytest.raises(ValueError, match="fixed_keys"):
        ParetoMerger(theta0, ft, fixed_keys=["bn.num_batches_tracked"])
