import numpy as np
import pytest

from interaction_moe import demo


def test_demo_runs():
    out = demo(0)
    assert "I2MoE" in out and "routing accuracy" in out


def test_plot_type_weights(tmp_path):
    pytest.importorskip("matplotlib")
    from interaction_moe.plotting import plot_type_weights

    plot_type_weights(np.eye(4), ["a", "b", "c", "d"], path=str(tmp_path / "w.png"))
    assert (tmp_path / "w.png").stat().st_size > 0
    with pytest.raises(ValueError, match="W must be"):
        plot_type_weights(np.eye(3), ["a", "b"])
