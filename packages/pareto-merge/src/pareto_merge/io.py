"""safetensors I/O: the format a mergekit or Hugging Face user hands over."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence

import torch

__all__ = ["LazyStateDict", "ShardWriter", "load_state_dict", "load_state_dicts", "save_state_dict"]

# safetensors stores tensors sorted by name; the original order travels in the header
_ORDER_KEY = "pareto_merge.key_order"


_INDEX = "model.safetensors.index.json"


def _load_file(path: str) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    keys = _file_keys(path)  # checks the header, gives the saved order
    try:
        tensors = load_file(path, device="cpu")
    except Exception as e:  # safetensors raises its own error types on damaged data
        raise ValueError(f"path: {path!r} is not a readable safetensors file ({e})") from e
    return {k: tensors[k] for k in keys}


def _file_keys(path: str) -> list[str]:
    """Tensor names of one safetensors file, in the saved order when the header has it."""
    from safetensors import safe_open

    try:
        with safe_open(path, framework="pt") as f:
            keys = list(f.keys())
            order = json.loads((f.metadata() or {}).get(_ORDER_KEY, "[]"))
    except Exception as e:  # safetensors raises its own error types on a damaged header
        raise ValueError(f"path: {path!r} is not a readable safetensors file ({e})") from e
    return order if sorted(order) == sorted(keys) else keys


def _index_files(index_path: str) -> dict[str, str]:
    """Tensor name -> shard path of a ``model.safetensors.index.json``, in index order, with
    every shard present and holding exactly its indexed tensors (headers only are read)."""
    folder = os.path.dirname(index_path)
    try:
        with open(index_path) as f:
            weight_map = json.load(f)["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"path: {index_path!r} is not a safetensors index ({e})") from e
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError(f"path: {index_path!r} has an empty weight_map")
    held: dict[str, str] = {}
    for shard in dict.fromkeys(weight_map.values()):
        shard_path = os.path.join(folder, shard)
        if not os.path.isfile(shard_path):
            raise ValueError(f"path: shard {shard!r} named in {_INDEX} is missing")
        for k in _file_keys(shard_path):
            if k in held:
                raise ValueError(f"path: tensor {k!r} is stored in more than one shard")
            held[k] = shard_path
    missing = sorted(set(weight_map) - set(held))
    extra = sorted(set(held) - set(weight_map))
    if missing or extra:
        raise ValueError(
            f"path: shards disagree with {_INDEX}: missing {missing[:5]}, not indexed {extra[:5]}"
        )
    return {k: held[k] for k in weight_map}  # index order (HF writes it in module order)


def _load_sharded(index_path: str) -> dict[str, torch.Tensor]:
    """Every shard named by a Hugging Face ``model.safetensors.index.json``, checked complete."""
    files = _index_files(index_path)
    out: dict[str, torch.Tensor] = {}
    for shard in dict.fromkeys(files.values()):
        out.update(_load_file(shard))
    return {k: out[k] for k in files}


def load_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Read one ``.safetensors`` file, or a Hugging Face model directory, on CPU.

    Parameters
    ----------
    path : str or PathLike
        A ``.safetensors`` file, a sharded checkpoint's ``model.safetensors.index.json``, or a
        directory holding ``model.safetensors`` or that index (the layout of every model above
        ~5 GB). Every shard the index names must be present and hold exactly its tensors.

    Returns
    -------
    dict
        Tensor name -> tensor, in the order it was saved in by :func:`save_state_dict`
        (otherwise safetensors' sorted order, or the index's order for a sharded checkpoint).
    """
    path = _resolve(path)
    if path.endswith(".index.json"):
        return _load_sharded(path)
    return _load_file(path)


def _resolve(path: str | os.PathLike) -> str:
    path = os.fspath(path)
    if os.path.isdir(path):
        single = os.path.join(path, "model.safetensors")
        index = os.path.join(path, _INDEX)
        if os.path.isfile(single) and os.path.isfile(index):
            raise ValueError(f"path: {path!r} holds both model.safetensors and {_INDEX}")
        path = index if os.path.isfile(index) else single
    if not os.path.isfile(path):
        raise ValueError(f"path: no safetensors file at {path!r}")
    return path


class LazyStateDict(Mapping):
    """A checkpoint read one tensor at a time: a read-only mapping of name -> tensor.

    Same inputs and checks as :func:`load_state_dict` (a ``.safetensors`` file, a sharded
    index, or a Hugging Face directory; every indexed shard present and holding exactly its
    tensors), but only the names are read up front: ``sd[name]`` reads that tensor from its
    file. Merging a model tensor by tensor then holds the output plus one tensor per input
    model, instead of every input model whole.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        path = _resolve(path)
        self.path = path
        if path.endswith(".index.json"):
            self._files = _index_files(path)
        else:
            self._files = dict.fromkeys(_file_keys(path), path)

    def __getitem__(self, key: str) -> torch.Tensor:
        from safetensors import safe_open

        file = self._files[key]
        try:
            with safe_open(file, framework="pt") as f:
                return f.get_tensor(key)
        except Exception as e:
            raise ValueError(f"path: cannot read {key!r} from {file!r} ({e})") from e

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


def load_state_dicts(paths: Sequence[str | os.PathLike]) -> list[dict[str, torch.Tensor]]:
    """:func:`load_state_dict` for each path (e.g. the fine-tuned models to merge)."""
    if isinstance(paths, str | os.PathLike) or len(paths) == 0:
        raise ValueError("paths: expected a non-empty sequence of paths")
    return [load_state_dict(p) for p in paths]


def save_state_dict(
    state_dict: Mapping[str, torch.Tensor],
    path: str | os.PathLike,
    metadata: Mapping[str, str] | None = None,
    max_shard_bytes: int | None = None,
) -> None:
    """Write a state_dict as ``.safetensors`` (tensors made contiguous; shared storage copied).

    With ``max_shard_bytes``, ``path`` is a directory and the tensors go to Hugging Face shards
    ``model-0000i-of-0000n.safetensors`` with a ``model.safetensors.index.json``, which
    :func:`load_state_dict` and ``transformers``' ``from_pretrained`` read back.

    Parameters
    ----------
    state_dict : mapping of str to Tensor
    path : str or PathLike
        Output file (a directory when ``max_shard_bytes`` is given).
    max_shard_bytes : int, optional
        Largest shard size; a tensor bigger than it gets a shard of its own.
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
    if max_shard_bytes is not None and (
        isinstance(max_shard_bytes, bool)
        or not isinstance(max_shard_bytes, int)
        or max_shard_bytes < 1
    ):
        raise ValueError(f"max_shard_bytes: expected a positive int, got {max_shard_bytes!r}")

    def copy(k: str) -> torch.Tensor:  # contiguous, with no storage shared with other entries
        return state_dict[k].detach().contiguous().clone()

    meta = {**(metadata or {}), _ORDER_KEY: json.dumps(list(state_dict))}
    if max_shard_bytes is None:
        os.makedirs(os.path.dirname(os.path.abspath(os.fspath(path))), exist_ok=True)
        save_file({k: copy(k) for k in state_dict}, os.fspath(path), metadata=meta)
        return
    shards: list[list[str]] = [[]]
    size = 0
    for k, v in state_dict.items():
        nbytes = v.numel() * v.element_size()
        if shards[-1] and size + nbytes > max_shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(k)
        size += nbytes
    folder = os.fspath(path)
    os.makedirs(folder, exist_ok=True)
    n = len(shards)
    weight_map = {}
    for i, keys in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{n:05d}.safetensors"
        shard_meta = {**meta, _ORDER_KEY: json.dumps(keys), "format": "pt"}
        # copies one shard at a time: the peak is the state_dict plus one shard
        save_file({k: copy(k) for k in keys}, os.path.join(folder, name), metadata=shard_meta)
        weight_map.update(dict.fromkeys(keys, name))
    total = sum(v.numel() * v.element_size() for v in state_dict.values())
    with open(os.path.join(folder, _INDEX), "w") as f:
        json.dump(
            {"metadata": {"total_size": total, **(metadata or {})}, "weight_map": weight_map},
            f,
            indent=2,
        )


class ShardWriter:
    """Hugging Face safetensors shards written as tensors arrive (one shard in memory at most).

    ``add(name, tensor)`` buffers a tensor and writes the buffered shard once the next tensor
    would make it larger than ``max_shard_bytes``; ``close()`` writes the last one, names the
    shards ``model-0000i-of-0000n.safetensors`` and writes ``model.safetensors.index.json``, the
    layout :func:`save_state_dict` writes for the same tensors in the same order. A merge that
    hands its tensors over one by one never holds the merged model.

    Parameters
    ----------
    folder : str or PathLike
        Output directory (created).
    max_shard_bytes : int
    metadata : mapping of str to str, optional
        Stored in every shard header and the index (as :func:`save_state_dict`).
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        max_shard_bytes: int,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if (
            isinstance(max_shard_bytes, bool)
            or not isinstance(max_shard_bytes, int)
            or (max_shard_bytes < 1)
        ):
            raise ValueError(f"max_shard_bytes: expected a positive int, got {max_shard_bytes!r}")
        self.folder, self.limit = os.fspath(folder), max_shard_bytes
        self.metadata = dict(metadata or {})
        os.makedirs(self.folder, exist_ok=True)
        self._buffer: dict[str, torch.Tensor] = {}
        self._size = 0
        self._shards: list[list[str]] = []
        self._total = 0

    def _part(self, i: int) -> str:
        return os.path.join(self.folder, f".pareto-merge-part-{i:05d}.safetensors")

    def _flush(self) -> None:
        from safetensors.torch import save_file

        if not self._buffer:
            return
        keys = list(self._buffer)
        meta = {**self.metadata, _ORDER_KEY: json.dumps(keys), "format": "pt"}
        save_file(self._buffer, self._part(len(self._shards)), metadata=meta)
        self._shards.append(keys)
        self._buffer, self._size = {}, 0

    def add(self, name: str, tensor: torch.Tensor) -> None:
        """Buffer ``tensor`` under ``name`` (a contiguous copy), writing a full shard first."""
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"tensor: {name!r} is not a tensor")
        nbytes = tensor.numel() * tensor.element_size()
        if self._buffer and self._size + nbytes > self.limit:
            self._flush()
        self._buffer[name] = tensor.detach().contiguous().clone()
        self._size += nbytes
        self._total += nbytes

    def close(self) -> None:
        """Write the last shard, give every shard its final name, write the index."""
        self._flush()
        if not self._shards:
            raise ValueError("state_dict: no tensor was written")
        n, weight_map = len(self._shards), {}
        for i, keys in enumerate(self._shards):
            final = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
            os.replace(self._part(i), os.path.join(self.folder, final))
            weight_map.update(dict.fromkeys(keys, final))
        with open(os.path.join(self.folder, _INDEX), "w") as f:
            json.dump({"metadata": {"total_size": self._total, **self.metadata},
                       "weight_map": weight_map}, f, indent=2)  # fmt: skip

    def abort(self) -> None:
        """Remove the shards written so far (a merge that failed half-way)."""
        for i in range(len(self._shards)):
            if os.path.exists(self._part(i)):
                os.remove(self._part(i))
        self._buffer, self._shards = {}, []
