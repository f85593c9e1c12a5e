"""Symmetry-aware GFlowNets (automorphism reward correction)."""

from gfn_symmetry.approximate import (
    log_wl_automorphism_bound,
    random_walk_pe,
    wl_automorphism_bound,
)
from gfn_symmetry.automorphisms import IsoClassCache, count_automorphisms, log_count_automorphisms
from gfn_symmetry.batching import GraphBatch, featurize
from gfn_symmetry.demo import demo
from gfn_symmetry.dense import (
    DenseGFlowNet,
    DenseGraphEnv,
    DenseGraphPolicy,
    dense_terminal_distribution,
)
from gfn_symmetry.env import GraphAction, GraphEnv
from gfn_symmetry.exact import (
    StateSpace,
    action_tb_residuals,
    build_state_space,
    exact_terminal_distribution,
    optimal_state_policy,
    state_policy_distribution,
    target_distribution,
)
from gfn_symmetry.fragment_env import FragmentEnv
from gfn_symmetry.gflownet import GFlowNet, Trajectory
from gfn_symmetry.likelihood import estimate_log_likelihood
from gfn_symmetry.losses import (
    detailed_balance_loss,
    subtrajectory_balance_loss,
    trajectory_balance_loss,
)
from gfn_symmetry.metrics import (
    empirical_distribution,
    l1_distance,
    pearson_correlation,
    top_k_discovered,
)
from gfn_symmetry.molecule import MoleculeEnv, molecule_fragments, molecule_reward
from gfn_symmetry.policy import GraphPolicy
from gfn_symmetry.rewards import (
    cliques_log_reward,
    cliques_reward,
    cycle_reward,
    density_reward,
    log_reward,
    uniform_reward,
)
from gfn_symmetry.symmetry import (
    backward_equivalent_count,
    equivalent_action_indices,
    log_symmetry_correction,
)

__all__ = [
    "DenseGFlowNet",
    "DenseGraphEnv",
    "DenseGraphPolicy",
    "FragmentEnv",
    "GFlowNet",
    "GraphAction",
    "GraphBatch",
    "GraphEnv",
    "GraphPolicy",
    "IsoClassCache",
    "MoleculeEnv",
    "StateSpace",
    "Trajectory",
    "__version__",
    "action_tb_residuals",
    "backward_equivalent_count",
    "build_state_space",
    "cliques_log_reward",
    "cliques_reward",
    "count_automorphisms",
    "cycle_reward",
    "demo",
    "dense_terminal_distribution",
    "density_reward",
    "detailed_balance_loss",
    "empirical_distribution",
    "equivalent_action_indices",
    "estimate_log_likelihood",
    "exact_terminal_distribution",
    "featurize",
    "l1_distance",
    "log_count_automorphisms",
    "log_reward",
    "log_symmetry_correction",
    "log_wl_automorphism_bound",
    "molecule_fragments",
    "molecule_reward",
    "optimal_state_policy",
    "pearson_correlation",
    "random_walk_pe",
    "state_policy_distribution",
    "subtrajectory_balance_loss",
    "target_distribution",
    "top_k_discovered",
    "trajectory_balance_loss",
    "uniform_reward",
    "wl_automorphism_bound",
]

__version__ = "0.1.0"
