"""The training loop shared by CAP and the pseudolabelling baselines (same prompts, optimiser).

Per iteration (CAP Sec. 3.3): a main batch from the pseudolabelled main samples through the
main visual adapter; a labeled batch (SSL / TRZSL); an unlabeled batch whose weak view, through
the main path, labels its strong view, which goes through the *pseudo* adapter. Losses are the
margin cross-entropy with the margin matrix of the previous epoch. Main samples grow every
``update_every`` epochs from the confident predictions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from vlm_pseudolabel.margin import margin_cross_entropy, margin_matrix, self_training_loss
from vlm_pseudolabel.model import Adapter, PromptModel
from vlm_pseudolabel.pseudolabels import grow_main_samples, growth_k

__all__ = ["EngineConfig", "feature_view", "train_prompts"]


@dataclass
class EngineConfig:
    """What the loop does; every estimator fills it from its own parameters."""

    epochs: int = 50
    iters_per_epoch: int = 50
    batch_size: int = 32
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 0.1
    warmup_epochs: int = 1
    warmup_lr: float = 1e-3
    tau: float = 0.85
    margin_scale: float = 12.0
    delta: str = "ref"
    unlabeled_norm: str = "batch"
    use_margin: bool = True
    main_branch: bool = True
    unlabeled_branch: bool = True
    adapters: bool = True
    independent_adapters: bool = True
    adapter_hidden: int = 128
    adapter_residual: float = 0.01
    grow: bool = True
    update_every: int = 5
    max_main_ratio: float = 0.8
    n_main: int = 16
    loss: str = "margin"  # "margin" (CE with margins) or "pll" (candidate sets, CPL)
    verbose: int = 0
    device: str | torch.device = "cpu"


def feature_view(x: torch.Tensor, strength: str, gen: torch.Generator) -> torch.Tensor:
    """Feature-space views when no image augmentation exists: weak = identity; strong =
    dropout(0.1) + Gaussian noise (sigma 0.05), re-normalised."""
    if strength == "weak":
        return x
    # drawn from the CPU generator, then moved: the same views on every device
    keep = (torch.rand(x.shape, generator=gen) >= 0.1).to(x) / 0.9
    return F.normalize(x * keep + 0.05 * torch.randn(x.shape, generator=gen).to(x), dim=-1)


def _lr_at(epoch: int, cfg: EngineConfig) -> float:
    if epoch < cfg.warmup_epochs:
        return cfg.warmup_lr
    e = epoch - cfg.warmup_epochs
    span = max(1, cfg.epochs - cfg.warmup_epochs)
    return 0.5 * cfg.lr * (1 + math.cos(math.pi * e / span))


def train_prompts(
    model: PromptModel,
    X_pool: np.ndarray,
    main: dict[int, np.ndarray],
    cfg: EngineConfig,
    *,
    augment=None,
    X_labeled: np.ndarray | None = None,
    y_labeled: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    seen_mask: np.ndarray | None = None,
    candidates: tuple[np.ndarray, np.ndarray] | None = None,
    y_pool: np.ndarray | None = None,
    seed: int = 0,
) -> tuple[list[dict], dict[int, np.ndarray]]:
    """Train ``model`` in place; return the per-epoch history and the final main samples.

    Parameters
    ----------
    model : PromptModel
    X_pool : ndarray (N, d)
        Unlabeled pool embeddings.
    main : dict of int -> ndarray of int
        Pseudolabelled main samples per class (pool indices).
    cfg : EngineConfig
    augment : callable, optional
        ``augment(indices, strength, rng) -> (B, d)`` image-space views of pool images.
    X_labeled, y_labeled : labeled data (SSL / TRZSL)
    allowed : ndarray of bool (C,), optional
        Classes the pool may be pseudolabelled with (TRZSL: the unseen classes).
    seen_mask : ndarray of bool (C,), optional
        TRZSL seen classes (zero margin rows).
    candidates : (rows, weights), optional
        CPL: candidate weights (N, C) for the pool rows in ``rows`` (``loss="pll"``).
    y_pool : ndarray, optional
        Ground truth of the pool, for diagnostics in the history only.
    seed : int
    """
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    dev = torch.device(cfg.device)
    x_pool = torch.as_tensor(X_pool, dtype=torch.float32, device=dev)
    n, c = len(x_pool), model.text.shape[0]
    d = x_pool.shape[1]
    allowed_t = torch.ones(c, dtype=torch.bool) if allowed is None else torch.as_tensor(allowed)
    allowed_t = allowed_t.to(dev)
    if cfg.adapters:
        psi = Adapter(d, cfg.adapter_hidden, cfg.adapter_residual)
        phi_m = Adapter(d, cfg.adapter_hidden, cfg.adapter_residual)
        phi_p = (
            Adapter(d, cfg.adapter_hidden, cfg.adapter_residual)
            if cfg.independent_adapters
            else phi_m
        )
        modules = torch.nn.ModuleList([model, psi, phi_m, phi_p])
    else:
        psi = phi_m = phi_p = None
        modules = torch.nn.ModuleList([model])
    modules.to(dev)  # built on the CPU (its generator), trained on ``cfg.device``
    params = [p for p in modules.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    x_lab = y_lab = None
    if X_labeled is not None and len(X_labeled):
        x_lab = torch.as_tensor(X_labeled, dtype=torch.float32, device=dev)
        y_lab = torch.as_tensor(y_labeled, dtype=torch.long, device=dev)
    margin = torch.zeros(c, c, device=dev)
    history: list[dict] = []
    k0 = cfg.n_main
    n_allowed = int(allowed_t.sum())

    def view(idx: np.ndarray, strength: str) -> torch.Tensor:
        if augment is not None:
            return torch.as_tensor(augment(idx, strength, rng), dtype=torch.float32, device=dev)
        return feature_view(x_pool[idx], strength, gen)

    for epoch in tqdm(range(cfg.epochs), disable=not cfg.verbose, desc="prompt training"):
        if cfg.grow and cfg.main_branch and epoch > 0 and epoch % cfg.update_every == 0 and history:
            rec = history[-1]["_records"]
            k = growth_k(epoch, cfg.epochs, k0, n, n_allowed, cfg.max_main_ratio)
            main = grow_main_samples(main, rec[0], rec[1], rec[2], k)
        for g in opt.param_groups:
            g["lr"] = _lr_at(epoch, cfg)
        m_idx = np.concatenate([v for v in main.values()] or [np.zeros(0, int)]).astype(int)
        m_cls = np.concatenate(
            [np.full(len(v), k_) for k_, v in main.items()] or [np.zeros(0, int)]
        )
        sums = {"pl": 0.0, "ul": 0.0, "lab": 0.0}
        rec_pred, rec_conf, rec_idx = [], [], []
        modules.train()
        for _ in range(cfg.iters_per_epoch):
            with model.text_cache():  # "coop": one text-encoder pass per iteration
                loss = torch.zeros((), device=dev)
                if cfg.main_branch and len(m_idx):
                    pick = rng.integers(0, len(m_idx), cfg.batch_size)
                    z = model(view(m_idx[pick], "weak"), phi_m, psi)
                    y = torch.as_tensor(m_cls[pick], dtype=torch.long, device=dev)
                    if cfg.loss == "pll" and candidates is not None:
                        w = torch.as_tensor(candidates[1][pick], dtype=torch.float32, device=dev)
                        l_pl = -(w * F.log_softmax(z, -1)).sum(-1).mean()
                    else:
                        l_pl = margin_cross_entropy(z, y, margin)
                    loss = loss + l_pl
                    sums["pl"] += float(l_pl.detach())
                if x_lab is not None:
                    pick = rng.integers(0, len(x_lab), cfg.batch_size)
                    z = model(feature_view(x_lab[pick], "weak", gen), phi_m, psi)
                    l_lab = margin_cross_entropy(z, y_lab[pick], margin)
                    loss = loss + l_lab
                    sums["lab"] += float(l_lab.detach())
                if cfg.unlabeled_branch:
                    pick = rng.integers(0, n, cfg.batch_size)
                    with torch.no_grad():
                        zw = model(view(pick, "weak"), phi_m, psi)
                        zw = zw.masked_fill(~allowed_t, float("-inf"))
                        conf, yhat = zw.softmax(-1).max(-1)
                    mask = conf > cfg.tau
                    if mask.any():
                        zs = model(view(pick, "strong"), phi_p, psi)
                        l_ul = self_training_loss(zs, yhat, mask, margin, cfg.unlabeled_norm)
                        loss = loss + l_ul
                        sums["ul"] += float(l_ul.detach())
                    rec_pred.append(yhat[mask].cpu().numpy())
                    rec_conf.append(conf[mask].cpu().numpy())
                    rec_idx.append(pick[mask.cpu().numpy()])
                if loss.requires_grad:
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
        rp = np.concatenate(rec_pred) if rec_pred else np.zeros(0, int)
        rc = np.concatenate(rec_conf) if rec_conf else np.zeros(0)
        ri = np.concatenate(rec_idx) if rec_idx else np.zeros(0, int)
        counts = np.bincount(rp, minlength=c).astype(float)
        if cfg.use_margin and counts.max() > 0:
            modules.eval()
            with torch.no_grad():
                protos = model.text_embeddings().cpu().numpy()  # fallback: text
                vis = protos.copy()
                for cls, idx in main.items():
                    if len(idx):
                        e = model.image_embeddings(x_pool[idx], phi_m).mean(0)
                        vis[cls] = F.normalize(e, dim=-1).cpu().numpy()
                margin = torch.as_tensor(
                    margin_matrix(counts, vis, protos, cfg.margin_scale, cfg.delta, seen_mask),
                    device=dev,
                )
        entry = {
            "epoch": epoch,
            "loss_pl": sums["pl"] / cfg.iters_per_epoch,
            "loss_ul": sums["ul"] / cfg.iters_per_epoch,
            "loss_labeled": sums["lab"] / cfg.iters_per_epoch,
            "n_confident": len(rp),
            "counts": counts,
            "n_main": int(sum(len(v) for v in main.values())),
            "margin": margin.cpu().numpy().copy(),
            "_records": (rp, rc, ri),
        }
        if y_pool is not None:
            entry["pseudo"] = rp
            entry["pseudo_true"] = np.asarray(y_pool)[ri]
            entry["pseudo_acc"] = (
                float((rp == np.asarray(y_pool)[ri]).mean()) if len(rp) else float("nan")
            )
            if len(m_idx):
                entry["main_acc"] = float((m_cls == np.asarray(y_pool)[m_idx]).mean())
        history.append(entry)
    modules.eval()
    return history, main
