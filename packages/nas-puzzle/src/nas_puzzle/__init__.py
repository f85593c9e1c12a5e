"""Puzzle: blockwise local distillation and MIP architecture search (Bercovich et al., ICML 2025).

Pipeline: train/load a llama-style parent (:class:`HeteroDecoder`) -> :class:`SearchSpace` ->
:func:`build_library` (training-free inits + BLD) -> :func:`replace_one_block` scores ->
:func:`estimate` costs -> :func:`solve` (MIP) -> :func:`realize` -> :func:`uptrain` (GKD) ->
:func:`evaluate`.
"""

from nas_puzzle import baselines
from nas_puzzle.assemble import realize
from nas_puzzle.bld import BlockLibrary, build_library, count_units, parent_activations
from nas_puzzle.config import AttentionConfig, BlockConfig, DecoderConfig, FFNConfig
from nas_puzzle.cost import (
    CostTable,
    RooflineModel,
    Scenario,
    estimate,
    time_round_robin,
    validate_costs,
    variant_num_params,
)
from nas_puzzle.data import ByteTokenizer, batch_iter, eval_windows, split_tokens, toy_corpus
from nas_puzzle.decilm import DecilmLayoutError, from_decilm, to_decilm
from nas_puzzle.demo import demo
from nas_puzzle.evaluation import evaluate, measure_throughput
from nas_puzzle.gkd import uptrain
from nas_puzzle.hf import SUPPORTED_FAMILIES, UnsupportedModelError, from_hf, to_hf
from nas_puzzle.initializers import channel_contribution, init_attention, init_ffn
from nas_puzzle.losses import cosine_hidden_loss, gkd_loss, kl_to_parent, normalized_mse_loss
from nas_puzzle.mip import (
    Constraints,
    InfeasibleError,
    Solution,
    SolverError,
    solve,
    solve_grouped,
    solve_library_dict,
    solve_many,
    sweep_batch_sizes,
)
from nas_puzzle.model import HeteroDecoder, KVCache, infer_block_configs
from nas_puzzle.pipeline import Puzzle
from nas_puzzle.scoring import ScoreTable, replace_one_block
from nas_puzzle.search_space import SearchSpace
from nas_puzzle.train import train_parent

__all__ = [
    "SUPPORTED_FAMILIES",
    "AttentionConfig",
    "BlockConfig",
    "BlockLibrary",
    "ByteTokenizer",
    "Constraints",
    "CostTable",
    "DecilmLayoutError",
    "DecoderConfig",
    "FFNConfig",
    "HeteroDecoder",
    "InfeasibleError",
    "KVCache",
    "Puzzle",
    "RooflineModel",
    "Scenario",
    "ScoreTable",
    "SearchSpace",
    "Solution",
    "SolverError",
    "UnsupportedModelError",
    "__version__",
    "baselines",
    "batch_iter",
    "build_library",
    "channel_contribution",
    "cosine_hidden_loss",
    "count_units",
    "demo",
    "estimate",
    "eval_windows",
    "evaluate",
    "from_decilm",
    "from_hf",
    "gkd_loss",
    "infer_block_configs",
    "init_attention",
    "init_ffn",
    "kl_to_parent",
    "measure_throughput",
    "normalized_mse_loss",
    "parent_activations",
    "realize",
    "replace_one_block",
    "solve",
    "solve_grouped",
    "solve_library_dict",
    "solve_many",
    "split_tokens",
    "sweep_batch_sizes",
    "time_round_robin",
    "to_decilm",
    "to_hf",
    "toy_corpus",
    "train_parent",
    "uptrain",
    "validate_costs",
    "variant_num_params",
]

__version__ = "0.1.0"
