"""mergekit's recipe schema for the methods this package shares with mergekit.

A recipe (a parsed YAML mapping) is read as mergekit reads it, for ``linear``,
``task_arithmetic`` and ``ties`` (mergekit's ``merge_methods``: ``linear.py`` and the generalized
task arithmetic of ``generalized_task_arithmetic.py``), plus ``pareto`` (this package):

- ``models[i].parameters`` (``weight``; ``density`` for ties) override the top-level
  ``parameters`` of the same name, which hold the method's settings as well: ``normalize``
  (mergekit's defaults: True for linear and ties, False for task arithmetic), ``lambda`` (a
  scale on the merged task vector; ``scale`` is this package's older name for it),
  ``int8_mask`` (mergekit's memory option for the sign mask: it changes no value and is
  accepted), and ``scope`` (``tensor``, mergekit's per-tensor trim, or ``model``, the TIES
  paper's whole-model trim; this package's);
- ``dtype`` is the dtype the merge computes in (every input tensor is cast to it, with a
  warning naming the tensors whose dtype differed, as mergekit casts them silently), and
  ``out_dtype`` the merged tensors' dtype (default ``dtype``; without either, the base's);
- ``tokenizer_source``: ``base`` (or absent) copies the base model's tokenizer files, a model
  path that model's; ``union`` and ``tokenizer:`` (vocabulary surgery) raise;
- ``linear`` needs no ``base_model`` (mergekit's linear recipes give none; the first model then
  supplies the config and tokenizer files); given one, it supplies those files and is not
  averaged in (mergekit would take it as an input needing a weight).

Anything mergekit would read differently raises a ``ValueError`` naming it: per-layer parameter
gradients (lists) and filters, ``slices``, ``modules``, ``chat_template``, unknown keys. mergekit
requires ``weight``; this package lets ``task_arithmetic`` and ``ties`` omit it (0.3 for every
model of task arithmetic, this package's Task Arithmetic scale; 1.0 for ties, the paper's
uniform TIES) but requires ``density`` for ties, whose mergekit default (1.0, no trimming) and
the paper's (0.2) differ too much to guess.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = ["METHODS", "Recipe", "cast_inputs", "merge_tensor", "parse_recipe"]

METHODS = ("linear", "task_arithmetic", "ties", "pareto")
_TOP = {"merge_method", "base_model", "models", "parameters", "dtype", "out_dtype",
        "tokenizer_source", "merger", "preference"}  # fmt: skip
_REFUSED_TOP = {
    "slices": "layer slices (frankenmerges) are not supported",
    "modules": "per-module definitions are not supported",
    "tokenizer": "tokenizer surgery (a tokenizer: block) is not supported",
    "chat_template": "chat templates are not written; set one on the merged tokenizer",
}
_MODEL_PARAMS = {"linear": {"weight"}, "task_arithmetic": {"weight"},
                 "ties": {"weight", "density"}, "pareto": set()}  # fmt: skip
_GLOBAL_PARAMS = {
    "linear": {"weight", "normalize"},
    "task_arithmetic": {"weight", "normalize", "lambda", "scale", "int8_mask"},
    "ties": {"weight", "density", "normalize", "lambda", "scale", "int8_mask", "scope"},
    "pareto": set(),
}
_NORMALIZE = {"linear": True, "task_arithmetic": False, "ties": True}


@dataclass(frozen=True)
class Recipe:
    """A checked recipe: per-model ``weights`` and ``densities`` resolved, method settings."""

    method: str
    base_model: str
    models: tuple[str, ...]
    weights: tuple[float, ...] | None
    densities: tuple[float, ...] | None
    normalize: bool
    lam: float
    scope: str
    dtype: torch.dtype | None
    out_dtype: torch.dtype | None
    tokenizer_source: str | None
    merger: str | None
    preference: tuple[float, ...] | None


def _unknown(given: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(given) - allowed)
    if extra:
        raise ValueError(f"{where}: unknown keys {extra} (allowed: {sorted(allowed)})")


def _scalar(value: Any, name: str, where: str, kind: type) -> Any:
    if isinstance(value, Sequence | Mapping) and not isinstance(value, str):
        raise ValueError(
            f"{where}: {name} is a list or mapping (a per-layer gradient or filter); only one "
            "value per model is supported"
        )
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where}: {name} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise ValueError(f"{where}: {name} must be a finite number, got {value!r}")
    return float(value)


def _dtype(value: Any, name: str) -> torch.dtype | None:
    if value is None:
        return None
    dt = getattr(torch, value, None) if isinstance(value, str) else None
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point:
        raise ValueError(f"config: {name} must name a floating torch dtype, got {value!r}")
    return dt


def parse_recipe(config: Any) -> Recipe:
    """Check a recipe mapping and resolve its parameters as mergekit does (module doc)."""
    if not isinstance(config, Mapping):
        raise ValueError("config: expected a mapping at the top level")
    for key, why in _REFUSED_TOP.items():
        if key in config:
            raise ValueError(f"config: {key!r}: {why}")
    _unknown(config, _TOP, "config")
    method = config.get("merge_method")
    if method not in METHODS:
        raise ValueError(f"config: merge_method must be one of {METHODS}, got {method!r}")
    if "models" not in config:
        raise ValueError("config: 'models' is required")
    if "base_model" not in config and method != "linear":
        raise ValueError(f"config: 'base_model' is required by {method}")
    models = config["models"]
    if not isinstance(models, Sequence) or isinstance(models, str) or not models:
        raise ValueError("config: 'models' must be a non-empty list of {model: PATH} entries")
    source = config.get("tokenizer_source")
    if source == "union":
        raise ValueError("config: tokenizer_source 'union' (a merged vocabulary) is not supported")
    named = [e.get("model") for e in models if isinstance(e, Mapping)]
    if source not in (None, "base", config.get("base_model"), *named):
        raise ValueError(f"config: tokenizer_source must be 'base' or a model path, got {source!r}")
    glob = dict(config.get("parameters") or {})
    _unknown(glob, _GLOBAL_PARAMS[method], f"config: {method} parameters")
    per_model = []
    for i, entry in enumerate(models):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("model"), str):
            raise ValueError(f"config: models[{i}] must be a mapping with a 'model' path")
        _unknown(entry, {"model", "parameters"}, f"config: models[{i}]")
        params = dict(entry.get("parameters") or {})
        _unknown(params, _MODEL_PARAMS[method], f"config: models[{i}].parameters")
        per_model.append(params)

    def resolve(name: str) -> tuple[float, ...] | None:
        vals = [p.get(name, glob.get(name)) for p in per_model]
        if all(v is None for v in vals):
            return None
        if any(v is None for v in vals):
            raise ValueError(f"config: give a {name!r} for every model (or a top-level one)")
        return tuple(_scalar(v, name, "config", float) for v in vals)

    weights = resolve("weight") if method != "pareto" else None
    if weights is not None:
        w = np.asarray(weights)
        if method == "linear" and (w.min() < 0 or w.sum() <= 0):
            raise ValueError(f"config: model weights must be >= 0, not all 0; got {list(w)}")
        if method == "task_arithmetic" and w.min() < 0:
            raise ValueError(f"config: model weights must be >= 0; got {list(w)}")
    densities = resolve("density") if method == "ties" else None
    if method == "ties":
        if densities is None:
            raise ValueError(
                "config: ties needs 'density' (per model or in parameters): mergekit's default "
                "is 1.0 (no trimming), the TIES paper's 0.2"
            )
        if any(not 0 < d <= 1 for d in densities):
            raise ValueError(f"config: density must be in (0, 1], got {list(densities)}")
    if "lambda" in glob and "scale" in glob:
        raise ValueError("config: give 'lambda' (mergekit) or 'scale' (its older name), not both")
    lam = _scalar(glob.get("lambda", glob.get("scale", 1.0)), "lambda", "config", float)
    normalize = _scalar(glob.get("normalize", _NORMALIZE.get(method, True)), "normalize",
                        "config", bool)  # fmt: skip
    if "int8_mask" in glob:
        _scalar(glob["int8_mask"], "int8_mask", "config", bool)
    scope = glob.get("scope", "tensor")
    if scope not in ("tensor", "model"):
        raise ValueError(f"config: scope must be 'tensor' or 'model', got {scope!r}")
    if scope == "model" and (
        len(set(densities or ())) > 1 or (weights is not None and len(set(weights)) > 1)
    ):
        raise ValueError("config: scope 'model' takes one density and equal weights")
    paths = [e["model"] for e in models]
    if method == "pareto":
        for key in ("merger", "preference"):
            if key not in config:
                raise ValueError(f"config: merge_method 'pareto' needs {key!r}")
    else:
        for key in ("merger", "preference"):
            if key in config:
                raise ValueError(f"config: {key!r} is only used by merge_method 'pareto'")
    dtype = _dtype(config.get("dtype"), "dtype")
    out_dtype = _dtype(config.get("out_dtype"), "out_dtype") or dtype
    pref = config.get("preference")
    # linear without a base_model (as mergekit's recipes): the first model supplies the files
    return Recipe(
        method=method, base_model=config.get("base_model", paths[0]), models=tuple(paths), weights=weights,
        densities=densities, normalize=normalize, lam=lam, scope=scope, dtype=dtype,
        out_dtype=out_dtype, tokenizer_source=None if source in (None, "base") else source,
        merger=config.get("merger"), preference=None if pref is None else tuple(pref),
    )  # fmt: skip


def _magnitude(delta: torch.Tensor, density: float) -> torch.Tensor:
    """mergekit's ``magnitude`` sparsifier: the ``max(1, int(density * n))`` largest entries."""
    if density >= 1:
        return delta
    k = max(1, int(density * delta.numel()))
    idx = delta.abs().reshape(-1).float().topk(k).indices
    mask = torch.zeros(delta.numel(), dtype=delta.dtype, device=delta.device)
    mask[idx] = 1
    return delta * mask.view_as(delta)


def merge_tensor(recipe: Recipe, base: torch.Tensor, tensors: Iterable[torch.Tensor]):
    """One merged tensor of ``recipe`` (not ``pareto``), computed as mergekit computes it.

    ``tensors``: the models' tensors of this name, in recipe order (an iterable: linear and task
    arithmetic read one at a time). For linear, ``base`` only gives the shape and dtype.

    ``linear``: ``sum_k w_k theta_k / sum_k w_k`` accumulated in float32 (without
    ``normalize`` the plain weighted sum). ``task_arithmetic`` and ``ties``: mergekit's
    generalized task arithmetic in the tensors' dtype: task vectors (ties: each trimmed to its
    model's density), times their weights; ties keeps the entries whose sign agrees with the
    sign of their sum (a zero sum counts as positive); ``normalize`` divides by the summed
    weights of the kept entries (1 where none); ``lambda`` scales; added to the base.
    """
    k = len(recipe.models)
    if recipe.method == "linear":  # one input at a time: ``tensors`` may be a generator
        w = torch.tensor(recipe.weights or (1.0,) * k, dtype=torch.float64)
        acc = torch.float64 if base.dtype == torch.float64 else torch.float32
        out = torch.zeros(base.shape, dtype=acc)
        for t, wk in zip(tensors, w, strict=True):
            out.add_(t.to(acc), alpha=float(wk))
        if recipe.normalize:
            out.div_(float(w.sum()))
        return out.to(base.dtype)
    # without weights: ties 1.0 each (the paper's uniform TIES), task arithmetic 0.3 each
    # (this package's Task Arithmetic scale); mergekit requires them
    weights = recipe.weights or ((1.0 if recipe.method == "ties" else 0.3),) * k
    if recipe.method == "task_arithmetic":  # no trim, no mask: one task vector at a time
        mixed = torch.zeros_like(base)
        for t, wk in zip(tensors, weights, strict=True):
            mixed.add_((t - base).mul_(wk))  # as mergekit: the weight in the tensor dtype
        total = sum(weights)
        if recipe.normalize and abs(total) >= 1e-8:
            mixed.div_(total)
        if recipe.lam != 1:
            mixed.mul_(recipe.lam)
        return mixed.add_(base).to(base.dtype)
    tensors = list(tensors)  # TIES elects signs over every model at once
    deltas = base.new_empty((k, *base.shape))
    for i, t in enumerate(tensors):
        d = t - base
        if recipe.method == "ties":
            d = _magnitude(d, recipe.densities[i])
        deltas[i] = d
    w = torch.tensor(weights, dtype=deltas.dtype).view(k, *([1] * base.ndim))
    deltas.mul_(w)
    majority = (deltas.sum(0) >= 0).to(deltas.dtype) * 2 - 1
    mask = deltas.sign() == majority
    mixed = (deltas * mask).sum(0)
    divisor = (w * mask).sum(0)
    divisor[divisor == 0] = 1
    if recipe.normalize:
        mixed = mixed / divisor
    if recipe.lam != 1:
        mixed = mixed * recipe.lam
    return (base + mixed).to(base.dtype)


def cast_inputs(
    name: str,
    tensors: Sequence[torch.Tensor],
    dtype: torch.dtype,
    seen: set,
    reference: torch.dtype | None = None,
    index: int = 0,
) -> list[torch.Tensor]:
    """Inputs cast to the compute dtype ``dtype``. An input whose dtype differs from the
    base's (``reference``: mixed checkpoints, which mergekit casts silently) is reported once
    per (input, dtype); casting every input to a requested ``dtype`` is not. ``index``: the
    model index of ``tensors[0]``."""
    out = []
    for i, t in enumerate(tensors, index):
        if t.is_floating_point() and reference is not None and t.dtype != reference:
            key = (i, t.dtype)
            if key not in seen:
                seen.add(key)
                warnings.warn(
                    f"models[{i}]: holds {t.dtype} tensors where base_model holds {reference} "
                    f"(first: {name!r}); cast to {dtype} for the merge, as mergekit casts them",
                    UserWarning,
                    stacklevel=3,
                )
        out.append(t.to(dtype) if t.is_floating_point() else t)
    return out
