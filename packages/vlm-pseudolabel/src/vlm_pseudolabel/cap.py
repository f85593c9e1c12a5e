"""CAP: Concept Alignment and confusion-aware calibrated margin for VLM pseudolabels.

Wang et al., "Handling Imbalanced Pseudolabels for Vision-Language Models with Concept
Alignment and Confusion-Aware Calibrated Margin", ICML 2025.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import torch

from vlm_pseudolabel.alignment import detect_mismatch, select_descriptions
from vlm_pseudolabel.base import PseudolabelEstimator, _finite_2d
from vlm_pseudolabel.data import VLMTask
from vlm_pseudolabel.engine import EngineConfig, train_prompts
from vlm_pseudolabel.model import PROMPTS, PromptModel
from vlm_pseudolabel.pseudolabels import topk_pseudolabels
from vlm_pseudolabel.text_prompts import TextContextPrompts, split_template

__all__ = ["CAP", "allowed_classes", "zero_shot_proba"]


def allowed_classes(task: VLMTask) -> np.ndarray:
    """Classes the unlabeled pool may be pseudolabelled with (TRZSL: the unseen ones)."""
    allowed = np.ones(task.n_classes, dtype=bool)
    if task.paradigm == "trzsl":
        allowed[:] = False
        allowed[np.asarray(task.unseen)] = True
    return allowed


def zero_shot_proba(X: np.ndarray, text: np.ndarray, scale: float, allowed=None) -> np.ndarray:
    """Softmax of ``scale * cos`` over the allowed classes (others get probability 0).

    Parameters
    ----------
    X : ndarray (n, d)
        Image embeddings.
    text : ndarray (C, d)
        Class-prompt embeddings.
    scale : float
        Logit scale ``s`` (> 0).
    allowed : ndarray of bool (C,), optional

    Returns
    -------
    ndarray (n, C)
    """
    d = _finite_2d(text, "text").shape[1]
    _finite_2d(X, "X", d)
    X, text = np.asarray(X, dtype=np.float64), np.asarray(text, dtype=np.float64)
    if (
        isinstance(scale, bool)
        or not isinstance(scale, numbers.Real)
        or not (np.isfinite(scale) and scale > 0)
    ):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    if allowed is not None:
        allowed = np.asarray(allowed)
        if allowed.dtype != bool or allowed.shape != (text.shape[0],) or not allowed.any():
            raise ValueError(
                f"allowed must be a boolean mask of {text.shape[0]} classes, not all False"
            )
    x = X / np.linalg.norm(X, axis=1, keepdims=True).clip(1e-12)
    t = text / np.linalg.norm(text, axis=1, keepdims=True).clip(1e-12)
    z = scale * x @ t.T
    if allowed is not None:
        z = np.where(allowed[None], z, -np.inf)
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


class CAP(PseudolabelEstimator):
    """CAP for unsupervised, semi-supervised and transductive zero-shot adaptation.

    Parameters
    ----------
    n_main : int, default=16
        Initial main samples (top-k zero-shot pseudolabels) per class.
    tau : float, default=0.85
        Confidence threshold of the unlabeled branch.
    margin_scale : float, default=12.0
        ``m`` of the calibrated margin.
    delta : {"ref", "linear"}, default="ref"
        Class coefficient ``(1 - r) / (1 + r)`` (released code) or ``1 - r``.
    unlabeled_norm : {"batch", "confident"}, default="batch"
        Normalisation of the unlabeled branch (:func:`self_training_loss`): ``"confident"``
        divides by the number of confident rows, as the spec and the official code do;
        ``"batch"`` (the default of every recorded table) divides by the batch size.
    max_main_ratio : float, default=0.8
        Main samples grow to ``min(1000, max_main_ratio * N / C)`` per class.
    update_every : int, default=5
        Epochs between main-sample updates.
    epochs, iters_per_epoch, batch_size, lr, momentum, weight_decay, warmup_epochs, warmup_lr
        SGD schedule (released defaults: 50 x 50, batch 32, lr 0.01, momentum 0.9, wd 0.1,
        1 warm-up epoch at 1e-3, cosine).
    prompt : {"shared_lowrank", "class_offset", "linear_probe", "coop"}, default="shared_lowrank"
        How the prompts are learned. The first three act on frozen embeddings (fast);
        ``"coop"`` learns context tokens through the CLIP text encoder of a task made by
        :func:`~vlm_pseudolabel.backbones.encode_task` (the context starts from the words of
        its first template before ``{}``; a class swapped by concept alignment gets its
        description string as its class text).
    rank : int, default=8
    adapter_hidden : int, default=128
    adapter_residual : float, default=0.01
    mismatch_t : int or None
        Stop size of mismatch detection (default ``ceil(C / 10)``).
    removal : {"cluster", "reference"}, default="cluster"
    kmeans_n_init : int, default=10
        KMeans restarts per detection round.
    fill : {"fpl", "reference"}, default="fpl"
    use_alignment, use_margin, independent_adapters : bool, default=True
        Ablation switches.
    alignment_gate : bool, default=False
        This package's option, not the paper's: keep a detected class's description only if it
        wins its cluster against every other class's prompt (see
        :func:`~vlm_pseudolabel.alignment.select_descriptions`); guards against false
        detections, which swap a correct prompt for a worse one.
    random_state : int, default=0
    verbose : int, default=0
        1 shows a progress bar.
    device : str or torch.device, default="cpu"
        Where the prompts and adapters train and predict (``"cuda"``). They are initialised on
        the CPU from ``random_state`` and moved, so every device starts from the same weights.
        With ``prompt="coop"`` the task's frozen text encoder is moved there too.

    Attributes
    ----------
    mismatch_classes_ : list of int
    descriptions_chosen_ : dict of int -> int
    text_features_ : ndarray (C, d)
        Class embeddings after concept alignment.
    main_samples_ : dict of int -> ndarray
    margin_ : ndarray (C, C)
    history_ : list of dict
    model_ : PromptModel
    """

    def __init__(
        self,
        n_main: int = 16,
        tau: float = 0.85,
        margin_scale: float = 12.0,
        delta: str = "ref",
        unlabeled_norm: str = "batch",
        max_main_ratio: float = 0.8,
        update_every: int = 5,
        epochs: int = 50,
        iters_per_epoch: int = 50,
        batch_size: int = 32,
        lr: float = 0.01,
        momentum: float = 0.9,
        weight_decay: float = 0.1,
        warmup_epochs: int = 1,
        warmup_lr: float = 1e-3,
        prompt: str = "shared_lowrank",
        rank: int = 8,
        adapter_hidden: int = 128,
        adapter_residual: float = 0.01,
        mismatch_t: int | None = None,
        removal: str = "cluster",
        kmeans_n_init: int = 10,
        fill: str = "fpl",
        use_alignment: bool = True,
        use_margin: bool = True,
        independent_adapters: bool = True,
        alignment_gate: bool = False,
        random_state: int = 0,
        verbose: int = 0,
        device: str | torch.device = "cpu",
    ) -> None:
        self.n_main = n_main
        self.tau = tau
        self.margin_scale = margin_scale
        self.delta = delta
        self.unlabeled_norm = unlabeled_norm
        self.max_main_ratio = max_main_ratio
        self.update_every = update_every
        self.epochs = epochs
        self.iters_per_epoch = iters_per_epoch
        self.batch_size = batch_size
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.warmup_epochs = warmup_epochs
        self.warmup_lr = warmup_lr
        self.prompt = prompt
        self.rank = rank
        self.adapter_hidden = adapter_hidden
        self.adapter_residual = adapter_residual
        self.mismatch_t = mismatch_t
        self.removal = removal
        self.kmeans_n_init = kmeans_n_init
        self.fill = fill
        self.use_alignment = use_alignment
        self.use_margin = use_margin
        self.independent_adapters = independent_adapters
        self.alignment_gate = alignment_gate
        self.random_state = random_state
        self.verbose = verbose
        self.device = device

    def _check_params(self) -> None:
        super()._check_params()
        for name in (
            "n_main",
            "update_every",
            "epochs",
            "iters_per_epoch",
            "batch_size",
            "rank",
            "adapter_hidden",
            "kmeans_n_init",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        if not (isinstance(self.warmup_epochs, int | np.integer) and 0 <= self.warmup_epochs):
            raise ValueError(f"warmup_epochs must be an int >= 0, got {self.warmup_epochs!r}")
        if not 0 < self.tau < 1:
            raise ValueError(f"tau must be in (0, 1), got {self.tau}")
        if not 0 < self.max_main_ratio <= 1:
            raise ValueError(f"max_main_ratio must be in (0, 1], got {self.max_main_ratio}")
        for name in ("lr", "warmup_lr"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive finite number, got {v!r}")
        for name in ("margin_scale", "weight_decay", "adapter_residual"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum}")
        if self.unlabeled_norm not in ("batch", "confident"):
            raise ValueError(
                f"unlabeled_norm must be 'batch' or 'confident', got {self.unlabeled_norm!r}"
            )
        if self.delta not in ("ref", "linear"):
            raise ValueError(f"delta must be 'ref' or 'linear', got {self.delta!r}")
        if self.prompt not in PROMPTS:
            raise ValueError(f"prompt must be one of {PROMPTS}, got {self.prompt!r}")
        if self.removal not in ("cluster", "reference"):
            raise ValueError(f"removal must be 'cluster' or 'reference', got {self.removal!r}")
        if self.fill not in ("fpl", "reference"):
            raise ValueError(f"fill must be 'fpl' or 'reference', got {self.fill!r}")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device must name a torch device, got {self.device!r}") from exc
        for name in ("use_alignment", "use_margin", "independent_adapters", "alignment_gate"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")

    def _engine_config(self, **overrides) -> EngineConfig:
        cfg = EngineConfig(
            epochs=self.epochs,
            iters_per_epoch=self.iters_per_epoch,
            batch_size=self.batch_size,
            lr=self.lr,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            warmup_epochs=self.warmup_epochs,
            warmup_lr=self.warmup_lr,
            tau=self.tau,
            margin_scale=self.margin_scale,
            delta=self.delta,
            unlabeled_norm=self.unlabeled_norm,
            use_margin=self.use_margin,
            independent_adapters=self.independent_adapters,
            adapter_hidden=self.adapter_hidden,
            adapter_residual=self.adapter_residual,
            update_every=self.update_every,
            max_main_ratio=self.max_main_ratio,
            n_main=self.n_main,
            verbose=self.verbose,
            device=self.device,
        )
        for k, v in overrides.items():
            setattr(cfg, k, v)
        return cfg

    def _align(self, task: VLMTask, text: np.ndarray, allowed: np.ndarray, main: dict) -> None:
        """Concept alignment: detect mismatched classes, swap in descriptions, re-pick samples."""
        cls = np.flatnonzero(allowed)
        mism, _, centres = detect_mismatch(
            task.X_unlabeled,
            text[cls],
            t=self.mismatch_t,
            logit_scale=task.logit_scale,
            removal=self.removal,
            seed=int(self.random_state),
            n_init=int(self.kmeans_n_init),
        )
        mism = [int(cls[m]) for m in mism]
        missing = [c for c in mism if c not in task.descriptions]
        if missing:
            warnings.warn(
                f"no descriptions for mismatched classes {missing}; not aligned", stacklevel=3
            )
        gate = {"text_features": text, "allowed": allowed} if self.alignment_gate else {}
        chosen = select_descriptions(mism, task.descriptions, centres, **gate)
        x = task.X_unlabeled / np.linalg.norm(task.X_unlabeled, axis=1, keepdims=True).clip(1e-12)
        for c, j in chosen.items():
            d = np.asarray(task.descriptions[c][j], dtype=np.float64)
            text[c] = d / max(np.linalg.norm(d), 1e-12)
            main[c] = np.argsort(-(x @ text[c]), kind="stable")[: self.n_main]
        self.mismatch_classes_ = mism
        self.descriptions_chosen_ = chosen

    def _prompt_model(
        self, task: VLMTask, text: np.ndarray, gen: torch.Generator, chosen: dict[int, int]
    ) -> PromptModel:
        """The prompt model of ``self.prompt``; for "coop" the context prompts of ``task``."""
        if self.prompt != "coop":
            return PromptModel(text, self.prompt, int(self.rank), task.logit_scale, gen)
        context, suffix = split_template(task.templates[0])
        texts = [suffix.format(n) for n in task.class_names]
        for c, j in chosen.items():
            texts[c] = task.description_texts[c][j]
        # the frozen text encoder runs where the prompts train (as Trainer moves its model)
        task.backbone.model.to(torch.device(self.device))
        prompts = TextContextPrompts(task.backbone, texts, context)
        return PromptModel(text, "coop", logit_scale=task.logit_scale, text_prompts=prompts)

    def _check_coop(self, task: VLMTask) -> None:
        if self.prompt != "coop":
            return
        if task.backbone is None or not task.templates:
            raise ValueError(
                "prompt='coop' learns through the CLIP text encoder: task needs backbone and "
                "templates (build it with encode_task)"
            )
        if len(task.templates) > 1:
            raise ValueError(
                f"prompt='coop' learns one context from one template, but the task's text "
                f"features average {len(task.templates)} templates (so would its pseudolabels): "
                "build the task with a single template (encode_task(..., templates=[...]))"
            )
        split_template(task.templates[0])
        if self.use_alignment and set(task.descriptions) - set(task.description_texts or {}):
            raise ValueError(
                "prompt='coop' with use_alignment: task.description_texts must hold the "
                "description strings of every class in task.descriptions"
            )

    def _fit(self, task: VLMTask) -> None:
        self._check_coop(task)
        text = np.asarray(task.text_features, dtype=np.float64).copy()
        allowed = allowed_classes(task)
        proba = zero_shot_proba(task.X_unlabeled, text, task.logit_scale, allowed)
        main = topk_pseudolabels(proba, int(self.n_main), self.fill)
        main = {c: v for c, v in main.items() if allowed[c]}
        self.mismatch_classes_, self.descriptions_chosen_ = [], {}
        if self.use_alignment:
            self._align(task, text, allowed, main)
        self.text_features_ = text.astype(np.float32)
        gen = torch.Generator().manual_seed(int(self.random_state))
        self.model_ = self._prompt_model(task, text, gen, self.descriptions_chosen_)
        seen_mask = None
        if task.paradigm == "trzsl":
            seen_mask = np.zeros(task.n_classes, dtype=bool)
            seen_mask[np.asarray(task.seen)] = True
        self.history_, self.main_samples_ = train_prompts(
            self.model_,
            task.X_unlabeled,
            main,
            self._engine_config(),
            augment=task.augment,
            X_labeled=task.X_labeled,
            y_labeled=task.y_labeled,
            allowed=allowed,
            seen_mask=seen_mask,
            y_pool=task.y_unlabeled,
            seed=int(self.random_state),
        )
        self.margin_ = self.history_[-1]["margin"]
