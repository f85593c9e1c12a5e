"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

import time

import numpy as np
import torch

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Train a tiny Diffuser on the U-maze and compare plain vs LoMAP sampling.

    Collects a small D4RL-style dataset, trains a small temporal U-Net for a few
    hundred steps, then samples 64 plans from random start cells to the goal with
    and without LoMAP (same model, same noise seed).

    Parameters
    ----------
    seed : int, default=0
        Seed for data collection, training and sampling.

    Returns
    -------
    str
        Table of infeasible-plan fraction and planning time per method.
    """
    from lomap_planner.datasets import collect_maze2d_dataset, make_windows
    from lomap_planner.diffusion import GaussianDiffusion
    from lomap_planner.env import PointMazeEnv
    from lomap_planner.geometry import segments_hit_walls
    from lomap_planner.lomap import LoMAP
    from lomap_planner.metrics import infeasible_plan_fraction
    from lomap_planner.normalizers import LimitsNormalizer
    from lomap_planner.planner import DiffuserPlanner
    from lomap_planner.training import train_diffusion
    from lomap_planner.unet import TemporalUnet

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        env = PointMazeEnv("umaze", frame_skip=10)
        data = collect_maze2d_dataset(env, 4000, n_streams=40, seed=seed)
        windows = make_windows(data, 16, include_actions=False)
        norm = LimitsNormalizer(windows)
        wn = norm.normalize(windows).astype(np.float32)
        torch.manual_seed(seed)
        net = TemporalUnet(16, 4, dim=16, dim_mults=(1, 2))
        diff = GaussianDiffusion(net, 16, 4, 0, n_timesteps=16)
        train_diffusion(diff, wn, n_steps=300, batch_size=32, lr=2e-3, seed=seed)
        rng = np.random.default_rng(seed)
        starts = env.free[rng.integers(len(env.free), size=64)] + rng.uniform(-0.1, 0.1, (64, 2))
        obs = np.concatenate([starts, np.zeros((64, 2))], 1)
        lines = [f"{'method':<16} {'infeasible plans':>16} {'bad segments':>12} {'ms/plan':>8}"]
        for name, lm in [("Diffuser", None), ("Diffuser+LoMAP", LoMAP(wn, n_neighbors=10))]:
            planner = DiffuserPlanner(diff, norm, lomap=lm)
            t0 = time.perf_counter()
            plans = planner.plan(obs, env.goal, seed=seed)
            ms = 1000 * (time.perf_counter() - t0) / len(obs)
            frac = infeasible_plan_fraction(plans, env.walls, slice(0, 2))
            pos = plans[..., :2]
            seg = segments_hit_walls(pos[:, :-1], pos[:, 1:], env.walls).mean()
            lines.append(f"{name:<16} {frac:>16.3f} {seg:>12.3f} {ms:>8.1f}")
    finally:
        torch.set_num_threads(threads)
    return "lomap-planner demo (U-maze, tiny model, 64 plans)\n" + "\n".join(lines)
