import copy

import numpy as np
import pytest
import torch

from pareto_merge import (
    task_arithmetic,
    task_vectors,
    ties_merge,
    tune_task_arithmetic,
    weight_average,
)


def snapshot(sds):
    return copy.deepcopy(sds)


def assert_same(a, b):
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            assert torch.equal(x[k], y[k])


def test_task_vectors_and_arithmetic_closed_form(models):
    _, theta0, ft = models
    before = snapshot([theta0, *ft])
    tvs = task_vectors(theta0, ft)
    assert "bn.num_batches_tracked" not in tvs[0]
    torch.testing.assert_close(tvs[1]["fc1.weight"], ft[1]["fc1.weight"] - theta0["fc1.weight"])
    merged = task_arithmetic(theta0, ft, scale=0.5)
    expect = theta0["fc2.bias"] + 0.5 * sum(sd["fc2.bias"] - theta0["fc2.bias"] for sd in ft)
    torch.testing.assert_close(merged["fc2.bias"], expect)
    assert torch.equal(merged["bn.num_batches_tracked"], theta0["bn.num_batches_tracked"])
    assert (
        merged["bn.num_batches_tracked"].data_ptr() != theta0["bn.num_batches_tracked"].data_ptr()
    )
    assert_same(before, [theta0, *ft])  # inputs untouched


def test_weight_average_is_mean_and_ta_at_one_over_k(models):
    _, theta0, ft = models
    avg = weight_average(theta0, ft)
    torch.testing.assert_close(
        avg["fc1.weight"], torch.stack([sd["fc1.weight"] for sd in ft]).mean(0)
    )
    ta = task_arithmetic(theta0, ft, scale=1 / 3)
    for k in avg:
        torch.testing.assert_close(avg[k], ta[k])


def test_single_task_identities(models):
    _, theta0, ft = models
    for k, v in task_arithmetic(theta0, ft[:1], scale=1.0).items():
        torch.testing.assert_close(v, ft[0][k])
    for k, v in ties_merge(theta0, ft[:1], density=1.0).items():
        torch.testing.assert_close(v, ft[0][k])


def _ties_reference(flat, density, rule):
    """Element loops after each reference: the TIES repository (keep |v| >= the (P - k)-th
    smallest magnitude, k = int(density P); a zero elected sign takes the majority) and mergekit
    (exactly the k largest; a zero sum counts as positive)."""
    P = flat.shape[1]
    k = int(density * P)
    trimmed = np.zeros_like(flat)
    for t in range(len(flat)):
        if rule == "ties":
            kth = np.sort(np.abs(flat[t]))[P - k - 1]
            keep = np.abs(flat[t]) >= kth
        else:
            keep = np.zeros(P, bool)
            keep[np.argsort(-np.abs(flat[t]), kind="stable")[: max(1, k)]] = True
        trimmed[t, keep] = flat[t, keep]
    sums = trimmed.sum(0)
    if rule == "ties":
        sign = np.sign(sums)
        sign[sign == 0] = np.sign(sign.sum())
    else:
        sign = np.where(sums >= 0, 1.0, -1.0)
    merged = np.zeros(P)
    for j in range(P):
        vals = [v for v in trimmed[:, j] if v != 0 and np.sign(v) == sign[j]]
        merged[j] = np.mean(vals) if vals else 0.0
    return merged


@pytest.mark.parametrize("density", [0.1, 0.2, 0.3, 0.5, 0.7, 0.9])
def test_ties_against_brute_force(models, density):
    # density 0.2 once rounded the kept count where both references truncate (0.12 in logits)
    _, theta0, ft = models
    tvs = task_vectors(theta0, ft)
    keys = list(tvs[0])
    flat = np.stack([np.concatenate([tv[k].flatten().numpy() for k in keys]) for tv in tvs])
    out = ties_merge(theta0, ft, density=density, scale=0.7)
    got = np.concatenate([(out[k] - theta0[k]).flatten().numpy() for k in keys])
    np.testing.assert_allclose(got, 0.7 * _ties_reference(flat, density, "ties"), atol=1e-6)
    out = ties_merge(theta0, ft, density=density, scope="tensor")
    for k in keys:
        per = np.stack([tv[k].flatten().numpy() for tv in tvs])
        want = _ties_reference(per, density, "mergekit")
        np.testing.assert_allclose((out[k] - theta0[k]).flatten().numpy(), want, atol=1e-6)


def test_tune_task_arithmetic_picks_the_best_scale(models):
    _, theta0, ft = models
    target = task_arithmetic(theta0, ft, scale=0.4)

    def score(sd):
        return -float(
            sum(((sd[k] - target[k]) ** 2).sum() for k in target if sd[k].is_floating_point())
        )

    best, merged = tune_task_arithmetic(theta0, ft, score)
    assert best == pytest.approx(0.4)
    torch.testing.assert_close(merged["fc1.weight"], target["fc1.weight"])


def test_bad_state_dicts(models):
    _, theta0, ft = models
    with pytest.raises(ValueError, match="empty task list"):
        task_vectors(theta0, [])
    bad = dict(ft[0])
    bad.pop("fc1.bias")
    with pytest.raises(ValueError, match=r"finetuned\[0\].*keys"):
        weight_average(theta0, [bad])
    bad = dict(ft[0], **{"fc1.weight": torch.zeros(2, 2)})
    with pytest.raises(ValueError, match="shape"):
        task_arithmetic(theta0, [bad])
    bad = dict(ft[0], **{"fc1.weight": ft[0]["fc1.weight"].double()})
    with pytest.raises(ValueError, match="dtype"):
        ties_merge(theta0, [bad])
    bad = dict(ft[0], **{"fc1.weight": ft[0]["fc1.weight"] * float("nan")})
    with pytest.raises(ValueError, match="NaN"):
        ties_merge(theta0, [bad])
    with pytest.raises(TypeError, match="finetuned"):
        weight_average(theta0, ft[0])
    with pytest.raises(ValueError, match="density"):
        ties_merge(theta0, ft, density=0)
    with pytest.raises(ValueError, match="scale"):
        task_arithmetic(theta0, ft, scale=float("inf"))
