"""Replace-1-block scores (paper §4.2, App. F.1.4).

For each layer i and each composed variant j, the parent with *only* layer i replaced is run on
validation windows; the mean next-token KL(p_parent || q) (default, best in the paper's
ablation), LM loss and top-1 accuracy are recorded. A candidate architecture's estimated quality
is the sum of its per-layer scores, so no candidate is ever run during the search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm.auto import tqdm

from nas_puzzle.bld import BlockLibrary, _check_parent_lib, parent_activations
from nas_puzzle.config import BlockConfig, _check_positive_int
from nas_puzzle.data import as_tokens, eval_windows
from nas_puzzle.losses import kl_to_parent
from nas_puzzle.model import HeteroDecoder

__all__ = ["METRICS", "ScoreTable", "replace_one_block"]

METRICS = ("kl", "lm_loss", "top1_acc")


@dataclass
class ScoreTable:
    """Per-layer, per-variant scores.

    Attributes
    ----------
    variants : list of BlockConfig
        Column order (K variants).
    values : dict of str -> ndarray, shape (L, K)
        Metric name -> scores.
    """

    variants: list[BlockConfig]
    values: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.variants, (str, bytes)) or not isinstance(self.variants, Iterable):
            raise TypeError(f"variants must be a sequence of BlockConfig, got {self.variants!r}")
        # names are accepted for convenience; they parse exactly as BlockConfig.from_name does
        variants = [BlockConfig.from_name(v) if isinstance(v, str) else v for v in self.variants]
        if not variants:
            raise ValueError("variants is empty")
        for v in variants:
            if not isinstance(v, BlockConfig):
                raise TypeError(f"variants must hold BlockConfig (or names), got {v!r}")
        if len(set(variants)) != len(variants):
            raise ValueError("variants has duplicate entries")
        if not isinstance(self.values, Mapping):
            raise TypeError(f"values must be a dict of metric -> array, got {self.values!r}")
        values, n_layers = {}, None
        for name, arr in self.values.items():
            if not isinstance(name, str):
                raise TypeError(f"values keys must be metric names, got {name!r}")
            # a copy: the caller's dict and arrays are left alone
            arr = np.array(arr, dtype=float)
            if arr.ndim != 2 or arr.shape[1] != len(variants) or arr.shape[0] == 0:
                raise ValueError(
                    f"values[{name!r}] must have shape (n_layers, {len(variants)}), got {arr.shape}"
                )
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"values[{name!r}] contains NaN or inf")
            if n_layers is not None and arr.shape[0] != n_layers:
                raise ValueError(
                    f"values[{name!r}] has {arr.shape[0]} layers, the other metrics {n_layers}"
                )
            n_layers = arr.shape[0]
            values[name] = arr
        self.variants, self.values = variants, values

    @property
    def n_layers(self) -> int:
        """Number of layers L."""
        if not self.values:
            raise ValueError("the table holds no metrics, so it has no layer count")
        return next(iter(self.values.values())).shape[0]

    def __getitem__(self, metric: str) -> np.ndarray:
        if metric not in self.values:
            raise ValueError(f"unknown metric {metric!r}; table has {sorted(self.values)}")
        return self.values[metric]


@torch.no_grad()
def replace_one_block(
    parent: HeteroDecoder,
    lib: BlockLibrary,
    val_data: str | Tensor,
    metrics: Sequence[str] = ("kl", "lm_loss"),
    variants: Sequence[BlockConfig] | None = None,
    seq_len: int | None = None,
    max_windows: int = 32,
    verbose: bool = False,
) -> ScoreTable:
    """Score every (layer, variant) by replacing only that layer in the parent.

    Parameters
    ----------
    parent : HeteroDecoder
    lib : BlockLibrary
    val_data : str or Tensor (n,)
        Held-out text/tokens.
    metrics : sequence of {"kl", "lm_loss", "top1_acc"}
    variants : sequence of BlockConfig, optional
        Default ``lib.space.variants()``.
    seq_len : int, optional
        Window length (default ``cfg.max_seq_len``).
    max_windows : int
        Validation windows used (all processed as one batch per variant).
    verbose : bool

    Returns
    -------
    ScoreTable
        ``values[m]`` of shape (L, K).
    """
    _check_parent_lib(parent, lib)
    if isinstance(metrics, str) or not isinstance(metrics, Sequence):
        raise TypeError(f"metrics must be a sequence of metric names, got {metrics!r}")
    metrics = tuple(metrics)
    bad = [m for m in metrics if m not in METRICS]
    if bad or not metrics or len(set(metrics)) != len(metrics):
        raise ValueError(f"metrics must be distinct names from {METRICS}, got {metrics}")
    variants = lib.space.variants() if variants is None else _menu_subset(variants, lib)
    if not isinstance(verbose, bool):
        raise TypeError(f"verbose must be a bool, got {type(verbose).__name__}")
    cfg = parent.cfg
    seq_len = cfg.max_seq_len if seq_len is None else _check_positive_int(seq_len, "seq_len")
    if not 0 < seq_len <= cfg.max_seq_len:
        raise ValueError(f"seq_len must be in (0, {cfg.max_seq_len}], got {seq_len}")
    toks = as_tokens(val_data, "val_data")
    if int(toks.min()) < 0 or int(toks.max()) >= cfg.vocab_size:
        raise ValueError(f"val_data token ids must lie in [0, {cfg.vocab_size}) (the vocabulary)")
    if toks.numel() <= seq_len:
        raise ValueError(f"val_data has {toks.numel()} tokens; one window needs seq_len + 1")
    windows = eval_windows(toks, seq_len, max_windows)
    tokens, targets = windows[:, :-1], windows[:, 1:]
    was_training = parent.training
    try:
        return _score_layers(parent.eval(), lib, variants, metrics, tokens, targets, verbose)
    finally:
        parent.train(was_training)  # the caller's module keeps its mode


def _menu_subset(variants: object, lib: BlockLibrary) -> list[BlockConfig]:
    """``variants`` as BlockConfigs of the library's menu, each once."""
    if isinstance(variants, str | BlockConfig) or not isinstance(variants, Sequence):
        raise TypeError(f"variants must be a sequence of BlockConfig or names, got {variants!r}")
    menu, out = set(lib.space.variants()), []
    for v in variants:
        b = BlockConfig.from_name(v) if isinstance(v, str) else v
        if not isinstance(b, BlockConfig) or b not in menu:
            raise ValueError(f"variants: {v!r} is not a variant of the library's search space")
        out.append(b)
    if not out or len(set(out)) != len(out):
        raise ValueError("variants must be non-empty and without duplicates")
    return out


def _score_layers(parent, lib, variants, metrics, tokens, targets, verbose) -> ScoreTable:
    cfg, seq_len = parent.cfg, tokens.shape[1]
    inputs, _ = parent_activations(parent, tokens)
    parent_logits = parent.logits(inputs[-1])
    cos, sin = parent.rope_cos[:seq_len], parent.rope_sin[:seq_len]
    L, K = cfg.n_layers, len(variants)
    out = {m: np.zeros((L, K)) for m in metrics}
    bar = tqdm(total=L * K, disable=not verbose, desc="replace-1-block")
    for i in range(L):
        for j, v in enumerate(variants):
            blk = lib.block(i, v).to(inputs[i].device, inputs[i].dtype)  # a CPU library is fine
            h, _ = blk(inputs[i], cos, sin)
            h, _ = parent.run_blocks(h, i + 1)
            logits = parent.logits(h)
            if "kl" in out:
                out["kl"][i, j] = float(kl_to_parent(logits, parent_logits))
            if "lm_loss" in out:
                out["lm_loss"][i, j] = float(
                    F.cross_entropy(logits.flatten(0, 1), targets.flatten())
                )
            if "top1_acc" in out:
                out["top1_acc"][i, j] = float((logits.argmax(-1) == targets).float().mean())
            bar.update()
    bar.close()
    return ScoreTable(variants, out)
