"""Estimator plumbing shared by CAP and the baselines: parameters, validation, prediction."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Mapping

import numpy as np
import torch

from vlm_pseudolabel.data import PARADIGMS, VLMTask
from vlm_pseudolabel.model import PromptModel

__all__ = ["PseudolabelEstimator", "check_task"]


def _finite_2d(x: np.ndarray, name: str, dim: int | None = None) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 2 or a.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.number):
        raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf")
    if dim is not None and a.shape[1] != dim:
        raise ValueError(f"{name} has {a.shape[1]} features, the text embeddings have {dim}")
    return a.astype(np.float32)


def _labels(y, name: str, n: int | None, c: int) -> np.ndarray:
    """Integer class ids in ``[0, c)`` (``n`` of them when given); float arrays raise."""
    a = np.asarray(y)
    if a.ndim != 1 or (n is not None and len(a) != n):
        want = f"{n} labels" if n is not None else "a 1-D list of class ids"
        raise ValueError(f"{name} must hold {want}, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer class ids, got dtype {a.dtype}")
    if len(a) and (a.min() < 0 or a.max() >= c):
        raise ValueError(f"{name} must hold class ids in [0, {c}), got [{a.min()}, {a.max()}]")
    return a.astype(np.int64)


def check_task(task: VLMTask) -> VLMTask:
    """Validate a :class:`VLMTask` (shapes, finiteness, labels, paradigm fields)."""
    if not isinstance(task, VLMTask):
        raise TypeError(f"task must be a VLMTask, got {type(task).__name__}")
    t = _finite_2d(task.text_features, "text_features")
    c, d = t.shape
    if c < 2:
        raise ValueError("text_features must hold at least 2 classes")
    _finite_2d(task.X_unlabeled, "X_unlabeled", d)
    _finite_2d(task.X_test, "X_test", d)
    _labels(task.y_test, "y_test", len(task.X_test), c)
    if task.y_unlabeled is not None:
        _labels(task.y_unlabeled, "y_unlabeled", len(task.X_unlabeled), c)
    if task.paradigm not in PARADIGMS:
        raise ValueError(f"paradigm must be one of {PARADIGMS}, got {task.paradigm!r}")
    if task.paradigm in ("ssl", "trzsl"):
        if task.X_labeled is None or task.y_labeled is None:
            raise ValueError(f"paradigm {task.paradigm!r} needs X_labeled and y_labeled")
        _finite_2d(task.X_labeled, "X_labeled", d)
        yl = _labels(task.y_labeled, "y_labeled", len(task.X_labeled), c)
    if task.paradigm == "trzsl":
        if task.seen is None or task.unseen is None:
            raise ValueError("paradigm 'trzsl' needs seen and unseen class lists")
        seen = _labels(task.seen, "seen", None, c)
        unseen = _labels(task.unseen, "unseen", None, c)
        if len(seen) == 0 or len(unseen) == 0:
            raise ValueError("seen, unseen: TRZSL needs at least one class in each")
        both = sorted(set(seen.tolist()) & set(unseen.tolist()))
        if both:
            raise ValueError(f"seen, unseen: classes {both[:10]} are in both lists")
        off = sorted(set(yl.tolist()) - set(seen.tolist()))
        if off:
            raise ValueError(f"y_labeled: classes {off[:10]} are labeled but not in seen")
    s = task.logit_scale
    if isinstance(s, bool) or not isinstance(s, numbers.Real) or not (np.isfinite(s) and s > 0):
        raise ValueError(f"logit_scale must be a positive finite number, got {s!r}")
    names = task.class_names
    if isinstance(names, str) or len(names) != c or not all(isinstance(n, str) for n in names):
        raise ValueError(f"class_names must hold one str per class ({c}), got {names!r}")
    if not isinstance(task.descriptions, Mapping):
        raise TypeError(f"descriptions must be a dict class -> (n_c, d) array, got "
                        f"{type(task.descriptions).__name__}")  # fmt: skip
    for cls, desc in task.descriptions.items():
        if isinstance(cls, bool) or not isinstance(cls, numbers.Integral) or not 0 <= cls < c:
            raise ValueError(f"descriptions has a class {cls!r} outside [0, {c})")
        _finite_2d(desc, f"descriptions[{cls}]", d)
    if task.augment is not None and not callable(task.augment):
        raise TypeError("augment must be callable (indices, strength, rng) -> views, or None")
    # logits are s * cos(v, t) = s * v @ t: raw (unnormalised) embeddings would rescale every
    # logit and with it every confidence threshold
    arrays = {"text_features": t, "X_unlabeled": task.X_unlabeled, "X_test": task.X_test,
              "X_labeled": task.X_labeled} | {
        f"descriptions[{k}]": v for k, v in task.descriptions.items()}  # fmt: skip
    for name, a in arrays.items():
        if a is None:
            continue
        norms = np.linalg.norm(np.asarray(a, dtype=np.float64), axis=-1)
        if np.abs(norms - 1.0).max() > 1e-2:
            raise ValueError(
                f"{name} rows must be L2-normalised (norms in [{norms.min():.3g}, "
                f"{norms.max():.3g}]); divide each row by its norm"
            )
    return task


class PseudolabelEstimator:
    """scikit-learn-style base: ``get_params``/``set_params``, ``predict``, ``predict_proba``.

    Subclasses implement ``_fit(task)`` and set ``self.model_`` (a :class:`PromptModel`).
    """

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters."""
        names: list[str] = []
        for cls in type(self).__mro__:  # walk up through ``**kwargs`` constructors
            if "__init__" not in vars(cls):
                continue
            params = inspect.signature(cls.__init__).parameters.values()
            names += [
                p.name
                for p in params
                if p.name != "self" and p.kind == p.POSITIONAL_OR_KEYWORD and p.name not in names
            ]
            if not any(p.kind == p.VAR_KEYWORD for p in params):
                break
        return {n: getattr(self, n) for n in names}

    def set_params(self, **params) -> PseudolabelEstimator:
        """Set constructor parameters (validated at ``fit``)."""
        valid = self.get_params()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(f"unknown parameter {k!r} for {type(self).__name__}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def fit(self, task: VLMTask) -> PseudolabelEstimator:
        """Adapt to ``task`` (its unlabeled pool, and labeled data in SSL / TRZSL)."""
        check_task(task)
        self._check_params()
        torch.manual_seed(int(self.random_state))
        self.n_classes_ = task.n_classes
        self._fit(task)
        return self

    def _check_params(self) -> None:
        rs = getattr(self, "random_state", 0)
        if isinstance(rs, bool) or not isinstance(rs, int | np.integer):
            raise ValueError(f"random_state must be an int, got {rs!r}")

    def _fit(self, task: VLMTask) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _model(self) -> PromptModel:
        if not hasattr(self, "model_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")
        return self.model_

    @torch.no_grad()
    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities (n, C) of image embeddings ``X`` (adapters off)."""
        model = self._model()
        x = _finite_2d(X, "X", model.text.shape[1])
        model.eval()
        return model(torch.as_tensor(x, device=model.text.device)).softmax(-1).cpu().numpy()

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted classes (n,)."""
        return self.predict_proba(X).argmax(1)
