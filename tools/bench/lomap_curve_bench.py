"""Benchmark: does a longer-trained Diffuser become credible on Maze2D-large? (issue #47, item 3)

``lomap_bench.py`` trains 6,000 steps with 20 diffusion steps on 20k env steps of data, and on
large 92 % of the plain Diffuser's plans cross a wall. This script tests the "undertrained"
diagnosis directly: per seed it collects more data (D4RL's collector), trains one Diffuser with
Diffuser's 256 diffusion steps for ``--train-steps`` and, at every ``--checkpoints`` step,
samples the first plans from the same ``--plans`` start states with and without LoMAP (the
official large configuration) and counts the infeasible ones. The last checkpoint is also
evaluated in closed loop (normalised score, beside the published numbers).

Every seed is cached as one item (a stopped run resumes) and its checkpoints are written as
safetensors under ``tools/bench/.cache/lomap-ckpt/`` (EMA denoiser weights, ~4 MB each).

    uv run python tools/bench/lomap_curve_bench.py --jobs 2            # large, 3 seeds
    uv run python tools/bench/lomap_curve_bench.py --quick             # umaze, tiny (~1 min)
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
from lomap_bench import HORIZON, PUBLISHED, plan_level_cut
from record import Run, fmt_sd

from lomap_planner import (
    DiffuserPlanner,
    GaussianDiffusion,
    LimitsNormalizer,
    LoMAP,
    PointMazeEnv,
    TemporalUnet,
    collect_d4rl_dataset,
    d4rl_goal,
    make_windows,
    maze2d_set_terminals,
    normalized_score,
    plan_is_infeasible,
    rollout_planner,
    subsample_frames,
    train_diffusion,
)

CKPT = Path(__file__).resolve().parent / ".cache" / "lomap-ckpt"


def first_plans_infeasible(env, planner, n: int, seed: int) -> list[bool]:
    """Infeasibility of the first plans from ``n`` reset states, as ``rollout_planner`` draws them.

    Starts and sampling seed match ``rollout_planner(env, planner, n, seed)``'s first plans, so
    the closed loop's first ``n_episodes`` plans are a subset of these.
    """
    obs = np.stack([env.spawn().reset(seed=seed + k)[0] for k in range(n)])
    plans = planner.plan(obs, env.goal, seed=seed)
    a = planner.action_dim
    return plan_is_infeasible(plans[..., a : a + 2], env.walls).astype(bool).tolist()


def run_seed(seed: int, args: argparse.Namespace) -> dict:
    """Data, one training run with checkpoints, the curve and the final closed-loop rows."""
    torch.set_num_threads(1)
    layout, h = args.layout, HORIZON[args.layout]
    env = PointMazeEnv(layout, frame_skip=10)
    t0 = time.process_time()
    raw = collect_d4rl_dataset(layout, args.data_steps * 10, seed=seed)
    data = subsample_frames(maze2d_set_terminals(raw, d4rl_goal(layout)), 10)
    w = make_windows(data, h, include_actions=False)
    norm = LimitsNormalizer(w)
    wn = norm.normalize(w).astype(np.float32)
    lomap = LoMAP.for_layout(layout, wn)
    t_data = time.process_time() - t0
    torch.manual_seed(seed)
    mults = (1, 2, 4) if h % 4 == 0 else (1, 2)
    net = TemporalUnet(h, wn.shape[-1], dim=args.dim, dim_mults=mults)
    diff = GaussianDiffusion(net, h, wn.shape[-1], 0, n_timesteps=args.diffusion_steps)
    probe = GaussianDiffusion(
        TemporalUnet(h, wn.shape[-1], dim=args.dim, dim_mults=mults),
        h, wn.shape[-1], 0, n_timesteps=args.diffusion_steps,
    ).eval()  # fmt: skip
    curve, eval_s = [], 0.0

    def at_checkpoint(step: int, ema: torch.nn.Module) -> None:
        nonlocal eval_s
        t = time.process_time()
        probe.model.load_state_dict(ema.state_dict())
        if not args.quick:
            from safetensors.torch import save_file

            CKPT.mkdir(parents=True, exist_ok=True)
            name = f"{layout}_s{seed}_d{args.data_steps}_n{args.diffusion_steps}_{step}.safetensors"
            save_file({k: v.contiguous() for k, v in ema.state_dict().items()}, CKPT / name)
        ev = args.seed_offset + seed
        plain = first_plans_infeasible(env, DiffuserPlanner(probe, norm), args.plans, ev)
        proj = first_plans_infeasible(
            env, DiffuserPlanner(probe, norm, lomap=lomap), args.plans, ev
        )
        curve.append({"step": step, "plain": plain, "lomap": proj})
        eval_s += time.process_time() - t
        print(f"[{layout} seed {seed} step {step}] infeasible plain {np.mean(plain):.3f} "
              f"LoMAP {np.mean(proj):.3f}", flush=True)  # fmt: skip

    t0 = time.process_time()
    losses = train_diffusion(
        diff, wn, n_steps=args.train_steps, batch_size=32, lr=2e-3, seed=seed,
        verbose=args.verbose, checkpoints=args.checkpoints, on_checkpoint=at_checkpoint,
    )  # fmt: skip
    t_train = time.process_time() - t0 - eval_s
    rows = []
    for name, planner in (
        ("Diffuser", DiffuserPlanner(diff, norm)),
        ("Diffuser+LoMAP", DiffuserPlanner(diff, norm, lomap=lomap)),
    ):
        res = rollout_planner(env, planner, n_episodes=args.episodes, seed=args.seed_offset + seed)
        sc = normalized_score(layout, res["returns"])
        rows.append({"method": name, "infeasible": float(res["infeasible"].mean()),
                     "score": float(sc.mean()),
                     "plan_ms": 1000 * float(res["plan_time"].mean()) / args.episodes})  # fmt: skip
    blocks = np.array_split(np.asarray(losses), max(1, args.train_steps // 500))
    return {
        "seed": seed,
        "windows": len(w),
        "curve": curve,
        "final": rows,
        "loss": [float(b.mean()) for b in blocks],
        "cpu_s": {"data": t_data, "train": t_train, "checkpoint_eval": eval_s},
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--layout", default="large", choices=sorted(HORIZON))
    ap.add_argument("--data-steps", type=int, default=100000, help="env steps (x10 physics)")
    ap.add_argument("--train-steps", type=int, default=24000)
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[3000, 6000, 12000, 24000])
    ap.add_argument("--diffusion-steps", type=int, default=256)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--plans", type=int, default=96, help="start states per checkpoint")
    ap.add_argument("--episodes", type=int, default=48, help="closed-loop episodes at the end")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument(
        "--seed-offset", type=int, default=1000, help="evaluation seeds (as lomap_bench)"
    )
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (one thread each)")
    ap.add_argument("--quick", action="store_true", help="umaze, tiny, results in a temp dir")
    ap.add_argument("--verbose", action="store_true", help="training progress bars")
    args = ap.parse_args()
    if args.quick:
        args.layout, args.data_steps, args.train_steps, args.checkpoints = (
            "umaze",
            4000,
            60,
            [30, 60],
        )
        args.diffusion_steps, args.dim, args.plans, args.episodes, args.seeds = 8, 8, 8, 4, 2
    if max(args.checkpoints) != args.train_steps:
        ap.error("the last of --checkpoints must equal --train-steps")
    torch.set_num_threads(1)
    run = Run("lomap-planner", out=tempfile.mkdtemp() if args.quick else None)
    same = {k: v for k, v in sorted(vars(args).items()) if k not in ("seeds", "jobs", "verbose")}
    keys = [repr((seed, same)) for seed in range(args.seeds)]
    todo = [s for s, k in enumerate(keys) if not run.is_cached(k)]
    print(f"{args.seeds} seeds, {args.seeds - len(todo)} cached", flush=True)
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 and todo else contextlib.nullcontext()
    with pool as ex:
        futs = {s: ex.submit(run_seed, s, args) for s in todo} if ex else {}
        outs = []
        for s, k in enumerate(keys):
            fn = futs[s].result if s in futs else (lambda s=s: run_seed(s, args))
            outs.append(run.cached(k, fn))
            run.sample_load()
    report(run, outs, args)


def report(run: Run, outs: list[dict], args: argparse.Namespace) -> None:
    """Infeasibility against training steps, and the final closed-loop table."""
    seeds = [o["seed"] for o in outs]
    rng = np.random.default_rng(0)
    rows = []
    for i, step in enumerate(sorted(args.checkpoints)):
        pts = [o["curve"][i] for o in outs]
        pairs = [(np.array(p["plain"]), np.array(p["lomap"])) for p in pts]
        cut, lo, hi = plan_level_cut(pairs, rng)
        rows.append([step, fmt_sd([np.mean(p["plain"]) for p in pts]),
                     fmt_sd([np.mean(p["lomap"]) for p in pts]), f"{cut:.2f} [{lo:.2f}, {hi:.2f}]"])  # fmt: skip
    cfg = (f"{args.layout}: D4RL-collector data of {args.data_steps} env steps, U-Net width "
           f"{args.dim}, {args.diffusion_steps} diffusion steps, batch 32, lr 2e-3, "
           f"{args.plans} start states per seed")  # fmt: skip
    cpu = {k: float(np.mean([o["cpu_s"][k] for o in outs])) for k in outs[0]["cpu_s"]}
    last = [o["curve"][-1] for o in outs]
    run.table(
        "curve",
        [
            "training steps",
            "Diffuser infeasible",
            "Diffuser+LoMAP infeasible",
            "plan-level cut [95% cluster bootstrap]",
        ],
        rows,
        seeds=seeds,
        per_seed=[
            {
                "seed": o["seed"],
                "curve": o["curve"],
                "loss_per_500": o["loss"],
                "windows": o["windows"],
                "cpu_s": o["cpu_s"],
            }
            for o in outs
        ],
        title=f"Maze2D-{args.layout}: infeasible first plans against training steps (mean ± std)",
        notes=f"{cfg}. CPU s per seed (one thread): data {cpu['data']:.0f}, training "
        f"{cpu['train']:.0f}, checkpoint evaluation {cpu['checkpoint_eval']:.0f}. Target "
        "(issue #47 item 3): <= 30 % infeasible on large.",
        headline=f"{args.layout} at {args.train_steps} steps: Diffuser infeasible "
        f"{np.mean([np.mean(p['plain']) for p in last]):.2f}, with LoMAP "
        f"{np.mean([np.mean(p['lomap']) for p in last]):.2f}",
    )
    table = []
    for m in ("Diffuser", "Diffuser+LoMAP"):
        rs = [r for o in outs for r in o["final"] if r["method"] == m]
        table.append([m, fmt_sd([r["infeasible"] for r in rs]), fmt_sd([r["score"] for r in rs], 1),
                      PUBLISHED.get(args.layout, {}).get(m), float(np.mean([r["plan_ms"] for r in rs]))])  # fmt: skip
    run.table(
        "long",
        ["planner", "infeasible plans", "score", "published score", "ms / plan"],
        table,
        fmt=[None] * 4 + [".1f"],
        seeds=seeds,
        per_seed=[{"seed": o["seed"], "final": o["final"]} for o in outs],
        title=f"Maze2D-{args.layout} closed loop after {args.train_steps} training steps "
        "(mean ± std over seeds)",
        notes=f"{cfg}, {args.episodes} closed-loop episodes per seed. Published: Diffuser ~1M "
        "training steps on a GPU.",
    )


if __name__ == "__main__":
    main()
