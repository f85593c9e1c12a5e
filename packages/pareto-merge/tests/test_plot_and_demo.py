import numpy as np
import pytest

from pareto_merge.plotting import plot_front


def test_plot_front(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "front.png"
    fig = plot_front(
        np.array([[0.9, 0.5], [0.7, 0.8]]),
        {"TA": (0.8, 0.6)},
        path=str(path),
        other_fronts={"weighted TA": [[0.95, 0.3], [0.6, 0.85]]},
    )
    assert path.stat().st_size > 0 and fig is not None
    with pytest.raises(ValueError, match="front"):
        plot_front(np.zeros((3, 3)))


def test_digit_tasks_and_demo():
    from pareto_merge import demo
    from pareto_merge.tasks import make_digit_tasks

    source, tasks = make_digit_tasks(("rot90", "blur"))
    assert [t.name for t in tasks] == ["rot90", "blur"]
    assert source.X_train.shape[1] == 64 and float(source.X_train.max()) <= 1.0
    with pytest.raises(ValueError, match="domains"):
        make_digit_tasks(("nope",))
    out = demo(seed=0)
    assert "Pareto Merging, equal preference" in out and "capacity control" in out
    assert "weighted task arithmetic front" in out


def test_cnn_backbone_and_experiment_validation():
    import torch

    from pareto_merge.experiment import merging_experiment
    from pareto_merge.tasks import make_backbone

    net = make_backbone(arch="cnn")
    assert net(torch.rand(5, 64)).shape == (5, 32)
    with pytest.raises(ValueError, match="arch"):
        make_backbone(arch="vit")
    with pytest.raises(ValueError, match="objective"):
        merging_experiment(objective="mse")
