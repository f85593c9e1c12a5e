"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Transfer a cost model from ``sim-cpu`` to ``sim-accel`` with 5% of the target data.

    Generates matrices, collects simulated SpMM runtimes on both platforms, then compares a
    target-only model trained on 5% of the target data with the COGNATE-style transferred model
    on the same 5%, and a target-only model on all of it (geomean speedups over the default
    configuration on held-out matrices).

    Parameters
    ----------
    seed : int, default=0
        Seed for matrices, sampling and models.

    Returns
    -------
    str
        A plain-text table.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is faster on a shared machine
    try:
        return _run(seed)
    finally:
        torch.set_num_threads(threads)


def _run(seed: int) -> str:
    from cost_model.dataset import collect
    from cost_model.features import MatrixFeaturizer
    from cost_model.kernels import SimAccelBackend, SimCPUBackend
    from cost_model.matrices import MatrixSet
    from cost_model.transfer import run_experiment

    ms = MatrixSet.synthetic(30, seed=seed, rows=(256, 2048), nnz=(1e3, 2e4))
    feat = MatrixFeaturizer(16)
    src = collect(SimCPUBackend(), "spmm", ms, n_configs=12, seed=seed, featurizer=feat)
    tgt = collect(SimAccelBackend(), "spmm", ms, n_configs=12, seed=seed + 1, featurizer=feat)
    train, test = tgt.split(test_frac=1 / 3, seed=seed)
    held_out = set(test.matrix_names)  # the test matrices stay out of the source set too
    src = src.take_matrices(np.flatnonzero([n not in held_out for n in src.matrix_names]))
    res = run_experiment(
        src,
        train,
        test,
        fracs=(0.05,),
        seeds=(seed,),
        strategies=("cognate", "target_only", "target_full"),
        src_epochs=15,
        tgt_epochs=30,
        model_kwargs={"resolution": 16, "embed_dim": 32},
    )
    return "sim-cpu -> sim-accel, SpMM, 5% of target data\n" + res.table()
