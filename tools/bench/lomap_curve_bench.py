"""Benchmark: does a longer-trained Diffuser become credible on Maze2D-large? (issue #47, item 3)

``lomap_bench.py`` trains 6,000 steps with 20 diffusion steps on 20k env steps of data, and on
large 92 % of the plain Diffuser's plans cross a wall. This script tests the "undertrained"
diagnosis directly: per seed it collects more data (D4RL's collector), trains one Diffuser with
Diffuser's 256 diffusion steps for ``--train-steps`` and, at every ``--checkpoints`` step,
samples the first plans from the same ``--plans`` start states with and without LoMAP (the
official large configuration) and counts the infeasible ones. The last checkpoint is also
evaluated in closed loop (normalised score, beside the published numbers).

At every checkpoint the trainer's full state (``DiffusionTrainer.state_dict``: weights, EMA,
Adam moments, RNG states; the latest kept) and the EMA weights as safetensors (~4 MB, what a
planner loads) are written under ``--ckpt-dir`` (default ``tools/bench/.cache/lomap-ckpt/``)
with the checkpoint's evaluation, so a stopped run, or one with more ``--train-steps``,
resumes from the last checkpoint and gives the numbers of an unbroken run.

    uv run python tools/bench/lomap_curve_bench.py --jobs 2            # large, 3 seeds, 24k steps
    uv run python tools/bench/lomap_curve_bench.py --jobs 3 --train-steps 48000 \
        --checkpoints 3000 6000 12000 24000 36000 48000       # longer: resumes from disk
    uv run python tools/bench/lomap_curve_bench.py --quick             # umaze, tiny (~1 min)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from lomap_bench import HORIZON, PUBLISHED, plan_level_cut
from record import Run, fmt_sd
from scipy.sparse.csgraph import shortest_path

from lomap_planner import (
    DiffuserPlanner,
    DiffusionTrainer,
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
)

CKPT = Path(__file__).resolve().parent / ".cache" / "lomap-ckpt"


def first_plans_infeasible(env, planner, starts: np.ndarray, seed: int) -> list[bool]:
    """Infeasibility of the plans from ``starts`` to ``env.goal`` (one batch, sampling ``seed``).

    With ``starts[k] = env.spawn().reset(seed=seed + k)`` these are ``rollout_planner(env,
    planner, n, seed)``'s first plans, so the closed loop's plans are a subset of them.
    """
    plans = planner.plan(starts, env.goal, seed=seed)
    a = planner.action_dim
    return plan_is_infeasible(plans[..., a : a + 2], env.walls).astype(bool).tolist()


def reach_cells(walls: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Shortest-path distance in free cells (4-neighbour moves) between position pairs."""
    free = ~walls.astype(bool)
    idx = -np.ones(walls.shape, int)
    idx[free] = np.arange(free.sum())
    ii, jj = np.nonzero(free)
    a, b = [], []
    for di, dj in ((1, 0), (0, 1)):
        ok = (ii + di < walls.shape[0]) & (jj + dj < walls.shape[1])
        ok[ok] &= free[ii[ok] + di, jj[ok] + dj]
        a.append(idx[ii[ok], jj[ok]])
        b.append(idx[ii[ok] + di, jj[ok] + dj])
    a, b = np.concatenate(a), np.concatenate(b)
    g = sp.coo_array((np.ones(a.size), (a, b)), shape=(free.sum(),) * 2)
    dist = shortest_path(g, directed=False, unweighted=True)

    def cell(p: np.ndarray) -> np.ndarray:
        c = np.clip(np.rint(p).astype(int), 0, np.array(walls.shape) - 1)
        return idx[c[:, 0], c[:, 1]]

    cs, ce = cell(starts), cell(ends)
    out = np.full(len(cs), np.inf)
    ok = (cs >= 0) & (ce >= 0)
    out[ok] = dist[cs[ok], ce[ok]]
    return out


def run_seed(seed: int, args: argparse.Namespace) -> dict:
    """Data, one training run with checkpoints, the curve and the final closed-loop rows.

    The trainer's full state is saved at every checkpoint (only the latest kept) next to the
    checkpoint's evaluation, so a stopped run, or a later one with more ``--train-steps``,
    resumes from the last checkpoint and gives the same numbers as an unbroken run.
    """
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
    ev = args.seed_offset + seed
    starts = np.stack([env.spawn().reset(seed=ev + k)[0] for k in range(args.plans)])
    sub = w[:: max(1, len(w) // 5000)]
    t_data = time.process_time() - t0
    torch.manual_seed(seed)
    mults = (1, 2, 4) if h % 4 == 0 else (1, 2)
    net = TemporalUnet(h, wn.shape[-1], dim=args.dim, dim_mults=mults)
    diff = GaussianDiffusion(net, h, wn.shape[-1], 0, n_timesteps=args.diffusion_steps)
    trainer = DiffusionTrainer(diff, wn, batch_size=32, lr=2e-3, seed=seed)
    probe = GaussianDiffusion(
        TemporalUnet(h, wn.shape[-1], dim=args.dim, dim_mults=mults),
        h, wn.shape[-1], 0, n_timesteps=args.diffusion_steps,
    ).eval()  # fmt: skip
    stem = (f"{layout}_s{seed}_d{args.data_steps}_n{args.diffusion_steps}_w{args.dim}"
            f"_p{args.plans}_e{ev}")  # fmt: skip
    folder = None if args.quick else Path(args.ckpt_dir)
    curve = []
    for step in sorted(args.checkpoints):
        done = folder / f"{stem}_{step}.json" if folder else None
        if done is not None and done.exists():
            curve.append(json.loads(done.read_text()))
            continue
        if curve and folder is not None and trainer.step < curve[-1]["step"]:
            state = torch.load(folder / f"{stem}_state.pt", weights_only=False)
            trainer.load_state_dict(state)  # resume at the last finished checkpoint
        t = time.process_time()
        losses = trainer.fit(step, verbose=args.verbose)
        t_train = time.process_time() - t
        t = time.process_time()
        probe.model.load_state_dict(trainer.ema.state_dict())
        rec = {
            "step": step,
            "plain": first_plans_infeasible(env, DiffuserPlanner(probe, norm), starts, ev),
            "lomap": first_plans_infeasible(env, DiffuserPlanner(probe, norm, lomap=lomap), starts, ev),
            "loss_per_500": [float(x.mean()) for x in np.array_split(losses, max(1, len(losses) // 500))],
            "cpu_train": t_train,
            "cpu_eval": time.process_time() - t,
        }  # fmt: skip
        curve.append(rec)
        if folder is not None:
            from safetensors.torch import save_file

            folder.mkdir(parents=True, exist_ok=True)
            ema = {k: v.contiguous() for k, v in trainer.ema.state_dict().items()}
            save_file(ema, folder / f"{stem}_{step}.safetensors")
            torch.save(trainer.state_dict(), folder / f"{stem}_state.pt")
            done.write_text(json.dumps(rec))  # last: a checkpoint counts once its state is saved
        print(f"[{layout} seed {seed} step {step}] infeasible plain {np.mean(rec['plain']):.3f} "
              f"LoMAP {np.mean(rec['lomap']):.3f}", flush=True)  # fmt: skip
    if trainer.step < args.train_steps:  # every checkpoint was on disk: the final weights
        trainer.load_state_dict(torch.load(folder / f"{stem}_state.pt", weights_only=False))
        if trainer.step != args.train_steps:  # a longer run has moved the saved state on
            raise RuntimeError(
                f"{stem}_state.pt is at step {trainer.step}, not {args.train_steps}: "
                "evaluate the final checkpoint before training further"
            )
    trainer.finish()
    rows = []
    for name, planner in (
        ("Diffuser", DiffuserPlanner(diff, norm)),
        ("Diffuser+LoMAP", DiffuserPlanner(diff, norm, lomap=lomap)),
    ):
        res = rollout_planner(env, planner, n_episodes=args.episodes, seed=ev)
        sc = normalized_score(layout, res["returns"])
        rows.append({"method": name, "infeasible": float(res["infeasible"].mean()),
                     "score": float(sc.mean()),
                     "plan_ms": 1000 * float(res["plan_time"].mean()) / args.episodes})  # fmt: skip
    return {
        "seed": seed,
        "windows": len(w),
        "curve": curve,
        "final": rows,
        # the horizon's reach: start-to-goal distance in cells of every evaluated start, and
        # how far the training windows travel in H steps (same measure)
        "start_cells": reach_cells(env.walls, starts[:, :2], np.repeat(env.goal[None], len(starts), 0)).tolist(),
        "window_cells": np.percentile(reach_cells(env.walls, sub[:, 0, :2], sub[:, -1, :2]), [50, 99, 100]).tolist(),
        "cpu_s": {"data": t_data, "train": sum(c["cpu_train"] for c in curve),
                  "checkpoint_eval": sum(c["cpu_eval"] for c in curve)},
    }  # fmt: skip


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
    ap.add_argument("--ckpt-dir", default=str(CKPT), help="trainer states and EMA safetensors")
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
    skip = ("seeds", "jobs", "verbose", "ckpt_dir")
    same = {k: v for k, v in sorted(vars(args).items()) if k not in skip}
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
    # the horizon's floor: a start farther from the goal than any window travels in H steps
    # can only be joined to the goal by a plan that jumps
    reach = np.array([o["window_cells"] for o in outs])  # (seeds, [p50, p99, max])
    bins = [("within the median window's reach", lambda d, r: d <= r[0]),
            ("beyond the median, within the 99th percentile", lambda d, r: (d > r[0]) & (d <= r[1])),
            ("beyond the 99th percentile", lambda d, r: d > r[1])]  # fmt: skip
    rrows = []
    for label, pick in bins:
        share, plain, proj = [], [], []
        for o in outs:
            d, last = np.array(o["start_cells"]), o["curve"][-1]
            m = pick(d, o["window_cells"])
            share.append(m.mean())
            plain += list(np.array(last["plain"])[m])
            proj += list(np.array(last["lomap"])[m])
        rrows.append([label, fmt_sd(share, 2), len(plain),
                      f"{np.mean(plain):.2f}" if plain else "n/a", f"{np.mean(proj):.2f}" if proj else "n/a"])  # fmt: skip
    run.table(
        "reach",
        [
            "start's distance to the goal",
            "share of starts",
            "plans",
            "Diffuser infeasible",
            "Diffuser+LoMAP infeasible",
        ],
        rrows,
        seeds=seeds,
        per_seed=[
            {
                "seed": o["seed"],
                "start_cells": o["start_cells"],
                "window_cells_p50_p99_max": o["window_cells"],
            }
            for o in outs
        ],
        title=f"Maze2D-{args.layout} after {args.train_steps} steps: infeasible first plans by "
        "how far the start is from the goal",
        notes=f"Distances are shortest paths in maze cells (4-neighbour moves). A training window "
        f"of H = {HORIZON[args.layout]} env steps travels {reach[:, 0].mean():.1f} cells at the "
        f"median, {reach[:, 1].mean():.1f} at the 99th percentile and {reach[:, 2].mean():.1f} at "
        "most (mean over seeds); a start beyond that reach can only be joined to the inpainted "
        "goal by a plan that crosses walls, whatever the training.",
    )


if __name__ == "__main__":
    main()
