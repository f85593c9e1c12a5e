"""Benchmark: vanilla GFlowNet vs SA-GFN (reward scaling) vs exact transition correction.

Tasks (all spaces small enough to enumerate, so every sampler's terminal
distribution is computed exactly and compared with the target R(x)/Z):

* atom   - node-by-node graphs with <= N nodes, R = 1 + #cycles (paper's illustrative task);
* frag   - fragment-based graphs from {atom, symmetric dimer, hetero dimer, triangle};
* modes  - graphs with <= N+1 nodes, R = 10 on the unicyclic (N+1)-node graphs, 0.1
           elsewhere: modes found and distinct graphs among samples, probability mass on
           the modes and the worst p/target over modes (the symmetric C_{N+1} mode).

Prints L1(p, target), Pearson corr(p, target), train time, and ratios against
vanilla (quality) and SA-GFN (time), mean ± std over seeds.

    uv run python tools/bench/gfn_bench.py            # default (~5 min)
    uv run python tools/bench/gfn_bench.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import functools
import time

import networkx as nx
import numpy as np
import torch

from gfn_symmetry import (
    FragmentEnv,
    GFlowNet,
    GraphEnv,
    GraphPolicy,
    build_state_space,
    cycle_reward,
    exact_terminal_distribution,
    l1_distance,
    optimal_state_policy,
    pearson_correlation,
    state_policy_distribution,
    target_distribution,
    top_k_discovered,
)

METHODS = {"vanilla": False, "SA-GFN": True, "exact": "exact"}


def _fragments() -> list[nx.Graph]:
    single = nx.Graph()
    single.add_node(0, label=0)
    dimer = nx.path_graph(2)
    nx.set_node_attributes(dimer, 0, "label")
    hetero = nx.path_graph(2)
    nx.set_node_attributes(hetero, {0: 0, 1: 1}, "label")
    tri = nx.cycle_graph(3)
    nx.set_node_attributes(tri, 0, "label")
    return [single, dimer, hetero, tri]


# the same exploration for every method: per-action epsilon-uniform (the official trainer) and a
# replay buffer of past trajectories (off-policy TB/DB targets)
TRAIN = {"lr": 5e-3, "batch_size": 16, "epsilon": 0.1, "replay_size": 256}


def run_method(env, space, reward, target, corr, loss, steps, seed, n_samples=0):
    policy = GraphPolicy(env, hidden=32, n_layers=2, seed=seed)
    gfn = GFlowNet(policy, loss=loss, symmetry_correction=corr, seed=seed, **TRAIN)
    t0 = time.process_time()
    gfn.train(reward, steps)
    secs = time.process_time() - t0
    p = exact_terminal_distribution(gfn.policy, space)
    out = {
        "l1": l1_distance(p, target),
        "corr": pearson_correlation(p, target),
        "time": secs,
        "p": p,
    }
    if n_samples:
        graphs = gfn.sample(n_samples)
        n_modes = int((target == target.max()).sum())
        out["top"] = top_k_discovered(graphs, space, target, n_modes)
        out["unique"] = len({space.index(g) for g in graphs})
    return out


def vanilla_fixed_point(space, target):
    """Terminal distribution that zeroes the vanilla loss: p ∝ R(x) exp(-SA-GFN correction)."""
    log_t = np.log(np.where(space.terminal, target, 1.0)) - space.log_correction
    pf, stop = optimal_state_policy(space, log_t)
    return state_policy_distribution(space, pf, stop)


def _fmt(vals, spec=".3f"):
    vals = np.asarray(vals, dtype=float)
    return f"{vals.mean():{spec}}±{vals.std():{spec}}"


def distribution_table(title, env, reward, losses, seeds, steps):
    space = build_state_space(env)
    target = target_distribution(space, reward)
    print(f"\n## {title}: {len(space) - 1} terminal states, {steps} steps, {len(seeds)} seeds")
    head = f"{'loss':<5} {'method':<8} {'L1(p,target)':>13} {'corr':>13} {'L1/L1_van':>9} {'CPU s':>11} {'t/t_SA':>7}"
    print(head)
    print("-" * len(head))
    dists = {}
    for loss in losses:
        res = {
            m: [run_method(env, space, reward, target, c, loss, steps, s) for s in seeds]
            for m, c in METHODS.items()
        }
        l1_van = np.mean([r["l1"] for r in res["vanilla"]])
        t_sa = np.mean([r["time"] for r in res["SA-GFN"]])
        for m, rs in res.items():
            l1 = [r["l1"] for r in rs]
            t = [r["time"] for r in rs]
            print(
                f"{loss:<5} {m:<8} {_fmt(l1):>13} {_fmt([r['corr'] for r in rs]):>13} "
                f"{np.mean(l1) / l1_van:>9.2f} {_fmt(t, '.1f'):>11} {np.mean(t) / t_sa:>7.2f}"
            )
            dists[f"{loss}/{m}"] = np.mean([r["p"] for r in rs], axis=0)
    fixed = vanilla_fixed_point(space, target)
    print(
        f"{'any':<5} {'vanilla*':<8} {l1_distance(fixed, target):>13.3f} "
        f"{pearson_correlation(fixed, target):>13.3f}"
    )
    print("vanilla* = exact optimum of the vanilla objective (p ∝ R e^-correction), no training")
    return space, target, dists


def unicyclic_reward(graph: nx.Graph, n: int) -> float:
    """10 on connected unicyclic graphs with ``n`` nodes (the modes), 0.1 elsewhere."""
    return 10.0 if graph.number_of_nodes() == n == graph.number_of_edges() else 0.1


def modes_table(env, seeds, steps, n_samples):
    reward = functools.partial(unicyclic_reward, n=env.max_nodes)
    space = build_state_space(env)
    target = target_distribution(space, reward)
    modes = np.flatnonzero(target == target.max())
    aut = np.exp(space.log_aut[modes]).astype(int).tolist()
    print(
        f"\n## modes: {len(space) - 1} states; R = 10 on the {len(modes)} unicyclic {env.max_nodes}-node graphs "
        f"(|Aut| = {aut}), 0.1 elsewhere; TB, {steps} steps, {n_samples} samples"
    )
    head = (
        f"{'method':<8} {'modes found':>11} {'distinct':>10} {'mode mass':>11} "
        f"{'min p/t mode':>12} {'L1(p,target)':>13} {'CPU s':>9}"
    )
    print(head)
    print("-" * len(head))
    print(
        f"{'target':<8} {len(modes):>11} {'-':>10} {target[modes].sum():>11.3f} {1.0:>12.2f} {0.0:>13.3f} {'-':>9}"
    )
    fixed = vanilla_fixed_point(space, target)
    print(
        f"{'vanilla*':<8} {'-':>11} {'-':>10} {fixed[modes].sum():>11.3f} "
        f"{(fixed[modes] / target[modes]).min():>12.2f} {l1_distance(fixed, target):>13.3f} {'-':>9}"
    )
    for m, c in METHODS.items():
        rs = [run_method(env, space, reward, target, c, "tb", steps, s, n_samples) for s in seeds]
        mass = [r["p"][modes].sum() for r in rs]
        worst = [(r["p"][modes] / target[modes]).min() for r in rs]
        print(
            f"{m:<8} {_fmt([r['top'] for r in rs], '.1f'):>11} {_fmt([r['unique'] for r in rs], '.1f'):>10} "
            f"{_fmt(mass):>11} {_fmt(worst, '.2f'):>12} {_fmt([r['l1'] for r in rs]):>13} "
            f"{_fmt([r['time'] for r in rs], '.1f'):>9}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="1 seed, few steps (smoke test)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--max-nodes", type=int, default=4)
    ap.add_argument("--losses", default="tb,db", help="comma-separated subset of tb,db,subtb")
    ap.add_argument("--png", default=None, help="save a p/target vs |Aut| plot of the atom task")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [0] if args.quick else list(range(args.seeds))
    steps = 40 if args.quick else args.steps
    losses = args.losses.split(",")
    space, target, dists = distribution_table(
        f"atom (<= {args.max_nodes} nodes, R = 1 + #cycles)",
        GraphEnv(max_nodes=args.max_nodes),
        cycle_reward,
        losses,
        seeds,
        steps,
    )
    distribution_table(
        "fragments (4-fragment vocabulary, <= 3 fragments, R = 1 + #cycles)",
        FragmentEnv(_fragments(), max_fragments=3),
        cycle_reward,
        ["tb"],
        seeds,
        steps,
    )
    modes_table(
        GraphEnv(max_nodes=args.max_nodes + 1), seeds, steps * 3 // 2, 64 if args.quick else 256
    )
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        from gfn_symmetry.plotting import plot_symmetry_bias

        ax = plot_symmetry_bias(
            space, target, {k: v for k, v in dists.items() if k.startswith("tb/")}
        )
        ax.figure.savefig(args.png, dpi=120, bbox_inches="tight")
        print(f"saved {args.png}")


if __name__ == "__main__":
    main()
