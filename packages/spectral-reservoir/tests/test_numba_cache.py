"""The compiled reservoir kernel is cached once: a second process reuses it, adds nothing."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

RUN = (
    "from spectral_reservoir import SARCClassifier, make_lag_sign\n"
    "X, y = make_lag_sign(20, L=30, period=5, seed=0)\n"
    "SARCClassifier(n_reservoir=3, period_mode='base').fit(X, y).predict(X[:3])\n"
)


def test_a_second_process_reuses_the_cached_kernel(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", RUN], env=env, check=True, timeout=300)
        files = sorted(p.name for p in tmp_path.rglob("*.nbc"))
        if _ == 0:
            first = files
    # a dispatcher passed as an argument made every process compile a new specialisation
    assert files == first and len(files) >= 1
