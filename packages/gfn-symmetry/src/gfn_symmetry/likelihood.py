"""Model likelihood of a graph-building GFlowNet by importance sampling (paper Sec. 4).

The sampler's probability of an isomorphism class ``x`` is a sum over state-level
trajectories, :math:`p(x) = \\mathbb{E}_{\\tau \\sim P_B(\\cdot|x)}[P_F(\\tau)/P_B(\\tau)]`.  With an
equivariant policy every forward action of a transition :math:`G \\to G'` that is equivalent to
the taken one has the same probability, so :math:`P_F(G'|G) = M\\,\\pi(a)` and
:math:`P_B(G|G') = B\\,\\pi_B(b)`, and :math:`\\prod_t M_t/B_t = |\\mathrm{Aut}(s_0)|/|\\mathrm{Aut}(x)|`.
Hence the estimator needs only action-level quantities and **one** automorphism count:

.. math:: \\hat p(x) = \\frac{1}{|\\mathrm{Aut}(x)|}\\,\\frac1K \\sum_{k=1}^K
   \\prod_t \\frac{\\pi(a^{(k)}_t)}{\\pi_B(b^{(k)}_t)},

with the ``K`` trajectories drawn backwards from ``x`` by the uniform backward policy.  It is
unbiased for :math:`p(x)` whenever equivalent actions share their probability (orbit-equivalent
actions always do under an equivariant network).  ``correction="none"`` drops the factor (what a
symmetry-unaware implementation reports) and ``"approximate"`` uses the WL upper bound.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import networkx as nx
import numpy as np
import torch

from gfn_symmetry.approximate import log_wl_automorphism_bound
from gfn_symmetry.automorphisms import IsoClassCache
from gfn_symmetry.batching import featurize, segment_log_softmax
from gfn_symmetry.env import STOP, GraphEnv

__all__ = ["estimate_log_likelihood"]

_MODES = ("exact", "approximate", "none")


@torch.no_grad()
def estimate_log_likelihood(
    policy: torch.nn.Module,
    graphs: Sequence[nx.Graph],
    n_samples: int = 64,
    correction: str = "exact",
    seed: int | None = None,
    cache: IsoClassCache | None = None,
) -> np.ndarray:
    """Importance-sampling estimate of :math:`\\log p(x)` under a policy's terminal distribution.

    Parameters
    ----------
    policy : GraphPolicy
        Forward policy of an atom-based :class:`GraphEnv` (uniform backward policy).
    graphs : sequence of networkx.Graph, length G
        Non-empty terminal states of ``policy.env``.
    n_samples : int, default=64
        Backward trajectories per graph (``K``).
    correction : {"exact", "approximate", "none"}, default="exact"
        Symmetry factor: exact :math:`|\\mathrm{Aut}(x)|`, the WL bound, or none (biased).
    seed : int or None
        Seed of the backward sampling.
    cache : IsoClassCache or None
        Shared automorphism cache.

    Returns
    -------
    ndarray, shape (G,)
        :math:`\\log \\hat p(x)` (log of the mean of the importance weights).
    """
    env = getattr(policy, "env", None)
    if not isinstance(env, GraphEnv) or hasattr(env, "fragments"):
        raise TypeError("policy must be a GraphPolicy of an atom-based GraphEnv")
    if correction not in _MODES:
        raise ValueError(f"correction must be one of {_MODES}, got {correction!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int, got {n_samples!r}")
    n_samples = int(n_samples)
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0
    ):
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    if isinstance(graphs, nx.Graph) or len(graphs) == 0:
        raise ValueError("graphs must be a non-empty sequence of networkx graphs")
    for i, g in enumerate(graphs):
        env.validate_state(g, f"graphs[{i}]")
        if g.number_of_nodes() == 0:
            raise ValueError(f"graphs[{i}] is empty: not a terminal state")
    cache = cache if cache is not None else IsoClassCache(env.node_attrs, env.edge_attrs)
    rng = np.random.default_rng(seed)
    states: list[nx.Graph] = []  # every state whose action probability is needed
    picks: list[int] = []  # taken forward-action index in that state
    owner: list[int] = []  # flat trajectory id
    log_pb = np.zeros(len(graphs) * n_samples)
    for gi, x in enumerate(graphs):
        stop = next(i for i, a in enumerate(env.forward_actions(x)) if a.kind == STOP)
        for k in range(n_samples):
            tid = gi * n_samples + k
            states.append(x)
            picks.append(stop)
            owner.append(tid)
            g = x
            while g.number_of_nodes() > 0:
                acts = env.backward_actions(g)
                b = acts[int(rng.integers(len(acts)))]
                log_pb[tid] -= math.log(len(acts))
                parent = env.backward_step(g, b)
                states.append(parent)
                picks.append(env.forward_actions(parent).index(env.forward_of(g, b)))
                owner.append(tid)
                g = parent
    batch = featurize(env, states, validate=False)
    logits, _ = policy(batch)
    lsm = segment_log_softmax(logits.double(), batch.act_graph, batch.n_graphs)
    chosen = lsm[batch.act_offset[:-1] + torch.tensor(picks)].numpy()
    log_pf = np.zeros(len(graphs) * n_samples)
    np.add.at(log_pf, np.array(owner), chosen)
    w = (log_pf - log_pb).reshape(len(graphs), n_samples)
    out = np.logaddexp.reduce(w, axis=1) - math.log(n_samples)
    for gi, x in enumerate(graphs):
        if correction == "exact":
            out[gi] -= math.log(cache.automorphisms(x))
        elif correction == "approximate":
            out[gi] -= log_wl_automorphism_bound(x, env.node_attrs, env.edge_attrs)
    return out
