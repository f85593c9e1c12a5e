"""Slide-level multiple-instance models: QuerentMIL and the baselines it is compared with.

Every model maps one bag -- patch features (N, F) and grid coordinates (N, 2) -- to slide
logits, and can return interpretation maps (``forward(..., return_maps=True)``).

* :class:`QuerentMIL` (Querent, Guo et al., ICML 2025): patch embedding, ``num_layers`` Querent
  layers, gated-attention pooling, linear classifier. A Querent layer summarises each region of
  patches by the element-wise min and max of its *patch features* (region metadata), scores every
  region for every query patch with an importance estimator, keeps the query's own region plus
  the top-k others, and runs multi-head attention over the selected regions only.
* :class:`ABMIL` (Ilse et al., 2018): gated attention pooling of independently embedded patches.
* :class:`TransMILStyle`: the same stack as QuerentMIL with dense self-attention (every patch sees
  every patch) -- the accuracy reference QuerentMIL approximates.
* :class:`MeanPoolMIL`: mean of the patch embeddings.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from sparse_attn.region import attend_selected_regions, grid_regions
from sparse_attn.validation import check_positive_int
from sparse_attn.wsi import Bag

__all__ = [
    "ABMIL",
    "GatedAttentionPool",
    "MeanPoolMIL",
    "QuerentLayer",
    "QuerentMIL",
    "TransMILStyle",
    "check_bag",
    "fit_mil",
    "predict_proba",
]


def _check_grid(coords: torch.Tensor) -> None:
    """Grid coordinates have neighbours one step apart; pixel coordinates (CLAM / TRIDENT
    ``coords``) would make every patch its own region, silently."""
    if len(coords) < 2:
        return
    c = coords.detach().cpu().numpy()
    gaps = []
    for axis in (0, 1):
        order = np.lexsort((c[:, axis], c[:, 1 - axis]))
        d = np.diff(c[order, axis])[np.diff(c[order, 1 - axis]) == 0]
        gaps.append(d[d > 0])
    gaps = np.concatenate(gaps)
    if len(gaps) and int(gaps.min()) >= 16:
        raise ValueError(
            f"coords: neighbouring patches are at least {int(gaps.min())} apart: these look "
            "like pixel coordinates, not grid positions; divide by the patch step in pixels "
            "(or read the slide with sparse_attn.load_feature_bag, which does)"
        )


def check_bag(
    features: torch.Tensor,
    coords: torch.Tensor | None,
    in_dim: int,
    dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Validate one bag: features (N, F) or (1, N, F), coords (N, 2) or (1, N, 2).

    Returns
    -------
    features : (N, F) float
    coords : (N, 2) integer, or None
    """
    if not isinstance(features, torch.Tensor):
        raise TypeError(f"features: expected a tensor, got {type(features).__name__}")
    if features.ndim == 3 and features.shape[0] == 1:
        features = features[0]
    if features.ndim != 2:
        raise ValueError(f"features: expected shape (N, F), got {tuple(features.shape)}")
    if features.shape[0] == 0:
        raise ValueError("features: empty bag (0 patches)")
    if features.shape[1] != in_dim:
        raise ValueError(f"features: expected {in_dim} features, got {features.shape[1]}")
    if not features.is_floating_point():
        raise TypeError(f"features: expected floating point, got {features.dtype}")
    if not torch.isfinite(features).all():
        raise ValueError("features: contains NaN or inf")
    if coords is not None:
        if isinstance(coords, torch.Tensor) and coords.ndim == 3 and coords.shape[0] == 1:
            coords = coords[0]  # a batch of one bag, as features may be
        if not isinstance(coords, torch.Tensor) or coords.shape != (features.shape[0], 2):
            raise ValueError(
                f"coords: expected shape ({features.shape[0]}, 2) matching the features, "
                f"got {tuple(getattr(coords, 'shape', ()))}"
            )
        if coords.is_floating_point():
            raise TypeError("coords: expected integer grid coordinates")
    if dtype is not None:  # the model's dtype (half-precision features into a float32 model)
        features = features.to(dtype)
    return features, coords


class GatedAttentionPool(nn.Module):
    """ABMIL's gated attention pooling: ``a = softmax(w^T (tanh(V h) * sigmoid(U h)))``."""

    def __init__(self, dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.v = nn.Linear(dim, hidden)
        self.u = nn.Linear(dim, hidden)
        self.w = nn.Linear(hidden, 1)

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h (N, dim) -> pooled (dim,), attention (N,)."""
        a = self.w(torch.tanh(self.v(h)) * torch.sigmoid(self.u(h))).squeeze(-1)
        a = torch.softmax(a, dim=0)
        return a @ h, a


class QuerentLayer(nn.Module):
    """Pre-norm transformer block whose attention sees each query's top-k regions only.

    Parameters
    ----------
    dim : int
        Token width.
    num_heads : int, default=4
        Attention heads.
    top_k : int, default=5
        Regions attended per query besides its own (paper default 5).
    proj_dim : int, default=32
        Width of the importance estimator's projections.
    score : {"learned", "minmax_bound"}, default="learned"
        ``"learned"``: ``max(|<W q, A x_min>|, |<W q, B x_max>|)`` on the patch features
        (trained straight-through); ``"minmax_bound"``: the parameter-free Quest bound on the
        first head's keys.
    dropout : float, default=0.1
    """

    def __init__(
        self,
        dim: int,
        num_heads: int = 4,
        top_k: int = 5,
        proj_dim: int = 32,
        score: str = "learned",
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        check_positive_int(dim, "dim")
        check_positive_int(num_heads, "num_heads")
        if dim % num_heads:
            raise ValueError(f"dim={dim} must be divisible by num_heads={num_heads}")
        if score not in ("learned", "minmax_bound"):
            raise ValueError(f"score must be 'learned' or 'minmax_bound', got {score!r}")
        self.heads, self.top_k, self.score = num_heads, check_positive_int(top_k, "top_k"), score
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.drop = nn.Dropout(dropout)
        self.est_q = nn.Linear(dim, proj_dim, bias=False)
        self.est_min = nn.Linear(dim, proj_dim, bias=False)
        self.est_max = nn.Linear(dim, proj_dim, bias=False)

    def metadata(self, x: torch.Tensor, region_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Region metadata: element-wise min and max of the patch features, (M, dim) each."""
        m = int(region_ids.max()) + 1
        idx = region_ids[:, None].expand_as(x)
        xmin = x.new_full((m, x.shape[1]), float("inf")).scatter_reduce(0, idx, x, "amin")
        xmax = x.new_full((m, x.shape[1]), float("-inf")).scatter_reduce(0, idx, x, "amax")
        return xmin, xmax

    def _scores(self, q: torch.Tensor, pmin: torch.Tensor, pmax: torch.Tensor) -> torch.Tensor:
        # importance max(|<W q, A x_min>|, |<W q, B x_max>|) / sqrt(P); pmin/pmax broadcast
        s_min = (q * pmin).sum(-1).abs() if pmin.ndim == 3 else (q @ pmin.T).abs()
        s_max = (q * pmax).sum(-1).abs() if pmax.ndim == 3 else (q @ pmax.T).abs()
        return torch.maximum(s_min, s_max) / math.sqrt(q.shape[-1])

    def importance(self, x: torch.Tensor, region_ids: torch.Tensor) -> torch.Tensor:
        """Region importance (N, M) of every region for every query patch."""
        xmin, xmax = self.metadata(x, region_ids)
        return self._scores(self.est_q(x), self.est_min(xmin), self.est_max(xmax))

    @torch.no_grad()
    def _select(self, h, q0, k0, region_ids, kk, chunk: int | None = None) -> torch.Tensor:
        """Top-kk regions per query (own region always kept), chunked: O(chunk * M) memory
        (by default a chunk's score block stays near 4 MB)."""
        n = h.shape[0]
        m = int(region_ids.max()) + 1
        if chunk is None:
            chunk = max(64, 2**19 // max(m, 1))
        if self.score == "learned":
            xmin, xmax = self.metadata(h, region_ids)
            q_all = self.est_q(h) / math.sqrt(self.est_q.out_features)
            meta = torch.cat([self.est_min(xmin), self.est_max(xmax)])  # (2M, P): one product
        else:  # Quest bound on the first head's keys
            kmin, kmax = self.metadata(k0, region_ids)
        sels = []
        for a in range(0, n, chunk):
            b = min(a + chunk, n)
            if self.score == "learned":
                scores = (q_all[a:b] @ meta.T).abs_().view(b - a, 2, m).amax(dim=1)
            else:
                qc = q0[a:b]
                scores = qc.clamp(min=0) @ kmax.T + qc.clamp(max=0) @ kmin.T
            # the own region always wins: O(chunk) writes instead of a (chunk, M) mask
            scores[torch.arange(b - a, device=scores.device), region_ids[a:b]] = float("inf")
            sels.append(scores.topk(kk, dim=-1, sorted=False).indices)
        return torch.cat(sels)

    def forward(
        self, x: torch.Tensor, region_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (N, dim), region_ids (N,) -> (N, dim), selected regions (N, k + 1)."""
        n, dim = x.shape
        h = self.norm1(x)
        qkv = self.qkv(h).view(n, 3, self.heads, dim // self.heads).permute(1, 2, 0, 3)
        q, k, v = qkv[0][None], qkv[1][None], qkv[2][None]  # (1, H, N, Dh)
        kk = min(self.top_k + 1, int(region_ids.max()) + 1)
        sel = self._select(h.detach(), q[0, 0].detach(), k[0, 0].detach(), region_ids, kk)
        sel_scores = None
        if self.score == "learned" and torch.is_grad_enabled():
            # differentiable scores of the selected regions only: no (N, M) gradient buffer;
            # their straight-through term is zero in the forward pass, so inference skips them
            xmin, xmax = self.metadata(h, region_ids)
            sel_scores = self._scores(
                self.est_q(h)[:, None, :], self.est_min(xmin)[sel], self.est_max(xmax)[sel]
            )[None]
        # one head at a time: the region-major tiles of a head are independent of the others',
        # so the output is the same and the gathered keys, values and logits are 1 / H as large
        out = torch.cat(
            [
                attend_selected_regions(q[:, i : i + 1], k[:, i : i + 1], v[:, i : i + 1],
                                        sel[None], region_ids, scores=sel_scores)
                for i in range(self.heads)
            ],
            dim=1,
        )  # fmt: skip
        x = x + self.drop(self.proj(out[0].transpose(0, 1).reshape(n, dim)))
        x = x + self.drop(self.mlp(self.norm2(x)))
        return x, sel


class _DenseLayer(nn.Module):
    """Pre-norm transformer block with dense bidirectional self-attention (SDPA)."""

    def __init__(self, dim: int, num_heads: int = 4, dropout: float = 0.1) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim={dim} must be divisible by num_heads={num_heads}")
        self.heads = num_heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, dim = x.shape
        qkv = self.norm1(x) @ self.qkv.weight.T + self.qkv.bias
        qkv = qkv.view(n, 3, self.heads, dim // self.heads).permute(1, 2, 0, 3)
        out = F.scaled_dot_product_attention(qkv[0][None], qkv[1][None], qkv[2][None])
        x = x + self.drop(self.proj(out[0].transpose(0, 1).reshape(n, dim)))
        return x + self.drop(self.mlp(self.norm2(x)))


class _MILBase(nn.Module):
    """Patch embedding + classifier shared by every model."""

    def _dtype(self) -> torch.dtype:
        return self.classifier.weight.dtype

    def __init__(self, in_dim: int, n_classes: int, dim: int, dropout: float) -> None:
        super().__init__()
        self.in_dim = check_positive_int(in_dim, "in_dim")
        self.n_classes = check_positive_int(n_classes, "n_classes")
        check_positive_int(dim, "dim")
        if n_classes < 2:
            raise ValueError(f"n_classes: must be >= 2, got {n_classes}")
        self.embed = nn.Sequential(nn.Linear(in_dim, dim), nn.ReLU(), nn.Dropout(dropout))
        self.classifier = nn.Linear(dim, n_classes)

    def fit(self, bags: Sequence[Bag], **kwargs: object) -> _MILBase:
        """Train on labelled bags (see :func:`fit_mil`); the curve is kept in ``loss_curve_``."""
        self.loss_curve_ = fit_mil(self, bags, **kwargs)
        return self

    def predict_proba(self, bags: Sequence[Bag]) -> torch.Tensor:
        """Slide class probabilities (n_bags, n_classes)."""
        return predict_proba(self, bags)


class QuerentMIL(_MILBase):
    """Querent for slides: Querent layers over patch tokens, then gated-attention pooling.

    Parameters
    ----------
    in_dim : int
        Patch feature width F.
    n_classes : int
        Slide classes.
    dim : int, default=64
        Token width.
    num_layers : int, default=2
        Querent layers.
    num_heads : int, default=4
    region_size : int, default=16
        Patches per region: square tiles of ``round(sqrt(region_size))`` patches on the grid
        (the paper uses regions of about 16-24 patches).
    top_k : int, default=5
        Regions per query besides its own (paper: 5).
    score : {"learned", "minmax_bound"}, default="learned"
    dropout : float, default=0.1
    """

    def __init__(
        self,
        in_dim: int,
        n_classes: int,
        dim: int = 64,
        num_layers: int = 2,
        num_heads: int = 4,
        region_size: int = 16,
        top_k: int = 5,
        score: str = "learned",
        dropout: float = 0.1,
    ) -> None:
        super().__init__(in_dim, n_classes, dim, dropout)
        check_positive_int(num_layers, "num_layers")
        self.region_size = check_positive_int(region_size, "region_size")
        self.tile = max(1, round(math.sqrt(region_size)))
        self.layers = nn.ModuleList(
            QuerentLayer(dim, num_heads, top_k, score=score, dropout=dropout)
            for _ in range(num_layers)
        )
        self.pool = GatedAttentionPool(dim)

    def forward(
        self, features: torch.Tensor, coords: torch.Tensor, return_maps: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Slide logits (n_classes,); with ``return_maps`` also the interpretation maps.

        Maps: ``attention`` (N,) pooling weights; ``region_importance`` (N,) how often each
        patch's region was selected by other patches' queries in the last layer, normalised.
        """
        x, coords = check_bag(features, coords, self.in_dim, self._dtype())
        if coords is None:
            raise ValueError("coords: QuerentMIL needs the patches' grid coordinates")
        _check_grid(coords)
        if len(x) < self.region_size:
            raise ValueError(
                f"features: the bag has {len(x)} patches, fewer than one region "
                f"(region_size={self.region_size})"
            )
        region_ids = grid_regions(coords, tile=self.tile)
        h = self.embed(x)
        sel = None
        for layer in self.layers:
            h, sel = layer(h, region_ids)
        pooled, att = self.pool(h)
        logits = self.classifier(pooled)
        if not return_maps:
            return logits
        m = int(region_ids.max()) + 1
        hits = torch.bincount(sel.flatten(), minlength=m).float()
        imp = hits[region_ids]
        return logits, {"attention": att.detach(), "region_importance": (imp / imp.max()).detach()}


class TransMILStyle(_MILBase):
    """Dense self-attention layers (every patch sees every patch) + gated-attention pooling."""

    def __init__(
        self,
        in_dim: int,
        n_classes: int,
        dim: int = 64,
        num_layers: int = 2,
        num_heads: int = 4,
        dropout: float = 0.1,
    ) -> None:
        super().__init__(in_dim, n_classes, dim, dropout)
        check_positive_int(num_layers, "num_layers")
        self.layers = nn.ModuleList(_DenseLayer(dim, num_heads, dropout) for _ in range(num_layers))
        self.pool = GatedAttentionPool(dim)

    def forward(self, features, coords=None, return_maps: bool = False):
        """Slide logits (n_classes,); maps: ``attention`` (N,)."""
        h = self.embed(check_bag(features, coords, self.in_dim, self._dtype())[0])
        for layer in self.layers:
            h = layer(h)
        pooled, att = self.pool(h)
        logits = self.classifier(pooled)
        return (logits, {"attention": att.detach()}) if return_maps else logits


class ABMIL(_MILBase):
    """Attention-based MIL (Ilse et al., 2018): gated attention over independent patches."""

    def __init__(self, in_dim: int, n_classes: int, dim: int = 64, dropout: float = 0.1) -> None:
        super().__init__(in_dim, n_classes, dim, dropout)
        self.pool = GatedAttentionPool(dim)

    def forward(self, features, coords=None, return_maps: bool = False):
        """Slide logits (n_classes,); maps: ``attention`` (N,)."""
        pooled, att = self.pool(
            self.embed(check_bag(features, coords, self.in_dim, self._dtype())[0])
        )
        logits = self.classifier(pooled)
        return (logits, {"attention": att.detach()}) if return_maps else logits


class MeanPoolMIL(_MILBase):
    """Mean of the patch embeddings, then a linear classifier."""

    def __init__(self, in_dim: int, n_classes: int, dim: int = 64, dropout: float = 0.1) -> None:
        super().__init__(in_dim, n_classes, dim, dropout)

    def forward(self, features, coords=None, return_maps: bool = False):
        """Slide logits (n_classes,); maps: uniform ``attention``."""
        h = self.embed(check_bag(features, coords, self.in_dim, self._dtype())[0])
        logits = self.classifier(h.mean(0))
        if not return_maps:
            return logits
        return logits, {"attention": torch.full((len(h),), 1.0 / len(h))}


def fit_mil(
    model: nn.Module,
    bags: Sequence[Bag],
    *,
    epochs: int = 10,
    lr: float = 2e-4,
    weight_decay: float = 1e-4,
    seed: int = 0,
    verbose: int = 1,
) -> list[float]:
    """Train a MIL model, one bag per step (Adam, cross-entropy), bags shuffled each epoch.

    Parameters
    ----------
    model : nn.Module
        Any model of this module.
    bags : sequence of Bag
        Training slides (labels >= 0).
    epochs : int, default=10
    lr : float, default=2e-4
    weight_decay : float, default=1e-4
    seed : int, default=0
        Seeds the shuffling and dropout (the caller's global RNG is left as it was).
    verbose : int, default=1
        ``0`` hides the progress bar.

    Returns
    -------
    list of float
        Mean training loss of each epoch (the training curve).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    epochs = check_positive_int(epochs, "epochs")
    if isinstance(bags, Bag) or not isinstance(bags, Sequence) or not bags:
        raise ValueError("bags: expected a non-empty sequence of Bag")
    if not all(isinstance(b, Bag) for b in bags):
        raise TypeError("bags: every slide must be a Bag")
    if any(b.label < 0 for b in bags):
        raise ValueError("bags: every training slide needs a label >= 0")
    n_classes = getattr(model, "n_classes", None)
    if n_classes is not None and any(b.label >= n_classes for b in bags):
        raise ValueError(f"bags: labels must lie in [0, n_classes={n_classes})")
    for name, v, lo_open in (("lr", lr, True), ("weight_decay", weight_decay, False)):
        if (
            isinstance(v, bool)
            or not isinstance(v, numbers.Real)
            or not math.isfinite(v)
            or (v <= 0 if lo_open else v < 0)
        ):
            raise ValueError(
                f"{name}: must be finite and {'> 0' if lo_open else '>= 0'}, got {v!r}"
            )
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed: must be a non-negative int, got {seed!r}")
    if not isinstance(verbose, numbers.Integral):  # 0/1 or a bool
        raise TypeError(f"verbose: expected an int, got {type(verbose).__name__}")
    opt = torch.optim.Adam(model.parameters(), lr=float(lr), weight_decay=float(weight_decay))
    gen = torch.Generator().manual_seed(int(seed))
    # the seed also fixes dropout (one seed, one model), on a forked RNG: the caller's is kept
    cuda = [p.device for p in model.parameters() if p.device.type == "cuda"][:1]
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(int(seed))
        return _fit_epochs(model, bags, opt, gen, epochs, verbose)


def _fit_epochs(model, bags, opt, gen, epochs, verbose) -> list[float]:
    curve = []
    model.train()
    bar = tqdm(range(epochs), disable=not verbose, desc=type(model).__name__)
    for _ in bar:
        total = 0.0
        for i in torch.randperm(len(bags), generator=gen, device="cpu").tolist():
            bag = bags[i]
            logits = model(bag.features, bag.coords)
            target = torch.tensor([bag.label], device=logits.device)  # the model's device
            loss = F.cross_entropy(logits[None], target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        curve.append(total / len(bags))
        bar.set_postfix(loss=f"{curve[-1]:.3f}")
    model.eval()
    return curve


@torch.no_grad()
def predict_proba(model: nn.Module, bags: Sequence[Bag]) -> torch.Tensor:
    """Class probabilities (n_bags, n_classes) of a MIL model, in eval mode."""
    model.eval()
    return torch.stack([torch.softmax(model(b.features, b.coords), -1) for b in bags])
