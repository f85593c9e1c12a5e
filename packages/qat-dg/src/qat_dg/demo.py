"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

import torch

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """ERM vs QT-DoG (7-bit LSQ QAT) on two held-out rotated-digits domains.

    Trains a small MLP for 120 steps per target domain (rotations 0/30/60 degrees, targets
    0 and 60 degrees), selects checkpoints by training-domain validation and reports target
    accuracy and model size. Takes a few seconds on one CPU thread.

    Parameters
    ----------
    seed : int, default=0
        Seed of data shuffling, splits, initialisation and minibatches.

    Returns
    -------
    str
        A plain-text table: algorithm, mean target accuracy, size in bytes, size ratio.
    """
    from qat_dg.data import RotatedDigits
    from qat_dg.quant import model_size_bytes
    from qat_dg.train import TrainConfig, train_loo

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ds = RotatedDigits(angles=(0, 30, 60), size=8, seed=seed)
        cfg = TrainConfig(n_steps=120, checkpoint_freq=30, test_envs=[0, 2], seed=seed)
        hp = {"arch": "mlp", "quant_start_step": 50}
        rows = []
        for alg in ("ERM", "QTDoG"):
            res = train_loo(ds, alg, hp, cfg)
            acc = [r["iid"] for r in res.values()]
            size = model_size_bytes(res[0]["model"].network)
            rows.append((alg, acc, size))
    finally:
        torch.set_num_threads(threads)
    base = rows[0][2]
    lines = [
        "qat-dg demo: RotatedDigits (0/30/60 deg), targets 0 and 60 deg, MLP, 120 steps",
        f"{'algorithm':<10}{'tgt 0deg':>10}{'tgt 60deg':>11}{'mean':>8}{'bytes':>9}{'size':>7}",
    ]
    for alg, acc, size in rows:
        mean = sum(acc) / len(acc)
        lines.append(
            f"{alg:<10}{acc[0]:>10.3f}{acc[1]:>11.3f}{mean:>8.3f}{size:>9.0f}{size / base:>6.2f}x"
        )
    return "\n".join(lines)
