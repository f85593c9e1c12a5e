"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import torch

from gfn_symmetry import (
    DenseGraphEnv,
    GraphAction,
    GraphEnv,
    IsoClassCache,
    build_state_space,
    cliques_log_reward,
    cliques_reward,
    count_automorphisms,
    cycle_reward,
    density_reward,
    detailed_balance_loss,
    empirical_distribution,
    featurize,
    l1_distance,
    log_count_automorphisms,
    log_reward,
    log_wl_automorphism_bound,
    molecule_reward,
    pearson_correlation,
    random_walk_pe,
    subtrajectory_balance_loss,
    target_distribution,
    top_k_discovered,
    trajectory_balance_loss,
    uniform_reward,
    wl_automorphism_bound,
)


def _cycle(n: int, labels=None) -> nx.Graph:
    g = nx.cycle_graph(n)
    nx.set_node_attributes(g, {v: (labels[v] if labels else 0) for v in g}, "label")
    nx.set_edge_attributes(g, 0, "kind")
    return g


_SPACE: dict = {}


def _space():
    if "s" not in _SPACE:
        _SPACE["s"] = build_state_space(GraphEnv(max_nodes=3, n_labels=1))
    return _SPACE["s"]


def _states(max_nodes=3, n_labels=1):
    return len(build_state_space(GraphEnv(max_nodes=max_nodes, n_labels=n_labels)).graphs)


def _target(beta=1.0):
    space = _space()
    return target_distribution(space, lambda g: math.exp(beta * g.number_of_edges()))


def _empirical(copies=2):
    space = _space()
    return empirical_distribution(list(space.graphs[1:]) * copies, space)


def _top_k(k=2):
    space = _space()
    target = _target()
    return top_k_discovered(list(space.graphs), space, target, k)


def entries() -> list[dict]:
    c4 = _cycle(4)
    nan_c4 = _cycle(4, [float("nan")] * 4)
    two = nx.disjoint_union(_cycle(3), _cycle(3))
    env = GraphEnv(max_nodes=4, n_labels=2)
    bad_label = _cycle(3, [0, 1, 5])
    rng = np.random.default_rng(0)
    B, T = 5, 4
    log_pf = torch.as_tensor(rng.normal(size=(B, T)) - 1.0)
    log_pb = torch.as_tensor(rng.normal(size=(B, T)) - 1.0)
    log_r = torch.as_tensor(rng.normal(size=B))
    lengths = torch.full((B,), T)  # no padding: every entry is inside a trajectory
    attr_params = {
        "node_attrs": {"type": "strs", "good": ("label",)},
        "edge_attrs": {"type": "strs", "good": ("kind",)},
    }
    flow_loss = {  # the example both flow-matching losses (DB, SubTB) are held to
        "kwargs": {"log_flow": log_pf.clone(), "log_pf": log_pf, "log_pb": log_pb,
                   "log_reward": log_r, "lengths": lengths},
        "arrays": {"log_flow": {"kind": "float", "ndim": 2}, "log_pf": {"kind": "float", "ndim": 2},
                   "log_reward": {"kind": "float", "ndim": 1}},
        "rows": [["log_flow", "log_pf", "log_pb", "log_reward", "lengths"]],
        "order": "invariant",
    }  # fmt: skip
    out = [
        {
            "name": "count_automorphisms",
            "call": count_automorphisms,
            "kwargs": {"graph": c4},
            "params": {**attr_params, "backend": {"type": "str", "bad": ["bliss"]}},
            "grid": {"backend": ["igraph", "nauty", "networkx"]},
            "known": [
                {"kwargs": {}, "check": lambda out: out == 8, "why": "|Aut(C4)| = 8"},
                {
                    "kwargs": {"graph": nan_c4},
                    "raises": ["graph", "NaN"],
                    "why": "NaN labels would make every node its own colour",
                },
                {
                    "kwargs": {"node_attrs": "label"},
                    "raises": ["node_attrs"],
                    "why": "a string is not a tuple of attribute names",
                },
            ],
        },
        {
            "name": "log_count_automorphisms",
            "call": log_count_automorphisms,
            "kwargs": {"graph": c4},
            "params": attr_params,
            "grid": {"backend": ["igraph", "nauty", "networkx"]},
        },
        {
            "name": "wl_automorphism_bound",
            "call": wl_automorphism_bound,
            "kwargs": {"graph": c4, "iterations": 3},
            "params": {**attr_params, "iterations": {"type": "int", "bad": [-1]}},
            "known": [{"kwargs": {}, "check": lambda out: out >= 8, "why": "an upper bound"}],
        },
        {
            "name": "IsoClassCache",
            "call": IsoClassCache,
            "kwargs": {"node_attrs": ("label",)},
            "deterministic": False,  # a fresh cache object
            "params": {**attr_params, "backend": {"type": "str", "bad": ["bliss"]}},
            "grid": {"backend": ["igraph", "networkx"]},  # nauty: an optional dependency
        },
        {
            "name": "molecule_reward",
            "call": molecule_reward,
            "kwargs": {"graph": _cycle(5, [0, 1, 0, 0, 0]), "beta": 1.0},
            "params": {"beta": {"type": "float", "bad": [0.0, -1.0, float("nan")]}},
            "known": [
                {
                    "kwargs": {"graph": two},
                    "raises": ["graph"],
                    "why": "a disconnected graph is not a molecule",
                }
            ],
        },
        {
            "name": "cliques_log_reward",
            "call": cliques_log_reward,
            "kwargs": {"graph": _cycle(4, [0, 1, 0, 1]), "clique_size": 4},
            "params": {"clique_size": {"type": "int", "bad": [1, 0]}},
            "known": [
                {
                    "kwargs": {},
                    "check": lambda out: out == -5.0,
                    "why": "C4: 4 edges, 8 memberships",
                },
                {
                    "kwargs": {"graph": nx.Graph()},
                    "raises": ["empty"],
                    "why": "the empty graph is not a terminal state",
                },
            ],
        },
        {
            "name": "DenseGraphEnv.from_networkx",
            "call": lambda graphs: DenseGraphEnv(4, 2).from_networkx(graphs),
            "kwargs": {"graphs": [_cycle(3, [0, 1, 0]), _cycle(4)]},
            "deterministic": False,  # a tuple of tensors, compared in test_dense.py
            "known": [
                {"kwargs": {"graphs": [bad_label]}, "raises": ["graphs[0]"], "why": "label 5 >= 2"},
                {"kwargs": {"graphs": [two]}, "raises": ["graphs[0]"], "why": "disconnected"},
                {"kwargs": {"graphs": []}, "raises": ["graphs"], "why": "empty batch"},
            ],
        },
        {
            "name": "featurize",
            "call": lambda graphs: featurize(env, graphs),
            "kwargs": {"graphs": [_cycle(3, [0, 1, 0]), _cycle(4)]},
            "deterministic": False,  # a GraphBatch dataclass of tensors, compared elsewhere
            "known": [
                {
                    "kwargs": {"graphs": [bad_label]},
                    "raises": ["graphs[0]"],
                    "why": "labels beyond n_labels",
                }
            ],
        },
        {
            "name": "trajectory_balance_loss",
            "call": trajectory_balance_loss,
            "kwargs": {
                "log_z": torch.tensor(0.5),
                "log_pf": log_pf,
                "log_pb": log_pb,
                "log_reward": log_r,
                "lengths": lengths,
            },
            "arrays": {
                "log_pf": {"kind": "float", "ndim": 2},
                "log_pb": {"kind": "float", "ndim": 2},
                "log_reward": {"kind": "float", "ndim": 1},
                "log_z": {"kind": "float", "ndim": (0, 1)},
            },
            "rows": [["log_pf", "log_pb", "log_reward", "lengths"]],
            "order": "invariant",
        },
        {
            "name": "subtrajectory_balance_loss",
            "call": subtrajectory_balance_loss,
            **flow_loss,
            "params": {"lamda": {"type": "float", "bad": [0.0, -1.0, float("nan")]}},
        },
        {
            "name": "uniform_reward",
            "call": uniform_reward,
            "kwargs": {"graph": c4},
            "known": [{"kwargs": {}, "check": lambda r: r == 1.0, "why": "R = 1"}],
        },
        {
            "name": "cycle_reward",
            "call": cycle_reward,
            "kwargs": {"graph": c4},
            "known": [{"kwargs": {}, "check": lambda r: r == 2.0, "why": "C4 has one cycle"}],
        },
        {
            "name": "density_reward",
            "call": density_reward,
            "kwargs": {"graph": c4, "beta": 1.0},
            "params": {"beta": {"type": "float", "bad": [float("nan"), float("inf")]}},
            "known": [
                {
                    "kwargs": {"beta": 1.0},
                    "check": lambda r: abs(r - math.e) < 1e-12,
                    "why": "exp(e - n + 1) = exp(1) for C4",
                }
            ],
        },
        {
            "name": "log_wl_automorphism_bound",
            "call": log_wl_automorphism_bound,
            "kwargs": {"graph": c4, "iterations": 3},
            "params": {**attr_params, "iterations": {"type": "int", "bad": [-1]}},
            "known": [
                {
                    "kwargs": {},
                    "check": lambda v: v >= math.log(8) - 1e-12,
                    "why": "an upper bound on log |Aut(C4)| = log 8",
                }
            ],
        },
        {
            "name": "random_walk_pe",
            "call": random_walk_pe,
            "kwargs": {"graph": c4, "node_type": np.zeros(4, int), "length": 4},
            "arrays": {"node_type": {"kind": "labels", "ndim": 1}},
            "params": {"length": {"type": "int", "bad": [0]}},
            "known": [
                {
                    "kwargs": {},
                    "check": lambda pe: np.allclose(pe, pe[0]),
                    "why": "every node of a cycle has the same encoding",
                }
            ],
        },
        {
            "name": "build_state_space",
            "call": _states,
            "kwargs": {},
            "params": {
                "max_nodes": {"type": "int", "bad": [0]},
                "n_labels": {"type": "int", "bad": [0]},
            },
            "known": [
                {
                    "kwargs": {"max_nodes": 3},
                    "check": lambda n: n == 5,
                    "why": "empty, K1, K2, the path and the triangle (connected, built node by node)",
                }
            ],
        },
        {
            "name": "target_distribution",
            "call": _target,
            "kwargs": {},
            "known": [
                {
                    "kwargs": {},
                    "check": lambda p: abs(p.sum() - 1) < 1e-12 and p[0] == 0,
                    "why": "a distribution over terminal states, 0 on the start graph",
                }
            ],
        },
        {
            "name": "empirical_distribution",
            "call": _empirical,
            "kwargs": {},
            "known": [
                {
                    "kwargs": {},
                    "check": lambda p: abs(p.sum() - 1) < 1e-12,
                    "why": "a histogram that sums to 1",
                }
            ],
        },
        {
            "name": "top_k_discovered",
            "call": _top_k,
            "kwargs": {},
            "params": {"k": {"type": "int", "bad": [0, -1]}},
            "known": [
                {
                    "kwargs": {"k": 2},
                    "check": lambda n: n == 2,
                    "why": "every state sampled: both top states found",
                }
            ],
        },
        {
            "name": "cliques_reward",
            "call": cliques_reward,
            "kwargs": {"graph": c4},
            "params": {"clique_size": {"type": "int", "bad": [0, 1]}},
        },
        {
            "name": "log_reward",
            "call": lambda graph, scale=1.0: log_reward(lambda g: scale, graph),
            "kwargs": {"graph": c4},
            "known": [
                {
                    "kwargs": {"scale": 2.0},
                    "check": lambda v: abs(v - math.log(2)) < 1e-12,
                    "why": "log R",
                },
                {"kwargs": {"scale": float("nan")}, "raises": ["reward"], "why": "a NaN reward"},
                {"kwargs": {"scale": -1.0}, "raises": ["reward"], "why": "a negative reward"},
            ],
        },
        {
            "name": "detailed_balance_loss",
            "call": detailed_balance_loss,
            **flow_loss,
        },
        {
            "name": "l1_distance",
            "call": l1_distance,
            "kwargs": {"p": np.full(4, 0.25), "q": np.array([0.1, 0.2, 0.3, 0.4])},
            "arrays": {"p": {"kind": "float", "ndim": 1}, "q": {"kind": "float", "ndim": 1}},
            "rows": [["p", "q"]],
            "order": "invariant",
        },
        {
            "name": "pearson_correlation",
            "call": pearson_correlation,
            "kwargs": {"p": np.array([0.1, 0.3, 0.2, 0.4]), "q": np.array([0.1, 0.2, 0.3, 0.4])},
            "arrays": {"p": {"kind": "float", "ndim": 1}, "q": {"kind": "float", "ndim": 1}},
            "rows": [["p", "q"]],
            "order": "invariant",
            "min_rows": 2,
        },
    ]
    return [*out, *_exact_entries(), *_env_entries(), *_policy_entries(), *_trainer_entries()]


_POLICY: dict = {}


def _dense_policy():
    """A small untrained DenseGraphPolicy on the 3-node space, built once."""
    from gfn_symmetry import DenseGraphPolicy

    if "d" not in _POLICY:
        torch.manual_seed(0)
        _POLICY["d"] = DenseGraphPolicy(DenseGraphEnv(3, 1), 8, 1)
    return _POLICY["d"]


def _dense_distribution(policy=None, space=None, chunk=4096):
    from gfn_symmetry import dense_terminal_distribution

    policy = _dense_policy() if policy is None else policy
    return dense_terminal_distribution(policy, _space() if space is None else space, chunk)


def _one_node():
    g = nx.Graph()
    g.add_node(0, label=0)
    return g


def _one_node_probability():
    """P(one-node graph) = P(empty -> one node) P(stop | one node), from the policy's logits."""
    policy, genv = _dense_policy(), _space().env
    g = _one_node()
    with torch.no_grad():
        logits, _ = policy(*policy.env.from_networkx([nx.Graph(), g]))
    probs = torch.softmax(logits.double(), 1)
    add = sum(float(probs[0, policy.env.action_index(a)]) for a in genv.forward_actions(nx.Graph()))
    stop = genv.forward_actions(g)[_space().stop_action[_space().index(g)]]
    return add * float(probs[1, policy.env.action_index(stop)])


def _policy():
    """A small untrained GraphPolicy on the 3-node space, built once."""
    import torch

    from gfn_symmetry import GraphPolicy

    if "p" not in _POLICY:
        torch.manual_seed(0)
        _POLICY["p"] = GraphPolicy(_space().env, hidden=8, n_layers=1, seed=0)
    return _POLICY["p"]


def _log(p):
    with np.errstate(divide="ignore"):
        return np.log(p)


def _path(n: int) -> nx.Graph:
    g = nx.path_graph(n)
    nx.set_node_attributes(g, 0, "label")
    return g


def _residuals(beta: float, corrected: bool):
    from gfn_symmetry import action_tb_residuals, log_symmetry_correction, optimal_state_policy

    space, log_t = _space(), _log(_target(beta))
    pf, stop = optimal_state_policy(space, log_t)
    c = np.array([log_symmetry_correction(space.env, g) if g.number_of_nodes() else 0.0
                  for g in space.graphs])  # fmt: skip
    train = np.where(np.isfinite(log_t), log_t + c, log_t) if corrected else log_t
    return action_tb_residuals(space, pf, stop, train)


def _exact_entries() -> list[dict]:
    """Identities on the enumerable 3-node space (the flow-matching policy reproduces its
    target exactly; an exact terminal distribution sums to 1) and |Aut| of a triangle."""
    from gfn_symmetry import (
        backward_equivalent_count,
        equivalent_action_indices,
        exact_terminal_distribution,
        log_symmetry_correction,
        molecule_fragments,
        optimal_state_policy,
        state_policy_distribution,
    )

    tri = _cycle(3)
    return [
        {"name": "optimal_state_policy",
         "call": lambda beta=1.0: optimal_state_policy(_space(), _log(_target(beta)))[1],
         "kwargs": {}},
        {"name": "state_policy_distribution",
         "call": lambda beta=1.0: state_policy_distribution(
             _space(), *optimal_state_policy(_space(), _log(_target(beta)))),
         "kwargs": {},
         "known": [{"kwargs": {"beta": 1.0},
                    "check": lambda p: bool(np.allclose(p, _target(1.0), atol=1e-12)),
                    "why": "the flow-matching policy's terminal distribution is its target"}]},
        {"name": "exact_terminal_distribution",
         "call": lambda chunk=512: exact_terminal_distribution(_policy(), _space(), chunk=chunk),
         "kwargs": {}, "params": {"chunk": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {}, "check": lambda p: abs(float(p.sum()) - 1.0) < 1e-9,
                    "why": "a distribution over the terminal states"}]},
        {"name": "dense_terminal_distribution", "call": _dense_distribution, "kwargs": {},
         "params": {"chunk": {"type": "int", "bad": [0, -3]}},
         "known": [{"kwargs": {}, "check": lambda p: abs(float(p.sum()) - 1.0) < 1e-9
                    and float(p.min()) >= 0, "why": "a distribution over the terminal states"},
                   {"kwargs": {"chunk": 1},
                    "check": lambda p: bool(np.allclose(p, _dense_distribution(), atol=1e-6)),
                    "why": "one state per forward pass gives the same distribution"},
                   {"kwargs": {},
                    # float32 logits from batches of other sizes: kernels differ per CPU
                    "check": lambda p: abs(p[_space().index(_one_node())]
                                           - _one_node_probability()) < 1e-6
                    and p[_space().index(nx.Graph())] == 0,
                    "why": "one node: add it, then stop (its only path); the empty graph "
                           "cannot stop"},
                   {"kwargs": {"space": build_state_space(GraphEnv(max_nodes=2, n_labels=1))},
                    "raises": ["space"], "check": None,
                    "why": "a space of another environment"},
                   {"kwargs": {"policy": torch.nn.Linear(2, 2)}, "raises": ["policy"],
                    "check": None, "why": "not a DenseGraphPolicy"}]},
        {"name": "log_symmetry_correction",
         "call": lambda graph: log_symmetry_correction(_space().env, graph),
         "kwargs": {"graph": tri},
         "known": [{"kwargs": {"graph": tri}, "check": lambda v: abs(v - math.log(6)) < 1e-12,
                    "why": "|Aut(triangle)| = 3! = 6"}]},
        {"name": "action_tb_residuals",
         "call": lambda beta=1.0, corrected=True: _residuals(beta, corrected),
         "kwargs": {}, "grid": {"corrected": [False]},
         "known": [{"kwargs": {}, "check": lambda r: float(np.abs(r).max()) < 1e-12,
                    "why": "the flow-matching state policy minimises action-level TB exactly "
                           "for the symmetry-corrected reward (SA-GFN's reward scaling)"},
                   {"kwargs": {"corrected": False},
                    "check": lambda r: float(np.abs(r).max()) > 0.5,
                    "why": "and not for the uncorrected reward (the bias the paper removes)"}]},
        {"name": "backward_equivalent_count",
         "call": lambda child, parent: backward_equivalent_count(_space().env, child, parent),
         "kwargs": {"child": tri, "parent": _path(3)},
         "known": [{"kwargs": {"child": tri, "parent": _path(3)}, "check": lambda n: n == 3,
                    "why": "each of a triangle's three edges, removed, leaves a path"},
                   {"kwargs": {"child": tri, "parent": tri}, "check": lambda n: n == 0,
                    "why": "no backward action leaves the triangle itself"}]},
        {"name": "equivalent_action_indices",
         "call": lambda graph, index=0: equivalent_action_indices(_space().env, graph, index),
         "kwargs": {"graph": _path(2)},
         "params": {"index": {"type": "int", "bad": [-1, 99]}},
         "known": [{"kwargs": {"graph": _path(2), "index": 1},
                    "check": lambda idx: len(idx) == 2,
                    "why": "adding a node to either end of an edge gives the same path"}]},
        {"name": "molecule_fragments", "call": lambda: len(molecule_fragments()), "kwargs": {},
         "known": [{"kwargs": {}, "check": lambda n: n == 8, "why": "the 8-fragment vocabulary"}]},
    ]  # fmt: skip


def _env_walk(max_nodes=3, n_labels=2, max_edges=None, actions=None):
    """Forward action counts along a greedy walk (the first non-stop action each step)."""
    env = GraphEnv(max_nodes=max_nodes, n_labels=n_labels, max_edges=max_edges)
    g, counts = env.initial_state(), []
    for _ in range(4):
        acts = env.forward_actions(g)
        counts.append(len(acts))
        nxt = [a for a in acts if a.kind != 0]
        if not nxt:
            break
        g = env.step(g, nxt[0] if actions is None else actions.pop(0))
    return {"counts": counts, "nodes": g.number_of_nodes(), "edges": g.number_of_edges()}


def _stepped(action, n_nodes=1):
    from gfn_symmetry import GraphAction  # noqa: F401

    env = GraphEnv(max_nodes=3, n_labels=2)
    g = env.initial_state()
    if n_nodes:
        g = env.step(g, env.forward_actions(g)[0])
    out = env.step(g, action)
    return sorted(out.nodes(data="label")), sorted(out.edges)


def _molecule(max_atoms=4, atoms=("C", "O"), valences=None):
    from gfn_symmetry import MoleculeEnv

    env = MoleculeEnv(max_atoms=max_atoms, atoms=atoms, valences=valences)
    g = env.step(env.initial_state(), GraphAction(1, k=1))  # an O atom (valence 2)
    for _ in range(2):  # two carbons bonded to the O
        g = env.step(g, GraphAction(2, 0, k=0))
    return {
        "n_first": len(env.forward_actions(env.initial_state())),
        "grow_at": sorted({a.u for a in env.forward_actions(g) if a.kind == 2}),
    }


def _fragments(max_fragments=2, stems=None, fragments=None):
    from gfn_symmetry import FragmentEnv

    ring = nx.cycle_graph(3)
    nx.set_node_attributes(ring, 0, "label")
    atom = nx.Graph()
    atom.add_node(0, label=1)
    env = FragmentEnv([ring, atom] if fragments is None else fragments, max_fragments, stems)
    g = env.step(env.initial_state(), env.forward_actions(env.initial_state())[0])
    return {"first": len(env.forward_actions(env.initial_state())),
            "nodes": g.number_of_nodes(), "grow": len(env.forward_actions(g))}  # fmt: skip


def _path(n):
    g = nx.path_graph(n)
    nx.set_node_attributes(g, 0, "label")
    nx.set_edge_attributes(g, 0, "kind")
    return g


def _state_index(graph):
    return _space().index(graph)


def _loglik(n_samples=8, correction="exact", seed=0, graphs=None, policy=None):
    from gfn_symmetry import estimate_log_likelihood

    return estimate_log_likelihood(_policy() if policy is None else policy,
                                   [_path(1), _path(2)] if graphs is None else graphs,
                                   n_samples, correction, seed)  # fmt: skip


def _exact_log_p(graph):
    from gfn_symmetry import exact_terminal_distribution

    p = exact_terminal_distribution(_policy(), _space())
    return float(np.log(p[_space().index(graph)]))


def _env_entries() -> list[dict]:
    from gfn_symmetry import GraphAction

    ints = {"type": "int", "bad": [0, 1.5, True]}
    return [
        {"name": "GraphEnv", "call": _env_walk, "kwargs": {},
         "params": {"max_nodes": {**ints, "good": 3}, "n_labels": {**ints, "good": 2},
                    "max_edges": {"type": "int", "bad": [-1, 0.5], "good": 2}},
         "known": [{"kwargs": {}, "check": lambda r: r["counts"] == [2, 1 + 2, 1 + 4, 1 + 1]
                    and r["nodes"] == 3 and r["edges"] == 3,
                    "why": "2 labels to start; stop + 2 labels x n nodes to grow; then ring closure"},
                   {"kwargs": {"max_edges": 1},
                    "check": lambda r: r["counts"] == [2, 3, 1] and r["edges"] == 1,
                    "why": "one edge allowed: after it only STOP"}]},
        {"name": "GraphAction", "call": _stepped, "kwargs": {"action": GraphAction(2, 0, k=1)},
         "params": {"action": {"bad": [GraphAction(2, 3, k=0), GraphAction(2, 0, k=5),
                                       GraphAction(2, 0, k=1.5), GraphAction(3, 0, 0),
                                       GraphAction(0), GraphAction(9), (2, 0, -1, 1)]}},
         "known": [{"kwargs": {"action": GraphAction(2, 0, k=1)},
                    "check": lambda r: r == ([(0, 0), (1, 1)], [(0, 1)]),
                    "why": "ADD_NODE(0, label 1) bonds a new node 1 to node 0"},
                   {"kwargs": {"action": GraphAction(1, k=5), "n_nodes": 0}, "raises": ["action"],
                    "check": None, "why": "label 5 of 2 (it was written onto the graph)"}]},
        {"name": "MoleculeEnv", "call": _molecule, "kwargs": {},
         "params": {"max_atoms": {**ints, "good": 4}, "atoms": {"bad": ["CO", (), ("C", "Xx")]},
                    "valences": {"bad": [(4,), (4, 0), (4, 2.0)]}},
         "known": [{"kwargs": {},
                    "check": lambda r: r["n_first"] == 2 and r["grow_at"] == [1, 2],
                    "why": "O holds two bonds: bonded twice, only the carbons grow"}]},
        {"name": "FragmentEnv", "call": _fragments, "kwargs": {},
         "params": {"max_fragments": {**ints, "good": 2},
                    "fragments": {"bad": [[], nx.cycle_graph(3), ["ring"]]}},
         "known": [{"kwargs": {}, "check": lambda r: r["first"] == 2 and r["nodes"] == 3,
                    "why": "one FIRST per fragment; the ring brings its 3 atoms"}]},
        {"name": "StateSpace.index", "call": _state_index, "kwargs": {"graph": _path(2)},
         "known": [{"kwargs": {"graph": _path(1)}, "check": lambda i: _space().level[i] == 1,
                    "why": "one node: one step from the empty graph"},
                   {"kwargs": {"graph": nx.relabel_nodes(_path(3), {0: 1, 1: 0})},
                    "check": lambda i: i == _space().index(_path(3)),
                    "why": "isomorphic graphs are one state"},
                   {"kwargs": {"graph": _path(4)}, "raises": ["graph"], "check": None,
                    "why": "four nodes: not in the 3-node space"}]},
        {"name": "estimate_log_likelihood", "call": _loglik, "kwargs": {},
         "grid": {"correction": ["approximate", "none"]},
         "params": {"n_samples": {**ints, "good": 8}, "correction": {"type": "str", "bad": ["wl"]},
                    "seed": {"type": "int", "bad": [-1], "good": 0},
                    "graphs": {"bad": [[], _path(2), [nx.Graph()], [_path(4)]]},
                    "policy": {"bad": ["policy"]}},
         "known": [{"kwargs": {"n_samples": 4},
                    "check": lambda r: np.allclose(r, [_exact_log_p(_path(1)),
                                                       _exact_log_p(_path(2))], atol=1e-6),
                    "why": "one- and two-node graphs have a single backward path: the "
                           "importance-sampling estimate is the exact log p"}]},
    ]  # fmt: skip


def _graph_policy(hidden=8, n_layers=1, seed=0, backward=False, graphs=None):
    from gfn_symmetry import GraphPolicy, featurize

    env = GraphEnv(max_nodes=3, n_labels=2)
    pol = GraphPolicy(env, hidden, n_layers, seed, backward).double()
    gs = [nx.Graph(), _labelled_path(2)] if graphs is None else graphs
    with torch.no_grad():
        logits, log_flow = pol(featurize(env, gs))
    return {"logits": logits, "log_flow": log_flow,
            "n_actions": [len(env.forward_actions(g)) for g in gs]}  # fmt: skip


def _labelled_path(n):
    g = _path(n)
    nx.set_node_attributes(g, 1, "label")
    return g


def _policy_entries() -> list[dict]:
    return [
        {"name": "GraphPolicy", "call": _graph_policy, "kwargs": {},
         "params": {"hidden": {"type": "int", "bad": [0, 2.5], "good": 8},
                    "n_layers": {"type": "int", "bad": [0], "good": 1},
                    "seed": {"type": "int", "bad": [-1, 0.5], "good": 0},
                    "backward": {"bad": ["no"]}, "graphs": {"bad": [[_path(4)], nx.Graph()]}},
         "grid": {"backward": [True]},
         "known": [{"kwargs": {}, "check": lambda r: r["logits"].shape == (sum(r["n_actions"]),)
                    and r["log_flow"].shape == (2,),
                    "why": "one logit per valid forward action of every graph; one flow per graph"},
                   {"kwargs": {"seed": 1},
                    "check": lambda r: not torch.equal(r["logits"], _graph_policy()["logits"]),
                    "why": "the seed draws other weights"}]},
    ]  # fmt: skip


def _dense_states(graphs=None):
    gs = [nx.Graph(), _path(2), _path(3)] if graphs is None else graphs
    return dict(zip(("adj", "types", "n"), DenseGraphEnv(3, 1).from_networkx(gs), strict=True))


def _dense_forward(adj, types, n, hidden=None, n_layers=None, rw_steps=None):
    """The cached DenseGraphPolicy's forward; constructor options build another (seed 0)."""
    from gfn_symmetry import DenseGraphPolicy

    if (hidden, n_layers, rw_steps) == (None, None, None):
        policy = _dense_policy()
    else:
        torch.manual_seed(0)
        policy = DenseGraphPolicy(DenseGraphEnv(3, 1), 8 if hidden is None else hidden,
                                  1 if n_layers is None else n_layers,
                                  4 if rw_steps is None else rw_steps)  # fmt: skip
    with torch.no_grad():
        logits, log_flow = policy(adj, types, n)
    valid = torch.isfinite(logits)  # invalid actions are masked to -inf by design
    return {"logits": logits[valid], "valid": valid, "log_flow": log_flow}


def _relabelled_path():
    """The 3-node path with its centre renamed 0 (an isomorphic, differently numbered state)."""
    g = nx.Graph([(0, 1), (0, 2)])
    nx.set_node_attributes(g, 0, "label")
    return g


def _equivariant(out):
    r = _dense_forward(**_dense_states([_path(3), _relabelled_path()]))
    flow, n_valid = r["log_flow"], r["valid"].sum(1)
    # STOP (index 0) is each non-empty graph's first valid logit; both rows have 3 valid actions
    return (bool(n_valid[0] == n_valid[1]) and torch.allclose(flow[0], flow[1], atol=1e-6)
            and torch.allclose(r["logits"][0], r["logits"][int(n_valid[0])], atol=1e-6))  # fmt: skip


def _batch_fields():
    from gfn_symmetry import featurize

    b = featurize(_space().env, [nx.Graph(), _path(2), _path(3)], backward=True)
    return {k: getattr(b, k) for k in b.__dataclass_fields__}


def _graph_batch(**fields):
    """A GraphBatch from featurize's fields, some replaced, scored by the cached GraphPolicy."""
    from gfn_symmetry import GraphBatch

    batch = GraphBatch(**{**_batch_fields(), **fields})
    with torch.no_grad():
        return _policy()(batch.to("cpu"))


def _trainer(cls_name, loss, symmetry_correction, steps=1, max_nodes=3, reward=None, **kw):
    """One-step training of a small GFlowNet / DenseGFlowNet: its losses and three samples."""
    import gfn_symmetry as gs

    torch.manual_seed(0)
    if cls_name == "GFlowNet":
        learned = kw.get("backward_policy") == "learned"
        policy = gs.GraphPolicy(GraphEnv(max_nodes=max_nodes, n_labels=1), 8, 1, seed=0,
                                backward=learned)  # fmt: skip
    else:
        policy = gs.DenseGraphPolicy(DenseGraphEnv(max_nodes, 1), 8, 1)
    gfn = getattr(gs, cls_name)(policy, loss, symmetry_correction, **{"batch_size": 4, "seed": 0, **kw})  # fmt: skip
    fn = reward or (lambda g: 1.0 + g.number_of_edges())
    gfn.train(fn, steps=steps)
    samples = gfn.sample(3)
    return {"history": np.array(gfn.history_),
            "edges": np.array([g.number_of_edges() for g in samples], dtype=float)}  # fmt: skip


def _gfn(loss="tb", symmetry_correction=True, steps=1, max_nodes=3, reward=None,
         exploration="action", backward_policy="uniform", replay_size=0, **kw):  # fmt: skip
    return _trainer("GFlowNet", loss, symmetry_correction, steps, max_nodes, reward,
                    exploration=exploration, backward_policy=backward_policy,
                    replay_size=replay_size, **kw)  # fmt: skip


def _dense_gfn(loss="db", symmetry_correction=True, steps=1, max_nodes=3, reward=None, **kw):
    return _trainer("DenseGFlowNet", loss, symmetry_correction, steps, max_nodes, reward, **kw)


_TRAINER_PARAMS = {
    "loss": {"bad": ["ppo", None]},
    "symmetry_correction": {"bad": ["orbit", 2]},
    "lr": {"type": "float", "bad": [0.0, float("nan"), "1e-3"], "good": 1e-3},
    "lr_logz": {"type": "float", "bad": [-0.1], "good": 0.1},
    "batch_size": {"type": "int", "bad": [0, 2.5], "good": 4},
    "epsilon": {"type": "float", "bad": [1.5, -0.1], "good": 0.05},
    "reward_floor": {"type": "float", "bad": [0.0], "good": 1e-8},
    "pe_length": {"type": "int", "bad": [0, 1.5], "good": 8},
    "seed": {"type": "int", "bad": [-1, 0.5], "good": 0},
    "verbose": {"bad": ["no", 1]},
    "steps": {"type": "int", "bad": [0, 1.5], "good": 1},
}


def _one_state_loss(r):
    """max_nodes=1: every trajectory is empty -> one node -> stop, with P_F = P_B = 1, so the
    first TB loss at log Z = 0 is (log R)^2 = 1 for R = e."""
    return np.allclose(r["history"], [1.0], atol=1e-6)


def _learned_equals_uniform(r):
    # the learned backward heads start at zero: uniform P_B, so the first step's loss is equal
    return np.allclose(r["history"], _gfn("tb", True)["history"], atol=1e-6)


def _trainer_entries() -> list[dict]:
    e = math.e
    return [
        {"name": "DenseGraphPolicy", "call": _dense_forward, "kwargs": _dense_states(),
         "modules": lambda: [_dense_policy()],
         "params": {"hidden": {"type": "int", "bad": [0, 2.5], "good": 8},
                    "n_layers": {"type": "int", "bad": [-1], "good": 1},
                    "rw_steps": {"type": "int", "bad": [-1, True], "good": 4},
                    "adj": {"bad": [torch.zeros(3, 3, 3, dtype=torch.bool)[:, :2], "adj"]},
                    "types": {"bad": [torch.zeros(3, 3), torch.zeros(2, 3, dtype=torch.long)]},
                    "n": {"bad": [torch.zeros(3, 1, dtype=torch.long), torch.zeros(3),
                                  torch.zeros(0, dtype=torch.long)]}},
         "known": [{"kwargs": {}, "check": lambda r: r["valid"].shape == (3, DenseGraphEnv(3, 1).A)
                    and torch.equal(r["valid"], DenseGraphEnv(3, 1).forward_mask(**_dense_states())),
                    "why": "finite logits exactly on the env's valid forward actions"},
                   {"kwargs": {}, "check": _equivariant,
                    "why": "permutation-equivariant: a renumbered path has the same stop "
                           "logit and flow"}]},
        {"name": "GraphBatch", "call": _graph_batch, "kwargs": {},
         "params": {"node_graph": {"bad": [torch.zeros(2, dtype=torch.long),
                                           torch.tensor([0, 1, 1, 5, 2, 2])]},
                    "node_type": {"bad": [torch.zeros(5)]},
                    "act_offset": {"bad": [torch.tensor([0, 1, 2, 3]),
                                           torch.tensor([0, 2, 1, 9])]},
                    "edge_index": {"bad": [torch.zeros(3, 2, dtype=torch.long),
                                           torch.full((2, 6), 7)]},
                    "n_nodes": {"bad": [torch.tensor([0, 2, 2])]},
                    "actions": {"bad": [(), [[]]]},
                    "bwd_edge": {"bad": [None]}},
         "known": [{"kwargs": {}, "check": lambda r: torch.equal(
                        r[0], _policy()(featurize(_space().env, [nx.Graph(), _path(2),
                                                                  _path(3)]))[0].detach()),
                    "why": "featurize's own fields score as featurize's batch does"}]},
        {"name": "GFlowNet", "call": _gfn, "kwargs": {},
         "params": {**_TRAINER_PARAMS,
                    "exploration": {"bad": ["state"]},
                    "replay_size": {"type": "int", "bad": [-1, 2.5], "good": 0},
                    "replay_fraction": {"type": "float", "bad": [1.0, True], "good": 0.5},
                    "subtb_lambda": {"type": "float", "bad": [0.0], "good": 0.9},
                    "backward_policy": {"bad": ["greedy"]}},
         "grid": {"loss": ["db", "subtb"],
                  "symmetry_correction": [False, "flow_scaling", "exact", "pe", "approximate"],
                  "exploration": ["trajectory"], "backward_policy": ["learned"],
                  "replay_size": [8]},
         "known": [{"kwargs": {"max_nodes": 1, "reward": lambda g: e}, "check": _one_state_loss,
                    "why": "one-node space: TB loss (log Z - log R)^2 = 1 for R = e"},
                   {"kwargs": {"backward_policy": "learned"}, "check": _learned_equals_uniform,
                    "why": "zero-initialised backward heads are the uniform backward policy"}]},
        {"name": "DenseGFlowNet", "call": _dense_gfn, "kwargs": {},
         "params": _TRAINER_PARAMS,
         "grid": {"loss": ["tb"], "symmetry_correction": [False, "flow_scaling", "exact", "pe"]},
         "known": [{"kwargs": {"loss": "tb", "max_nodes": 1, "reward": lambda g: e},
                    "check": _one_state_loss,
                    "why": "one-node space: TB loss (log Z - log R)^2 = 1 for R = e"}]},
    ]  # fmt: skip
