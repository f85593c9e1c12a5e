"""Graph GFlowNet trainer with optional symmetry correction (SA-GFN).

``GFlowNet(policy, loss, symmetry_correction)`` trains a :class:`GraphPolicy`
on-policy with trajectory balance (``"tb"``), detailed balance (``"db"``) or
sub-trajectory balance (``"subtb"``).  The backward policy is uniform over the
backward actions of each graph (paper's setting).  ``symmetry_correction``:

* ``False`` / ``"none"`` - vanilla: action-level probabilities, biased by
  :math:`1/|\\mathrm{Aut}(x)|` (atom) as shown in the paper;
* ``True`` / ``"reward_scaling"`` - SA-GFN: train on
  :math:`\\log R(x) + \\log|\\mathrm{Aut}(x)|` (minus :math:`\\sum_i\\log|\\mathrm{Aut}(F_i)|`
  for fragments), one automorphism count per trajectory;
* ``"flow_scaling"`` - the same factor applied per transition (official code's
  ``FlowScaling``): :math:`\\log P_B(s|s')` gains :math:`c(s') - c(s)` with
  :math:`c = \\log|\\mathrm{Aut}|` (minus fragment automorphisms), which telescopes to the
  reward scaling of TB and gives DB/SubTB a per-step target;
* ``"exact"`` - transition correction: :math:`P_F(G'|G)` and :math:`P_B(G|G')`
  summed over all equivalent actions, found by isomorphism tests at every step;
* ``"pe"`` - the approximate transition correction of Ma et al. (2023): equivalent actions
  are those whose random-walk positional encodings match (no isomorphism tests);
* ``"approximate"`` - reward scaling with the Weisfeiler-Lehman upper bound
  :math:`\\prod_i |C_i|!` in place of :math:`|\\mathrm{Aut}(x)|`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx
import torch
from tqdm.auto import tqdm

from gfn_symmetry.approximate import (
    log_wl_automorphism_bound,
    node_pe,
    pe_backward_equivalent_indices,
    pe_equivalent_action_indices,
)
from gfn_symmetry.automorphisms import IsoClassCache
from gfn_symmetry.batching import featurize, segment_log_softmax, segment_logsumexp, segment_sample
from gfn_symmetry.env import STOP
from gfn_symmetry.losses import (
    detailed_balance_loss,
    subtrajectory_balance_loss,
    trajectory_balance_loss,
)
from gfn_symmetry.policy import GraphPolicy
from gfn_symmetry.rewards import _warn_reward_scale, log_reward
from gfn_symmetry.symmetry import (
    backward_equivalent_indices,
    child_classes,
    equivalent_action_indices,
    log_symmetry_correction,
)

__all__ = ["GFlowNet", "Trajectory"]

_CORRECTIONS = ("none", "reward_scaling", "flow_scaling", "exact", "pe", "approximate")
_SETS = ("exact", "pe")  # corrections that sum probabilities over equivalent-action sets
_LOSSES = ("tb", "db", "subtb")


@dataclass
class Trajectory:
    """One sampled trajectory ``s_0 -> ... -> s_n -> stop``.

    Attributes
    ----------
    states : list of networkx.Graph, length n + 1
    actions : list of int, length n + 1
        Index of the taken action in ``env.forward_actions(state)``; the last is STOP.
    n_backward : list of int, length n
        Number of backward actions of ``s_{t+1}`` (the uniform backward policy).
    equivalents : list of list of int or None
        Forward actions equivalent to the taken one, per step (``"exact"`` and ``"pe"`` only).
    backward_equivalents : list of list of int or None
        Positions among the backward actions of :math:`s_{t+1}` of those equivalent to the one
        undoing step ``t``; their number is :math:`B(s_{t+1} \\to s_t)` (``"exact"``, ``"pe"``).
    backward_index : list of int, length n
        Position of the backward action that undoes step ``t`` among those of :math:`s_{t+1}`.
    log_corrections : list of float or None
        :math:`c(s_t)` per state (flow scaling; filled on first use).
    """

    states: list[nx.Graph]
    actions: list[int]
    n_backward: list[int]
    equivalents: list[list[int]] | None = None
    backward_equivalents: list[list[int]] | None = None
    log_corrections: list[float] | None = None
    backward_index: list[int] = field(default_factory=list)

    @property
    def graph(self) -> nx.Graph:
        """The terminal graph."""
        return self.states[-1]


@torch.no_grad()
def _clip_grad_norm(params, max_norm: float) -> None:
    grads = [p.grad for p in params if p.grad is not None]
    if grads:
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        if norm > max_norm:
            for g in grads:
                g.mul_(max_norm / (norm + 1e-6))


def _checked_device(policy: torch.nn.Module, log_z: torch.Tensor, trainer: str) -> torch.device:
    """The policy's device, refusing a policy moved after its trainer built log Z."""
    dev = next(policy.parameters()).device
    if log_z.device != dev:
        raise ValueError(
            f"the policy moved to {dev} after the {trainer} was built (log Z is on "
            f"{log_z.device}): move the policy first, then build the {trainer}"
        )
    return dev


def _normalise_correction(value: object, allowed: tuple[str, ...] = _CORRECTIONS) -> str:
    if value is True:
        return "reward_scaling"
    if value is False or value is None:
        return "none"
    if isinstance(value, str) and value in allowed:
        return value
    raise ValueError(f"symmetry_correction must be True, False or one of {allowed}, got {value!r}")


def _check_training_args(
    positive: dict[str, object],
    batch_size: object,
    epsilon: object,
    pe_length: object,
    seed: object = None,
    verbose: object = False,
) -> None:
    """Shared hyper-parameter checks of the trainers (named errors)."""
    for name, val in positive.items():
        if isinstance(val, bool) or not isinstance(val, numbers.Real) or not math.isfinite(val) or val <= 0:  # fmt: skip
            raise ValueError(f"{name} must be a positive finite float, got {val!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:  # fmt: skip
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not 0 <= epsilon <= 1:
        raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")
    if isinstance(pe_length, bool) or not isinstance(pe_length, numbers.Integral) or pe_length < 1:  # fmt: skip
        raise ValueError(f"pe_length must be a positive int, got {pe_length!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):  # fmt: skip
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    if not isinstance(verbose, bool):  # bool("no") is True
        raise TypeError(f"verbose must be a bool, got {type(verbose).__name__}")


class GFlowNet:
    """Graph-building GFlowNet with SA-GFN symmetry correction.

    Parameters
    ----------
    policy : GraphPolicy
        Policy network; its ``env`` defines the state space.
    loss : {"tb", "db", "subtb"}, default="tb"
        Training objective.
    symmetry_correction : bool or str, default=True
        ``True`` / ``"reward_scaling"`` is SA-GFN, ``False`` / ``"none"`` the vanilla (biased)
        GFlowNet; ``"flow_scaling"``, ``"exact"``, ``"pe"`` and ``"approximate"`` are the
        paper's other corrections (module docstring).
    lr : float, default=1e-3
        Adam learning rate of the policy.
    lr_logz : float, default=0.1
        Learning rate of :math:`\\log Z` (TB only).
    batch_size : int, default=16
        Trajectories per training step.
    epsilon : float, default=0.05
        Exploration rate of the training rollouts.
    exploration : {"action", "trajectory"}, default="action"
        ``"action"``: at every step, with probability ``epsilon`` the action is drawn uniformly
        (the official SA-GFN trainer's epsilon-uniform exploration); ``"trajectory"``: a whole
        trajectory is uniform with probability ``epsilon``.
    replay_size : int, default=0
        Capacity of a replay buffer of past training trajectories (0: on-policy only). TB,
        DB and SubTB are off-policy objectives, so replayed trajectories are valid targets.
    replay_fraction : float, default=0.5
        Share of each batch drawn uniformly from the buffer once it holds a batch.
    subtb_lambda : float, default=0.9
        Weight base of sub-trajectory balance.
    reward_floor : float, default=1e-8
        Zero rewards are raised to this value.
    backward_policy : {"uniform", "learned"}, default="uniform"
        Uniform backward policy (the paper's setting) or the policy's learned backward heads
        (needs ``GraphPolicy(..., backward=True)``).
    pe_length : int, default=8
        Walk lengths of the positional encodings (``"pe"`` only).
    seed : int or None, default=None
        Seed of the sampling generator.
    verbose : bool, default=False
        Show a tqdm progress bar in :meth:`train`.

    Attributes
    ----------
    log_z : torch.nn.Parameter
        Learned log partition function (TB).
    history_ : list of float
        Training loss per step.
    cache : IsoClassCache
        Shared isomorphism-class and automorphism cache.
    """

    def __init__(
        self,
        policy: GraphPolicy,
        loss: str = "tb",
        symmetry_correction: bool | str = True,
        *,
        lr: float = 1e-3,
        lr_logz: float = 0.1,
        batch_size: int = 16,
        epsilon: float = 0.05,
        exploration: str = "action",
        replay_size: int = 0,
        replay_fraction: float = 0.5,
        subtb_lambda: float = 0.9,
        reward_floor: float = 1e-8,
        pe_length: int = 8,
        backward_policy: str = "uniform",
        seed: int | None = None,
        verbose: bool = False,
    ):
        if not isinstance(policy, GraphPolicy):
            raise TypeError(f"policy must be a GraphPolicy, got {type(policy).__name__}")
        if loss not in _LOSSES:
            raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
        _check_training_args(
            {
                "lr": lr,
                "lr_logz": lr_logz,
                "subtb_lambda": subtb_lambda,
                "reward_floor": reward_floor,
            },
            batch_size,
            epsilon,
            pe_length,
            seed,
            verbose,
        )
        if exploration not in ("action", "trajectory"):
            raise ValueError(f"exploration must be 'action' or 'trajectory', got {exploration!r}")
        if isinstance(replay_size, bool) or not isinstance(replay_size, numbers.Integral) or replay_size < 0:  # fmt: skip
            raise ValueError(f"replay_size must be an int >= 0, got {replay_size!r}")
        if isinstance(replay_fraction, bool) or not isinstance(replay_fraction, numbers.Real) or not 0 <= replay_fraction < 1:  # fmt: skip
            raise ValueError(f"replay_fraction must lie in [0, 1), got {replay_fraction!r}")
        correction = _normalise_correction(symmetry_correction)
        if correction in ("reward_scaling", "flow_scaling", "approximate") and not getattr(
            policy.env, "stems_orbit_closed", True
        ):
            raise ValueError(
                "symmetry_correction: the fragments' designated stems are not unions of "
                "automorphism orbits, so the symmetry factor depends on the trajectory and "
                f"{correction!r} is not exact; use symmetry_correction='exact'"
            )
        if backward_policy not in ("uniform", "learned"):
            raise ValueError(
                f"backward_policy must be 'uniform' or 'learned', got {backward_policy!r}"
            )
        if backward_policy == "learned" and not policy.backward:
            raise ValueError("backward_policy='learned' needs GraphPolicy(..., backward=True)")
        self.backward_policy = backward_policy
        self.pe_length = int(pe_length)
        self.exploration = exploration
        self.replay_size = int(replay_size)
        self.replay_fraction = float(replay_fraction)
        self.buffer_: list[tuple[Trajectory, float]] = []
        self.policy = policy
        self.loss = loss
        self.symmetry_correction = correction
        self.batch_size = int(batch_size)
        self.epsilon = float(epsilon)
        self.subtb_lambda = float(subtb_lambda)
        self.reward_floor = float(reward_floor)
        self.verbose = verbose
        # log Z lives on the policy's device; the sampling generator stays on the CPU, so a
        # seed gives the same trajectories on every device
        self.log_z = torch.nn.Parameter(torch.zeros((), device=self.device))
        self.optimizer = torch.optim.Adam(
            [
                {"params": policy.parameters(), "lr": float(lr)},
                {"params": [self.log_z], "lr": float(lr_logz)},
            ]
        )
        self.generator = torch.Generator()
        self.generator.manual_seed(0 if seed is None else int(seed))
        self.cache = IsoClassCache(self.env.node_attrs, self.env.edge_attrs)
        self.history_: list[float] = []

    @property
    def env(self):
        return self.policy.env

    @property
    def device(self) -> torch.device:
        """The policy's device: batches, losses and log-rewards are built there."""
        return next(self.policy.parameters()).device

    def _check_device(self) -> torch.device:
        return _checked_device(self.policy, self.log_z, type(self).__name__)

    # -- sampling ------------------------------------------------------------------
    @torch.no_grad()
    def sample_trajectories(
        self, n: int, epsilon: float = 0.0, exploration: str | None = None
    ) -> list[Trajectory]:
        """Roll out ``n`` complete trajectories with the current policy.

        Parameters
        ----------
        n : int
            Number of trajectories (>= 1).
        epsilon : float, default=0.0
            Exploration rate (see ``exploration``).
        exploration : {"action", "trajectory"} or None
            Per-step or per-trajectory uniform exploration; None uses the trainer's setting.

        Returns
        -------
        list of Trajectory
        """
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        env, mode = self.env, self.symmetry_correction
        exact, pe_mode = mode == "exact", mode == "pe"
        sets = mode in _SETS
        per_action = (exploration or self.exploration) == "action"
        dev = self._check_device()
        cpu = self.generator.device
        explore = torch.rand(n, generator=self.generator, device=cpu) < (0.0 if per_action else epsilon)  # fmt: skip
        trajs = [
            Trajectory([env.initial_state()], [], [], [] if sets else None, [] if sets else None)
            for _ in range(n)
        ]
        active = list(range(n))
        while active:
            graphs = [trajs[i].states[-1] for i in active]
            batch = featurize(env, graphs, validate=False, device=dev)
            logits, _ = self.policy(batch)
            if per_action and epsilon > 0:  # this step's action is uniform for these graphs
                explore = torch.zeros(n, dtype=torch.bool, device=cpu)
                explore[active] = torch.rand(len(active), generator=self.generator, device=cpu) < epsilon  # fmt: skip
            mask = explore[active].to(dev)[batch.act_graph]
            logits = torch.where(mask, torch.zeros_like(logits), logits)
            rows = segment_sample(logits, batch.act_graph, batch.n_graphs, self.generator)
            local = (rows - batch.act_offset[:-1]).tolist()
            still = []
            for j, i in enumerate(active):
                tr, g, a_idx = trajs[i], graphs[j], local[j]
                action = batch.actions[j][a_idx]
                tr.actions.append(a_idx)
                if exact:
                    classes = child_classes(env, g, batch.actions[j], self.cache)
                    tr.equivalents.append(equivalent_action_indices(env, g, a_idx, classes=classes))
                elif pe_mode:
                    pe = node_pe(env, g, self.pe_length)
                    tr.equivalents.append(
                        pe_equivalent_action_indices(env, g, batch.actions[j], a_idx, pe)
                    )
                if action.kind == STOP:
                    continue
                child = env.step(g, action)
                back = env.backward_actions(child)
                undo = env.backward_of(g, action)
                tr.n_backward.append(len(back))
                tr.backward_index.append(back.index(undo))
                if exact:
                    tr.backward_equivalents.append(
                        backward_equivalent_indices(env, child, g, self.cache)
                    )
                elif pe_mode:
                    tr.backward_equivalents.append(
                        pe_backward_equivalent_indices(
                            env, child, undo, node_pe(env, child, self.pe_length)
                        )
                    )
                tr.states.append(child)
                still.append(i)
            active = still
        return trajs

    def sample(self, n: int) -> list[nx.Graph]:
        """Sample ``n`` terminal graphs from the trained policy (no exploration)."""
        return [t.graph for t in self.sample_trajectories(n)]

    # -- training ------------------------------------------------------------------
    def log_rewards(
        self, trajectories: list[Trajectory], reward_fn: Callable[[nx.Graph], float]
    ) -> torch.Tensor:
        """Training log-rewards (SA-GFN-scaled when ``symmetry_correction`` is reward scaling).

        Returns
        -------
        Tensor, shape (B,)
        """
        out = []
        for t in trajectories:
            lr = log_reward(reward_fn, t.graph, self.reward_floor)
            if self.symmetry_correction == "reward_scaling":
                lr += log_symmetry_correction(self.env, t.graph, self.cache)
            elif self.symmetry_correction == "approximate":
                env = self.env
                bound = log_wl_automorphism_bound(t.graph, env.node_attrs, env.edge_attrs)
                lr += env.terminal_correction_log(t.graph, bound)
            out.append(lr)
        return torch.tensor(out, dtype=torch.float32, device=self.device)

    def compute_loss(
        self, trajectories: list[Trajectory], log_reward: torch.Tensor
    ) -> torch.Tensor:
        """Differentiable training loss of a batch of trajectories.

        Parameters
        ----------
        trajectories : list of Trajectory, length B
        log_reward : Tensor, shape (B,)
            Training log-rewards (see :meth:`log_rewards`).

        Returns
        -------
        Tensor, shape ()
        """
        if len(trajectories) == 0:
            raise ValueError("trajectories must not be empty")
        B = len(trajectories)
        exact = self.symmetry_correction in _SETS
        if exact and any(t.equivalents is None for t in trajectories):
            raise ValueError(
                "trajectories lack equivalent-action sets; sample them with the "
                f"{self.symmetry_correction!r} correction"
            )
        dev = self._check_device()
        if not isinstance(log_reward, torch.Tensor) or log_reward.shape != (B,):
            got = tuple(log_reward.shape) if isinstance(log_reward, torch.Tensor) else type(log_reward).__name__  # fmt: skip
            raise ValueError(f"log_reward must be a tensor of shape ({B},), got {got}")
        log_reward = log_reward.to(dev)

        def tensor(values, dtype=torch.long):  # index and constant tensors on the policy's device
            return torch.tensor(values, dtype=dtype, device=dev)

        lengths = tensor([len(t.actions) for t in trajectories])
        T = int(lengths.max())
        flat = [s for t in trajectories for s in t.states]
        learned = self.backward_policy == "learned"
        batch = featurize(self.env, flat, backward=learned, validate=False, device=dev)
        if learned:
            logits, log_flow, back_logits = self.policy.forward_backward(batch)
        else:
            logits, log_flow = self.policy(batch)
        lsm = segment_log_softmax(logits, batch.act_graph, batch.n_graphs)
        starts = batch.act_offset[:-1]
        if exact:
            rows, seg = [], []
            j = 0
            for t in trajectories:
                for eq in t.equivalents:
                    rows += [int(starts[j]) + e for e in eq]
                    seg += [j] * len(eq)
                    j += 1
            chosen = segment_logsumexp(lsm[tensor(rows)], tensor(seg), len(flat))
        else:
            taken = tensor([a for t in trajectories for a in t.actions])
            chosen = lsm[starts + taken]
        n_steps = [len(t.actions) for t in trajectories]
        b_idx = tensor([b for b, n in enumerate(n_steps) for _ in range(n)])
        t_idx = tensor([i for n in n_steps for i in range(n)])
        zeros = torch.zeros(B, T, dtype=logits.dtype, device=dev)
        log_pf = zeros.index_put((b_idx, t_idx), chosen)
        flows = zeros.index_put((b_idx, t_idx), log_flow)
        log_pb = zeros
        # uniform backward policy; the exact correction sums it over equivalent backward actions
        if learned:  # log P_B of s_{t+1} -> s_t, summed over equivalent backward actions
            back_lsm = segment_log_softmax(back_logits, batch.bwd_graph, batch.n_graphs)
            rows, seg, j, k = [], [], 0, 0
            for t in trajectories:
                sets = t.backward_equivalents or [[i] for i in t.backward_index]
                for step, idx in enumerate(sets):
                    off = int(batch.bwd_offset[j + step + 1])
                    rows += [off + i for i in idx]
                    seg += [k] * len(idx)
                    k += 1
                j += len(t.states)
            pb = (
                segment_logsumexp(back_lsm[tensor(rows)], tensor(seg), k)
                if k
                else zeros.new_zeros(0)
            )
        else:  # uniform: the exact correction counts the equivalent backward actions
            pb = tensor(
                [
                    math.log(len(b) / n) if exact else -math.log(n)
                    for t in trajectories
                    for n, b in zip(
                        t.n_backward, t.backward_equivalents or t.n_backward, strict=True
                    )
                ],
                dtype=torch.float32,
            )
        if self.symmetry_correction == "flow_scaling":  # P_B scaled by exp(c(s') - c(s))
            steps = [d for t in trajectories for d in self._correction_steps(t)]
            pb = pb + tensor(steps, dtype=pb.dtype)
        if len(pb):
            pb_b = tensor([b for b, n in enumerate(n_steps) for _ in range(n - 1)])
            pb_t = tensor([i for n in n_steps for i in range(n - 1)])
            log_pb = log_pb.to(pb.dtype).index_put((pb_b, pb_t), pb)
        if self.loss == "tb":
            return trajectory_balance_loss(self.log_z, log_pf, log_pb, log_reward, lengths)
        if self.loss == "db":
            return detailed_balance_loss(flows, log_pf, log_pb, log_reward, lengths)
        return subtrajectory_balance_loss(
            flows, log_pf, log_pb, log_reward, lengths, self.subtb_lambda
        )

    def _warn_reward_scale(self, log_r: torch.Tensor, steps: int) -> None:
        groups = self.optimizer.param_groups
        if self.loss == "tb":
            _warn_reward_scale(log_r, float(self.log_z.detach()), groups[1]["lr"], steps, "log Z")
        else:
            _warn_reward_scale(log_r, 0.0, groups[0]["lr"], steps, "the state flows")

    def train(self, reward_fn: Callable[[nx.Graph], float], steps: int) -> GFlowNet:
        """Train on-policy for ``steps`` gradient steps.

        Parameters
        ----------
        reward_fn : callable
            ``reward_fn(graph) -> float``, non-negative and finite.
        steps : int
            Number of gradient steps (>= 1).

        Returns
        -------
        GFlowNet
            ``self``; losses are appended to ``history_``.
        """
        if not callable(reward_fn):
            raise TypeError("reward_fn must be callable")
        if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
            raise ValueError(f"steps must be a positive int, got {steps!r}")
        self.policy.train()
        bar = tqdm(range(steps), disable=not self.verbose, desc=f"GFlowNet[{self.loss}]")
        for step in bar:
            n_replay = 0
            if self.replay_size and len(self.buffer_) >= self.batch_size:
                n_replay = min(self.batch_size - 1, round(self.replay_fraction * self.batch_size))
            trajs = self.sample_trajectories(self.batch_size - n_replay, self.epsilon)
            log_r = self.log_rewards(trajs, reward_fn)
            if step == 0:  # TB fits log Z to the rewards, DB/SubTB the state flows
                self._warn_reward_scale(log_r, steps)
            if self.replay_size:
                self._remember(trajs, log_r)
            if n_replay:
                pick = torch.randint(
                    len(self.buffer_), (n_replay,), generator=self.generator, device="cpu"
                )
                old = [self.buffer_[int(i)] for i in pick]
                trajs = trajs + [t for t, _ in old]
                past = torch.tensor([r for _, r in old], dtype=torch.float32, device=log_r.device)
                log_r = torch.cat([log_r, past])
            loss = self.compute_loss(trajs, log_r)
            self.optimizer.zero_grad()
            loss.backward()
            _clip_grad_norm(self.policy.parameters(), 10.0)
            self.optimizer.step()
            self.history_.append(float(loss.detach()))
        self.policy.eval()
        return self

    def _correction_steps(self, t: Trajectory) -> list[float]:
        """:math:`c(s_{t+1}) - c(s_t)` along a trajectory (c = 0 on the empty start graph)."""
        if t.log_corrections is None:
            t.log_corrections = [0.0] + [
                log_symmetry_correction(self.env, g, self.cache) for g in t.states[1:]
            ]
        c = t.log_corrections
        return [c[i + 1] - c[i] for i in range(len(c) - 1)]

    def _remember(self, trajs: list[Trajectory], log_r: torch.Tensor) -> None:
        """FIFO replay buffer of (trajectory, training log-reward)."""
        self.buffer_.extend(zip(trajs, log_r.tolist(), strict=True))
        if len(self.buffer_) > self.replay_size:
            del self.buffer_[: len(self.buffer_) - self.replay_size]
