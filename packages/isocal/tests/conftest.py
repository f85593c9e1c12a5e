import numpy as np
import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _single_thread_blas():
    # Tiny matrices + many BLAS threads on a shared machine is mostly contention.
    with threadpool_limits(1):
        yield


@pytest.fixture
def small_problem():
    rng = np.random.default_rng(0)
    n, K = 60, 4
    P = rng.dirichlet(np.full(K, 0.6), size=n)
    y = np.array([rng.choice(K, p=np.sqrt(p) / np.sqrt(p).sum()) for p in P])
    y[:K] = np.arange(K)  # every class present
    return P, y
