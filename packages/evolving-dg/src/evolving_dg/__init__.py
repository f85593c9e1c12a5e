"""evolving-dg: SYNC (He et al., ICML 2025), static–dynamic causal representation learning for
evolving domain generalization, with the EDG benchmarks' generators and baselines.

>>> from evolving_dg import SYNC, make_circle
>>> src, val, tgt = make_circle(seed=0).default_split()
>>> model = SYNC(epochs=2, iters_per_epoch=5).fit(src, val_domains=val)  # doctest: +SKIP
"""

from evolving_dg.baselines import ERM, IRM, ERMLast, irm_penalty
from evolving_dg.data import (
    EvolvingDataset,
    make_circle,
    make_rotated_digits,
    make_sine,
    make_spurious_circle,
)
from evolving_dg.demo import demo
from evolving_dg.metrics import evolving_report
from evolving_dg.sync import LSSAE, SYNC, SYNCNet, ablation

__all__ = [
    "ERM",
    "IRM",
    "LSSAE",
    "SYNC",
    "ERMLast",
    "EvolvingDataset",
    "SYNCNet",
    "ablation",
    "demo",
    "evolving_report",
    "irm_penalty",
    "make_circle",
    "make_rotated_digits",
    "make_sine",
    "make_spurious_circle",
]
__version__ = "0.1.0"
