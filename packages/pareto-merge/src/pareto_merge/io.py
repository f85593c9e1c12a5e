"""safetensors I/O: the format a mergekit or Hugging Face user hands over."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

import torch

__all__ = ["load_state_dict", "load_state_dicts", "save_state_dict"]

# safetensors stores tensors sorted by name; the original order travels in the header
_ORDER_KEY = "pareto_merge.key_order"


def load_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Read one ``.safetensors`` file (or a directory holding ``model.safetensors``) on CPU.

    Parameters
    ----------
    path : str or PathLike
        File, or a Hugging Face model directory.

    Returns
    -------
    dict
        Tensor name -> tensor, in the order it was saved in by :func:`save_state_dict`
        (otherwise safetensors' sorted order).
    """
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "model.safetensors")
    if not os.path.isfile(path):
        raise ValueError(f"path: no safetensors file at {path!r}")
    tensors = load_file(path, device="cpu")
    with safe_open(path, framework="pt") as f:
        order = json.loads((f.metadata() or {}).get(_ORDER_KEY, "[]"))
    if sorted(order) == sorted(tensors):
        return {k: tensors[k] for k in order}
    return dict(tensors)


def load_state_dicts(paths: Sequence[str | os.PathLike]) -> list[dict[str, torch.Tensor]]:
    """:func:`load_state_dict` for each path (e.g. the fine-tuned models to merge)."""
    if isinstance(paths, str | os.PathLike) or len(paths) == 0:
        raise ValueError("paths: expected a non-empty sequence of paths")
    return [load_state_dict(p) for p in paths]


def save_state_dict(
    state_dict: Mapping[str, torch.Tensor],
    path: str | os.PathLike,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write a state_dict as ``.safetensors`` (tensors made contiguous; shared storage copied).

    Parameters
    ----------
    state_dict : mapping of str to Tensor
    path : str or PathLike
        Output file.
    metadata : mapping of str to str, optional
        Stored in the file header (e.g. the preference a merged model was made for), with the
        key order, which :func:`load_state_dict` restores.
    """
    from safetensors.torch import save_file

    if not isinstance(state_dict, Mapping) or not state_dict:
        raise ValueError("state_dict: expected a non-empty mapping of tensors")
    bad = [k for k, v in state_dict.items() if not isinstance(v, torch.Tensor)]
    if bad:
        raise TypeError(f"state_dict: entries are not tensors: {bad[:3]}")
    if metadata is not None and not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise TypeError("metadata: keys and values must be str")
    tensors = {k: v.detach().contiguous().clone() for k, v in state_dict.items()}
    meta = {**(metadata or {}), _ORDER_KEY: json.dumps(list(state_dict))}
    save_file(tensors, os.fspath(path), metadata=meta)
