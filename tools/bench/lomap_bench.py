"""Benchmark: Diffuser vs Diffuser + LoMAP on the Maze2D layouts (CPU, small scale).

For each layout and seed: collect a D4RL-style dataset (D4RL's own collector by default), train
a Diffuser temporal U-Net, then evaluate plain sampling and LoMAP sampling (same model, same
start states, same sampling seeds) in closed loop. Reports the infeasible-plan fraction (plans
with a segment crossing a wall or leaving the map), wall-crossing segments, the D4RL normalised
score beside the published Diffuser and LoMAP numbers, and planning time.

LoMAP's cut in infeasible plans is estimated two ways: the per-seed ratio (mean and t-interval
over seeds) and the plan-level paired estimator: every plan of the plain and the LoMAP sampler
shares its start and goal, the cut is ``1 - sum(LoMAP infeasible) / sum(plain infeasible)``
pooled over all plans, and its 95% interval comes from a cluster bootstrap (seeds resampled,
then plans within each seed).

    uv run python tools/bench/lomap_bench.py            # medium + large, 3 seeds (~2.5 h, cached)
    uv run python tools/bench/lomap_bench.py --quick    # umaze, 1 seed, small (~1 min)
    uv run python tools/bench/lomap_bench.py --layouts medium --seeds 5 --hd   # + HD, HD+LoMAP
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from record import Run, fmt_ci, fmt_sd

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

#: Published normalised scores (Diffuser: Janner et al. 2022, Table 1; LoMAP: the paper's
#: Table 1 as the README reads it; None where not read).
PUBLISHED = {
    "umaze": {"Diffuser": "113.9 ± 3.1", "Diffuser+LoMAP": None},
    "medium": {"Diffuser": "121.5 ± 2.7", "Diffuser+LoMAP": None},
    "large": {"Diffuser": "123.0 ± 6.4", "Diffuser+LoMAP": "151.9 ± 2.7"},
}
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

    def level(w: np.ndarray, tag: str, goal_features: int = 2, with_lomap: bool = True):
        """Normaliser, trained (or cached) Diffuser and official-config LoMAP of one window set."""
        norm = LimitsNormalizer(w)
        wn = norm.normalize(w).astype(np.float32)
        diff = train_cached(wn, adim, args, f"{layout}_{tag}", goal_features=goal_features)
        if not with_lomap:
            return diff, norm, None
        # the official per-layout configuration: projection window, start/goal (x, y) x100,
        # actions weighted 0 in the search (action_dim_weight: 0)
        lm = LoMAP.for_layout(layout, wn, action_dim=adim, n_neighbors=args.k, tau=args.tau)
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
                "plan_infeasible": res["infeasible"].astype(bool).tolist(),
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
    ap.add_argument("--layouts", nargs="+", default=["medium", "large"])
    ap.add_argument("--data-steps", type=int, default=20000)
    ap.add_argument("--train-steps", type=int, default=6000)
    ap.add_argument("--diffusion-steps", type=int, default=20)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--episodes", type=int, default=48)
    ap.add_argument("--k", type=int, default=10, help="LoMAP neighbours")
    ap.add_argument("--tau", type=float, default=0.99, help="LoMAP explained variance")
    ap.add_argument(
        "--with-actions",
        action="store_true",
        help="diffuse [action, state] windows as Diffuser does (default: states only)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--seeds", type=int, default=3, help="repeat data, training and evaluation over seeds"
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
        default="d4rl",
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
        args.dim, args.seeds, args.data = 16, 1, "maze2d"
    run = Run("lomap-planner")
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
    report(run, all_rows, args)


def report(run: Run, rows: list[dict], args: argparse.Namespace) -> None:
    """The mean table beside the published numbers, and both estimators of LoMAP's cut."""
    seeds = sorted({r["seed"] for r in rows})
    table = []
    for layout in args.layouts:
        methods = list(dict.fromkeys(r["method"] for r in rows if r["layout"] == layout))
        for m in methods:
            rs = [r for r in rows if r["layout"] == layout and r["method"] == m]
            table.append([layout, m, fmt_sd([r["infeasible"] for r in rs]),
                          fmt_sd([r["bad_seg"] for r in rs]), fmt_sd([r["score"] for r in rs], 1),
                          PUBLISHED.get(layout, {}).get(m), float(np.mean([r["plan_ms"] for r in rs]))])  # fmt: skip
    cfg = (f"{args.data} data, {args.data_steps} env steps, U-Net width {args.dim}, "
           f"{args.train_steps} training steps, {args.diffusion_steps} diffusion steps, "
           f"{args.episodes} episodes per seed")  # fmt: skip
    large = [r for r in rows if r["layout"] == args.layouts[-1]]
    run.table(
        "main",
        [
            "layout",
            "planner",
            "infeasible plans",
            "wall-crossing segments",
            "score",
            "published score",
            "ms / plan",
        ],
        table,
        fmt=[None] * 6 + [".1f"],
        seeds=seeds,
        per_seed=rows,
        title="Closed-loop Maze2D: mean ± std over seeds",
        notes=f"{cfg}. Published: Diffuser ~1M training steps, 256 diffusion steps, GPU.",
        headline="; ".join(
            f"{args.layouts[-1]}: {m} infeasible {np.mean([r['infeasible'] for r in large if r['method'] == m]):.2f}, "
            f"score {np.mean([r['score'] for r in large if r['method'] == m]):.1f}"
            for m in ("Diffuser", "Diffuser+LoMAP")
        ),
    )
    bases = ["Diffuser"] + (["HD"] if args.hd else [])
    out = []
    rng = np.random.default_rng(0)
    for layout in args.layouts:
        for b in bases:
            base = [r for r in rows if r["layout"] == layout and r["method"] == b]
            lm = [r for r in rows if r["layout"] == layout and r["method"] == f"{b}+LoMAP"]
            ratio = [1 - q["infeasible"] / p["infeasible"] if p["infeasible"] > 0 else 0.0
                     for p, q in zip(base, lm, strict=True)]  # fmt: skip
            pairs = [(np.array(p["plan_infeasible"]), np.array(q["plan_infeasible"]))
                     for p, q in zip(base, lm, strict=True)]  # fmt: skip
            cut, lo, hi = plan_level_cut(pairs, rng)
            out.append([layout, b, fmt_ci(ratio, 2), f"{cut:.2f} [{lo:.2f}, {hi:.2f}]",
                        sum(int(p.sum()) for p, _ in pairs), sum(int(q.sum()) for _, q in pairs),
                        sum(len(p) for p, _ in pairs),
                        fmt_ci([q["score"] - p["score"] for p, q in zip(base, lm, strict=True)], 1, sign=True)])  # fmt: skip
    run.table(
        "cut",
        [
            "layout",
            "planner",
            "per-seed cut [95% t-CI]",
            "plan-level cut [95% cluster bootstrap]",
            "infeasible plans without",
            "with LoMAP",
            "plans",
            "score Δ [95% CI]",
        ],
        out,
        seeds=seeds,
        title="LoMAP's relative cut in infeasible plans (1 - with / without)",
        notes="Target (issue #47): a cut >= 30% with the interval excluding 0 on medium and large.",
    )


def plan_level_cut(pairs, rng, n_boot: int = 4000) -> tuple[float, float, float]:
    """Pooled paired cut over plans, with a two-stage cluster bootstrap (seeds, then plans)."""

    def cut(ps):
        a = sum(int(p.sum()) for p, _ in ps)
        b = sum(int(q.sum()) for _, q in ps)
        return 1.0 - b / a if a else 0.0

    boot = []
    for _ in range(n_boot):
        chosen = [pairs[i] for i in rng.integers(0, len(pairs), len(pairs))]
        sample = []
        for p, q in chosen:
            idx = rng.integers(0, len(p), len(p))
            sample.append((p[idx], q[idx]))
        boot.append(cut(sample))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return cut(pairs), float(lo), float(hi)


if __name__ == "__main__":
    main()
