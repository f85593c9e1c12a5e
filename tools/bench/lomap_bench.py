"""Benchmark: Diffuser vs Diffuser + LoMAP on the Maze2D layouts (CPU, small scale).

For each layout: collect a D4RL-style dataset with the waypoint controller, train a
small Diffuser temporal U-Net, then evaluate plain sampling and LoMAP sampling
(same model, same seeds) in closed loop.  Reports the infeasible-plan fraction
(plans with a segment crossing a wall), the D4RL normalised score, and planning
time, with LoMAP/Diffuser ratios.

    uv run python tools/bench/lomap_bench.py            # ~5 min
    uv run python tools/bench/lomap_bench.py --quick    # ~1 min
    uv run python tools/bench/lomap_bench.py --layouts medium large --seeds 3   # paired CI
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from lomap_planner import (
    DiffuserPlanner,
    GaussianDiffusion,
    HierarchicalPlanner,
    LimitsNormalizer,
    LoMAP,
    PointMazeEnv,
    TemporalUnet,
    collect_d4rl_dataset,
    collect_maze2d_dataset,
    d4rl_goal,
    infeasible_plan_fraction,
    make_hierarchical_windows,
    make_windows,
    maze2d_set_terminals,
    normalized_score,
    rollout_planner,
    subsample_frames,
    train_diffusion,
)

# Horizons in env steps of 10 physics steps (Diffuser: 128/256/384 physics steps).
HORIZON = {"umaze": 16, "medium": 32, "large": 40}
#: HD: env steps between subgoals (high-level plans of ceil((H - 1) / JUMP) + 1 states).
JUMP = 4


CACHE = Path(__file__).resolve().parent / ".cache"


def train_cached(
    windows: np.ndarray, adim: int, args: argparse.Namespace, tag: str, goal_features: int = 2
) -> GaussianDiffusion:
    """Train a Diffuser on normalised windows, or load it from the on-disk cache.

    Short horizons (the hierarchical levels) get a U-Net without down-sampling.
    """
    h, c = windows.shape[1:]
    mults = (1, 2, 4) if h % 4 == 0 else (1, 2) if h % 2 == 0 else (1,)
    torch.manual_seed(args.seed)
    net = TemporalUnet(h, c, dim=args.dim, dim_mults=mults)
    diff = GaussianDiffusion(net, h, c, adim, n_timesteps=args.diffusion_steps)
    key = (
        f"lomap_{tag}_h{h}_c{c}_g{goal_features}_d{args.data_steps}_t{args.train_steps}"
        f"_w{args.dim}_n{args.diffusion_steps}_s{args.seed}_{args.data}.pt"
    )
    path = CACHE / key
    if args.cache and path.exists():
        diff.load_state_dict(torch.load(path))
        return diff.eval()
    train_diffusion(
        diff, windows, n_steps=args.train_steps, batch_size=32, lr=2e-3, seed=args.seed,
        verbose=args.verbose, goal_features=goal_features,
    )  # fmt: skip
    if args.cache:
        CACHE.mkdir(exist_ok=True)
        torch.save(diff.state_dict(), path)
    return diff


def run_layout(layout: str, args: argparse.Namespace) -> tuple[list[dict], dict]:
    env = PointMazeEnv(layout, frame_skip=10)
    h = HORIZON[layout]
    t0 = time.perf_counter()
    if args.data == "d4rl":  # D4RL's own collector (frame skip 1), subsampled to env steps
        # one stream cut where the ball leaves the fixed goal (Diffuser's maze2d_set_terminals)
        raw = collect_d4rl_dataset(layout, args.data_steps * 10, seed=args.seed)
        data = subsample_frames(maze2d_set_terminals(raw, d4rl_goal(layout)), 10)
    else:
        data = collect_maze2d_dataset(env, args.data_steps, n_streams=64, seed=args.seed)
    windows = make_windows(data, h, include_actions=args.with_actions)
    adim = 2 if args.with_actions else 0
    t_data = time.perf_counter() - t0
    # Official Maze2D configs search neighbours on states only (action_dim_weight: 0).
    weights = np.ones(windows.shape[-1])
    if not args.search_actions:
        weights[:adim] = 0.0

    def level(w: np.ndarray, tag: str, goal_features: int = 2, with_lomap: bool = True):
        """Normaliser, trained (or cached) Diffuser and official-config LoMAP of one window set."""
        norm = LimitsNormalizer(w)
        wn = norm.normalize(w).astype(np.float32)
        diff = train_cached(wn, adim, args, f"{layout}_{tag}", goal_features=goal_features)
        if not with_lomap:
            return diff, norm, None
        # the official per-layout configuration: projection window, start/goal weights x100
        lm = LoMAP.for_layout(
            layout, wn, action_dim=adim, n_neighbors=args.k, tau=args.tau, search_weights=weights
        )
        return diff, norm, lm

    t0 = time.perf_counter()
    diff, norm, lomap = level(windows, "flat")
    methods = [
        ("Diffuser", DiffuserPlanner(diff, norm)),
        ("Diffuser+LoMAP", DiffuserPlanner(diff, norm, lomap=lomap)),
    ]
    if args.hd:  # HD: subgoals every JUMP steps + a low level joining them
        # LoMAP on the subgoal planner (the official lomaphd pipeline) or on both levels
        k = -(-(h - 1) // JUMP)
        hw, lw = make_hierarchical_windows(data, k, JUMP, include_actions=args.with_actions)
        dh, nh, lh = level(hw, "hd_high")
        dl, nl, ll = level(lw, "hd_low", lw.shape[-1] - adim, args.hd_lomap == "both")
        methods += [
            ("HD", HierarchicalPlanner(DiffuserPlanner(dh, nh), DiffuserPlanner(dl, nl))),
            (
                "HD+LoMAP",
                HierarchicalPlanner(
                    DiffuserPlanner(dh, nh, lomap=lh), DiffuserPlanner(dl, nl, lomap=ll)
                ),
            ),
        ]
    t_train = time.perf_counter() - t0
    rows, plans = [], {}
    data_infeasible = infeasible_plan_fraction(
        windows[:: max(1, len(windows) // 2000)], env.walls, slice(adim, adim + 2)
    )
    for name, planner in methods:
        res = rollout_planner(env, planner, n_episodes=args.episodes, seed=args.seed + 1000)
        scores = normalized_score(layout, res["returns"])
        plans[name] = res["plans"]
        rows.append(
            {
                "layout": layout,
                "method": name,
                "infeasible": float(res["infeasible"].mean()),
                "bad_seg": float(res["bad_segments"].mean()),
                "score": float(scores.mean()),
                "score_se": float(scores.std(ddof=1) / np.sqrt(len(scores))),
                "plan_ms": 1000 * float(res["plan_time"].mean()) / args.episodes,
            }
        )
    info = {
        "windows": len(windows),
        "t_data": t_data,
        "t_train": t_train,
        "data_inf": data_infeasible,
    }
    return rows, {"walls": env.walls, "plans": plans, "info": info, "adim": adim}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="umaze only, fewer steps (~1 min)")
    ap.add_argument("--layouts", nargs="+", default=["umaze", "medium", "large"])
    ap.add_argument("--data-steps", type=int, default=20000)
    ap.add_argument("--train-steps", type=int, default=800)
    ap.add_argument("--diffusion-steps", type=int, default=20)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--episodes", type=int, default=48)
    ap.add_argument("--k", type=int, default=10, help="LoMAP neighbours")
    ap.add_argument("--tau", type=float, default=0.99, help="LoMAP explained variance")
    ap.add_argument(
        "--with-actions",
        action="store_true",
        help="diffuse [action, state] windows as Diffuser does (default: states only)",
    )
    ap.add_argument(
        "--search-actions", action="store_true", help="include actions in the kNN search"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--seeds", type=int, default=1, help="repeat data, training and evaluation over seeds"
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--hd", action="store_true", help="also the hierarchical planner (HD, HD+LoMAP)"
    )
    ap.add_argument(
        "--hd-lomap",
        choices=["high", "both"],
        default="high",
        help="HD+LoMAP projects the high level only (official lomaphd code) or both levels",
    )
    ap.add_argument(
        "--data",
        choices=["maze2d", "d4rl"],
        default="maze2d",
        help="collector: the package's (frame skip 10) or D4RL's (frame skip 1, subsampled)",
    )
    ap.add_argument(
        "--cache", action="store_true", help="cache trained models in tools/bench/.cache"
    )
    ap.add_argument("--verbose", action="store_true", help="training progress bars")
    ap.add_argument("--png", type=str, default=None, help="write plan plots (one PNG per layout)")
    args = ap.parse_args()
    if args.quick:
        args.layouts, args.data_steps, args.train_steps, args.episodes = ["umaze"], 8000, 300, 24
    torch.set_num_threads(args.threads)
    all_rows = []
    runs = [(layout, args.seed + k) for layout in args.layouts for k in range(args.seeds)]
    for layout, seed in runs:
        rows, extra = run_layout(layout, argparse.Namespace(**{**vars(args), "seed": seed}))
        for r in rows:
            r["seed"] = seed
        all_rows += rows
        i = extra["info"]
        print(
            f"[{layout} seed {seed}] windows={i['windows']} data {i['t_data']:.0f}s "
            f"train {i['t_train']:.0f}s | infeasible windows in the dataset: {i['data_inf']:.3f}",
            flush=True,
        )
        if args.png and seed == args.seed:
            from lomap_planner.plotting import plot_plans

            path = (
                args.png if len(args.layouts) == 1 else args.png.replace(".png", f"_{layout}.png")
            )
            adim = extra["adim"]
            plot_plans(extra["walls"], extra["plans"], path, pos_slice=slice(adim, adim + 2))
    print()
    head = f"{'layout':<7} {'method':<15} {'infeasible':>10} {'bad segs':>8} {'score':>13} {'ms/plan':>8}"
    print(head)
    print("-" * len(head))
    for r in all_rows:
        print(
            f"{r['layout']:<7} {r['method']:<15} {r['infeasible']:>10.3f} {r['bad_seg']:>8.3f} "
            f"{r['score']:>7.1f} ±{r['score_se']:>4.1f} {r['plan_ms']:>8.1f}"
        )
    print()
    print(
        f"{'layout':<7} {'method':<15} {'infeasible ratio':>17} {'bad-seg ratio':>14} "
        f"{'score ratio':>12} {'time ratio':>11}  (+LoMAP / without)"
    )
    for base, lm in zip(all_rows[::2], all_rows[1::2], strict=True):
        inf_ratio = (
            lm["infeasible"] / base["infeasible"] if base["infeasible"] > 0 else float("nan")
        )
        sc_ratio = lm["score"] / base["score"] if base["score"] != 0 else float("nan")
        seg_ratio = lm["bad_seg"] / base["bad_seg"] if base["bad_seg"] > 0 else float("nan")
        print(
            f"{base['layout']:<7} {base['method']:<15} {inf_ratio:>17.2f} {seg_ratio:>14.2f} "
            f"{sc_ratio:>12.2f} {lm['plan_ms'] / base['plan_ms']:>11.2f}"
        )
    if args.seeds > 1:
        mean_table(all_rows, args.layouts)
        paired_summary(all_rows, args.layouts, ["Diffuser"] + (["HD"] if args.hd else []))


def mean_table(rows: list[dict], layouts: list[str]) -> None:
    """Mean ± std over seeds of every planner's metrics."""
    print()
    head = (
        f"{'layout':<7} {'method':<15} {'seeds':>5} {'infeasible':>13} {'bad segs':>13} "
        f"{'score':>13} {'ms/plan':>8}"
    )
    print(head)
    print("-" * len(head))
    for layout in layouts:
        methods = list(dict.fromkeys(r["method"] for r in rows if r["layout"] == layout))
        for m in methods:
            rs = [r for r in rows if r["layout"] == layout and r["method"] == m]

            def ms(key: str, fmt: str, rs=rs) -> str:
                v = np.array([r[key] for r in rs])
                return f"{v.mean():{fmt}} ±{v.std(ddof=1) if len(v) > 1 else 0.0:{fmt}}"

            print(
                f"{layout:<7} {m:<15} {len(rs):>5} {ms('infeasible', '.3f'):>13} "
                f"{ms('bad_seg', '.3f'):>13} {ms('score', '.1f'):>13} "
                f"{np.mean([r['plan_ms'] for r in rs]):>8.1f}"
            )


def paired_summary(rows: list[dict], layouts: list[str], bases: list[str]) -> None:
    """Relative cut in infeasible plans (1 - LoMAP / without) per seed, mean and 95% CI."""
    from scipy import stats

    print()
    print(f"{'layout':<7} {'planner':<9} {'seeds':>5} {'inf.':>7} {'+LoMAP inf.':>12} "
          f"{'relative cut':>13} {'95% CI':>17} {'score':>7} {'+LoMAP':>7} {'diff':>7}")  # fmt: skip
    for layout in layouts:
        for b in bases:
            base = [r for r in rows if r["layout"] == layout and r["method"] == b]
            lm = [r for r in rows if r["layout"] == layout and r["method"] == f"{b}+LoMAP"]
            cut = np.array(
                [1 - b2["infeasible"] / b1["infeasible"] if b1["infeasible"] > 0 else 0.0
                 for b1, b2 in zip(base, lm, strict=True)]
            )  # fmt: skip
            n = len(cut)
            half = stats.t.ppf(0.975, n - 1) * cut.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
            s0 = np.mean([r["score"] for r in base])
            s1 = np.mean([r["score"] for r in lm])
            print(
                f"{layout:<7} {b:<9} {n:>5} {np.mean([r['infeasible'] for r in base]):>7.3f} "
                f"{np.mean([r['infeasible'] for r in lm]):>12.3f} {cut.mean():>13.2f} "
                f"[{cut.mean() - half:>6.2f}, {cut.mean() + half:>6.2f}] {s0:>7.1f} {s1:>7.1f} "
                f"{s1 - s0:>+7.1f}"
            )


if __name__ == "__main__":
    main()
