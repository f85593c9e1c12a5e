import numpy as np
import pytest

from causal_ts.metrics import (
    auprc_trapezoid,
    average_precision,
    best_f1,
    evaluate,
    point_adjust,
    precision_recall_f1,
    window_labels,
)


def test_window_labels() -> None:
    y = np.array([0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(window_labels(y, 3), [1, 1, 1, 0])
    with pytest.raises(ValueError, match="window"):
        window_labels(y, 7)


def test_point_adjust_segments_including_index_zero() -> None:
    y = np.array([1, 1, 0, 0, 1, 1, 1, 0, 1, 1])
    pred = np.array([0, 1, 0, 1, 0, 0, 0, 0, 0, 1])
    out = point_adjust(pred, y)
    np.testing.assert_array_equal(out, [1, 1, 0, 1, 0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(pred, [0, 1, 0, 1, 0, 0, 0, 0, 0, 1])  # not mutated


def test_precision_recall_f1_hand_case() -> None:
    p, r, f = precision_recall_f1(np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0]))
    assert (p, r, f) == (0.5, 0.5, 0.5)


def test_best_f1_brute_force() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 40)
    s = rng.normal(size=40) + y
    best = best_f1(s, y)
    brute = max(precision_recall_f1((s >= t).astype(int), y)[2] for t in s)
    assert best["F1"] == pytest.approx(brute)
    assert precision_recall_f1((s >= best["threshold"]).astype(int), y)[2] == pytest.approx(brute)


def test_auprc_trapezoid_differs_from_ap() -> None:
    y = np.array([0, 1, 0, 1, 1, 0, 0, 1])
    s = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.7, 0.05, 0.3])
    a, b = auprc_trapezoid(s, y), average_precision(s, y)
    assert a != pytest.approx(b)
    res = evaluate(s, y)
    assert res["AUPRC"] == pytest.approx(a) and res["AP"] == pytest.approx(b)


def test_evaluate_perfect_scores() -> None:
    y = np.array([0, 0, 1, 1, 0])
    res = evaluate(y.astype(float), y)
    assert res["AUROC"] == 1.0 and res["F1"] == 1.0 and res["F1_PA"] == 1.0


def test_f1_pa_counts_whole_segment() -> None:
    # one long segment hit at a single point; every other point scores low
    y = np.array([0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0])
    s = np.array([-1.0, 0, 0, 0.9, 0, 0, 0, 0, 0, -1, -1, -1])
    res = evaluate(s, y)
    pa = point_adjust((s >= res["threshold"]).astype(int), y)
    assert res["F1_PA"] == pytest.approx(precision_recall_f1(pa, y)[2])
    assert res["F1_PA"] >= res["F1"]
    # at the 0.9 threshold the single hit recovers the whole segment
    assert precision_recall_f1(point_adjust((s >= 0.9).astype(int), y), y)[2] == 1.0


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="labels"):
        evaluate(np.ones(3), np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="lengths"):
        evaluate(np.ones(3), np.array([0, 1]))
    with pytest.raises(ValueError, match="both classes"):
        evaluate(np.ones(3), np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="NaN"):
        evaluate(np.array([np.nan, 1.0]), np.array([0, 1]))
