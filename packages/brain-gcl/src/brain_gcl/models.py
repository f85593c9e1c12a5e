"""CIA-GCL and the graph baselines (GIN, GCN, GraphCL, CIGA-like, BrainNetCNN)."""

from __future__ import annotations

import numbers

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from brain_gcl.augment import choose_partners, mix_spurious
from brain_gcl.base import GraphClassifierBase
from brain_gcl.environments import infer_environments
from brain_gcl.extractor import EXTRACTORS, EdgeScorer, top_ratio_mask
from brain_gcl.layers import GraphEncoder, mlp
from brain_gcl.losses import env_risk_penalty, nt_xent, supcon

__all__ = ["CIAGCL", "GCN", "GIN", "BrainNetCNN", "CIGALike", "GraphCL"]


class _Net(nn.Module):
    def __init__(self, encoder, n_classes=2, proj=False, scorer=None):
        super().__init__()
        self.encoder = encoder
        d = encoder.out_dim
        self.head = mlp([d, d // 2, n_classes])
        self.proj = mlp([d, d // 2]) if proj else None
        self.scorer = scorer


class GIN(GraphClassifierBase):
    """Supervised dense GIN on the full graph (3 layers, mean||max readout, MLP head)."""

    _conv = "gin"

    def __init__(self, hidden: int = 64, layers: int = 3, lr: float = 1e-3, weight_decay: float = 1e-4,
                 epochs: int = 100, batch_size: int = 32, val_fraction: float = 0.15,
                 patience: int = 20, random_state: int = 0, verbose: int = 0,
                 device: str | torch.device = "cpu"):  # fmt: skip
        self.hidden, self.layers, self.lr, self.weight_decay = hidden, layers, lr, weight_decay
        self.epochs, self.batch_size, self.val_fraction = epochs, batch_size, val_fraction
        self.patience, self.random_state, self.verbose = patience, random_state, verbose
        self.device = device

    def _build(self, n, d):
        return _Net(GraphEncoder(n, d, self.hidden, self.layers, conv=self._conv))

    def _logits(self, net, X, A):
        return net.head(net.encoder(X, A))


class GCN(GIN):
    """Supervised dense GCN, same readout and head as :class:`GIN`."""

    _conv = "gcn"


class GraphCL(GIN):
    """GIN + NT-Xent between two random augmentations (edge drop, feature mask) + CE."""

    def __init__(self, hidden: int = 64, layers: int = 3, lr: float = 1e-3, weight_decay: float = 1e-4,
                 epochs: int = 100, batch_size: int = 32, val_fraction: float = 0.15,
                 patience: int = 20, random_state: int = 0, verbose: int = 0,
                 edge_drop: float = 0.2, feature_mask: float = 0.2, lambda_con: float = 0.5,
                 tau: float = 0.5, device: str | torch.device = "cpu"):  # fmt: skip
        super().__init__(hidden, layers, lr, weight_decay, epochs, batch_size, val_fraction,
                         patience, random_state, verbose, device)  # fmt: skip
        self.edge_drop, self.feature_mask, self.lambda_con, self.tau = (
            edge_drop,
            feature_mask,
            lambda_con,
            tau,
        )

    def _check_params(self):
        super()._check_params()
        for name in ("edge_drop", "feature_mask"):  # a drop rate of 1 removes everything
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v < 1:
                raise ValueError(f"{name} must be in [0, 1), got {v!r}")
        for name, low in (("lambda_con", 0.0), ("tau", None)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
            if (low is None and v <= 0) or (low is not None and v < low):
                raise ValueError(f"{name} must be {'> 0' if low is None else '>= 0'}, got {v!r}")

    def _build(self, n, d):
        return _Net(GraphEncoder(n, d, self.hidden, self.layers), proj=True)

    def _view(self, X, A, gen):
        # drawn from the (CPU) generator, then moved: the same views on every device
        u = torch.triu(torch.rand(A.shape, generator=gen), 1).to(A.device)
        keep = (u + u.transpose(1, 2)) >= self.edge_drop
        fm = torch.rand(X.shape[0], 1, X.shape[2], generator=gen).to(X.device) >= self.feature_mask
        return X * fm, A * keep

    def _loss(self, net, X, A, y, sites, gen):
        ce = F.cross_entropy(self._logits(net, X, A), y)
        z1 = net.proj(net.encoder(*self._view(X, A, gen)))
        z2 = net.proj(net.encoder(*self._view(X, A, gen)))
        con = nt_xent(z1, z2, self.tau)
        return ce + self.lambda_con * con, {"ce": ce.item(), "con": con.item()}


class _SubgraphMixin:
    """Invariant subgraph by a learned top-r edge mask (straight-through gradient)."""

    def _masks(self, net, X, A):
        p = net.scorer(X, A)
        hard = top_ratio_mask(p.detach(), A > 0, self.edge_ratio)
        st = hard.float() + p - p.detach()  # straight-through: forward hard, backward through p
        return p, hard, st

    def _logits(self, net, X, A):
        hard = self._masks(net, X, A)[1]  # inference reads the hard top-r subgraph
        return net.head(net.encoder(X, A * hard.float()))

    def _check_ratio(self):
        r = self.edge_ratio
        if isinstance(r, bool) or not isinstance(r, numbers.Real) or not 0 < r <= 1:
            raise ValueError(f"edge_ratio must be a number in (0, 1], got {r!r}")
        if self.extractor not in EXTRACTORS:
            raise ValueError(f"extractor must be one of {EXTRACTORS}, got {self.extractor!r}")

    def _scorer(self, n, d):
        return EdgeScorer(d, max(8, self.hidden // 2), n_rois=n, mode=self.extractor)

    @torch.no_grad()
    def edge_scores(self, graphs) -> np.ndarray:
        """Edge probabilities p_ij of the extractor (m, n, n), zero off-graph."""
        graphs = self._check_fitted(graphs)
        X, A = self._tensors(graphs)
        return self.net_.scorer(X, A).double().cpu().numpy()

    @torch.no_grad()
    def invariant_mask(self, graphs) -> np.ndarray:
        """The selected invariant edges (m, n, n) bool (top ``edge_ratio`` of each graph)."""
        graphs = self._check_fitted(graphs)
        X, A = self._tensors(graphs)
        return self._masks(self.net_, X, A)[1].cpu().numpy()


class CIGALike(_SubgraphMixin, GIN):
    """CIGA-v1-like: top-r subgraph, CE on it + supervised contrast of its embeddings."""

    def __init__(self, edge_ratio: float = 0.3, lambda_con: float = 0.5, tau: float = 0.5,
                 hidden: int = 64, layers: int = 3, lr: float = 1e-3, weight_decay: float = 1e-4,
                 epochs: int = 100, batch_size: int = 32, val_fraction: float = 0.15,
                 patience: int = 20, random_state: int = 0, verbose: int = 0,
                 extractor: str = "gnn", device: str | torch.device = "cpu"):  # fmt: skip
        super().__init__(hidden, layers, lr, weight_decay, epochs, batch_size, val_fraction,
                         patience, random_state, verbose, device)  # fmt: skip
        self.edge_ratio, self.lambda_con, self.tau = edge_ratio, lambda_con, tau
        self.extractor = extractor

    def _check_params(self):
        super()._check_params()
        self._check_ratio()

    def _build(self, n, d):
        enc = GraphEncoder(n, d, self.hidden, self.layers)
        return _Net(enc, proj=True, scorer=self._scorer(n, d))

    def _loss(self, net, X, A, y, sites, gen):
        _, _, st = self._masks(net, X, A)
        z = net.encoder(X, A * st)
        ce = F.cross_entropy(net.head(z), y)
        con = supcon(net.proj(z), y, self.tau)
        return ce + self.lambda_con * con, {"ce": ce.item(), "con": con.item()}


class CIAGCL(_SubgraphMixin, GIN):
    """CIA-GCL: invariant subgraph + invariance-aware augmentation + contrastive learning.

    Parameters
    ----------
    edge_ratio : float in (0, 1]
        r, share of each graph's edges in the invariant subgraph.
    p_keep, q_add : float in [0, 1]
        Probabilities of keeping an own spurious edge and adding a partner's (Eqs. 8-9).
    lambda_inv, lambda_con, lambda_var : float >= 0
        Weights of the invariant loss, the contrastive loss, and the variance penalty inside L_inv.
    tau : float > 0
        SupCon temperature.
    partner : {"other_site", "any"}
        Prefer same-label partners from another site, or any same-label subject.
    mixing : {"label", "random"}
        Same-label partners (the paper) or label-agnostic ones (ablation).
    n_envs : int
        Random environments for L_inv when ``sites`` is not given.
    extractor : {"gnn", "roi", "gnn+roi"}
        Edge scorer of the invariant-subgraph extractor (:class:`~brain_gcl.extractor.EdgeScorer`):
        the paper's GNN form (default), one learnable logit per ROI pair, or both.
    invariance : {"partner_site", "site", "inferred"}
        Environments of L_inv: the reconstruction's risks of the augmented views grouped by the
        mixing partner's site (default), risks of the invariant-subgraph prediction grouped by
        the subject's own site (V-REx on G^inv), or the same risks grouped by
        :func:`~brain_gcl.environments.infer_environments` (whether a cross-fitted edge logistic
        regression gets the subject wrong; EIIL / JTT-style, for sites whose risks barely
        differ). The last two are options, see the README's diagnosis.
    hidden, layers, lr, weight_decay, epochs, batch_size, val_fraction, patience, random_state,
    verbose :
        As in :class:`GIN`.
    device : str or torch.device, default="cpu"
        Where the network trains and predicts (``"cuda"``); it is built on the CPU from
        ``random_state`` and moved, and augmentations draw from a CPU generator, so every device
        starts from the same weights and sees the same views.

    Attributes
    ----------
    history_ : list of dict
        Per epoch: ``cau, inv, con`` losses, ``val_loss``, ``val_acc``, CPU ``seconds``.
    environments_ : ndarray (S,) of {0, 1}
        With ``invariance="inferred"``: the inferred environment of every subject passed to fit.
    """

    def __init__(self, edge_ratio: float = 0.3, p_keep: float = 0.5, q_add: float = 0.5,
                 lambda_inv: float = 0.5, lambda_con: float = 0.5, lambda_var: float = 1.0,
                 tau: float = 0.5, partner: str = "other_site", mixing: str = "label",
                 n_envs: int = 4, hidden: int = 64, layers: int = 3, lr: float = 1e-3,
                 weight_decay: float = 1e-4, epochs: int = 100, batch_size: int = 32,
                 val_fraction: float = 0.15, patience: int = 20, random_state: int = 0,
                 verbose: int = 0, extractor: str = "gnn",
                 invariance: str = "partner_site", device: str | torch.device = "cpu"):  # fmt: skip
        super().__init__(hidden, layers, lr, weight_decay, epochs, batch_size, val_fraction,
                         patience, random_state, verbose, device)  # fmt: skip
        self.extractor, self.invariance = extractor, invariance
        self.edge_ratio, self.p_keep, self.q_add = edge_ratio, p_keep, q_add
        self.lambda_inv, self.lambda_con, self.lambda_var = lambda_inv, lambda_con, lambda_var
        self.tau, self.partner, self.mixing, self.n_envs = tau, partner, mixing, n_envs

    def _check_params(self):
        super()._check_params()
        self._check_ratio()
        for name in ("p_keep", "q_add"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {v!r}")
        for name in ("lambda_inv", "lambda_con", "lambda_var"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, numbers.Real)
                or not np.isfinite(v)
                or v < 0
            ):
                raise ValueError(f"{name} must be a finite non-negative number, got {v!r}")
        t = self.tau
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not np.isfinite(t) or t <= 0:
            raise ValueError(f"tau must be a finite positive number, got {t!r}")
        if self.invariance not in ("partner_site", "site", "inferred"):
            raise ValueError(
                f"invariance must be 'partner_site', 'site' or 'inferred', got {self.invariance!r}"
            )
        n = self.n_envs
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n_envs must be a positive int, got {n!r}")
        if self.partner not in ("other_site", "any"):
            raise ValueError(f"partner must be 'other_site' or 'any', got {self.partner!r}")
        if self.mixing not in ("label", "random"):
            raise ValueError(f"mixing must be 'label' or 'random', got {self.mixing!r}")

    def _build(self, n, d):
        enc = GraphEncoder(n, d, self.hidden, self.layers)
        return _Net(enc, proj=True, scorer=self._scorer(n, d))

    def augment(self, A_inv, A_sp, M_inv, y, sites, gen):
        """One invariance-aware positive view and the partners used, (B, n, n) and (B,)."""
        labels = y if self.mixing == "label" else torch.zeros_like(y)
        partners = choose_partners(labels, sites, gen, self.partner == "other_site")
        return mix_spurious(A_inv, A_sp, M_inv, partners, self.p_keep, self.q_add, gen), partners

    def _environments(self, graphs, y, sites):
        if self.invariance != "inferred":
            return None
        # five cross-fitted folds as in the paper, fewer when a class is smaller than five
        smallest = int(np.bincount(np.asarray(y)).min())
        if smallest < 2:
            raise ValueError(
                f"invariance='inferred' cross-fits environments and needs >= 2 subjects per "
                f"class of y, got {smallest}"
            )
        return infer_environments(
            graphs, y, n_splits=min(5, smallest), random_state=self.random_state
        )

    def _loss(self, net, X, A, y, sites, gen, env=None):
        _, hard, st = self._masks(net, X, A)
        A_inv, A_sp = A * st, A * (1 - st)
        per_cau = F.cross_entropy(net.head(net.encoder(X, A_inv)), y, reduction="none")
        cau = per_cau.mean()
        A1, part1 = self.augment(A_inv, A_sp, hard, y, sites, gen)
        A2, _ = self.augment(A_inv, A_sp, hard, y, sites, gen)
        z1, z2 = net.encoder(X, A1), net.encoder(X, A2)
        if env is not None:
            pass  # inferred environments
        elif sites is None:
            env = torch.randint(self.n_envs, (len(y),), generator=gen).to(y.device)
        else:
            env = sites[part1] if self.invariance == "partner_site" else sites
        if self.invariance in ("site", "inferred"):
            per = per_cau
        else:
            per = F.cross_entropy(net.head(z1), y, reduction="none")
        inv, _ = env_risk_penalty(per, env, self.lambda_var)
        con = supcon(torch.cat([net.proj(z1), net.proj(z2)]), torch.cat([y, y]), self.tau)
        loss = cau + self.lambda_inv * inv + self.lambda_con * con
        return loss, {"cau": cau.item(), "inv": inv.item(), "con": con.item()}


class _BrainNetCNNNet(nn.Module):
    """Edge-to-edge, edge-to-node, node-to-graph convolutions (Kawahara et al. 2017), small."""

    def __init__(self, n, widths=(16, 32, 64), dropout=0.5):
        super().__init__()
        e, nn_, g = widths
        self.e2e_row, self.e2e_col = nn.Conv2d(1, e, (1, n)), nn.Conv2d(1, e, (n, 1))
        self.e2n = nn.Conv2d(e, nn_, (1, n))
        self.n2g = nn.Conv2d(nn_, g, (n, 1))
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(g, g // 2), nn.LeakyReLU(0.33),
                                  nn.Linear(g // 2, 2))  # fmt: skip

    def forward(self, A):
        x = A[:, None]
        x = F.leaky_relu(self.e2e_row(x) + self.e2e_col(x), 0.33)  # (B, e, n, 1) + (B, e, 1, n)
        x = F.leaky_relu(self.e2n(x), 0.33)  # (B, n2, n, 1)
        x = F.leaky_relu(self.n2g(x), 0.33).flatten(1)  # (B, g)
        return self.head(x)


class BrainNetCNN(GIN):
    """BrainNetCNN (lite) on the weighted adjacency; node features are not used."""

    def _build(self, n, d):
        return _BrainNetCNNNet(n)

    def _logits(self, net, X, A):
        return net(A)
