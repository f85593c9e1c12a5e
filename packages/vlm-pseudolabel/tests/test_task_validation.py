"""check_task rejects the task-assembly mistakes that otherwise crash deep inside fit or train
on the wrong classes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from vlm_pseudolabel import ZeroShot, evaluate, make_synthetic_vlm_task, margin_cross_entropy
from vlm_pseudolabel.base import check_task


@pytest.fixture(scope="module")
def task():
    return make_synthetic_vlm_task(n_classes=6, dim=16, n_groups=2, n_unlabeled=10, n_test=5,
                                   n_mismatch=1, n_confused_groups=1, seed=0)  # fmt: skip


def _trzsl(task, seen, unseen):
    y = task.y_unlabeled
    keep = np.isin(y, seen)
    return dataclasses.replace(task, paradigm="trzsl", seen=np.asarray(seen),
                               unseen=np.asarray(unseen), X_labeled=task.X_unlabeled[keep],
                               y_labeled=y[keep])  # fmt: skip


@pytest.mark.parametrize(
    ("change", "name"),
    [
        (lambda t: dataclasses.replace(t, y_unlabeled=t.y_unlabeled[:3]), "y_unlabeled"),
        (lambda t: dataclasses.replace(t, y_test=t.y_test.astype(float)), "y_test"),
        (lambda t: _trzsl(t, [0, 1, 2], [2, 3, 4, 5]), "seen, unseen"),
        (lambda t: _trzsl(t, [0, 1, 2], [3, 4, 6]), "unseen"),
        (lambda t: dataclasses.replace(_trzsl(t, [0, 1, 2], [3, 4, 5]), seen=np.array([0, 1])), "y_labeled"),
    ],
)  # fmt: skip
def test_bad_tasks_raise_naming_the_field(task, change, name) -> None:
    bad = change(task)
    with pytest.raises((ValueError, TypeError), match=name):
        check_task(bad)
    with pytest.raises((ValueError, TypeError), match=name):
        ZeroShot().fit(bad)


def test_valid_trzsl_task_passes(task) -> None:
    check_task(_trzsl(task, [0, 1, 2], [3, 4, 5]))


def test_nan_logits_and_bad_labels_raise() -> None:
    logits = torch.zeros(3, 4)
    with pytest.raises(ValueError, match="logits"):
        margin_cross_entropy(logits.fill_(float("nan")), torch.tensor([0, 1, 2]), torch.zeros(4, 4))
    with pytest.raises(TypeError, match="y_true"):
        evaluate(np.array([0.5, 1.0]), np.array([0, 1]))
