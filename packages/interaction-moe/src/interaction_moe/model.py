"""I2MoE: M + 2 interaction experts (copies of one fusion backbone) and a per-sample reweighting.

Xin et al., "I2MoE: Interpretable Multimodal Interaction-aware Mixture-of-Experts", ICML 2025.
"""

from __future__ import annotations

import copy
import math
import numbers
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from interaction_moe.fusion import pool
from interaction_moe.losses import interaction_loss, regression_losses

__all__ = ["I2MoE", "I2MoEOutput", "perturb"]

PERTURBATIONS = ("gaussian", "zero", "mean", "permute")
TASKS = ("multiclass", "multilabel", "regression")


def perturb(
    embs: list[torch.Tensor], j: int, mode: str = "gaussian", generator=None
) -> list[torch.Tensor]:
    """A new list with modality ``j`` replaced: N(0, I) noise, zeros, the batch mean, or
    (``"permute"``) another sample's embedding -- an in-distribution removal: the replaced
    modality still looks like real data, so an expert cannot detect the removal instead of
    modelling the interaction."""
    out = list(embs)
    e = embs[j]
    if not isinstance(e, torch.Tensor) or e.ndim < 2:
        raise ValueError(
            f"embs[{j}] must be a (B, D) or (B, T, D) tensor, got {getattr(e, 'shape', e)}"
        )
    if mode == "permute":
        n = e.shape[0]
        if n < 2:
            out[j] = e.clone()
        else:  # a random derangement: no sample keeps its own embedding
            shift = int(torch.randint(1, n, (1,), generator=generator))
            order = torch.randperm(n, generator=generator)
            out[j] = e[order][torch.roll(torch.arange(n), shift)][torch.argsort(order)]
    elif mode == "gaussian":
        out[j] = torch.randn(e.shape, generator=generator, dtype=e.dtype, device=e.device)
    elif mode == "zero":
        out[j] = torch.zeros_like(e)
    elif mode == "mean":
        out[j] = e.mean(0, keepdim=True).expand_as(e)
    else:
        raise ValueError(f"mode (the perturbation) must be one of {PERTURBATIONS}, got {mode!r}")
    return out


@dataclass
class I2MoEOutput:
    """Forward result.

    Attributes
    ----------
    logits : Tensor (B, K)
        ``sum_k w_k o_k`` (a mixture of logits).
    weights : Tensor (B, n_E)
        Expert weights, order ``[U_1..U_M, S, R]``.
    expert_logits : Tensor (B, n_E, K)
    interaction_losses : dict of str -> Tensor, or None in eval mode
    """

    logits: torch.Tensor
    weights: torch.Tensor
    expert_logits: torch.Tensor
    interaction_losses: dict | None


class I2MoE(nn.Module):
    """Interaction-aware mixture of experts over any encoders and fusion backbone.

    Parameters
    ----------
    encoders : list of nn.Module
        One per modality (M >= 2), shared by all experts; each maps its input to (B, D) or (B, T, D).
    fusion : nn.Module
        ``fusion(list of M embeddings) -> (B, K)``; deep-copied into ``M + 2`` experts.
    task : {"multiclass", "multilabel", "regression"}, default="multiclass"
    interaction_weight : float, default=0.1
        lambda of ``L = L_task + lambda L_int``.
    temperature : float, default=1.0
        Softmax temperature of the reweighting.
    margin : float, default=1.0
        Triplet margin of the uniqueness losses.
    perturbation : {"gaussian", "zero", "mean"}, default="gaussian"
    gate_dim : int, optional
        Size of the concatenated pooled embeddings (inferred on the first call when None).
    reweight_hidden, reweight_layers, reweight_dropout : int, int, float
        Gate MLP (defaults 128, 2, 0.5).
    reweighting : {"sample", "global"}, default="sample"
        ``"global"``: one learned weight vector for all samples (ablation).
    interaction_loss : bool, default=True
        False: a plain dense MoE of the same capacity (ablation).
    independent_init : bool, default=False
        False: experts are identical copies at initialisation (released code); True: re-initialised.
    regression_losses : {"paper", "reference"}, default="paper"
    gate_target_weight : float, default=0.0
        Ours (not in the paper): adds ``gate_target_weight * KL(softmax(-l / T) || w)``, with
        ``l`` each expert's own task loss on the sample (detached): the gate learns to route to
        the experts that are right, instead of by the task gradient alone (zero at the first step,
        when the experts are copies).
    specialize : bool, default=False
        Ours: the uniqueness expert ``j`` sees only modality ``j`` (the others replaced by the
        perturbation) in its forward pass, so it cannot solve a synergy the synergy expert is for.
        In eval mode the removal is fixed and batch-independent (see ``_remove``), so predictions
        are deterministic.
    expert_loss_weight : float, default=0.0
        Weight of an extra task loss on every expert's own output (not in the paper; 0 = paper).
        Keeps experts that the gate has switched off competent, so routing can still move to them.
    """

    def __init__(
        self,
        encoders: list[nn.Module],
        fusion: nn.Module,
        task: str = "multiclass",
        interaction_weight: float = 0.1,
        temperature: float = 1.0,
        margin: float = 1.0,
        perturbation: str = "gaussian",
        gate_dim: int | None = None,
        reweight_hidden: int = 128,
        reweight_layers: int = 2,
        reweight_dropout: float = 0.5,
        reweighting: str = "sample",
        interaction_loss: bool = True,
        independent_init: bool = False,
        regression_losses: str = "paper",
        expert_loss_weight: float = 0.0,
        gate_target_weight: float = 0.0,
        specialize: bool = False,
    ) -> None:
        super().__init__()
        for name, v in (("interaction_weight", interaction_weight), ("temperature", temperature),
                        ("margin", margin), ("expert_loss_weight", expert_loss_weight),
                        ("gate_target_weight", gate_target_weight)):  # fmt: skip
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if not gate_target_weight >= 0:
            raise ValueError(f"gate_target_weight must be >= 0, got {gate_target_weight}")
        self.gate_target_weight = float(gate_target_weight)
        self.specialize = bool(specialize)
        if not isinstance(encoders, list | tuple | nn.ModuleList) or len(encoders) < 2:
            raise ValueError("encoders must be a list of at least 2 modules (one per modality)")
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if not interaction_weight >= 0:
            raise ValueError(f"interaction_weight must be >= 0, got {interaction_weight}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if not margin >= 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        if perturbation not in PERTURBATIONS:
            raise ValueError(f"perturbation must be one of {PERTURBATIONS}, got {perturbation!r}")
        if reweighting not in ("sample", "global"):
            raise ValueError(f"reweighting must be 'sample' or 'global', got {reweighting!r}")
        if regression_losses not in ("paper", "reference"):
            raise ValueError(
                f"regression_losses must be 'paper' or 'reference', got {regression_losses!r}"
            )
        if reweight_layers < 1 or reweight_hidden < 1 or not 0 <= reweight_dropout < 1:
            raise ValueError(
                "reweight_layers >= 1, reweight_hidden >= 1 and 0 <= reweight_dropout < 1 required"
            )
        if not expert_loss_weight >= 0:
            raise ValueError(f"expert_loss_weight must be >= 0, got {expert_loss_weight}")
        self.expert_loss_weight = float(expert_loss_weight)
        self.encoders = nn.ModuleList(encoders)
        self.M = len(encoders)
        self.experts = nn.ModuleList(copy.deepcopy(fusion) for _ in range(self.M + 2))
        if independent_init:
            for ex in self.experts:
                for mod in ex.modules():
                    if mod is not ex and hasattr(mod, "reset_parameters"):
                        mod.reset_parameters()
        self.task = task
        self.interaction_weight = float(interaction_weight)
        self.temperature = float(temperature)
        self.margin = float(margin)
        self.perturbation = perturbation
        self.reweighting = reweighting
        self.use_interaction_loss = bool(interaction_loss)
        self.regression_mode = regression_losses
        for j in range(self.M):  # running embedding means (specialize's eval stand-in)
            self.register_buffer(f"_emb_mean_{j}", torch.zeros(0))
        n_e = self.M + 2
        if reweighting == "global":
            self.gate_logits = nn.Parameter(torch.zeros(n_e))
            self.gate = None
        else:
            layers: list[nn.Module] = []
            if reweight_layers == 1:
                layers = [nn.LazyLinear(n_e) if gate_dim is None else nn.Linear(gate_dim, n_e)]
            else:
                first = (
                    nn.LazyLinear(reweight_hidden)
                    if gate_dim is None
                    else nn.Linear(gate_dim, reweight_hidden)
                )
                layers = [first, nn.ReLU(), nn.Dropout(reweight_dropout)]
                for _ in range(reweight_layers - 2):
                    layers += [
                        nn.Linear(reweight_hidden, reweight_hidden),
                        nn.ReLU(),
                        nn.Dropout(reweight_dropout),
                    ]
                layers.append(nn.Linear(reweight_hidden, n_e))
            self.gate = nn.Sequential(*layers)

    def _track_means(self, embs: list[torch.Tensor]) -> None:
        """Running means of the modality embeddings (momentum 0.1, as BatchNorm's statistics)."""
        with torch.no_grad():
            for j, e in enumerate(embs):
                m = e.detach().mean(0)
                buf = getattr(self, f"_emb_mean_{j}")
                if buf.shape != m.shape:
                    setattr(self, f"_emb_mean_{j}", m.clone())
                else:
                    buf.mul_(0.9).add_(m, alpha=0.1)

    def _remove(self, embs: list[torch.Tensor], j: int) -> list[torch.Tensor]:
        """Modality ``j`` removed: random in training, a fixed batch-independent stand-in in eval.

        In eval mode the prediction must not depend on the random state or on the other rows
        of the batch, so ``"gaussian"`` uses one fixed N(0, I) draw (seed 0) for every sample,
        ``"zero"`` zeros, and ``"mean"``/``"permute"`` the running mean of the training
        embeddings (the batch mean / another sample in training).
        """
        if self.training:
            return perturb(embs, j, self.perturbation)
        e = embs[j]
        if self.perturbation == "zero":
            ref = torch.zeros(e.shape[1:], dtype=e.dtype, device=e.device)
        elif self.perturbation == "gaussian":
            g = torch.Generator().manual_seed(0)
            ref = torch.randn(e.shape[1:], generator=g, dtype=torch.float64)
            ref = ref.to(dtype=e.dtype, device=e.device)
        else:
            ref = getattr(self, f"_emb_mean_{j}")
            if ref.shape != e.shape[1:]:  # never trained: a seeded removal of this batch
                return perturb(embs, j, self.perturbation, torch.Generator().manual_seed(0))
            ref = ref.to(dtype=e.dtype, device=e.device)
        out = list(embs)
        out[j] = ref.expand_as(e)
        return out

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # the running means are sized at the first training step: take the saved size
        for j in range(self.M):
            key = f"{prefix}_emb_mean_{j}"
            if key in state_dict:
                setattr(self, f"_emb_mean_{j}", torch.empty_like(state_dict[key]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @property
    def expert_names(self) -> list[str]:
        """``["uni_1", ..., "uni_M", "syn", "red"]``."""
        return [f"uni_{m + 1}" for m in range(self.M)] + ["syn", "red"]

    def _check(self, xs) -> None:
        if not isinstance(xs, list | tuple) or len(xs) != self.M:
            raise ValueError(f"xs must be a list of {self.M} modality tensors")
        for m, x in enumerate(xs):
            if not isinstance(x, torch.Tensor) or not x.is_floating_point():
                raise TypeError(
                    f"xs[{m}] must be a floating-point tensor (cast integer features with .float())"
                )
        sizes = {int(x.shape[0]) for x in xs}
        if len(sizes) != 1:
            raise ValueError(f"xs: batch sizes differ across modalities: {sorted(sizes)}")
        for m, x in enumerate(xs):
            if x.is_floating_point() and not torch.isfinite(x).all():
                raise ValueError(f"xs[{m}] contains NaN or inf")

    def weights(self, embs: list[torch.Tensor]) -> torch.Tensor:
        """Expert weights (B, n_E) from the pooled embeddings."""
        B = embs[0].shape[0]
        if self.gate is None:
            z = self.gate_logits.expand(B, -1)
        else:
            z = self.gate(torch.cat([pool(e) for e in embs], dim=-1))
        return F.softmax(z / self.temperature, dim=-1)

    def forward(self, xs: list[torch.Tensor]) -> I2MoEOutput:
        """Mixture prediction; in training mode also the interaction losses (n_E (M+1) fusion passes)."""
        self._check(xs)
        embs = [enc(x) for enc, x in zip(self.encoders, xs, strict=True)]
        if self.training:
            self._track_means(embs)
        if self.specialize:  # uniqueness expert j: modality j alone (the others removed)
            clean = []
            for k, ex in enumerate(self.experts):
                view = embs
                if k < self.M:
                    for other in range(self.M):
                        if other != k:
                            view = self._remove(view, other)
                clean.append(ex(view))
        else:
            clean = [ex(embs) for ex in self.experts]
        if clean[0].dim() != 2 or clean[0].shape[0] != embs[0].shape[0]:
            raise ValueError(f"fusion output must be (B, K), got {tuple(clean[0].shape)}")
        if self.task == "multiclass" and clean[0].shape[1] < 2:
            raise ValueError("task='multiclass' needs K >= 2 fusion outputs")
        w = self.weights(embs)
        E = torch.stack(clean, dim=1)  # (B, n_E, K)
        logits = (w.unsqueeze(-1) * E).sum(1)
        losses = None
        if self.training and self.use_interaction_loss:
            pert = [
                [ex(perturb(embs, j, self.perturbation)) for j in range(self.M)]
                for ex in self.experts
            ]
            if self.task == "regression":
                vals = regression_losses(clean, pert, self.regression_mode, self.margin)
                losses = dict(zip(self.expert_names, vals, strict=True))
                losses["total"] = torch.stack(vals).mean()
            else:
                losses = interaction_loss(clean, pert, self.margin)
        return I2MoEOutput(logits, w, E, losses)

    def loss(
        self, out: I2MoEOutput, y: torch.Tensor, class_weight: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``L_task(out.logits, y) + interaction_weight * L_int`` (+ ``aux_loss()`` of the experts)."""
        if self.task == "multiclass":
            if y.dtype not in (torch.int64, torch.int32) or y.dim() != 1:
                raise TypeError("y must be a 1-D integer tensor of class ids for task='multiclass'")
            if len(y) != len(out.logits) or y.min() < 0 or y.max() >= out.logits.shape[1]:
                raise ValueError("y must hold one class id in [0, K) per sample")
        total = self._task_loss(out.logits, y, class_weight)
        if self.expert_loss_weight > 0:
            per = [
                self._task_loss(out.expert_logits[:, k], y, class_weight) for k in range(self.M + 2)
            ]
            total = total + self.expert_loss_weight * torch.stack(per).mean()
        if self.gate_target_weight > 0 and self.task == "multiclass":
            with torch.no_grad():  # each expert's own loss on each sample: its competence
                per_sample = torch.stack(
                    [F.cross_entropy(out.expert_logits[:, k], y.long(), reduction="none")
                     for k in range(self.M + 2)], dim=1,
                )  # fmt: skip
                target = F.softmax(-per_sample / self.temperature, dim=1)
            kl = target * (target.clamp_min(1e-12).log() - out.weights.clamp_min(1e-12).log())
            total = total + self.gate_target_weight * kl.sum(1).mean()
        if out.interaction_losses is not None:
            total = total + self.interaction_weight * out.interaction_losses["total"]
        for ex in self.experts:
            if hasattr(ex, "aux_loss"):
                total = total + 0.01 * ex.aux_loss()
        return total

    def _task_loss(self, logits: torch.Tensor, y: torch.Tensor, class_weight=None) -> torch.Tensor:
        if self.task == "multiclass":
            return F.cross_entropy(logits, y.long(), weight=class_weight)
        if self.task == "multilabel":
            return F.binary_cross_entropy_with_logits(logits, y.float())
        return F.smooth_l1_loss(logits.squeeze(-1), y.float().reshape(len(y), -1).squeeze(-1))

    @torch.no_grad()
    def explain(self, xs: list[torch.Tensor]) -> dict:
        """Local and global explanation (eval mode, no perturbation).

        Returns
        -------
        dict
            ``weights`` (B, n_E), ``expert_predictions`` (B, n_E) argmax per expert,
            ``global_weights`` (n_E,), ``disagreement`` (fraction of samples whose experts disagree).
        """
        was = self.training
        self.eval()
        out = self(xs)
        self.train(was)
        pred = out.expert_logits.argmax(-1)
        dis = (pred != pred[:, :1]).any(1).float().mean()
        return {
            "weights": out.weights,
            "expert_predictions": pred,
            "global_weights": out.weights.mean(0),
            "disagreement": float(dis),
            "names": self.expert_names,
        }

    @torch.no_grad()
    def sensitivity(self, xs: list[torch.Tensor]) -> torch.Tensor:
        """``sigma[k, j] = mean ||o_k - o_k(modality j removed)|| / mean ||o_k||`` (n_E, M)."""
        self._check(xs)
        embs = [enc(x) for enc, x in zip(self.encoders, xs, strict=True)]
        out = torch.zeros(self.M + 2, self.M)
        for k, ex in enumerate(self.experts):
            o = ex(embs)
            base = o.norm(dim=-1).mean().clamp_min(1e-12)
            for j in range(self.M):
                out[k, j] = (o - ex(self._remove(embs, j))).norm(dim=-1).mean() / base
        return out
