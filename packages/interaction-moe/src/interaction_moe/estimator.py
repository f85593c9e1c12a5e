"""scikit-learn style wrapper: MLP encoders + a fusion backbone, trained with Adam."""

from __future__ import annotations

import copy
import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from torch import nn
from tqdm.auto import tqdm

from interaction_moe.fusion import (
    ConcatMLPFusion,
    LateFusion,
    LowRankTensorFusion,
    TransformerFusion,
)
from interaction_moe.model import I2MoE, I2MoEOutput

__all__ = ["I2MoEClassifier"]

BACKBONES = ("concat", "late", "lrtf", "transformer")
ENCODERS = ("mlp", "gru")


def _check_xs(xs, name: str = "X", ndim: int = 2) -> list[np.ndarray]:
    if not isinstance(xs, list | tuple) or len(xs) < 2:
        raise ValueError(f"{name} must be a list of at least 2 modality arrays")
    out = []
    for m, x in enumerate(xs):
        a = np.asarray(x)
        if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
            raise TypeError(f"{name}[{m}] must be a real numeric array")
        a = a.astype(np.float64)
        if a.ndim == 1 and ndim == 2:
            a = a[:, None]
        if a.ndim != ndim or a.shape[0] == 0:
            want = "(n, d)" if ndim == 2 else "(n, T, d) token sequences"
            raise ValueError(f"{name}[{m}] must be a non-empty {want} array, got shape {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"{name}[{m}] contains NaN or inf")
        out.append(a)
    if len({len(a) for a in out}) != 1:
        raise ValueError(f"{name}: modalities have different numbers of samples")
    return out


class I2MoEClassifier(ClassifierMixin, BaseEstimator):
    """I2MoE (or its vanilla backbone) as a classifier on a list of per-modality feature arrays.

    Parameters
    ----------
    backbone : {"concat", "late", "lrtf", "transformer"}, default="concat"
        Concatenation MLP, late fusion, low-rank tensor fusion or a transformer over tokens.
    encoder : {"mlp", "gru"}, default="mlp"
        Per-modality encoder: one Linear + ReLU on (n, d) features, or a GRU over (n, T, d)
        token sequences (MultiBench's sequence data, see ``load_multibench_pickle``).
    moe : bool, default=True
        False trains the backbone alone (the vanilla baseline, same encoders and budget).
    hidden : int, default=32
        Encoder output size D (one Linear + ReLU per modality).
    interaction_weight, temperature, margin, perturbation, reweighting, interaction_loss, expert_loss_weight, gate_target_weight, specialize, independent_init
        As ``I2MoE``; the paper's method is the defaults (``perturbation="gaussian"``, the three
        options off).
    epochs : int, default=40
    batch_size : int, default=128
    lr : float, default=1e-3
    weight_decay : float, default=0.0
    standardize : bool, default=True
        Per-feature standardisation with training statistics.
    validation_fraction : float, default=0.0
        > 0: keep the epoch with the best accuracy on a held-out stratified part (paper protocol).
    random_state : int, default=0
    verbose : int, default=0
        1 shows a progress bar over epochs.
    device : str or torch.device, default="cpu"
        Where the model trains and predicts (``"cuda"``); it is built on the CPU from
        ``random_state`` and moved, so every device starts from the same weights.

    Attributes
    ----------
    model_ : nn.Module
    classes_ : ndarray
    history_ : list of dict (loss per epoch, interaction losses, validation accuracy)
    """

    def __init__(
        self,
        backbone: str = "concat",
        encoder: str = "mlp",
        moe: bool = True,
        hidden: int = 32,
        interaction_weight: float = 0.1,
        temperature: float = 1.0,
        margin: float = 1.0,
        perturbation: str = "gaussian",
        reweighting: str = "sample",
        interaction_loss: bool = True,
        expert_loss_weight: float = 0.0,
        gate_target_weight: float = 0.0,
        specialize: bool = False,
        independent_init: bool = False,
        epochs: int = 40,
        batch_size: int = 128,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        standardize: bool = True,
        validation_fraction: float = 0.0,
        random_state: int = 0,
        verbose: int = 0,
        device: str | torch.device = "cpu",
    ) -> None:
        self.backbone = backbone
        self.encoder = encoder
        self.moe = moe
        self.hidden = hidden
        self.interaction_weight = interaction_weight
        self.temperature = temperature
        self.margin = margin
        self.perturbation = perturbation
        self.reweighting = reweighting
        self.interaction_loss = interaction_loss
        self.expert_loss_weight = expert_loss_weight
        self.gate_target_weight = gate_target_weight
        self.specialize = specialize
        self.independent_init = independent_init
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.standardize = standardize
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.verbose = verbose
        self.device = device

    def _build(self, dims: list[int], K: int) -> nn.Module:
        M, D = len(dims), int(self.hidden)
        if self.encoder == "gru":
            encoders = [_GRUEncoder(d, D) for d in dims]
        else:
            encoders = [nn.Sequential(nn.Linear(d, D), nn.ReLU()) for d in dims]
        if self.backbone == "concat":
            fusion = ConcatMLPFusion(M, D, K, hidden=2 * D)
        elif self.backbone == "late":
            fusion = LateFusion(M, D, K)
        elif self.backbone == "lrtf":
            fusion = LowRankTensorFusion(M, D, K)
        else:
            fusion = TransformerFusion(M, D, K)
        if not self.moe:
            return _Vanilla(encoders, fusion)
        return I2MoE(
            encoders, fusion, "multiclass", self.interaction_weight, self.temperature, self.margin,
            self.perturbation, gate_dim=M * D, reweighting=self.reweighting,
            interaction_loss=self.interaction_loss, expert_loss_weight=self.expert_loss_weight,
            gate_target_weight=self.gate_target_weight, specialize=self.specialize,
            independent_init=self.independent_init,
        )  # fmt: skip

    def _ndim(self) -> int:
        return 3 if self.encoder == "gru" else 2

    def _prep(self, xs) -> list[torch.Tensor]:
        xs = _check_xs(xs, ndim=self._ndim())
        if len(xs) != len(self.dims_) or any(
            x.shape[-1] != d for x, d in zip(xs, self.dims_, strict=True)
        ):
            raise ValueError(f"X must have {len(self.dims_)} modalities with widths {self.dims_}")
        if self.standardize:  # in float64: values at 1e30 standardise exactly, not to zeros
            xs = [(x - mu) / sd for x, mu, sd in zip(xs, self.mean_, self.std_, strict=True)]
        out = [np.ascontiguousarray(x, dtype=np.float32) for x in xs]
        for m, x in enumerate(out):
            if not np.isfinite(x).all():
                raise ValueError(
                    f"X[{m}] has values beyond float32's range"
                    + ("" if self.standardize else " (set standardize=True)")
                )
        return [torch.from_numpy(x).to(torch.device(self.device)) for x in out]

    def fit(self, X, y) -> I2MoEClassifier:
        """Train on ``X`` (list of M arrays (n, d_m)) and labels ``y`` (n,)."""
        if self.backbone not in BACKBONES:
            raise ValueError(f"backbone must be one of {BACKBONES}, got {self.backbone!r}")
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {self.encoder!r}")
        for name in ("epochs", "batch_size", "hidden"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        for name in ("lr", "weight_decay", "validation_fraction"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device must name a torch device, got {self.device!r}") from exc
        if not 0 <= self.validation_fraction < 1:
            raise ValueError(
                f"validation_fraction must be in [0, 1), got {self.validation_fraction}"
            )
        xs = _check_xs(X, ndim=self._ndim())
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != len(xs[0]):
            raise ValueError(f"y must be 1-D with one label per sample ({len(xs[0])})")
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            raise ValueError("y contains NaN or inf")
        try:
            check_classification_targets(y)
        except ValueError as exc:
            raise ValueError(f"y: {exc}") from exc
        classes, yi = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError("y must contain at least two classes")
        n_val = round(self.validation_fraction * len(y))
        if len(y) - n_val < 2 or (self.validation_fraction > 0 and n_val < 1):
            raise ValueError(
                f"validation_fraction={self.validation_fraction} leaves {len(y) - n_val} training "
                f"and {n_val} validation samples of {len(y)}"
            )
        torch.manual_seed(int(self.random_state))
        rng = np.random.default_rng(self.random_state)
        self.dims_ = [x.shape[-1] for x in xs]
        axes = tuple(range(xs[0].ndim - 1))  # samples (and tokens): per-feature statistics
        self.mean_ = [x.mean(axes) for x in xs]
        self.std_ = [x.std(axes) + 1e-6 * np.maximum(1.0, np.abs(x).max(axes)) for x in xs]
        model = self._build(self.dims_, len(classes))  # validates the I2MoE hyper-parameters
        model.to(device)  # built on the CPU from random_state, trained on the device
        self.classes_ = classes
        T = self._prep(xs)
        yt = torch.from_numpy(yi.astype(np.int64)).to(device)
        idx = rng.permutation(len(yt))
        n_val = round(self.validation_fraction * len(yt))
        val, tr = idx[:n_val], idx[n_val:]
        opt = torch.optim.Adam(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        self.history_, best, best_state = [], -1.0, None
        for _ in tqdm(range(int(self.epochs)), disable=not self.verbose, desc="I2MoE"):
            model.train()
            order = tr[rng.permutation(len(tr))]
            tot, ints = 0.0, 0.0
            for s in range(0, len(order), int(self.batch_size)):
                b = torch.from_numpy(order[s : s + int(self.batch_size)])
                out = model([t[b] for t in T])
                loss = model.loss(out, yt[b])
                opt.zero_grad()
                loss.backward()
                opt.step()
                tot += float(loss.detach()) * len(b)
                if out.interaction_losses is not None:
                    ints += float(out.interaction_losses["total"].detach()) * len(b)
            rec = {"loss": tot / len(order), "interaction": ints / len(order)}
            if n_val:
                model.eval()
                with torch.no_grad():
                    acc = float(
                        (model([t[val] for t in T]).logits.argmax(1) == yt[val]).float().mean()
                    )
                rec["val_accuracy"] = acc
                if acc > best:
                    best, best_state = acc, copy.deepcopy(model.state_dict())
            self.history_.append(rec)
        if best_state is not None:
            model.load_state_dict(best_state)
        self.model_ = model.eval()
        return self

    @torch.no_grad()
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (n, K) of the mixture of logits."""
        check_is_fitted(self, "model_")
        return torch.softmax(self.model_(self._prep(X)).logits, dim=1).cpu().numpy()

    def predict(self, X) -> np.ndarray:
        """Predicted labels (n,)."""
        proba = self.predict_proba(X)  # first: it raises NotFittedError before classes_ is read
        return self.classes_[proba.argmax(1)]

    @torch.no_grad()
    def interaction_weights(self, X) -> np.ndarray:
        """Per-sample expert weights (n, M + 2), order ``[uni_1..uni_M, syn, red]``."""
        check_is_fitted(self, "model_")
        if not self.moe:
            raise ValueError("interaction_weights needs moe=True")
        return self.model_(self._prep(X)).weights.cpu().numpy()


class _GRUEncoder(nn.Module):
    """(B, T, d) token sequence -> its last GRU state (B, D)."""

    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.rnn = nn.GRU(d, hidden, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[1][-1]


class _Vanilla(nn.Module):
    """The fusion backbone alone, with I2MoE's output/loss interface."""

    def __init__(self, encoders, fusion) -> None:
        super().__init__()
        self.encoders, self.fusion = nn.ModuleList(encoders), fusion

    def forward(self, xs):
        o = self.fusion([e(x) for e, x in zip(self.encoders, xs, strict=True)])
        return I2MoEOutput(o, torch.ones(len(o), 1, device=o.device), o[:, None], None)

    def loss(self, out, y):
        return torch.nn.functional.cross_entropy(out.logits, y)
