"""Baselines with the same prompts, optimiser and budget as CAP.

* :class:`ZeroShot` -- no training.
* :class:`FPL` -- top-k pseudolabels per class once, cross-entropy on them (Menghini et al.).
* :class:`IFPL` -- FPL repeated for ``n_rounds`` rounds, re-pseudolabelling with the latest model.
* :class:`GRIP` -- rounds with a growing k (``i * N / (rounds * C)``), prompts re-initialised.
* :class:`CPL` -- candidate pseudolabels (intra-instance cumulative-probability sets intersected
  with inter-instance per-class quantile sets), a partial-label loss, refreshed each round.
* :class:`FixMatchST` -- CAP's unlabeled branch alone (threshold, no balancing, no margin).
* :class:`Oracle` -- the true pool labels (upper bound).

Every trained baseline runs ``epochs x iters_per_epoch`` SGD steps in total, like CAP.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from vlm_pseudolabel.base import PseudolabelEstimator
from vlm_pseudolabel.cap import CAP, allowed_classes, zero_shot_proba
from vlm_pseudolabel.data import VLMTask
from vlm_pseudolabel.engine import train_prompts
from vlm_pseudolabel.model import PromptModel
from vlm_pseudolabel.pseudolabels import topk_pseudolabels

__all__ = ["CPL", "FPL", "GRIP", "IFPL", "FixMatchST", "Oracle", "ZeroShot"]


class ZeroShot(PseudolabelEstimator):
    """``argmax_c <v, t_c>`` with the class prompts (no adaptation)."""

    def __init__(self, random_state: int = 0) -> None:
        self.random_state = random_state

    def _fit(self, task: VLMTask) -> None:
        self.model_ = PromptModel(task.text_features, "class_offset", logit_scale=task.logit_scale)


def _check_rounds(n_rounds) -> None:
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, numbers.Integral):
        raise TypeError(f"n_rounds must be an int, got {n_rounds!r}")
    if n_rounds < 1:
        raise ValueError(f"n_rounds must be >= 1, got {n_rounds}")


class _Trained(CAP):
    """CAP's machinery with the method-specific parts switched off (same schedule defaults)."""

    def __init__(
        self,
        n_main: int = 16,
        epochs: int = 50,
        iters_per_epoch: int = 50,
        batch_size: int = 32,
        lr: float = 0.01,
        prompt: str = "shared_lowrank",
        rank: int = 8,
        random_state: int = 0,
        verbose: int = 0,
        device: str | torch.device = "cpu",
    ) -> None:
        super().__init__(
            n_main=n_main,
            epochs=epochs,
            iters_per_epoch=iters_per_epoch,
            batch_size=batch_size,
            lr=lr,
            prompt=prompt,
            rank=rank,
            use_alignment=False,
            use_margin=False,
            random_state=random_state,
            verbose=verbose,
            device=device,
        )

    def _new_model(self, task: VLMTask) -> PromptModel:
        gen = torch.Generator().manual_seed(int(self.random_state))
        self._check_coop(task)
        return self._prompt_model(task, task.text_features, gen, {})

    def _run(self, task: VLMTask, main: dict, epochs: int, **cfg) -> list[dict]:
        candidates = cfg.pop("candidates", None)
        seen_mask = None
        if task.paradigm == "trzsl":
            seen_mask = np.zeros(task.n_classes, dtype=bool)
            seen_mask[np.asarray(task.seen)] = True
        history, self.main_samples_ = train_prompts(
            self.model_,
            task.X_unlabeled,
            main,
            self._engine_config(epochs=epochs, **cfg),
            augment=task.augment,
            X_labeled=task.X_labeled,
            y_labeled=task.y_labeled,
            allowed=allowed_classes(task),
            seen_mask=seen_mask,
            y_pool=task.y_unlabeled,
            candidates=candidates,
            seed=int(self.random_state),
        )
        return history

    def _pseudo(self, task: VLMTask, k: int, model: PromptModel | None = None) -> dict:
        allowed = allowed_classes(task)
        if model is None:
            proba = zero_shot_proba(task.X_unlabeled, task.text_features, task.logit_scale, allowed)
        else:
            proba = self.predict_proba(task.X_unlabeled) * allowed[None]
        return {c: v for c, v in topk_pseudolabels(proba, k).items() if allowed[c]}


class FPL(_Trained):
    """Fixed pseudolabels: top-``n_main`` zero-shot images per class, cross-entropy on them."""

    def _fit(self, task: VLMTask) -> None:
        self.model_ = self._new_model(task)
        self.history_ = self._run(
            task,
            self._pseudo(task, int(self.n_main)),
            self.epochs,
            unlabeled_branch=False,
            adapters=False,
            grow=False,
        )


class IFPL(_Trained):
    """Iterative FPL: ``n_rounds`` rounds of top-k re-pseudolabelling with the latest model."""

    def __init__(self, n_rounds: int = 10, **kwargs) -> None:
        super().__init__(**kwargs)
        self.n_rounds = n_rounds

    def _fit(self, task: VLMTask) -> None:
        _check_rounds(self.n_rounds)
        self.model_ = self._new_model(task)
        per = max(1, self.epochs // self.n_rounds)
        self.history_ = []
        for r in range(self.n_rounds):
            main = self._pseudo(task, int(self.n_main), None if r == 0 else self.model_)
            self.history_ += self._run(
                task, main, per, unlabeled_branch=False, adapters=False, grow=False, warmup_epochs=0
            )


class GRIP(_Trained):
    """GRIP: round ``i`` trains fresh prompts on the top ``i * N / (rounds * C)`` per class."""

    def __init__(self, n_rounds: int = 10, **kwargs) -> None:
        super().__init__(**kwargs)
        self.n_rounds = n_rounds

    def _fit(self, task: VLMTask) -> None:
        _check_rounds(self.n_rounds)
        per = max(1, self.epochs // self.n_rounds)
        n_cls = int(allowed_classes(task).sum())
        step = max(1, len(task.X_unlabeled) // (self.n_rounds * n_cls))
        self.model_ = None
        self.history_ = []
        for r in range(1, self.n_rounds + 1):
            main = self._pseudo(task, r * step, self.model_)
            self.model_ = self._new_model(task)  # prompts re-initialised every round
            self.history_ += self._run(
                task, main, per, unlabeled_branch=False, adapters=False, grow=False
            )


class FixMatchST(_Trained):
    """Self-training by confidence thresholding alone: CAP's unlabeled branch, one adapter."""

    def __init__(self, tau: float = 0.85, **kwargs) -> None:
        super().__init__(**kwargs)
        self.tau = tau

    def _fit(self, task: VLMTask) -> None:
        self.model_ = self._new_model(task)
        self.history_ = self._run(
            task, {}, self.epochs, main_branch=False, independent_adapters=False, grow=False
        )


class Oracle(_Trained):
    """The same prompts trained with the pool's true labels (upper bound)."""

    def _fit(self, task: VLMTask) -> None:
        if task.y_unlabeled is None:
            raise ValueError("Oracle needs task.y_unlabeled")
        y = np.asarray(task.y_unlabeled)
        main = {c: np.flatnonzero(y == c) for c in np.unique(y)}
        self.model_ = self._new_model(task)
        self.history_ = self._run(
            task, main, self.epochs, unlabeled_branch=False, adapters=False, grow=False
        )


class CPL(_Trained):
    """Candidate pseudolabel learning (Zhang et al., ICML 2024), feature-space version.

    Candidates of image ``x``: the smallest top set whose cumulative probability reaches ``q``
    (the ``q_percentile``-th percentile of the max-probabilities), intersected with the classes
    for which ``p_c(x)`` is above that class's ``class_quantile`` over the pool. Rows without
    candidates are dropped; the loss is ``-sum_{c in S} w_c log p_c`` with ``w`` proportional to
    ``p`` inside the set. Candidates are refreshed ``n_rounds`` times.
    """

    def __init__(
        self, n_rounds: int = 5, q_percentile: float = 60.0, class_quantile: float = 0.9, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.n_rounds, self.q_percentile, self.class_quantile = (
            n_rounds,
            q_percentile,
            class_quantile,
        )

    def candidates(self, proba: np.ndarray, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows kept, candidate weights (rows, C)) from pool probabilities."""
        p = proba * allowed[None]
        q = np.percentile(p.max(1), self.q_percentile)
        order = np.argsort(-p, axis=1)
        cum = np.cumsum(np.take_along_axis(p, order, 1), axis=1)
        n_in = (cum < q).sum(1) + 1
        intra = np.zeros_like(p, dtype=bool)
        ranks = np.argsort(order, axis=1)
        intra[ranks < n_in[:, None]] = True
        thr = np.quantile(p, self.class_quantile, axis=0)
        inter = p >= thr[None]
        cand = intra & inter & allowed[None]
        rows = np.flatnonzero(cand.any(1))
        w = np.where(cand[rows], p[rows], 0.0)
        w = w / w.sum(1, keepdims=True)
        return rows, w

    def _fit(self, task: VLMTask) -> None:
        allowed = allowed_classes(task)
        self.model_ = self._new_model(task)
        per = max(1, self.epochs // self.n_rounds)
        self.history_ = []
        proba = zero_shot_proba(task.X_unlabeled, task.text_features, task.logit_scale, allowed)
        for r in range(self.n_rounds):
            if r:
                proba = self.predict_proba(task.X_unlabeled)
            rows, w = self.candidates(proba, allowed)
            # rows enter the main branch under their top candidate; the loss uses all weights
            top = w.argmax(1)
            main = {int(c): rows[top == c] for c in np.flatnonzero(allowed)}
            weights = np.zeros((len(task.X_unlabeled), task.n_classes))
            weights[rows] = w
            order = np.concatenate([main[c] for c in main])
            self.history_ += self._run(
                task,
                main,
                per,
                unlabeled_branch=False,
                adapters=False,
                grow=False,
                loss="pll",
                candidates=(order, weights[order]),
            )
