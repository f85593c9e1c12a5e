"""``pareto-merge CONFIG OUT``: merge checkpoints described by a mergekit-style YAML file.

The config names a base model, the fine-tuned models and a method, as mergekit's does::

    merge_method: task_arithmetic      # linear | task_arithmetic | ties | pareto
    base_model: ./base                 # an HF model directory (single or sharded safetensors)
    models:
      - model: ./math
        parameters: {weight: 0.4}      # task_arithmetic: theta_0 + sum_k weight_k tau_k
      - model: ./code
        parameters: {weight: 0.3}
    parameters: {}                     # method settings: ties takes density, scale, scope
    dtype: bfloat16                    # optional: the merged floating tensors' dtype

``merge_method: pareto`` takes ``merger:`` (a file written by :meth:`ParetoMerger.save`) and
``preference:`` (one weight per model, on the simplex). The output directory gets the merged
weights as sharded safetensors (``--max-shard-size``), every non-weight file of the base model
directory (``config.json``, tokenizer files, generation config) and the config itself, so that
``transformers``' ``from_pretrained(OUT)`` loads the merged model. Unknown keys anywhere in the
config raise an error naming them rather than being ignored.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from pareto_merge.baselines import task_arithmetic, ties_merge, weighted_task_arithmetic
from pareto_merge.io import LazyStateDict, load_state_dict, save_state_dict
from pareto_merge.pareto import ParetoMerger

__all__ = ["main", "merge_from_config"]

METHODS = ("linear", "task_arithmetic", "ties", "pareto")
_TOP = {"merge_method", "base_model", "models", "parameters", "dtype", "merger", "preference"}
_METHOD_PARAMS = {
    "linear": set(),
    "task_arithmetic": set(),
    "ties": {"density", "scale", "scope"},
    "pareto": set(),
}
_WEIGHT_FILES = re.compile(r"(\.safetensors|\.bin|\.pt|\.pth|\.ckpt|\.index\.json)$")


def _size(text: str | int) -> int:
    """Bytes from ``5GB`` / ``500MB`` / ``2000000`` (decimal units, as transformers)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?B)?\s*", str(text), flags=re.I)
    if not m:
        raise ValueError(f"max_shard_size: expected e.g. '5GB' or a byte count, got {text!r}")
    unit = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9}[(m.group(2) or "").upper()]
    return max(1, int(float(m.group(1)) * unit))


def _unknown(given: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(given) - allowed)
    if extra:
        raise ValueError(f"{where}: unknown keys {extra} (allowed: {sorted(allowed)})")


def _check_config(config: Any) -> dict[str, Any]:
    if not isinstance(config, Mapping):
        raise ValueError("config: expected a mapping at the top level")
    _unknown(config, _TOP, "config")
    method = config.get("merge_method")
    if method not in METHODS:
        raise ValueError(f"config: merge_method must be one of {METHODS}, got {method!r}")
    for key in ("base_model", "models"):
        if key not in config:
            raise ValueError(f"config: {key!r} is required")
    models = config["models"]
    if not isinstance(models, Sequence) or isinstance(models, str) or not models:
        raise ValueError("config: 'models' must be a non-empty list of {model: PATH} entries")
    for i, entry in enumerate(models):
        if not isinstance(entry, Mapping) or "model" not in entry:
            raise ValueError(f"config: models[{i}] must be a mapping with a 'model' path")
        _unknown(entry, {"model", "parameters"}, f"config: models[{i}]")
        _unknown(entry.get("parameters") or {}, {"weight"}, f"config: models[{i}].parameters")
    _unknown(config.get("parameters") or {}, _METHOD_PARAMS[method], f"config: {method} parameters")
    if method == "pareto":
        for key in ("merger", "preference"):
            if key not in config:
                raise ValueError(f"config: merge_method 'pareto' needs {key!r}")
    else:
        for key in ("merger", "preference"):
            if key in config:
                raise ValueError(f"config: {key!r} is only used by merge_method 'pareto'")
    return dict(config)


def _weights(models: Sequence[Mapping[str, Any]], method: str) -> list[float] | None:
    given = [(m.get("parameters") or {}).get("weight") for m in models]
    if all(w is None for w in given):
        return None
    if method in ("ties", "pareto"):
        raise ValueError(
            f"config: per-model 'weight' is not used by {method!r} (ties: parameters.scale; "
            "pareto: preference)"
        )
    if any(w is None for w in given):
        raise ValueError("config: give a 'weight' for every model or for none")
    w = [float(x) for x in given]
    if not all(np.isfinite(w)) or min(w) < 0 or sum(w) <= 0:
        raise ValueError(f"config: model weights must be finite, >= 0, not all 0; got {w}")
    return w


def _per_tensor(fn, base: Mapping, tuned: Sequence[Mapping]) -> dict[str, torch.Tensor]:
    """``fn`` applied to one tensor name at a time (exactly ``fn`` on the whole models when
    ``fn`` treats every tensor alone), holding the output and one tensor per input."""
    names = list(base)
    for i, t in enumerate(tuned):
        if set(t) != set(names):
            missing, extra = sorted(set(names) - set(t)), sorted(set(t) - set(names))
            raise ValueError(
                f"models[{i}]: tensors differ from base_model (missing {missing[:3]}, "
                f"extra {extra[:3]})"
            )
    out: dict[str, torch.Tensor] = {}
    for name in names:
        out.update(fn({name: base[name]}, [{name: t[name]} for t in tuned]))
    return out


def merge_from_config(
    config: Mapping[str, Any], root: str | os.PathLike = "."
) -> dict[str, torch.Tensor]:
    """The merged state_dict a config describes (relative paths resolved against ``root``).

    Every method but ``pareto`` (and TIES with ``scope: model``) reads the checkpoints one
    tensor at a time (:class:`~pareto_merge.io.LazyStateDict`), so memory holds the merged
    model plus one tensor per input model. ``linear``: the average of the fine-tuned models,
    weighted by ``weight`` (normalised; uniform without weights). ``task_arithmetic``: ``theta_0 + sum_k weight_k tau_k``
    (``weight`` defaults to 0.3, this package's Task Arithmetic scale). ``ties``:
    :func:`ties_merge` (``scope`` defaults to ``"tensor"``, as mergekit). ``pareto``:
    :meth:`ParetoMerger.merge` of a saved merger at ``preference``.
    """
    config = _check_config(config)
    method, models = config["merge_method"], config["models"]
    params = dict(config.get("parameters") or {})
    weights = _weights(models, method)

    def path(p: str) -> str:
        return p if os.path.isabs(p) else os.path.join(os.fspath(root), p)

    k = len(models)
    if method == "pareto" or (method == "ties" and params.get("scope", "tensor") == "model"):
        # the merger, and TIES's model-wide trim, need every tensor at once
        base = load_state_dict(path(config["base_model"]))
        tuned = [load_state_dict(path(m["model"])) for m in models]
        if method == "pareto":
            merger = ParetoMerger.load(path(config["merger"]), base, tuned)
            merged = merger.merge(config["preference"])
        else:
            merged = ties_merge(
                base, tuned, density=float(params.get("density", 0.2)),
                scale=float(params.get("scale", 1.0)), scope="model",
            )  # fmt: skip
    else:
        if method == "linear":
            w = np.ones(k) if weights is None else np.asarray(weights)

            def fn(b, ts):
                return weighted_task_arithmetic(b, ts, w / w.sum(), scale=1.0 / k)

        elif method == "task_arithmetic":
            if weights is None or len(set(weights)) == 1:
                scale = 0.3 if weights is None else weights[0]

                def fn(b, ts):
                    return task_arithmetic(b, ts, scale=scale)

            else:
                w = np.asarray(weights)

                def fn(b, ts):
                    return weighted_task_arithmetic(b, ts, w / w.sum(), scale=w.sum() / k)

        else:

            def fn(b, ts):
                return ties_merge(
                    b, ts, density=float(params.get("density", 0.2)),
                    scale=float(params.get("scale", 1.0)), scope="tensor",
                )  # fmt: skip

        # every method here acts on each tensor alone: read and merge one tensor at a time
        base = LazyStateDict(path(config["base_model"]))
        tuned = [LazyStateDict(path(m["model"])) for m in models]
        merged = _per_tensor(fn, base, tuned)
    dtype = config.get("dtype")
    if dtype is not None:
        if not isinstance(dtype, str) or not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise ValueError(f"config: dtype must name a torch dtype, got {dtype!r}")
        target = getattr(torch, dtype)
        merged = {n: v.to(target) if v.is_floating_point() else v for n, v in merged.items()}
    bad = [n for n, v in merged.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise ValueError(f"merged weights are not finite (overflow?) in {bad[:5]}")
    return merged


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pareto-merge`` command."""
    ap = argparse.ArgumentParser(prog="pareto-merge", description=__doc__.split("\n")[0])
    ap.add_argument("config", help="mergekit-style YAML (or JSON) file")
    ap.add_argument("out", help="output directory (an HF model directory)")
    ap.add_argument("--max-shard-size", default="5GB", help="largest safetensors shard")
    ap.add_argument("--overwrite", action="store_true", help="write into a non-empty OUT")
    a = ap.parse_args(argv)
    with open(a.config) as f:
        text = f.read()
    if a.config.endswith(".json"):
        config = json.loads(text)
    else:
        import yaml

        config = yaml.safe_load(text)
    root = os.path.dirname(os.path.abspath(a.config))
    if os.path.isdir(a.out) and os.listdir(a.out) and not a.overwrite:
        ap.error(f"out: {a.out!r} is not empty (pass --overwrite)")
    merged = merge_from_config(config, root)
    os.makedirs(a.out, exist_ok=True)
    base_dir = config["base_model"]
    base_dir = base_dir if os.path.isabs(base_dir) else os.path.join(root, base_dir)
    if os.path.isdir(base_dir):  # config, tokenizer, generation config: everything but weights
        for name in sorted(os.listdir(base_dir)):
            src = os.path.join(base_dir, name)
            if os.path.isfile(src) and not _WEIGHT_FILES.search(name):
                shutil.copy2(src, os.path.join(a.out, name))
    if config.get("dtype") and os.path.isfile(os.path.join(a.out, "config.json")):
        with open(os.path.join(a.out, "config.json")) as f:
            hf = json.load(f)
        hf["torch_dtype"] = hf["dtype"] = config["dtype"]
        with open(os.path.join(a.out, "config.json"), "w") as f:
            json.dump(hf, f, indent=2)
    meta = {"pareto_merge.merge_method": config["merge_method"]}
    if "preference" in config:
        meta["pareto_merge.preference"] = json.dumps(list(map(float, config["preference"])))
    save_state_dict(merged, a.out, metadata=meta, max_shard_bytes=_size(a.max_shard_size))
    with open(os.path.join(a.out, "pareto_merge_config.yml"), "w") as f:
        f.write(text)
    print(f"merged {len(config['models'])} models ({config['merge_method']}) into {a.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
