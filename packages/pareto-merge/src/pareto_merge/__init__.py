"""Pareto Merging: preference-conditioned model merging (Chen & Kwok, ICML 2025).

Works on ``state_dict``s of any torch model: task vectors, the single-model baselines (weight
averaging, Task Arithmetic, TIES-Merging, AdaMerging) and :class:`ParetoMerger`, which learns in
one run a merged model for every preference vector on the simplex.
"""

from pareto_merge.baselines import (
    task_arithmetic,
    ties_merge,
    tune_task_arithmetic,
    weight_average,
    weighted_task_arithmetic,
)
from pareto_merge.demo import demo
from pareto_merge.io import LazyStateDict, load_state_dict, load_state_dicts, save_state_dict
from pareto_merge.moo import dominates, hypervolume, pareto_mask
from pareto_merge.objectives import cross_entropy_objective, entropy_objective
from pareto_merge.pareto import ParetoMerger, adamerging, check_preference, simplex_grid
from pareto_merge.state import check_state_dicts, task_vectors

__all__ = [
    "LazyStateDict",
    "ParetoMerger",
    "__version__",
    "adamerging",
    "check_preference",
    "check_state_dicts",
    "cross_entropy_objective",
    "demo",
    "dominates",
    "entropy_objective",
    "hypervolume",
    "load_state_dict",
    "load_state_dicts",
    "pareto_mask",
    "save_state_dict",
    "simplex_grid",
    "task_arithmetic",
    "task_vectors",
    "ties_merge",
    "tune_task_arithmetic",
    "weight_average",
    "weighted_task_arithmetic",
]

__version__ = "0.1.0"
