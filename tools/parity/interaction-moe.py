"""Parity of interaction-moe's I2MoE with the official code (``Raina-Xin/I2MoE``), in float64.

The official checkout is an input, never copied: ``--official DIR`` (the repository root). The
script imports the official ``src.imoe.InteractionMoE`` (``InteractionMoE``,
``MLPReWeighting``, ``InteractionExpert``), builds ours over the same fusion backbone with
identity encoders (the official model receives the encoder outputs, as its ``imoe_train.py``
passes them), copies the official weights into ours and compares on identical embeddings:

- inference: the mixture logits, the per-sample interaction weights, every expert's logits,
- training mode: each interaction loss (uniqueness per modality, synergy, redundancy) and
  their mean, with the same Gaussian removals (both draw ``randn`` from the global generator in
  the same order; the gate's dropout is set to 0 on both sides so it draws nothing),
- the objective ``CE + lambda * mean(L_int)`` of ``imoe_train.py``, every gradient, and the
  parameters after one Adam step.

Writes ``results/interaction-moe/parity.json``::

    uv run python tools/parity/interaction-moe.py --official /path/to/I2MoE
"""

from __future__ import annotations

import argparse
import copy
import importlib
import pathlib
import sys

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
from parity_common import Record, official_source
from record import Run

from interaction_moe import I2MoE

WHERE = {
    "mixture logits (inference)": "src/imoe/InteractionMoE.py: InteractionMoE.inference",
    "interaction weights (inference)": "InteractionMoE.inference -> MLPReWeighting",
    "expert logits (inference)": "InteractionExpert.forward",
    "mixture logits (training)": "InteractionMoE.forward",
    "uniqueness loss": "InteractionMoE.uniqueness_loss_single (per modality)",
    "synergy loss": "InteractionMoE.synergy_loss",
    "redundancy loss": "InteractionMoE.redundancy_loss",
    "mean interaction loss": "imoe_train.py: sum(interaction_losses) / (M + 2)",
    "objective": "imoe_train.py: task_loss + interaction_loss_weight * interaction_loss",
    "gradients": "loss.backward()",
    "after one Adam step": "optimizer.step()",
}


class ConcatFusion(nn.Module):
    """The fusion backbone both sides copy into every expert: an MLP on the concatenation."""

    def __init__(self, dims, hidden, k):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(sum(dims), hidden), nn.ReLU(), nn.Linear(hidden, k))

    def forward(self, inputs):
        return self.net(torch.cat(inputs, dim=1))


def load_official(root: pathlib.Path):
    if not (root / "src" / "imoe" / "InteractionMoE.py").exists():
        raise SystemExit(f"--official: {root} holds no I2MoE checkout (src/imoe missing)")
    sys.path.insert(0, str(root))
    return importlib.import_module("src.imoe.InteractionMoE")


def build(off_mod, seed: int, dims, hidden, k, rw_hidden, temperature, margin, lam):
    torch.manual_seed(seed)
    fusion = ConcatFusion(dims, hidden, k).double()
    off = off_mod.InteractionMoE(
        num_modalities=len(dims), fusion_model=copy.deepcopy(fusion), fusion_sparse=False,
        hidden_dim=dims[0], hidden_dim_rw=rw_hidden, num_layer_rw=2, temperature_rw=temperature,
    ).double()  # fmt: skip
    ours = I2MoE(
        [nn.Identity() for _ in dims], copy.deepcopy(fusion), interaction_weight=lam,
        temperature=temperature, margin=margin, gate_dim=sum(dims), reweight_hidden=rw_hidden,
        reweight_layers=2, reweight_dropout=0.0,
    ).double()  # fmt: skip
    for m in off.modules():  # the gate's dropout draws nothing on either side
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    with torch.no_grad():
        for k_, ex in enumerate(off.interaction_experts):
            ours.experts[k_].load_state_dict(ex.fusion_model.state_dict())
        net = off.reweight.mlp.network
        for i in (0, 3):
            ours.gate[i].weight.copy_(net[i].weight)
            ours.gate[i].bias.copy_(net[i].bias)
    return off, ours


def _pairs(off, ours):
    for k_, ex in enumerate(off.interaction_experts):
        own = dict(ours.experts[k_].named_parameters())
        for name, p in ex.fusion_model.named_parameters():
            yield f"expert {k_} {name}", own[name], p
    net = off.reweight.mlp.network
    for i in (0, 3):
        yield f"gate {i}.weight", ours.gate[i].weight, net[i].weight
        yield f"gate {i}.bias", ours.gate[i].bias, net[i].bias


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--official", required=True, type=pathlib.Path,
                    help="checkout of github.com/Raina-Xin/I2MoE")  # fmt: skip
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None, help="results folder (default results/interaction-moe)")
    a = ap.parse_args(argv)
    off_mod = load_official(a.official.resolve())
    run = Run("interaction-moe", out=a.out)
    rec = Record()

    B, k, hidden, rw_hidden, lam = 16, 3, 12, 10, 0.5
    for seed in range(a.seeds):
        M = 2 + seed % 2  # 2 and 3 modalities
        dims = [6] * M  # MLPReWeighting sizes its input as hidden_dim * M: equal widths
        off, ours = build(off_mod, seed, dims, hidden, k, rw_hidden, 1.5, 1.0, lam)
        g = torch.Generator().manual_seed(100 + seed)
        embs = [torch.randn(B, d, generator=g, dtype=torch.float64) for d in dims]
        y = torch.randint(0, k, (B,), generator=g)
        off.eval(), ours.eval()
        with torch.no_grad():
            e_off, w_off, logit_off = off.inference(embs)
            out = ours(embs)
        rec("mixture logits (inference)", out.logits, logit_off)
        rec("interaction weights (inference)", out.weights, w_off)
        for k_ in range(M + 2):
            rec("expert logits (inference)", out.expert_logits[:, k_], e_off[k_])
        off.train(), ours.train()
        torch.manual_seed(1000 + seed)
        _, _, logits_off, inter_off = off(embs)
        torch.manual_seed(1000 + seed)
        out = ours(embs)
        rec("mixture logits (training)", out.logits, logits_off)
        for m in range(M):
            rec("uniqueness loss", out.interaction_losses[f"uni_{m + 1}"], inter_off[m])
        rec("synergy loss", out.interaction_losses["syn"], inter_off[M])
        rec("redundancy loss", out.interaction_losses["red"], inter_off[M + 1])
        mean_off = sum(inter_off) / (M + 2)
        rec("mean interaction loss", out.interaction_losses["total"], mean_off)
        loss_off = nn.functional.cross_entropy(logits_off, y) + lam * mean_off
        loss = ours.loss(out, y)
        rec("objective", loss, loss_off)
        opt_off = torch.optim.Adam(off.parameters(), lr=1e-3)
        opt = torch.optim.Adam(ours.parameters(), lr=1e-3)
        opt_off.zero_grad(), opt.zero_grad()
        loss_off.backward(), loss.backward()
        for _, mine, theirs in _pairs(off, ours):
            rec("gradients", mine.grad, theirs.grad)
        opt_off.step(), opt.step()
        for _, mine, theirs in _pairs(off, ours):
            rec("after one Adam step", mine, theirs)

    rows = rec.rows(WHERE)
    worst = max(r[3] for r in rows)
    run.table(
        "parity", ["component", "official file: function", "max |ours − official|", "max relative"],
        rows, fmt=[None, None, ".1e", ".1e"], seeds=list(range(a.seeds)),
        title="I2MoE vs the official InteractionMoE, float64",
        notes=[f"{a.seeds} seeds (M = 2 and 3 modalities, B = {B}, K = {k}, a concatenation-MLP "
               f"fusion backbone copied into every expert, gate MLP of width {rw_hidden}, "
               f"temperature 1.5, lambda = {lam}); worst relative difference {worst:.1e}. "
               "Switches: none (our defaults are the released code's; the gate's dropout is 0 "
               "on both sides only so that neither draws random numbers the other does not)."],
        per_seed=rec.per_seed(),
        extra={"official": official_source(a.official, "Raina-Xin/I2MoE")},
        headline=f"I2MoE vs the official code, float64: worst relative difference {worst:.1e}",
    )  # fmt: skip


if __name__ == "__main__":
    main()
