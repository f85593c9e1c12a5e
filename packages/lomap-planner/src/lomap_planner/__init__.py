"""LoMAP manifold projection for diffusion planners on gymnasium mazes."""

from lomap_planner.controller import D4RLWaypointController, WaypointController
from lomap_planner.datasets import (
    D4RL_FRAME_OFFSET,
    collect_d4rl_dataset,
    collect_maze2d_dataset,
    d4rl_goal,
    d4rl_sparse_rewards,
    detect_frame,
    episode_bounds,
    from_d4rl_frame,
    load_hdf5,
    load_minari,
    make_windows,
    maze2d_set_terminals,
    save_hdf5,
    subsample_frames,
    to_d4rl_frame,
    validate_dataset,
    wall_clearance,
    wall_fraction,
)
from lomap_planner.demo import demo
from lomap_planner.diffusion import GaussianDiffusion, apply_conditioning, cosine_beta_schedule
from lomap_planner.env import PointMazeEnv, register_envs
from lomap_planner.geometry import plan_is_infeasible, segments_hit_walls
from lomap_planner.hierarchical import HierarchicalPlanner, make_hierarchical_windows
from lomap_planner.hooks import LoMAPProjector
from lomap_planner.layouts import LAYOUTS, get_layout, parse_layout
from lomap_planner.lomap import LoMAP, local_pca, project_affine
from lomap_planner.metrics import (
    D4RL_REF_MAX_SCORE,
    D4RL_REF_MIN_SCORE,
    infeasible_plan_fraction,
    normalized_score,
    rollout_planner,
)
from lomap_planner.neighbors import NeighborIndex
from lomap_planner.normalizers import LimitsNormalizer
from lomap_planner.physics import PhysicsParams, point_mass_step
from lomap_planner.planner import DiffuserPlanner
from lomap_planner.training import DiffusionTrainer, goal_conditions, train_diffusion
from lomap_planner.unet import TemporalUnet

__all__ = [
    "D4RL_FRAME_OFFSET",
    "D4RL_REF_MAX_SCORE",
    "D4RL_REF_MIN_SCORE",
    "LAYOUTS",
    "D4RLWaypointController",
    "DiffuserPlanner",
    "DiffusionTrainer",
    "GaussianDiffusion",
    "HierarchicalPlanner",
    "LimitsNormalizer",
    "LoMAP",
    "LoMAPProjector",
    "NeighborIndex",
    "PhysicsParams",
    "PointMazeEnv",
    "TemporalUnet",
    "WaypointController",
    "__version__",
    "apply_conditioning",
    "collect_d4rl_dataset",
    "collect_maze2d_dataset",
    "cosine_beta_schedule",
    "d4rl_goal",
    "d4rl_sparse_rewards",
    "demo",
    "detect_frame",
    "episode_bounds",
    "from_d4rl_frame",
    "get_layout",
    "goal_conditions",
    "infeasible_plan_fraction",
    "load_hdf5",
    "load_minari",
    "local_pca",
    "make_hierarchical_windows",
    "make_windows",
    "maze2d_set_terminals",
    "normalized_score",
    "parse_layout",
    "plan_is_infeasible",
    "point_mass_step",
    "project_affine",
    "register_envs",
    "rollout_planner",
    "save_hdf5",
    "segments_hit_walls",
    "subsample_frames",
    "to_d4rl_frame",
    "train_diffusion",
    "validate_dataset",
    "wall_clearance",
    "wall_fraction",
]

__version__ = "0.1.0"
