"""``pareto-merge CONFIG OUT``: merge checkpoints described by a mergekit-style YAML file.

The config names a base model, the fine-tuned models and a method, as mergekit's does::

    merge_method: task_arithmetic      # linear | task_arithmetic | ties | pareto
    base_model: ./base                 # an HF model directory (single or sharded safetensors)
    models:
      - model: ./math
        parameters: {weight: 0.4}      # task_arithmetic: theta_0 + sum_k weight_k tau_k
      - model: ./code
        parameters: {weight: 0.3}
    parameters: {}                     # method settings (ties: density, normalize, lambda, ...)
    dtype: bfloat16                    # optional: the dtype the merge computes in
    out_dtype: bfloat16                # optional: the merged tensors' dtype (default: dtype)

The schema is mergekit's for the methods both implement (:mod:`pareto_merge.recipes`): per-model
``weight`` and ``density``, ``normalize``, ``lambda``, ``int8_mask``, ``dtype``, ``out_dtype``,
``tokenizer_source``.
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

import torch

from pareto_merge.baselines import ties_merge
from pareto_merge.io import LazyStateDict, ShardWriter, load_state_dict
from pareto_merge.pareto import ParetoMerger
from pareto_merge.recipes import cast_inputs, merge_tensor, parse_recipe

__all__ = ["iter_merged", "main", "merge_from_config"]

_WEIGHT_FILES = re.compile(r"(\.safetensors|\.bin|\.pt|\.pth|\.ckpt|\.index\.json)$")
_TOKENIZER_FILES = re.compile(r"^(tokenizer.*|special_tokens_map\.json|vocab\..*|merges\.txt|"
                              r"added_tokens\.json|.*\.model)$")  # fmt: skip


def _size(text: str | int) -> int:
    """Bytes from ``5GB`` / ``500MB`` / ``2000000`` (decimal units, as transformers)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?B)?\s*", str(text), flags=re.I)
    if not m:
        raise ValueError(f"max_shard_size: expected e.g. '5GB' or a byte count, got {text!r}")
    unit = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9}[(m.group(2) or "").upper()]
    return max(1, int(float(m.group(1)) * unit))


def _check_input(i: int, name: str, t: torch.Tensor, base: torch.Tensor) -> None:
    if t.shape != base.shape:
        raise ValueError(f"models[{i}]: {name!r} has shape {tuple(t.shape)}, base_model has "
                         f"{tuple(base.shape)}")  # fmt: skip
    if t.is_floating_point() != base.is_floating_point():
        raise ValueError(f"models[{i}]: {name!r} has dtype {t.dtype}, base_model {base.dtype}")
    if t.is_floating_point() and not torch.isfinite(t).all():
        raise ValueError(f"models[{i}]: {name!r} contains NaN or inf")


def iter_merged(config: Mapping[str, Any], root: str | os.PathLike = "."):
    """``(name, merged tensor)`` pairs of a recipe, in the base model's order (see
    :func:`merge_from_config`); the tensor-by-tensor methods never hold the merged model."""
    r = parse_recipe(config)

    def path(p: str) -> str:
        return p if os.path.isabs(p) else os.path.join(os.fspath(root), p)

    out_dtype = r.out_dtype

    def finish(name: str, v: torch.Tensor) -> torch.Tensor:
        if v.is_floating_point():
            if out_dtype is not None:
                v = v.to(out_dtype)
            if not torch.isfinite(v).all():
                raise ValueError(f"merged weights are not finite (overflow?) in {[name]}")
        return v

    if r.method == "pareto" or (r.method == "ties" and r.scope == "model"):
        # the merger, and TIES's model-wide trim, need every tensor at once
        base = load_state_dict(path(r.base_model))
        tuned = [load_state_dict(path(m)) for m in r.models]
        floats = [v.dtype for v in base.values() if v.is_floating_point()]
        dtype = r.dtype or (floats[0] if floats else None)
        if dtype is not None:  # one compute dtype, as the tensor-by-tensor path
            seen: set = set()
            tuned = [dict(t) for t in tuned]
            for k in base:
                ref = base[k].dtype
                cast = cast_inputs(k, [t[k] for t in tuned], dtype, seen, reference=ref)
                for t, v in zip(tuned, cast, strict=True):
                    t[k] = v
            base = {k: v.to(dtype) if v.is_floating_point() else v for k, v in base.items()}
        if r.method == "pareto":
            merger = ParetoMerger.load(path(r.merger), base, tuned)
            merged = merger.merge(list(r.preference))
        else:
            if not r.normalize:
                raise ValueError("config: scope 'model' computes the paper's mean (normalize)")
            merged = ties_merge(base, tuned, density=r.densities[0], scale=r.lam, scope="model")
        for name, v in merged.items():
            yield name, finish(name, v)
        return
    base = LazyStateDict(path(r.base_model))
    tuned = [LazyStateDict(path(m)) for m in r.models]
    names = list(base)
    for i, t in enumerate(tuned):
        if set(t) != set(names):
            missing, extra = sorted(set(names) - set(t)), sorted(set(t) - set(names))
            raise ValueError(
                f"models[{i}]: tensors differ from base_model (missing {missing[:3]}, "
                f"extra {extra[:3]})"
            )
    seen = set()
    for name in names:  # one tensor name at a time
        b = base[name]
        if b.is_floating_point() and not torch.isfinite(b).all():
            raise ValueError(f"base_model: {name!r} contains NaN or inf")
        dtype = r.dtype or b.dtype if b.is_floating_point() else b.dtype

        def inputs(name=name, b=b, dtype=dtype):  # read, check and cast one model at a time
            for i, t in enumerate(tuned):
                x = t[name]
                _check_input(i, name, x, b)
                yield cast_inputs(name, [x], dtype, seen, reference=b.dtype, index=i)[0]

        if not b.is_floating_point():
            for _ in inputs():  # integer buffers: the base's, once every model's is checked
                pass
            yield name, b.clone()
            continue
        yield name, finish(name, merge_tensor(r, b.to(dtype), inputs()))


def merge_from_config(
    config: Mapping[str, Any], root: str | os.PathLike = "."
) -> dict[str, torch.Tensor]:
    """The merged state_dict a mergekit-style recipe describes (paths relative to ``root``).

    The recipe is read as mergekit reads it (:mod:`pareto_merge.recipes`) and every method but
    ``pareto`` (and TIES with ``scope: model``) computes as mergekit computes
    (:func:`~pareto_merge.recipes.merge_tensor`; equal to mergekit 0.1.5's output bit for bit
    on the recorded recipes), reading the checkpoints one tensor at a time
    (:class:`~pareto_merge.io.LazyStateDict`): linear and task arithmetic read one model's
    tensor at a time, TIES every model's tensor of one name. Inputs of another dtype than the
    base's are cast to the compute dtype (``dtype``, else the base's) with a warning. Integer
    buffers are copied from the base. ``pareto``: :meth:`ParetoMerger.merge` of a saved merger
    at ``preference``. The command line streams the same tensors into shards
    (:class:`~pareto_merge.io.ShardWriter`) instead of building this dict.
    """
    return dict(iter_merged(config, root))


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
    os.makedirs(a.out, exist_ok=True)
    base_dir = config.get("base_model") or config["models"][0]["model"]
    base_dir = base_dir if os.path.isabs(base_dir) else os.path.join(root, base_dir)
    if os.path.isdir(base_dir):  # config, tokenizer, generation config: everything but weights
        for name in sorted(os.listdir(base_dir)):
            src = os.path.join(base_dir, name)
            if os.path.isfile(src) and not _WEIGHT_FILES.search(name):
                shutil.copy2(src, os.path.join(a.out, name))
    source = config.get("tokenizer_source")
    if source not in (None, "base"):  # mergekit's tokenizer_source: that model's tokenizer
        src_dir = source if os.path.isabs(source) else os.path.join(root, source)
        for name in sorted(os.listdir(a.out)):
            if _TOKENIZER_FILES.match(name):
                os.remove(os.path.join(a.out, name))
        for name in sorted(os.listdir(src_dir)):
            if _TOKENIZER_FILES.match(name) and os.path.isfile(os.path.join(src_dir, name)):
                shutil.copy2(os.path.join(src_dir, name), os.path.join(a.out, name))
    out_dtype = config.get("out_dtype") or config.get("dtype")
    if out_dtype and os.path.isfile(os.path.join(a.out, "config.json")):
        with open(os.path.join(a.out, "config.json")) as f:
            hf = json.load(f)
        hf["torch_dtype"] = hf["dtype"] = out_dtype
        with open(os.path.join(a.out, "config.json"), "w") as f:
            json.dump(hf, f, indent=2)
    meta = {"pareto_merge.merge_method": config["merge_method"]}
    if "preference" in config:
        meta["pareto_merge.preference"] = json.dumps(list(map(float, config["preference"])))
    # merged tensors go to disk as they are made: the merged model is never held in memory
    writer = ShardWriter(a.out, _size(a.max_shard_size), metadata=meta)
    try:
        for name, tensor in iter_merged(config, root):
            writer.add(name, tensor)
    except BaseException:
        writer.abort()
        raise
    writer.close()
    with open(os.path.join(a.out, "pareto_merge_config.yml"), "w") as f:
        f.write(text)
    print(f"merged {len(config['models'])} models ({config['merge_method']}) into {a.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
