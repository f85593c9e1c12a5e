"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

import torch

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Puzzle on a tiny generated-text parent: MIP child vs the best homogeneous child at 60% runtime.

    Trains a 3-layer byte-level parent for a few steps, builds a decoupled BLD library, scores
    every (layer, variant) by replace-1-block KL, and compares the MIP child with the best
    homogeneous child under the same analytic runtime budget (no GKD).

    Parameters
    ----------
    seed : int, default=0
        Seed for the generated corpus, training and BLD.

    Returns
    -------
    str
        A plain-text table: held-out KL to the parent, LM loss, runtime fraction.
    """
    from nas_puzzle import baselines
    from nas_puzzle.assemble import realize
    from nas_puzzle.bld import build_library
    from nas_puzzle.config import DecoderConfig
    from nas_puzzle.cost import Scenario, estimate
    from nas_puzzle.data import split_tokens, toy_corpus
    from nas_puzzle.evaluation import evaluate
    from nas_puzzle.mip import Constraints, solve
    from nas_puzzle.scoring import replace_one_block
    from nas_puzzle.search_space import SearchSpace
    from nas_puzzle.train import train_parent

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        cfg = DecoderConfig(d_model=32, n_layers=3, n_heads=4, n_kv_heads=4,
                            ffn_intermediate=64, max_seq_len=32)  # fmt: skip
        train, val, test = split_tokens(toy_corpus(120_000, seed=seed))
        parent = train_parent(cfg, train, steps=100, lr=1e-2, batch_size=8, seed=seed)
        space = SearchSpace.paper_default(cfg, ffn_ratios=(1.0, 0.5, 0.25))
        lib = build_library(parent, space, train, steps=40, batch_size=8, seed=seed)
        scores = replace_one_block(parent, lib, val, max_windows=16)
        costs = estimate(space, cfg, Scenario(batch_sizes=(8,), prefill_len=16, decode_len=16))
        full = costs.model_totals([space.index(cfg.parent_block)] * cfg.n_layers, 8)
        cons = Constraints(latency_max_s=0.6 * full["runtime_s"])
        rows = [("parent", None)]
        rows.append(("puzzle-mip", solve(scores, costs, cons)))
        rows.append(("homogeneous", baselines.best_homogeneous(scores, costs, cons)))
        lines = [
            "nas-puzzle demo: 3-layer parent, budget 60% of parent runtime (analytic, b=8)",
            f"{'method':<11} {'KL->parent':>10} {'LM loss':>8} {'runtime':>8}  layers",
        ]
        for name, sol in rows:
            child = parent if sol is None else realize(parent, lib, sol)
            m = evaluate(child, parent, test, max_windows=16)
            frac = 1.0 if sol is None else sol.totals["runtime_s"] / full["runtime_s"]
            arch = "parent" if sol is None else " ".join(sol.names)
            lines.append(
                f"{name:<11} {m['kl_to_parent']:>10.4f} {m['lm_loss']:>8.3f} {frac:>8.2f}  {arch}"
            )
        return "\n".join(lines)
    finally:
        torch.set_num_threads(old)
