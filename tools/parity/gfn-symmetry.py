"""Parity of gfn-symmetry's symmetry quantities and loss with the official SA-GFN code
(``hohyun312/sagfn``), in float64.

The official checkout is an input (``--official DIR``), never copied. Its modules import
``torch_scatter`` (a compiled extension with no wheel for this torch) and RDKit; the harness puts a
pure-torch stand-in for the four ``torch_scatter`` functions the compared code calls on
``sys.modules`` and runs with ``uv run --with rdkit --with omegaconf``. Compared on random
node- and edge-labelled graphs and random trajectories:

* ``GraphState.count_automorphisms`` (igraph VF2) against :func:`count_automorphisms`;
* ``GraphState.count_automorphisms_wl`` (3 rounds of its WL hash, product of class-size
  factorials) against :func:`wl_automorphism_bound` with ``iterations=3``;
* ``random_walk_pe_with_node_types`` against :func:`random_walk_pe` (``start=2`` restores the
  official powers; the default ``start=1`` keeps PyG's, which the official function adapts);
* ``GFNTrainer.tb_loss`` (vanilla and reward scaling, uniform backward policy, and the
  transition correction's ``subset_logsumexp``) against :func:`trajectory_balance_loss`, on the
  same per-step log-probabilities, with the correction from :func:`log_count_automorphisms`.

The policy networks are not compared (the official one is a PyG GPS model, ours a GIN-style
network); the environments' action spaces were checked by enumeration in the package's tests.

    uv run --with rdkit --with omegaconf python tools/parity/gfn-symmetry.py --official DIR
"""

from __future__ import annotations

import argparse
import math
import pathlib
import random
import sys
import types

import networkx as nx
import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from parity_common import Record, import_official, official_source, within_target
from record import Run

import gfn_symmetry as gs

WHERE = {
    "|Aut(G)| (exact)": "src/graphenv.py: GraphState.count_automorphisms",
    "WL bound on |Aut(G)| (3 rounds)": "src/graphenv.py: GraphState.count_automorphisms_wl",
    "random-walk PE, start=2 (official powers; official in float32)": "src/graph_utils.py: random_walk_pe_with_node_types",
    "random-walk PE, start=1 (package default)": "src/graph_utils.py: random_walk_pe_with_node_types",
    "TB loss, vanilla": "src/trainer.py: GFNTrainer.tb_loss",
    "TB loss, reward scaling": "src/trainer.py: GFNTrainer.tb_loss",
    "TB loss, transition correction (subset logsumexp)": "src/trainer.py: GFNTrainer.tb_loss",
}


def scatter_shim() -> types.ModuleType:
    """``torch_scatter``'s functions the compared code calls, in plain torch (dim 0)."""
    mod = types.ModuleType("torch_scatter")

    def size(index, dim_size):
        return int(index.max()) + 1 if dim_size is None else dim_size

    def scatter_add(src, index, dim=0, dim_size=None):
        out = src.new_zeros(size(index, dim_size), *src.shape[1:])
        return out.index_add(0, index, src)

    def scatter_logsumexp(src, index, dim=0, dim_size=None):
        n = size(index, dim_size)
        m = src.new_full((n,), -math.inf).scatter_reduce(0, index, src, "amax")
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        s = scatter_add((src - m[index]).exp(), index, dim_size=n)
        return s.log() + m

    def scatter_log_softmax(src, index, dim=0):
        return src - scatter_logsumexp(src, index)[index]

    def scatter_max(src, index, dim=0, dim_size=None):
        raise NotImplementedError("not used by the compared code")

    mod.scatter_add, mod.scatter_logsumexp = scatter_add, scatter_logsumexp
    mod.scatter_log_softmax, mod.scatter_max = scatter_log_softmax, scatter_max
    return mod


def load_official(root: pathlib.Path):
    sys.modules.setdefault("torch_scatter", scatter_shim())
    return import_official(root, "src.graphenv", "src.graph_utils", "src.models", "src.trainer")


def random_graph(rng: random.Random, n_max: int = 8):
    n = rng.randint(1, n_max)
    node_types = [rng.randint(0, 1) for _ in range(n)]
    p = rng.choice([0.3, 0.5, 0.8])
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    if rng.random() < 0.3:  # regular and symmetric shapes (cycles), where bounds are loose
        node_types = [0] * n
        edges = [(i, (i + 1) % n) for i in range(n)] if n > 2 else edges
        edges = sorted({tuple(sorted(e)) for e in edges})
    edge_types = [rng.randint(0, 1) if rng.random() < 0.5 else 0 for _ in edges]
    return node_types, edges, edge_types


def to_nx(node_types, edges, edge_types) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from((i, {"label": t}) for i, t in enumerate(node_types))
    g.add_edges_from((i, j, {"kind": k}) for (i, j), k in zip(edges, edge_types, strict=True))
    return g


def compare_graphs(graphenv, graph_utils, seed: int, rec: Record, n: int = 150) -> dict:
    from torch_geometric.data import Data

    rng = random.Random(seed)
    exact_off, exact_ours, wl_off, wl_ours = [], [], [], []
    for _ in range(n):
        nt, e, et = random_graph(rng)
        state = graphenv.GraphState(list(nt), list(et), list(e))
        g = to_nx(nt, e, et)
        exact_off.append(state.count_automorphisms())
        exact_ours.append(gs.count_automorphisms(g))
        wl_off.append(float(state.count_automorphisms_wl()))
        wl_ours.append(float(gs.wl_automorphism_bound(g, iterations=3)))
        ei = torch.tensor([[i for i, j in e] + [j for i, j in e],
                           [j for i, j in e] + [i for i, j in e]], dtype=torch.long)  # fmt: skip
        data = Data(edge_index=ei.reshape(2, -1), num_nodes=len(nt))
        data.node_types = torch.tensor(nt)
        with torch.no_grad():  # float32: the official code casts the colours with .float()
            pe_off = graph_utils.random_walk_pe_with_node_types(data, 8)
        pe_off = pe_off.double().reshape(len(nt), -1)
        rec("random-walk PE, start=2 (official powers; official in float32)",
            torch.from_numpy(gs.random_walk_pe(g, np.array(nt), 8, start=2)), pe_off)  # fmt: skip
        rec("random-walk PE, start=1 (package default)",
            torch.from_numpy(gs.random_walk_pe(g, np.array(nt), 8)), pe_off)  # fmt: skip
    rec("|Aut(G)| (exact)", torch.tensor(exact_ours, dtype=torch.float64),
        torch.tensor(exact_off, dtype=torch.float64))  # fmt: skip
    rec("WL bound on |Aut(G)| (3 rounds)", torch.tensor(wl_ours), torch.tensor(wl_off))
    return {"graphs": n, "exact_equal": int(np.sum(np.equal(exact_off, exact_ours))),
            "wl_equal": int(np.sum(np.equal(wl_off, wl_ours)))}  # fmt: skip


class _FakeModel:
    """Returns the official ``GroupCategorical`` over given per-state logits."""

    def __init__(self, models, logits, batch, log_z) -> None:
        self.dist = models.GroupCategorical(logits, batch)
        self.logZ = log_z

    def forward(self, batch, return_backward_dist=False, return_flow=False):
        return self.dist, None, None


def compare_tb(models, trainer, seed: int, rec: Record) -> None:
    """Random trajectories: per state a random number of actions and random logits."""
    g = torch.Generator().manual_seed(seed)
    n_traj = 6
    lengths = torch.randint(2, 6, (n_traj,), generator=g)  # actions per trajectory (stop incl.)
    n_states = int(lengths.sum())
    n_actions = torch.randint(2, 7, (n_states,), generator=g)
    batch_idx = torch.repeat_interleave(torch.arange(n_states), n_actions)
    logits = torch.randn(len(batch_idx), generator=g, dtype=torch.float64)
    fwd = torch.stack([torch.randint(0, int(k), (1,), generator=g)[0] for k in n_actions])
    log_r = torch.randn(n_traj, generator=g, dtype=torch.float64)
    bck = -torch.log(torch.randint(1, 5, (n_states,), generator=g).double())  # uniform P_B
    last_sym = torch.log(torch.randint(1, 13, (n_traj,), generator=g).double())
    log_z = torch.tensor(0.7, dtype=torch.float64)
    traj_of_state = torch.repeat_interleave(torch.arange(n_traj), lengths)
    # P_B of the stop step is not part of a trajectory's backward sum (n - 1 backward steps)
    first = torch.cumsum(lengths, 0) - lengths
    keep = torch.ones(n_states, dtype=torch.bool)
    keep[first + lengths - 1] = False
    traj_bck = torch.zeros(n_traj, dtype=torch.float64).index_add(0, traj_of_state[keep], bck[keep])
    # equivalent actions (transition correction): the taken action and one or two others
    eq_idx, eq_batch = [], []
    for s in range(n_states):
        k = int(n_actions[s])
        others = [a for a in range(k) if a != int(fwd[s])][: int(s % 3)]
        for a in [int(fwd[s]), *others]:
            eq_idx.append(a)
            eq_batch.append(s)
    eq_idx, eq_batch = torch.tensor(eq_idx), torch.tensor(eq_batch)
    ns = types.SimpleNamespace(
        num_trajectories=n_traj, traj_fwd_batch=traj_of_state, fwd_action_idxs=fwd,
        traj_bck_log_probs=traj_bck, log_rewards=log_r, last_log_sym=last_sym,
        fwd_equivalent_idxs=eq_idx, fwd_equivalent_batch=eq_batch,
    )  # fmt: skip
    method = trainer.CorrectionMethod
    # ours: per-step log P_F (B, T) from a log-softmax per state, P_B padded with 0 at the stop
    lp = torch.cat([torch.log_softmax(logits[batch_idx == s], 0) for s in range(n_states)])
    off0 = torch.cumsum(n_actions, 0) - n_actions
    step_pf = lp[off0 + fwd]
    step_eq = torch.stack([torch.logsumexp(lp[off0[s] + eq_idx[eq_batch == s]], 0)
                           for s in range(n_states)])  # fmt: skip
    T = int(lengths.max())
    pad = torch.zeros(n_traj, T, dtype=torch.float64)

    def padded(v):
        out = pad.clone()
        for b in range(n_traj):
            out[b, : lengths[b]] = v[first[b] : first[b] + lengths[b]]
        return out

    pb = padded(torch.where(keep, bck, torch.zeros_like(bck)))
    for label, corr, step, log_reward in (
        ("TB loss, vanilla", method.Vanilla, step_pf, log_r),
        ("TB loss, reward scaling", method.RewardScaling, step_pf, log_r + last_sym),
        ("TB loss, transition correction (subset logsumexp)", method.Transition, step_eq, log_r),
    ):
        self = types.SimpleNamespace(
            model=_FakeModel(models, logits, batch_idx, log_z), unif_backward=True,
            correction_method=corr, env=types.SimpleNamespace(first_log_sym=0.0),
        )  # fmt: skip
        off = trainer.GFNTrainer.tb_loss(self, ns)
        ours = gs.trajectory_balance_loss(log_z, padded(step), pb, log_reward, lengths)
        rec(label, ours, off)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--official", required=True, type=pathlib.Path, help="hohyun312/sagfn checkout")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    root = a.official.resolve()
    if not (root / "src" / "graphenv.py").exists():
        raise SystemExit(f"--official: {root} holds no sagfn checkout (src/graphenv.py)")
    graphenv, graph_utils, models, trainer = load_official(root)
    run = Run("gfn-symmetry", out=a.out, uv_with=("rdkit", "omegaconf"))
    rec, counts = Record(), []
    for seed in range(a.seeds):
        counts.append(compare_graphs(graphenv, graph_utils, seed, rec))
        compare_tb(models, trainer, seed, rec)
    rows = rec.rows(WHERE)
    main_rows, ok = within_target(rows)
    n = sum(c["graphs"] for c in counts)
    run.table(
        "parity", ["component", "official file: function", "max |ours − official|", "max relative"],
        rows, fmt=[None, None, ".1e", ".1e"], seeds=list(range(a.seeds)),
        title="gfn-symmetry vs the official SA-GFN code, float64",
        notes=[f"{n} random graphs (1-8 nodes, 2 node and 2 edge types, cycles among them): "
               f"|Aut| equal on {sum(c['exact_equal'] for c in counts)}/{n}, the 3-round WL "
               f"bound on {sum(c['wl_equal'] for c in counts)}/{n}. TB: 6 random trajectories "
               "per seed, random per-state logits over 2-6 actions, uniform backward policy; "
               "the official tb_loss runs on a stand-in model that returns its own "
               "GroupCategorical, and torch_scatter is a pure-torch stand-in (scatter_add, "
               "scatter_logsumexp, scatter_log_softmax).",
               "random_walk_pe: the official code's columns are [c, cP^2, ..., cP^L] (its loop "
               "starts from P^2 after the colour); the package default is [c, cP, ..., "
               "cP^(L-1)], the powers of PyG's AddRandomWalkPE that the official function says "
               "it adapts; start=2 restores the official powers. The official PE is computed in "
               "float32 (it casts the colours with .float())."],
        per_seed={**rec.per_seed(), "counts": counts},
        extra={"official": official_source(root, "hohyun312/sagfn")},
        headline=f"gfn-symmetry vs the official SA-GFN code, float64: {ok}/{len(main_rows)} "
        "components <= 1e-5",
    )  # fmt: skip


if __name__ == "__main__":
    main()
