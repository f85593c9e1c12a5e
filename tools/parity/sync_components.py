"""Component parity of this package's SYNC (``arch="reference"``) with the official SYNC modules.

The official ``network.SYNC_algo.SYNC`` is built from the checkout (Circle's settings), its weights
are copied into :class:`evolving_dg.SYNCNet` module by module (every tensor of both sides is
mapped, checked), both run in float64 on one batch, and each component is compared:

* the forward pieces: static and dynamic posteriors, the dynamic and drift priors, the drift
  posterior, the decoder, the maskers' scores, the relaxed top-k mask on shared Gumbel noise, the
  classifier;
* every loss term of one training step, with the sampling noise switched off on both sides
  (reparameterised samples at their means, Gumbel-softmax at zero noise, the maskers' dropout
  off), read out of the official ``update`` at its optimiser step;
* the gradient of every parameter from that step's total loss;
* the prediction path on a target batch: the static mean, the dynamic mean one LSTM step from a
  source-end state, and the drift factor at the domain index.

Imported by ``tools/parity/evolving-dg.py --components``.
"""

from __future__ import annotations

import inspect
import types

import torch
import torch.nn.functional as F
from parity_common import Record, import_official

import evolving_dg as edg
import evolving_dg.losses as edg_losses
import evolving_dg.sync as edg_sync

B, T, K, DZ, WIDTH = 16, 15, 2, 20, 512

WHERE = {
    "static posterior (mu, log sigma)": "submodules.py: StaticProbabilisticEncoder.forward",
    "dynamic posterior (mu, log sigma)": "submodules.py: DynamicProbabilisticEncoder.forward",
    "dynamic prior over T domains": "SYNC_algo.py: SYNC.gen_dynamic_prior",
    "drift posterior logits": "submodules.py: DynamicCatEncoder.forward",
    "drift prior logits over T domains": "SYNC_algo.py: SYNC.gen_dynamic_prior",
    "decoder": "submodules.py: LinearDecoder.forward",
    "masker scores (eval)": "networks.py: Masker.layers",
    "relaxed top-k mask (shared Gumbel noise)": "networks.py: Masker.forward",
    "classifier": "cla_func.py: SingleLayerClassifier.forward",
    "loss: L_mp (CE_y)": "SYNC_algo.py: SYNC.update",
    "loss: L_fp (recon + static KL + dynamic KL)": "SYNC_algo.py: SYNC.update",
    "loss: drift KL": "SYNC_algo.py: SYNC.update",
    "loss: MI": "loss_func.py: calculate_mi_loss",
    "loss: L_stc": "loss_func.py: cross_domain_contrastive_loss",
    "loss: L_dyc": "loss_func.py: inter_domain_contrastive_loss",
    "loss: total": "SYNC_algo.py: SYNC.update",
    "gradients, all but the dynamic prior": "SYNC_algo.py: SYNC.update (backward)",
    "gradients, dynamic prior LSTM and head": "SYNC_algo.py: SYNC.update (backward)",
    "predict: static logits (eval, mask 1)": "SYNC_algo.py: SYNC.predict",
    "predict: dynamic logits from a source-end state (mask 1)": "SYNC_algo.py: SYNC.predict",
    "predict: drift logits at the domain index": "SYNC_algo.py: SYNC.predict",
}

# official tensors SYNC's forward never reads: the registry classifier (SYNC builds its own),
# the static prior's empty placeholder, the maskers' BatchNorm (its call is commented out), and
# the all-zero prior inputs and initial states
UNUSED = ("cla_func.", "static_prior.dummy_param", "masker_stc.bn.", "masker_dyc.bn.",
          "latent_c_priors", "latent_d_priors")  # fmt: skip
_SCALAR = torch.Size()

CIRCLE = dict(  # scripts/train_circle_sync.sh
    data_name="ToyCircle", num_classes=K, data_size=[1, 2], source_domains=T,
    model_func="Toy_Linear_FE", feature_dim=128, cla_func="Linear_Cla", algorithm="SYNC",
    zc_dim=DZ, zw_dim=DZ, zd_dim=DZ, lambda_evolve=0.01, lambda_mi=1.0, lambda_causal=0.02,
    weight_decay=0.0,
)  # fmt: skip


def load_official(root) -> types.ModuleType:
    """Import the official package from its checkout (CPU: ``.cuda()`` is a no-op)."""
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    (inits,) = import_official(root, "engine.inits")
    return inits


# the package's switches that restore the official behaviour (each a documented deviation)
OFFICIAL = {"contrast_eps": 1e-6, "prior_state_grad": False}


def build_pair(inits, seed: int, official: bool = True):
    """(official SYNC algorithm, our SYNCNet) with the official weights copied into ours."""
    torch.manual_seed(seed)
    cfg = types.SimpleNamespace(**CIRCLE, seed=seed)
    off = inits.get_algorithm(cfg)
    ours = edg.SYNCNet((2,), K, "mlp", WIDTH, DZ, True, (True, True), "reference",
                       prior_state_grad=not official)  # fmt: skip
    pairs = module_pairs(ours, off)
    mapped = set()
    for a, b in pairs:
        a.load_state_dict(b.state_dict())
        mapped |= {id(t) for t in a.state_dict(keep_vars=True).values()}
    missing = [k for k, t in ours.state_dict(keep_vars=True).items() if id(t) not in mapped]
    if missing:
        raise AssertionError(f"our tensors without an official counterpart: {missing}")
    theirs = {id(t) for _, b in pairs for t in b.state_dict(keep_vars=True).values()}
    left = [k for k, t in off.state_dict(keep_vars=True).items()
            if id(t) not in theirs and not k.startswith(UNUSED)
            and not k.endswith((".h0", ".c0"))]  # fmt: skip
    if left:
        raise AssertionError(f"official tensors not mapped: {left}")
    return off.double(), ours.double()


def module_pairs(ours, off) -> list[tuple[torch.nn.Module, torch.nn.Module]]:
    def mlp(seq, fe):
        return [(seq.net[0], fe.input), (seq.net[2], fe.hiddens[0]), (seq.net[4], fe.hiddens[1]),
                (seq.net[6], fe.output)]  # fmt: skip

    se, de = off.static_encoder, off.dynamic_encoder
    ce, cp = off.dynamic_d_encoder, off.dynamic_d_prior
    out = mlp(ours.phi_st, se.model_func) + mlp(ours.phi_dy, de.model_func)
    out += [(ours.static[0], se.conv_fc[0].model), (ours.static[1], se.z_linear.model[0]),
            (ours.static[3], se.fc_affine_layer.model[0]),
            (ours.aff_dy, de.conv_fc[0].model), (ours.lstm_dy, de.z_lstm),
            (ours.head_dy, de.fc_affine_layer),
            (ours.prior_cell, off.dynamic_prior.lstm),
            (ours.prior_head, off.dynamic_prior.fc_affine_layer),
            (ours.drift_enc[0], ce.proj[0]), (ours.drift_enc[1], ce.proj[1]),
            (ours.drift_enc[3], ce.proj[3]), (ours.drift_enc[4], ce.conv_fc[0].model),
            (ours.drift_lstm, ce.z_lstm), (ours.drift_head, ce.fc_affine_layer),
            (ours.drift_prior_cell, cp.lstm), (ours.drift_prior_head, cp.fc_affine_layer),
            (ours.classifier, off.classifier.linear)]  # fmt: skip
    out += [(ours.decoder[i], off.decoder.model[i]) for i in (0, 2, 3, 5, 6, 8)]
    for mine, theirs in ((ours.mask_st, off.masker_stc), (ours.mask_dy, off.masker_dyc)):
        out += [(mine.net[i], theirs.layers[i]) for i in (1, 2, 5, 6, 8)]
    return out


class NoNoise:
    """Sampling noise off on both sides: Normal.rsample at the mean, Gumbel noise zero, the
    maskers' dropout off (restored on exit)."""

    def __init__(self, off, ours) -> None:
        self.drop = [
            m for m in (*off.modules(), *ours.modules()) if isinstance(m, torch.nn.Dropout)
        ]

    def __enter__(self):
        self.saved = (torch.distributions.Normal.rsample, F.gumbel_softmax,
                      edg_losses.gumbel_softmax, edg_sync.gumbel_softmax,
                      edg_sync.sample_gaussian, [m.p for m in self.drop])  # fmt: skip
        torch.distributions.Normal.rsample = lambda self, shape=_SCALAR: self.loc.expand(
            self._extended_shape(shape)
        )

        def soft(logits, tau=1.0, hard=False, dim=-1, generator=None, **_):
            return (logits / tau).softmax(dim)

        F.gumbel_softmax = soft
        edg_losses.gumbel_softmax = edg_sync.gumbel_softmax = soft
        edg_sync.sample_gaussian = lambda mu, s, param="ref": mu
        for m in self.drop:
            m.p = 0.0
        return self

    def __exit__(self, *exc):
        (torch.distributions.Normal.rsample, F.gumbel_softmax, edg_losses.gumbel_softmax,
         edg_sync.gumbel_softmax, edg_sync.sample_gaussian, ps) = self.saved  # fmt: skip
        for m, p in zip(self.drop, ps, strict=True):
            m.p = p


def batch(seed: int):
    """One (B, T, 2) training batch in the official layout and its labels (B, T)."""
    g = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(B, T, 2, generator=g, dtype=torch.float64)
    y = torch.randint(0, K, (B, T), generator=g)
    return x, y


def our_estimator(net, official: bool = True) -> edg.SYNC:
    est = edg.SYNC(arch="reference", width=WIDTH, z_dim=DZ, **(OFFICIAL if official else {}))
    est.net_, est.n_classes_ = net, K
    return est


def compare(inits, seed: int, rec: Record, official: bool = True) -> None:
    """Every component (``official=True``: with :data:`OFFICIAL` set), or only the training
    step's terms and gradients at the package defaults, labelled so."""
    off, ours = build_pair(inits, seed, official)
    if not official:
        rec = _Suffixed(rec, " [package defaults]")
    x, y = batch(seed)
    minibatches = [(x[:, t], y[:, t]) for t in range(T)]  # the official per-domain list
    if official:
        forward_components(off, ours, x, y, seed, rec)
    step_components(off, ours, x, y, minibatches, rec, official)
    if official:
        predict_components(off, ours, x, rec)


class _Suffixed:
    def __init__(self, rec: Record, suffix: str) -> None:
        self.rec, self.suffix = rec, suffix

    def __call__(self, name, ours, official) -> None:
        self.rec(name + self.suffix, ours, official)


def forward_components(off, ours, x, y, seed: int, rec) -> None:
    off.train(), ours.train()
    with torch.no_grad():
        st = off.static_encoder(x)
        mu, s = ours.encode_static(x.flatten(0, 1))
        rec("static posterior (mu, log sigma)", torch.cat([mu, s], 1), st)
        dy = off.dynamic_encoder(x, None)
        feats = ours.dynamic_features(x.flatten(0, 1)).view(B, T, -1)
        rec("dynamic posterior (mu, log sigma)", ours.head_dy(ours.lstm_dy(feats)[0]), dy)
        p_off, _ = off.gen_dynamic_prior(off.dynamic_prior, off.latent_c_priors, T)
        rec("dynamic prior over T domains", torch.cat(ours.dynamic_prior(T), -1), p_off[0])
        onehot = F.one_hot(y, K).double()
        q_off = off.dynamic_d_encoder(onehot, None)
        q = ours.drift_head(ours.drift_lstm(ours.drift_enc(onehot.flatten(0, 1)).view(B, T, -1))[0])
        rec("drift posterior logits", q, q_off)
        d_off, _ = off.gen_dynamic_prior(off.dynamic_d_prior, off.latent_d_priors, T)
        rec("drift prior logits over T domains", ours.drift_prior(T), d_off[0])
        z = torch.randn(B * T, 2 * DZ, dtype=torch.float64)
        rec("decoder", ours.decoder(z), off.decoder(z))
        zc = torch.randn(B, 2 * DZ + K, dtype=torch.float64)
        rec("classifier", ours.classifier(zc), off.classifier(zc))
    off.eval(), ours.eval()
    with torch.no_grad():
        zd = torch.randn(B, DZ, dtype=torch.float64)
        rec("masker scores (eval)", ours.mask_st(zd), off.masker_stc.layers(zd))
        g = torch.Generator().manual_seed(seed)
        k = int(DZ * 0.6)
        noise = [-torch.log(-torch.log(torch.rand(B, DZ, generator=g, dtype=torch.float64)))
                 for _ in range(k)]  # fmt: skip
        it = iter(noise)
        F_gs = F.gumbel_softmax
        F.gumbel_softmax = lambda logits, tau=1.0, hard=False, dim=-1: (
            (logits + next(it)) / tau
        ).softmax(dim)
        try:
            m_off = off.masker_stc(zd)
        finally:
            F.gumbel_softmax = F_gs
        it2 = iter(noise)
        saved = edg_losses.gumbel_softmax
        edg_losses.gumbel_softmax = lambda logits, tau, generator=None: (
            (logits + next(it2)) / tau
        ).softmax(-1)
        try:
            m = edg_losses.relaxed_topk_mask(ours.mask_st(zd), k, 0.5)
        finally:
            edg_losses.gumbel_softmax = saved
        rec("relaxed top-k mask (shared Gumbel noise)", m, m_off)


def step_components(off, ours, x, y, minibatches, rec, official: bool) -> None:
    """One training step, noise off: the official terms read at its optimiser step."""
    off.train(), ours.train()
    with NoNoise(off, ours):
        seen = {}
        step = off.opt.step

        def grab(*a, **kw):
            seen.update(inspect.currentframe().f_back.f_locals)
            seen["grads"] = {id(p): p.grad.clone() for p in off.parameters() if p.grad is not None}
            return None  # no update: the parameters stay comparable

        off.opt.step = grab
        try:
            off.update(minibatches, 1, None, 0, 1)
        finally:
            off.opt.step = step
        est = our_estimator(ours, official)
        ours.zero_grad(set_to_none=True)
        t = est._train_step(x, y, 0)
        t["loss"].backward()
    rec("loss: L_mp (CE_y)", t["mp"], seen["CE_y"])
    rec("loss: L_fp (recon + static KL + dynamic KL)", t["fp"],
        seen["CE_x"] + seen["static_c_kld"] + seen["dynamic_kld"])  # fmt: skip
    rec("loss: drift KL", t["kl_d"], seen["dynamic_d_kld"])
    rec("loss: MI", t["mi"] * T, seen["loss_MI"])  # ours logs MI per domain
    rec("loss: L_stc", t["stc"], seen["loss_stc"])
    rec("loss: L_dyc", t["dyc"], seen["loss_dyc"])
    rec("loss: total", t["loss"], seen["loss_total"])
    prior = {id(p) for m in (ours.prior_cell, ours.prior_head) for p in m.parameters()}
    rest, pri = [], []
    for a, b in module_pairs(ours, off):
        for (_, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
            ga = pa.grad if pa.grad is not None else torch.zeros_like(pa)
            gb = seen["grads"].get(id(pb), torch.zeros_like(pb))
            (pri if id(pa) in prior else rest).append((ga.reshape(-1), gb.reshape(-1)))
    rec("gradients, all but the dynamic prior", torch.cat([a for a, _ in rest]),
        torch.cat([b for _, b in rest]))  # fmt: skip
    rec("gradients, dynamic prior LSTM and head", torch.cat([a for a, _ in pri]),
        torch.cat([b for _, b in pri]))  # fmt: skip


def predict_components(off, ours, x, rec) -> None:
    # prediction on a target batch, from one source-end state (a bank of one: no draw); the
    # masks are the part that deviates on purpose (ours: the expected mask; official: one draw),
    # so both sides read the latents here with the mask at one
    off.eval(), ours.eval()
    xt = torch.randn(50, 2, dtype=torch.float64)
    idx = T + 5 + 3  # the fourth target domain
    with torch.no_grad():
        feats = ours.dynamic_features(x.flatten(0, 1)).view(B, T, -1)
        _, (h, c) = ours.lstm_dy(feats[:1])
        off.dynamic_encoder.final_bank = (h, c)
        _ = off.static_encoder(xt.unsqueeze(1))
        _ = off.dynamic_encoder(xt.unsqueeze(1), use_cached_hidden=True, need_cache=True)
        zst = off.static_encoder.latent_space.base_dist.loc
        zdy = off.dynamic_encoder.latent_space.base_dist.loc
        _, zd_prob = off.gen_dynamic_prior(off.dynamic_d_prior, off.latent_d_priors, idx + 1, 50)
        W = off.classifier.linear.weight
        est = our_estimator(ours)
        est.set_params(transductive_state="source")
        bank = (h[0], c[0])
        est._bank, est._gen = bank, torch.Generator().manual_seed(0)
        saved = edg_sync.expected_topk_mask
        edg_sync.expected_topk_mask = lambda scores, k, tau, **kw: torch.ones_like(scores)
        try:
            parts = est._parts(xt, idx, True)
        finally:
            edg_sync.expected_topk_mask = saved
        assert est._bank is bank, "transductive_state='source' moved the bank"
    rec("predict: static logits (eval, mask 1)", parts["static"], zst @ W[:, :DZ].T)
    rec("predict: dynamic logits from a source-end state (mask 1)", parts["dynamic"],
        zdy @ W[:, DZ : 2 * DZ].T)  # fmt: skip
    rec("predict: drift logits at the domain index", parts["drift"],
        zd_prob[:, -1, :] @ W[:, 2 * DZ :].T)  # fmt: skip
