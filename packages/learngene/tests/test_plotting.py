import numpy as np
import pytest

pytest.importorskip("matplotlib")

from learngene.plotting import plot_finetune_curves, plot_task_pca


def test_plots_write_files(tmp_path):
    p1, p2 = tmp_path / "ft.png", tmp_path / "pca.png"
    plot_finetune_curves({"TAL": [0.5, 0.7, 0.8], "RandInit": [0.1, 0.4, 0.6]}, str(p1), "shapes")
    rng = np.random.default_rng(0)
    plot_task_pca({"a": rng.normal(size=(10, 4)), "b": rng.normal(2, 1, size=(10, 4))}, str(p2))
    assert p1.stat().st_size > 0 and p2.stat().st_size > 0


def test_plot_bad_input():
    with pytest.raises(ValueError, match="curves"):
        plot_finetune_curves({})
    with pytest.raises(ValueError, match="width"):
        plot_task_pca({"a": np.zeros((3, 4)), "b": np.zeros((3, 5))})
