"""SYNC (He et al., ICML 2025): static–dynamic causal representation learning for EDG.

The network (spec §2.2–2.5): a sequential VAE over the domain axis with a static posterior
q(z^st | x), a dynamic posterior q(z^dy_t | z^dy_<t, x_t) (LSTM) and an LSTM prior; a categorical
drift factor z^d with LSTM posterior / prior; maskers choosing causal latent dimensions; a linear
classifier on [m^st ⊙ z^st, m^dy ⊙ z^dy, z^d]. Ablations of the paper's Table 2 by switches:
A = LSSAE (no MI, no causal), B = A + MI, C = B + static causal, D = B + dynamic causal.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from evolving_dg.base import EvolvingEstimator
from evolving_dg.losses import (
    categorical_kl,
    expected_topk_mask,
    gaussian_kl,
    gumbel_softmax,
    mws_mutual_information,
    relaxed_topk_mask,
    sample_gaussian,
    supervised_contrastive,
)
from evolving_dg.networks import Masker, MLPBackbone, affine_block, lstm_unroll, make_backbone

__all__ = ["LSSAE", "SYNC", "SYNCNet", "ablation"]


class SYNCNet(nn.Module):
    """All SYNC modules; ``forward_train`` returns the loss terms of one batch."""

    def __init__(self, input_shape, n_classes, backbone, width, z_dim, static_head_act, masks,
                 arch: str = "ours", prior_state_grad: bool = True):  # fmt: skip
        super().__init__()
        self.prior_state_grad = bool(prior_state_grad)
        K, dz, h = int(n_classes), int(z_dim), int(width)  # numpy ints from a grid search
        self.K, self.dz, self.input_shape = K, dz, tuple(input_shape)
        d_in = int(np.prod(input_shape))
        act = [nn.LeakyReLU(0.02)] if static_head_act else []
        if arch == "reference":
            self._build_reference(backbone, h, act, d_in)
            self.head_dy = nn.Linear(2 * dz, 2 * dz)
            self.prior_cell = nn.LSTMCell(2 * dz, 2 * dz)
            self.prior_head = nn.Linear(2 * dz, 2 * dz)
        else:  # construction order fixed: it sets the initial weights of every seed
            self.phi_st = make_backbone(backbone, input_shape, width)
            self.phi_dy = make_backbone(backbone, input_shape, width)
            nf = self.phi_st.n_outputs
            self.static = nn.Sequential(
                affine_block(nf, h), nn.Linear(h, h), nn.LeakyReLU(0.02), nn.Linear(h, 2 * dz),
                *act,
            )  # fmt: skip
            self.aff_dy = affine_block(nf, h)
            self.lstm_dy = nn.LSTM(h, 2 * dz, batch_first=True)
            self.head_dy = nn.Linear(2 * dz, 2 * dz)
            self.prior_cell = nn.LSTMCell(2 * dz, 2 * dz)
            self.prior_head = nn.Linear(2 * dz, 2 * dz)
            self.decoder = nn.Sequential(
                nn.Linear(2 * dz, h), nn.LeakyReLU(0.02), nn.Linear(h, h), nn.LeakyReLU(0.02),
                nn.Linear(h, d_in),
            )  # fmt: skip
            self.drift_enc = nn.Sequential(
                nn.Linear(K, 128), nn.BatchNorm1d(128), nn.ReLU(),
                nn.Linear(128, 64), nn.BatchNorm1d(64), nn.ReLU(),
            )  # fmt: skip
            self.drift_lstm = nn.LSTM(64, 64, batch_first=True)
            self.drift_head = nn.Linear(64, K)
            self.drift_prior_cell = nn.LSTMCell(K, 64)
            self.drift_prior_head = nn.Linear(64, K)
        self.mask_st = Masker(dz) if masks[0] else None
        self.mask_dy = Masker(dz) if masks[1] else None
        self.classifier = nn.Linear(2 * dz + K, K)
        if arch == "reference":
            self._reference_init()

    def _build_reference(self, backbone, h: int, act: list, d_in: int) -> None:
        """The official code's module sizes (``network/SYNC_algo.py``, ``submodules.py``):
        an MLP backbone of hidden width ``h`` (official 512) with 128 outputs, adaptors at the
        backbone's width, a 16-64-128 decoder with BatchNorm (eps 0.8) and LeakyReLU(0.2), a
        drift encoder ending in an LSTM of width K, a drift prior LSTMCell of width 2K."""
        K, dz = self.K, self.dz
        if backbone == "mlp":
            self.phi_st, self.phi_dy = MLPBackbone(d_in, h, 128), MLPBackbone(d_in, h, 128)
        else:
            self.phi_st = make_backbone(backbone, self.input_shape, h)
            self.phi_dy = make_backbone(backbone, self.input_shape, h)
        nf = self.phi_st.n_outputs
        self.static = nn.Sequential(
            affine_block(nf, nf), nn.Linear(nf, 2 * dz), nn.LeakyReLU(0.02),
            nn.Linear(2 * dz, 2 * dz), *act,
        )  # fmt: skip
        self.aff_dy = affine_block(nf, nf)
        self.lstm_dy = nn.LSTM(nf, 2 * dz, batch_first=True)
        self.decoder = nn.Sequential(
            nn.Linear(2 * dz, 16), nn.LeakyReLU(0.2),
            nn.Linear(16, 64), nn.BatchNorm1d(64, 0.8), nn.LeakyReLU(0.2),
            nn.Linear(64, 128), nn.BatchNorm1d(128, 0.8), nn.LeakyReLU(0.2),
            nn.Linear(128, d_in),
        )  # fmt: skip
        self.drift_enc = nn.Sequential(
            nn.Linear(K, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 64),
            affine_block(64, 64),
        )  # fmt: skip
        self.drift_lstm = nn.LSTM(64, K, batch_first=True)
        self.drift_head = nn.Linear(K, K)
        self.drift_prior_cell = nn.LSTMCell(K, 2 * K)
        self.drift_prior_head = nn.Linear(2 * K, K)

    def _reference_init(self) -> None:
        """The official ``Autoencoder._init``: Kaiming-normal weights for every Linear and Conv,
        BatchNorm weight 1 *and bias 1*; biases and LSTMs keep PyTorch's defaults."""
        for m in self.modules():
            if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1.0)
                nn.init.constant_(m.bias, 1.0)
            elif isinstance(m, nn.Linear | nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)

    # -------------------------------------------------------------- encoders
    def encode_static(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x: (N, ...) -> (mu, s), each (N, dz)."""
        return self.static(self.phi_st(x)).chunk(2, -1)

    def dynamic_features(self, x: Tensor) -> Tensor:
        """x: (N, ...) -> LSTM inputs (N, width)."""
        return self.aff_dy(self.phi_dy(x))

    def dynamic_prior(self, steps: int) -> tuple[Tensor, Tensor]:
        """Prior parameters for domains 0..steps-1, each (steps, dz)."""
        return lstm_unroll(self.prior_cell, self.prior_head, steps, 2 * self.dz,
                           self.prior_state_grad).chunk(2, -1)  # fmt: skip

    def drift_prior(self, steps: int) -> Tensor:
        """Drift prior logits for domains 0..steps-1, (steps, K)."""
        return lstm_unroll(self.drift_prior_cell, self.drift_prior_head, steps, self.K,
                           self.prior_state_grad)  # fmt: skip

    def masks(self, mu_st: Tensor, mu_dy: Tensor, k: int, tau: float, gen=None, expected=False):
        """Causal masks (ones where a masker is off); inputs detached (spec §2.5).

        ``expected=True`` (prediction) gives the deterministic mean mask
        (:func:`expected_topk_mask`); otherwise one Gumbel draw from ``gen`` (training).
        """
        one = torch.ones_like(mu_st)

        def mask(masker, mu):
            if masker is None:
                return one
            scores = masker(mu.detach())
            if expected:
                return expected_topk_mask(scores, k, tau)
            return relaxed_topk_mask(scores, k, tau, gen)

        return mask(self.mask_st, mu_st), mask(self.mask_dy, mu_dy)


class SYNC(EvolvingEstimator):
    """SYNC estimator (scikit-learn style) for evolving domain generalization.

    Parameters
    ----------
    backbone : {"mlp", "cnn"} or nn.Module with ``n_outputs``
        Feature extractor φ (two copies: static and dynamic branch).
    width : int, default=128
        Hidden width of the MLP backbone and the adaptors (reference 512 for toy data).
    z_dim : int, default=20
        d_z of each of z^st and z^dy.
    lambda_evolve, lambda_mi, lambda_causal : float
        Weights of (L_fp + KL_d), L_MI and (L_stc + L_dyc) against L_mp (reference weighting).
    use_mi, use_static_causal, use_dynamic_causal : bool
        Ablation switches (all on = SYNC; all off = variant A / LSSAE).
    mask_ratio : float in (0, 1], default=0.6
        κ: a mask keeps k = ⌊κ d_z⌋ dimensions.
    mask_tau, contrast_tau : float
        Gumbel temperature of the mask and temperature of the contrastive logits.
    lr : float
        Adam learning rate (reference Circle 5e-6; CPU-practical 1e-3).
    epochs, iters_per_epoch, batch_per_domain : int
    sigma_param : {"ref", "consistent"}
        Gaussian parametrisation (see :mod:`evolving_dg.losses`).
    causal_grad : {"masker", "encoder"}
        ``"masker"`` (reference): L_causal sees detached latent means and trains only the
        maskers; ``"encoder"``: the losses also shape the encoders.
    static_head_act : bool, default=True
        LeakyReLU on the static posterior's output parameters (reference).
    exclude_same_index : bool, default=True
        Reference quirk of the contrastive positives (see :func:`supervised_contrastive`).
    contrast_eps : float, default=0.0
        ``eps`` of :func:`supervised_contrastive` (official code: ``1e-6`` inside the log of
        the max-shifted denominators).
    prior_state_grad : bool, default=True
        Gradients through the prior LSTMs' states across domains; ``False`` (official code)
        detaches the state between domains (see :func:`~evolving_dg.networks.lstm_unroll`).
    transductive : bool, default=True
        At test time feed each target domain's unlabelled inputs through the dynamic posterior
        from a bank of the previous domain's LSTM states (reference); ``False``: use the dynamic
        prior unrolled to the domain index.
    transductive_state : {"advance", "source"}, default="advance"
        Which LSTM states a transductive domain starts from. ``"advance"``: the states the
        previous domain left, so the sequence moves on through the intermediate and target
        domains. ``"source"`` (official code): every later domain starts from the states after
        the source sequence and is read as one step past it (the official ``predict`` never
        updates the bank it draws from: ``final_cache`` is not passed on).
    arch : {"ours", "reference"}, default="ours"
        ``"reference"``: the official code's module sizes and initialisation (MLP backbone
        ``2 -> width -> width -> width -> 128``, adaptors at 128, its decoder and drift
        modules, Kaiming-normal Linear weights, BatchNorm bias 1); with the official learning
        rate (5e-6 on Circle) training barely moves the weights, so the initialisation decides
        the result. ``"ours"``: every hidden layer at ``width``, PyTorch's initialisation.
    random_state : int, default=0
    verbose : int, default=0
        Progress bar over epochs when > 0.
    device : str or torch.device, default="cpu"
        Where the network trains and predicts (``"cuda"``); it is initialised on the CPU from
        ``random_state`` and moved, so every device starts from the same weights.

    Attributes
    ----------
    net_ : SYNCNet
    history_ : list of dict
        Per epoch: mean loss terms (``loss``, ``mp``, ``fp``, ``kl_d``, ``mi``, ``stc``,
        ``dyc``), ``val_acc``.
    best_epoch_ : int
    n_classes_, input_shape_, next_index_ : int, tuple, int
    """

    _min_source = 3

    def __init__(
        self,
        backbone="mlp",
        width: int = 128,
        z_dim: int = 20,
        lambda_evolve: float = 0.01,
        lambda_mi: float = 1.0,
        lambda_causal: float = 0.02,
        use_mi: bool = True,
        use_static_causal: bool = True,
        use_dynamic_causal: bool = True,
        mask_ratio: float = 0.6,
        mask_tau: float = 0.5,
        contrast_tau: float = 0.07,
        lr: float = 1e-3,
        epochs: int = 30,
        iters_per_epoch: int = 50,
        batch_per_domain: int = 64,
        sigma_param: str = "ref",
        causal_grad: str = "masker",
        static_head_act: bool = True,
        exclude_same_index: bool = True,
        contrast_eps: float = 0.0,
        prior_state_grad: bool = True,
        transductive: bool = True,
        transductive_state: str = "advance",
        arch: str = "ours",
        random_state: int = 0,
        verbose: int = 0,
        device: str | torch.device = "cpu",
    ) -> None:
        self.arch = arch
        self.transductive_state = transductive_state
        self.contrast_eps = contrast_eps
        self.prior_state_grad = prior_state_grad
        self.backbone = backbone
        self.width = width
        self.z_dim = z_dim
        self.lambda_evolve = lambda_evolve
        self.lambda_mi = lambda_mi
        self.lambda_causal = lambda_causal
        self.use_mi = use_mi
        self.use_static_causal = use_static_causal
        self.use_dynamic_causal = use_dynamic_causal
        self.mask_ratio = mask_ratio
        self.mask_tau = mask_tau
        self.contrast_tau = contrast_tau
        self.lr = lr
        self.epochs = epochs
        self.iters_per_epoch = iters_per_epoch
        self.batch_per_domain = batch_per_domain
        self.sigma_param = sigma_param
        self.causal_grad = causal_grad
        self.static_head_act = static_head_act
        self.exclude_same_index = exclude_same_index
        self.transductive = transductive
        self.random_state = random_state
        self.verbose = verbose
        self.device = device

    def _check_params(self) -> None:
        self._check_common()
        if (
            isinstance(self.z_dim, bool)
            or not isinstance(self.z_dim, numbers.Integral)
            or self.z_dim < 1
        ):
            raise ValueError(f"z_dim must be a positive int, got {self.z_dim!r}")
        for name in ("lambda_evolve", "lambda_mi", "lambda_causal"):
            v = getattr(self, name)
            if not isinstance(v, numbers.Real) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if not (isinstance(self.mask_ratio, numbers.Real) and 0 < self.mask_ratio <= 1):
            raise ValueError(f"mask_ratio must lie in (0, 1], got {self.mask_ratio!r}")
        if math.floor(self.mask_ratio * self.z_dim) < 1:
            raise ValueError("mask_ratio * z_dim must keep at least one dimension")
        for name in ("mask_tau", "contrast_tau"):
            v = getattr(self, name)
            if not isinstance(v, numbers.Real) or not v > 0:
                raise ValueError(f"{name} must be positive, got {v!r}")
        if self.sigma_param not in ("ref", "consistent"):
            raise ValueError(f"sigma_param must be 'ref' or 'consistent', got {self.sigma_param!r}")
        if self.causal_grad not in ("masker", "encoder"):
            raise ValueError(f"causal_grad must be 'masker' or 'encoder', got {self.causal_grad!r}")
        if not (isinstance(self.contrast_eps, numbers.Real) and 0 <= self.contrast_eps < 1):
            raise ValueError(f"contrast_eps must lie in [0, 1), got {self.contrast_eps!r}")
        if not isinstance(self.prior_state_grad, bool | np.bool_):
            raise ValueError(f"prior_state_grad must be a bool, got {self.prior_state_grad!r}")
        if self.transductive_state not in ("advance", "source"):
            raise ValueError(
                f"transductive_state must be 'advance' or 'source', got {self.transductive_state!r}"
            )
        if self.arch not in ("ours", "reference"):
            raise ValueError(f"arch must be 'ours' or 'reference', got {self.arch!r}")

    def fit(self, domains, val_domains=None, eval_domains=None) -> SYNC:
        """Train on time-ordered source domains, selecting the epoch on ``val_domains``.

        Parameters
        ----------
        domains : list of (X_t, y_t), at least 3
            X_t: (n_t, *input_shape); y_t: (n_t,) integer labels.
        val_domains : list of (X_t, y_t), optional
            The intermediate domains right after the sources (model selection, then advanced
            through so that targets continue the sequence).
        eval_domains : list of (X_t, y_t), optional
            Monitoring only: the domains after ``val_domains`` (e.g. the targets), scored after
            every epoch into ``history_[epoch]["eval_acc"]`` (mean) and ``["eval_accs"]``; never
            used for selection, and training is unchanged by it (tested).

        Returns
        -------
        self
        """
        self._check_params()
        doms, vals, shape, K = self._check_fit_input(domains, val_domains)
        evals = self._check_eval(eval_domains, shape, K)
        torch.manual_seed(self.random_state)
        masks = (self.use_static_causal, self.use_dynamic_causal)
        net = SYNCNet(shape, K, self.backbone, self.width, self.z_dim, self.static_head_act, masks,
                      self.arch, self.prior_state_grad)  # fmt: skip
        self.n_classes_, self.input_shape_, self.n_source_ = K, shape, len(doms)
        self.net_ = net
        self._fit_loop(doms, vals, evals)  # _after_training seeds the sequence generator
        return self

    # ---------------------------------------------------------------- training
    def _train_step(self, x: Tensor, y: Tensor, epoch: int) -> dict[str, Tensor]:
        t = self._loss_terms(x, y)
        loss = t["mp"] + self.lambda_evolve * (t["fp"] + t["kl_d"])
        loss = loss + self.lambda_causal * (t["stc"] + t["dyc"])
        if self.use_mi:
            loss = loss + self.lambda_mi * t["mi"]
        out = {k: v.detach() for k, v in t.items()}
        out["mi"] = out["mi"] / y.shape[1]  # logged per domain
        return {"loss": loss, **out}

    def _loss_terms(self, x: Tensor, y: Tensor) -> dict[str, Tensor]:
        """Un-weighted loss terms of one (B, T, ...) batch, with their graphs."""
        net, p = self.net_, self.sigma_param
        B, T = y.shape
        dz, K = self.z_dim, self.n_classes_
        xf = x.flatten(0, 1)  # (B*T, ...)
        mu_st, s_st = net.encode_static(xf)
        feats = net.dynamic_features(xf).view(B, T, -1)
        mu_dy, s_dy = net.head_dy(net.lstm_dy(feats)[0]).chunk(2, -1)  # (B, T, dz)
        mu_st, s_st = mu_st.view(B, T, dz), s_st.view(B, T, dz)
        z_st, z_dy = sample_gaussian(mu_st, s_st, p), sample_gaussian(mu_dy, s_dy, p)
        mu_p, s_p = net.dynamic_prior(T)
        x_hat = net.decoder(torch.cat([z_st, z_dy], -1).flatten(0, 1)).view(B, T, -1)
        rec = ((x_hat - x.flatten(2)) ** 2).sum() / B
        kl_st = gaussian_kl(mu_st, s_st, param=p).sum() / B
        kl_dy = gaussian_kl(mu_dy, s_dy, mu_p, s_p, param=p).sum() / B
        onehot = F.one_hot(y, K).to(mu_st.dtype)  # the inputs' dtype (float64 parity)
        q_logits = net.drift_head(net.drift_lstm(net.drift_enc(onehot.flatten(0, 1)).view(B, T, -1))[0])  # fmt: skip
        kl_d = 0.5 * categorical_kl(q_logits, net.drift_prior(T)).sum() / B
        z_d = gumbel_softmax(q_logits, 1.0)
        k = math.floor(self.mask_ratio * dz)
        # as the official code: the classifier's masks come from the (detached) samples, the
        # causal losses' masks from a second draw on the posterior means
        c_st, c_dy = net.masks(z_st.flatten(0, 1), z_dy.flatten(0, 1), k, self.mask_tau)
        c_st, c_dy = c_st.view(B, T, dz), c_dy.view(B, T, dz)
        logits = net.classifier(torch.cat([c_st * z_st, c_dy * z_dy, z_d], -1))
        m_st, m_dy = net.masks(mu_st.flatten(0, 1), mu_dy.flatten(0, 1), k, self.mask_tau)
        m_st, m_dy = m_st.view(B, T, dz), m_dy.view(B, T, dz)
        mp = T * F.cross_entropy(logits.flatten(0, 1), y.flatten())
        zero = mp.new_zeros(())

        # MWS mutual information per domain: groups are domains, items the batch
        def tr(a: Tensor) -> Tensor:  # (B, T, d) -> (T, B, d): groups are domains
            return a.transpose(0, 1)

        mi_t = mws_mutual_information(tr(z_st), tr(mu_st), tr(s_st), tr(z_dy), tr(mu_dy), tr(s_dy), p)  # fmt: skip
        mi = mi_t.sum()

        def det(a: Tensor) -> Tensor:  # reference: causal losses train only the maskers
            return a.detach() if self.causal_grad == "masker" else a

        stc = dyc = zero
        yt = y.T  # (T, B)
        if self.use_static_causal:
            a = tr(m_st) * det(tr(mu_st))  # (T, B, dz)
            stc = supervised_contrastive(a[:-1], yt[:-1], a[1:], yt[1:], self.contrast_tau,
                                         self.exclude_same_index, self.contrast_eps).sum()  # fmt: skip
        if self.use_dynamic_causal:
            anc = tr(m_dy) * det(tr(mu_dy))
            cand = (tr(m_st) * tr(mu_st)).detach()
            dyc = supervised_contrastive(anc, yt, cand, yt, self.contrast_tau,
                                         self.exclude_same_index, self.contrast_eps).sum()  # fmt: skip
        return {"mp": mp, "fp": rec + kl_st + kl_dy, "kl_d": kl_d, "mi": mi, "stc": stc, "dyc": dyc}

    # ---------------------------------------------------------------- sequence state
    @torch.no_grad()
    def _after_training(self, doms) -> None:
        """Bank of the dynamic posterior's final LSTM states after the source sequence."""
        net = self.net_.eval()
        n = min(min(len(X) for X, _ in doms), 256)
        g = np.random.default_rng(self.random_state + 2)
        x = torch.stack([self._tensor(X[g.choice(len(X), n, replace=False)]) for X, _ in doms], 1)  # fmt: skip
        feats = net.dynamic_features(x.flatten(0, 1)).view(n, len(doms), -1)
        _, (h, c) = net.lstm_dy(feats)
        self._bank = (h[0], c[0])
        self._gen = torch.Generator().manual_seed(self.random_state + 1)

    def _sequence_state(self):
        return (self._bank, self._gen.get_state())

    def _set_sequence_state(self, state) -> None:
        self._bank = state[0]
        self._gen.set_state(state[1])

    @torch.no_grad()
    def _parts(self, X: Tensor, t: int, transductive: bool) -> dict[str, Tensor]:
        net = self.net_.eval()
        mu_st, _ = net.encode_static(X)
        if transductive and self.transductive:
            h, c = self._bank
            pick = torch.randint(0, len(h), (len(X),), generator=self._gen)
            out, (h1, c1) = net.lstm_dy(net.dynamic_features(X)[:, None], (h[pick][None], c[pick][None]))  # fmt: skip
            mu_dy = net.head_dy(out[:, 0]).chunk(2, -1)[0]
            if self.transductive_state == "advance":
                self._bank = (h1[0], c1[0])
        else:
            mu_dy = net.dynamic_prior(t + 1)[0][-1].expand(len(X), -1)
        z_d = net.drift_prior(t + 1)[-1].softmax(-1).expand(len(X), -1)
        k = math.floor(self.mask_ratio * self.z_dim)
        # deterministic masks at prediction: the same input always gets the same label,
        # whatever the call order, the row order or the global RNG
        m_st, m_dy = net.masks(mu_st, mu_dy, k, self.mask_tau, expected=True)
        W, dz = net.classifier.weight, mu_st.shape[1]
        return {"static": (m_st * mu_st) @ W[:, :dz].T,
                "dynamic": (m_dy * mu_dy) @ W[:, dz : 2 * dz].T,
                "drift": z_d @ W[:, 2 * dz :].T,
                "bias": net.classifier.bias.expand(len(X), -1)}  # fmt: skip

    def _predict_logits(self, X: Tensor, t: int, transductive: bool) -> Tensor:
        return sum(self._parts(X, t, transductive).values())

    def logit_parts(self, X, domain_index: int | None = None) -> dict[str, np.ndarray]:
        """The classifier's logits split by input: what decides a prediction.

        The classifier is linear in ``[m_st * z_st, m_dy * z_dy, z_d]``, so the logits are the
        sum of a static, a dynamic and a drift part plus the bias (non-transductive, as
        :meth:`predict_proba`).

        Parameters
        ----------
        X : array, shape (n, *input_shape)
        domain_index : int, optional
            As in :meth:`predict_proba`.

        Returns
        -------
        dict of str -> ndarray (n, n_classes)
            ``static``, ``dynamic``, ``drift``, ``bias``; they sum to the logits.
        """
        X = self._check_X(X)
        t = self.next_index_ if domain_index is None else domain_index
        if isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0:
            raise ValueError(f"domain_index must be a non-negative int, got {domain_index!r}")
        parts = self._parts(self._tensor(X), int(t), False)
        return {k: v.detach().cpu().numpy() for k, v in parts.items()}


def ablation(variant: str, **params) -> SYNC:
    """The paper's Table 2 variants: "A" (LSSAE-style sequential VAE), "B" (+ MI),
    "C" (B + static causal), "D" (B + dynamic causal), "SYNC" (all)."""
    flags = {
        "A": (False, False, False),
        "B": (True, False, False),
        "C": (True, True, False),
        "D": (True, False, True),
        "SYNC": (True, True, True),
    }
    if variant not in flags:
        raise ValueError(f"variant must be one of {sorted(flags)}, got {variant!r}")
    mi, st, dy = flags[variant]
    return SYNC(use_mi=mi, use_static_causal=st, use_dynamic_causal=dy, **params)


class LSSAE(SYNC):
    """LSSAE-style baseline = SYNC variant A: the sequential VAE with drift factor only (no MI
    term, no causal masks); classifier on [z^st, z^dy, z^d]. Same parameters as :class:`SYNC`
    (the three switches are fixed off)."""

    def __init__(self, backbone="mlp", width: int = 128, z_dim: int = 20,
                 lambda_evolve: float = 0.01, lr: float = 1e-3, epochs: int = 30,
                 iters_per_epoch: int = 50, batch_per_domain: int = 64, sigma_param: str = "ref",
                 static_head_act: bool = True, prior_state_grad: bool = True,
                 transductive: bool = True, transductive_state: str = "advance",
                 arch: str = "ours",
                 random_state: int = 0, verbose: int = 0,
                 device: str | torch.device = "cpu") -> None:  # fmt: skip
        super().__init__(
            backbone=backbone, width=width, z_dim=z_dim, lambda_evolve=lambda_evolve, lr=lr,
            epochs=epochs, iters_per_epoch=iters_per_epoch, batch_per_domain=batch_per_domain,
            sigma_param=sigma_param, static_head_act=static_head_act, transductive=transductive,
            prior_state_grad=prior_state_grad, transductive_state=transductive_state, arch=arch, random_state=random_state, verbose=verbose, device=device, use_mi=False,
            use_static_causal=False,
            use_dynamic_causal=False,
        )  # fmt: skip
