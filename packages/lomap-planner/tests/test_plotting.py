import numpy as np
import pytest

from lomap_planner.layouts import get_layout


def test_plot_plans_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    from lomap_planner.plotting import plot_plans

    walls = get_layout("umaze")
    plans = np.zeros((2, 3, 6))
    plans[:, :, 2:4] = [[1, 1], [1, 2], [1, 3]]
    path = tmp_path / "plans.png"
    plot_plans(walls, {"a": plans, "b": plans}, path)
    assert path.stat().st_size > 0
    with pytest.raises(ValueError, match="plan_sets"):
        plot_plans(walls, {}, path)
