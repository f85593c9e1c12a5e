import numpy as np
import pytest

from isocal import accuracy, adaptive_ece, brier_score, classwise_ece, log_loss, top_label_ece

P = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
Y = np.array([0, 1, 1, 1])


def test_log_loss_brier_accuracy_by_hand():
    ll = -(np.log(0.9) + np.log(0.4) + np.log(0.7) + np.log(0.8)) / 4
    assert log_loss(Y, P) == pytest.approx(ll)
    br = (2 * 0.1**2 + 2 * 0.6**2 + 2 * 0.3**2 + 2 * 0.2**2) / 4
    assert brier_score(Y, P) == pytest.approx(br)
    assert accuracy(Y, P) == pytest.approx(0.75)
    assert log_loss([1], [[1.0, 0.0]]) == pytest.approx(-np.log(1e-15))


def test_top_label_ece_by_hand():
    # confidences .9 (hit), .6 (miss), .7 (hit), .8 (hit); 2 bins (0,.5], (.5,1]
    assert top_label_ece(Y, P, n_bins=2) == pytest.approx(abs(3 - 3.0) / 4)
    # 10 bins: each conf alone: |1-.9|+|0-.6|+|1-.7|+|1-.8| = 1.2
    assert top_label_ece(Y, P, n_bins=10) == pytest.approx(1.2 / 4)


def test_adaptive_and_classwise_ece_by_hand():
    # equal-mass 2 bins on sorted confidences [.6,.7 | .8,.9]: |1-1.3| + |2-1.7| = 0.6
    assert adaptive_ece(Y, P, n_bins=2) == pytest.approx(0.6 / 4)
    # class 1 scores .1,.4,.7,.8 with hits 0,1,1,1; 2 bins: (0,.5]: |1-.5|, (.5,1]: |2-1.5|
    # class 0 mirrors it exactly
    assert classwise_ece(Y, P, n_bins=2) == pytest.approx(1.0 / 4)


def test_perfect_calibration_has_zero_ece():
    P2 = np.array([[0.5, 0.5]] * 4)
    y2 = np.array([0, 1, 1, 0])  # argmax picks class 0, right half the time
    assert top_label_ece(y2, P2) == pytest.approx(0.0)


@pytest.mark.parametrize("fn", [log_loss, brier_score, top_label_ece, classwise_ece, adaptive_ece])
def test_metric_input_errors(fn):
    with pytest.raises(ValueError, match="y"):
        fn([0, 1], P)
    with pytest.raises(ValueError, match="probs"):
        fn(Y, P * 2)


def test_bins_validated():
    with pytest.raises(ValueError, match="n_bins"):
        top_label_ece(Y, P, n_bins=0)
    with pytest.raises(TypeError, match="n_bins"):
        classwise_ece(Y, P, n_bins=2.5)
