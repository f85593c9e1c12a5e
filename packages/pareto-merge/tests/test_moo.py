import itertools

import numpy as np
import pytest

from pareto_merge import dominates, hypervolume, pareto_mask


def brute_hv(P, ref, n=60):
    """Grid estimate of the dominated volume (exact on a lattice-aligned instance)."""
    axes = [np.linspace(0, r, n, endpoint=False) + r / (2 * n) for r in ref]
    cells = np.array(list(itertools.product(*axes)))
    covered = ((P[None, :, :] <= cells[:, None, :]).all(-1)).any(1)
    return covered.mean() * np.prod(ref)


def test_hypervolume_2d_closed_form():
    P = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    assert hypervolume(P, [4, 4]) == pytest.approx(3 + 2 + 1)
    assert hypervolume(np.vstack([P, [3.5, 3.5]]), [4, 4]) == pytest.approx(6)  # dominated point
    assert hypervolume([[5.0, 5.0]], [4, 4]) == 0.0


def test_hypervolume_3d_matches_grid():
    P = np.array([[0.25, 0.5, 0.75], [0.5, 0.25, 0.5], [0.75, 0.75, 0.25]])
    assert hypervolume(P, [1, 1, 1]) == pytest.approx(brute_hv(P, [1, 1, 1], n=40), abs=1e-9)


def test_pareto_mask_and_dominance():
    P = np.array([[1, 2], [2, 1], [2, 2], [1, 2]])
    np.testing.assert_array_equal(pareto_mask(P), [True, True, False, True])
    assert dominates([1, 1], [1, 2]) and not dominates([1, 2], [1, 2])
    with pytest.raises(ValueError, match="points"):
        pareto_mask(np.empty((0, 2)))
    with pytest.raises(ValueError, match="ref"):
        hypervolume(P, [1, 2, 3])
    with pytest.raises(ValueError, match="NaN"):
        hypervolume([[np.nan, 1]], [2, 2])
