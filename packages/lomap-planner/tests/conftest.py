import numpy as np
import pytest
import torch

from lomap_planner.datasets import collect_maze2d_dataset, make_windows
from lomap_planner.env import PointMazeEnv
from lomap_planner.normalizers import LimitsNormalizer

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_env():
    return PointMazeEnv("tiny", frame_skip=10, max_episode_steps=20)


@pytest.fixture(scope="session")
def tiny_data(tiny_env):
    return collect_maze2d_dataset(tiny_env, 1200, n_streams=12, seed=0)


@pytest.fixture(scope="session")
def tiny_windows(tiny_data):
    w = make_windows(tiny_data, 8)
    norm = LimitsNormalizer(w)
    return w, norm, norm.normalize(w).astype(np.float32)
