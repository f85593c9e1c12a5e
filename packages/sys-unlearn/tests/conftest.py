import numpy as np
import pytest


@pytest.fixture
def stream() -> tuple[np.ndarray, np.ndarray]:
    """A small noisy margin stream: 600 points in 5-D, labels in {0, 1}."""
    from sys_unlearn import make_margin_stream

    return make_margin_stream(600, 5, margin=0.05, label_noise=0.05, random_state=3)
