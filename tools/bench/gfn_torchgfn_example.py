"""SA-GFN inside torchgfn: the reward wrapper on torchgfn's GraphBuilding environment.

torchgfn (GFNOrg/torchgfn) builds graphs with an equivariant GNN policy and a uniform backward
policy, so it has the bias the paper describes: equivalent actions are scored one by one and the
sampler prefers graphs with few automorphisms.  Adopting SA-GFN there takes one line: wrap the
reward so that the trainer sees ``R(x) * |Aut(x)|`` (``gfn_symmetry.count_automorphisms``).

torchgfn is not a dependency of any package here (it pins ``numpy<2`` and pulls
``torch_geometric``); run this with an overlay environment:

    uv run --with torchgfn python tools/bench/gfn_torchgfn_example.py            # 3 seeds
    uv run --with torchgfn python tools/bench/gfn_torchgfn_example.py --quick

Task: undirected graphs with <= 4 nodes in torchgfn's action space (add an isolated node, add an
edge, exit), reward ``1 + #cycles`` on connected graphs and ``1e-3`` on disconnected ones.  The
terminal distribution over isomorphism classes is estimated from samples and compared with the
target; the script also times one training step of torchgfn (vanilla and wrapped) and of
``gfn_symmetry.GFlowNet`` on its own (connected-graph) environment with the same batch size.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import networkx as nx
import numpy as np
import torch

from gfn_symmetry import (
    GFlowNet,
    GraphEnv,
    GraphPolicy,
    IsoClassCache,
    count_automorphisms,
    cycle_reward,
    l1_distance,
)

MAX_NODES = 4


def to_networkx(data) -> nx.Graph:
    """A torch_geometric graph of GraphBuilding (one node class) as a labelled networkx graph."""
    g = nx.Graph()
    g.add_nodes_from(range(int(data.x.shape[0])), label=0)
    ei = data.edge_index.tolist()
    g.add_edges_from(zip(ei[0], ei[1], strict=True), kind=0)
    return g


def base_reward(g: nx.Graph) -> float:
    if g.number_of_nodes() == 0 or not nx.is_connected(g):
        return 1e-3
    return cycle_reward(g)


def make_reward(symmetry_aware: bool):
    """torchgfn ``state_evaluator``: R(x), or R(x) |Aut(x)| (the SA-GFN wrapper)."""

    def evaluate(states) -> torch.Tensor:
        graphs = [to_networkx(d) for d in states.data.flatten()]
        r = [
            base_reward(g) * (count_automorphisms(g) if symmetry_aware and len(g) else 1)
            for g in graphs
        ]
        return torch.tensor(r, dtype=torch.get_default_dtype())

    return evaluate


def build(symmetry_aware: bool, seed: int):
    from gfn.estimators import DiscreteGraphPolicyEstimator
    from gfn.gflownet import TBGFlowNet
    from gfn.gym import GraphBuilding
    from gfn.utils.modules import GraphActionGNN, GraphActionUniform

    torch.manual_seed(seed)
    env = GraphBuilding(
        num_node_classes=1,
        num_edge_classes=1,
        state_evaluator=make_reward(symmetry_aware),
        is_directed=False,
        max_nodes=MAX_NODES,
    )
    pf = DiscreteGraphPolicyEstimator(
        module=GraphActionGNN(1, 1, directed=False, embedding_dim=32, num_conv_layers=2)
    )

    class UniformBackward(GraphActionUniform):
        """Uniform backward logits sized to the batch (undirected: m (m - 1) / 2 edge slots)."""

        def forward(self, states_tensor):
            m = int(torch.max(states_tensor.ptr[1:] - states_tensor.ptr[:-1]))
            self.edges_dim = m * (m - 1) // 2
            return super().forward(states_tensor)

    pb = DiscreteGraphPolicyEstimator(module=UniformBackward(0, 1, 1), is_backward=True)
    return env, TBGFlowNet(pf=pf, pb=pb)


def class_distribution(graphs, cache, classes):
    counts = np.zeros(len(classes))
    for g in graphs:
        counts[classes[cache.class_id(g)]] += 1
    return counts / counts.sum()


def run(symmetry_aware: bool, seed: int, steps: int, batch: int, n_eval: int, space, lr=5e-3):
    env, gfn = build(symmetry_aware, seed)
    opt = torch.optim.Adam(
        [
            {"params": gfn.pf_pb_parameters(), "lr": lr},
            {"params": gfn.logz_parameters(), "lr": 0.1},
        ]
    )
    t0 = time.process_time()
    for _ in range(steps):
        # off-policy epsilon-uniform exploration on every action component, as in gfn_bench.py
        trajs = gfn.sample_trajectories(
            env, n=batch, save_logprobs=False, epsilon=defaultdict(lambda: 0.1)
        )
        loss = gfn.loss(env, trajs)
        opt.zero_grad()
        loss.backward()
        opt.step()
    per_step = (time.process_time() - t0) / steps
    with torch.no_grad():
        final = gfn.sample_terminating_states(env, n_eval)
    graphs = [to_networkx(d) for d in final.data.flatten()]
    cache, classes, target, _ = space
    p = class_distribution(graphs, cache, classes)
    return l1_distance(p, target), p, per_step


def ours_step_time(batch: int, steps: int, seed: int) -> float:
    env = GraphEnv(max_nodes=MAX_NODES)
    gfn = GFlowNet(GraphPolicy(env, hidden=32, n_layers=2, seed=seed), batch_size=batch, seed=seed)
    t0 = time.process_time()
    gfn.train(cycle_reward, steps)
    return (time.process_time() - t0) / steps


def enumerate_space():
    """Every undirected graph on 0..MAX_NODES nodes (torchgfn may exit at once), connected or not,
    by isomorphism class."""
    cache = IsoClassCache()
    classes, rewards, auts = {}, [], []
    for n in range(MAX_NODES + 1):
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        for mask in range(1 << len(pairs)):
            g = nx.Graph()
            g.add_nodes_from(range(n), label=0)
            g.add_edges_from((pairs[k] for k in range(len(pairs)) if mask >> k & 1), kind=0)
            cid = cache.class_id(g)
            if cid not in classes:
                classes[cid] = len(classes)
                rewards.append(base_reward(g))
                auts.append(count_automorphisms(g) if n else 1)
    target = np.array(rewards) / np.sum(rewards)
    return cache, classes, target, np.array(auts, dtype=float)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.steps, args.samples = 1, 20, 200
    torch.set_num_threads(1)
    space = enumerate_space()
    print(
        f"torchgfn GraphBuilding, <= {MAX_NODES} nodes ({len(space[2])} classes), TB, "
        f"{args.steps} steps x {args.batch}, {args.samples} samples, {args.seeds} seeds"
    )
    print(f"{'method':<22} {'L1(p_hat, target)':>18} {'ms/step':>9}")
    biased = space[2] / space[3]
    print(f"{'vanilla* (R/|Aut|)':<22} {l1_distance(biased / biased.sum(), space[2]):>18.3f}")
    for name, aware in (("torchgfn vanilla", False), ("torchgfn + SA-GFN", True)):
        rs = [
            run(aware, s, args.steps, args.batch, args.samples, space, args.lr)
            for s in range(args.seeds)
        ]
        l1 = np.array([r[0] for r in rs])
        ms = 1e3 * np.array([r[2] for r in rs])
        print(f"{name:<22} {l1.mean():>11.3f}±{l1.std():.3f} {ms.mean():>9.1f}")
    ours = [
        1e3 * ours_step_time(args.batch, max(20, args.steps // 5), s) for s in range(args.seeds)
    ]
    print(f"{'gfn_symmetry (own env)':<22} {'-':>18} {np.mean(ours):>9.1f}")
    print("L1 of the empirical class distribution includes sampling noise "
          f"(~{np.sqrt(len(space[2]) / args.samples):.2f} at this sample size).")  # fmt: skip


if __name__ == "__main__":
    main()
