"""Blockwise Local Distillation and the block library (paper §3, §3.1).

Every child unit is trained *independently* to reproduce its parent block, fed with the
parent's hidden state entering that layer (no gradient crosses blocks). Decoupled BLD trains
[a_j, f_parent] and [a_parent, f_k] units and composes [a_j, f_k] afterwards; coupled BLD trains
every [a_j, f_k] pair. Because units share no parameters, summing their losses and taking one
AdamW step is exactly equivalent to training them separately, which lets one parent forward pass
feed all units of all layers.
"""

from __future__ import annotations

import copy
import json
import numbers
import pickle
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from nas_puzzle.config import (
    AttentionConfig,
    BlockConfig,
    DecoderConfig,
    FFNConfig,
    _check_positive_float,
    _check_positive_int,
    _check_seed,
)
from nas_puzzle.data import as_tokens, sample_batch
from nas_puzzle.initializers import init_attention, init_ffn
from nas_puzzle.losses import normalized_mse_loss
from nas_puzzle.model import (
    AttentionSubblock,
    DecoderBlock,
    FFNSubblock,
    HeteroDecoder,
    check_tokens,
)
from nas_puzzle.search_space import SearchSpace
from nas_puzzle.train import cosine_lr

__all__ = ["BlockLibrary", "build_library", "count_units", "parent_activations"]


@torch.no_grad()
def parent_activations(parent: HeteroDecoder, tokens: Tensor) -> tuple[list[Tensor], list[Tensor]]:
    """Hidden states entering each parent layer and each parent FFN.

    Parameters
    ----------
    tokens : Tensor, shape (B, T)

    Returns
    -------
    inputs : list of L tensors (B, T, d)
        ``inputs[i]`` enters layer i; ``inputs[L]`` is the last layer's output (L + 1 entries).
    mids : list of L tensors (B, T, d)
        Residual stream after layer i's attention (the FFN input).
    """
    if not isinstance(parent, HeteroDecoder):
        raise TypeError(f"parent must be a HeteroDecoder, got {type(parent).__name__}")
    check_tokens(tokens, parent.cfg)
    tokens = tokens.to(parent.embed.weight.device)  # CPU text windows, a parent on a GPU
    h = parent.embed(tokens)
    t = tokens.shape[1]
    cos, sin = parent.rope_cos[:t], parent.rope_sin[:t]
    inputs, mids = [h], []
    for blk in parent.blocks:
        h, mid, _ = blk(h, cos, sin, return_mid=True)
        inputs.append(h)
        mids.append(mid)
    return inputs, mids


def _device_of(state: dict) -> torch.device:
    """The device of a stored state_dict's tensors (CPU for one without tensors)."""
    t = next((v for v in state.values() if isinstance(v, Tensor)), None)
    return t.device if t is not None else torch.device("cpu")


def _built(cls: type, cfg: DecoderConfig, variant: object, state: dict) -> nn.Module:
    """A module holding ``state`` on its device and in its dtype (a float64 library stays so)."""
    t = next((v for v in state.values() if isinstance(v, Tensor)), None)
    with torch.device(_device_of(state)):
        mod = cls(cfg, variant)
    if t is not None:
        mod = mod.to(t.dtype)
    mod.load_state_dict(state)
    return mod


def _key(layer: int, kind: str, variant: object) -> str:
    return f"{layer}|{kind}|{variant.name}"


_MODES = ("decoupled", "coupled", "init_only")
_MODULES = {"attention": (AttentionSubblock, AttentionConfig.from_name),
            "ffn": (FFNSubblock, FFNConfig.from_name),
            "block": (DecoderBlock, BlockConfig.from_name)}  # fmt: skip


def _check_entries(entries: object, cfg: DecoderConfig, space: SearchSpace) -> dict:
    """Every subblock of every layer present, and every state the shape its module loads.

    A library read from disk or built by hand would otherwise fail only when a child is
    assembled, with a size-mismatch deep in ``load_state_dict``, or never (a missing layer).
    """
    if not isinstance(entries, dict):
        raise TypeError(f"entries must be a dict, got {type(entries).__name__}")
    pools = {"attention": space.attention, "ffn": space.ffn, "block": space.variants()}
    want = {_key(i, k, v) for i in range(cfg.n_layers) for k in ("attention", "ffn")
            for v in pools[k]}  # fmt: skip
    missing = sorted(want - set(entries), key=str)
    if missing:
        raise ValueError(f"entries is missing {len(missing)} subblocks, e.g. {missing[:3]}")
    for key, state in entries.items():
        parts = key.split("|") if isinstance(key, str) else []
        if len(parts) != 3 or parts[1] not in _MODULES or not parts[0].isdigit():
            raise ValueError(f"entries has a key {key!r} that is not 'layer|kind|variant'")
        cls, parse = _MODULES[parts[1]]
        try:
            variant = parse(parts[2])
        except ValueError as e:
            raise ValueError(f"entries[{key!r}]: {e}") from e
        if int(parts[0]) >= cfg.n_layers or variant not in pools[parts[1]]:
            raise ValueError(f"entries[{key!r}] is outside the library's layers or search space")
        if not isinstance(state, dict) or not all(isinstance(t, Tensor) for t in state.values()):
            raise TypeError(f"entries[{key!r}] must be a state_dict of tensors")
        with torch.device("meta"):
            ref = cls(cfg, variant).state_dict()
        got = {k: tuple(t.shape) for k, t in state.items()}
        if got != {k: tuple(t.shape) for k, t in ref.items()}:
            raise ValueError(f"entries[{key!r}] does not fit a {parts[2]} {parts[1]} of this cfg")
        if not all(t.is_floating_point() and bool(torch.isfinite(t).all()) for t in state.values()):
            raise ValueError(f"entries[{key!r}] has non-float or non-finite weights")
    return dict(entries)


@dataclass
class BlockLibrary:
    """Trained subblocks (decoupled) and/or blocks (coupled) for every layer.

    Attributes
    ----------
    cfg : DecoderConfig
    space : SearchSpace
    entries : dict
        ``"layer|attention|gqa2"`` / ``"layer|ffn|ffn64"`` / ``"layer|block|gqa2/ffn64"`` ->
        state_dict of the subblock / block.
    training_log : list of dict
        One record per trained unit: layer, kind, variant, init_loss, final_loss, steps.
    mode : str
        How the library was built.
    """

    cfg: DecoderConfig
    space: SearchSpace
    entries: dict[str, dict[str, Tensor]] = field(default_factory=dict)
    training_log: list[dict] = field(default_factory=list)
    mode: str = "decoupled"

    def __post_init__(self) -> None:
        if not isinstance(self.cfg, DecoderConfig):
            raise TypeError(f"cfg must be a DecoderConfig, got {type(self.cfg).__name__}")
        if not isinstance(self.space, SearchSpace):
            raise TypeError(f"space must be a SearchSpace, got {type(self.space).__name__}")
        if self.space.cfg != self.cfg:
            raise ValueError("space.cfg does not match cfg")
        if not isinstance(self.mode, str) or self.mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {self.mode!r}")
        if not isinstance(self.training_log, list):
            raise TypeError(f"training_log must be a list, got {type(self.training_log).__name__}")
        self.entries = _check_entries(self.entries, self.cfg, self.space)

    def attention(self, layer: int, variant: AttentionConfig) -> AttentionSubblock:
        """A fresh attention subblock module with the library weights."""
        self._check(layer, variant)
        return _built(
            AttentionSubblock, self.cfg, variant, self.entries[_key(layer, "attention", variant)]
        )

    def ffn(self, layer: int, variant: FFNConfig) -> FFNSubblock:
        """A fresh FFN subblock module with the library weights."""
        self._check(layer, variant)
        return _built(FFNSubblock, self.cfg, variant, self.entries[_key(layer, "ffn", variant)])

    def block(self, layer: int, variant: BlockConfig | str) -> DecoderBlock:
        """The block for ``variant`` in ``layer``: a coupled entry if present, else composed."""
        if isinstance(variant, str):
            variant = BlockConfig.from_name(variant)
        if not isinstance(variant, BlockConfig):
            raise TypeError(f"variant must be a BlockConfig, got {type(variant).__name__}")
        key = _key(layer, "block", variant)
        if key in self.entries:
            self._check(layer, variant.attention)
            return _built(DecoderBlock, self.cfg, variant, self.entries[key]).eval()
        attn, ffn = self.attention(layer, variant.attention), self.ffn(layer, variant.ffn)
        with torch.device("meta"):  # a shell: both subblocks are replaced below
            blk = DecoderBlock(self.cfg, variant)
        blk.attn, blk.ffn = attn, ffn
        return blk.eval()

    def _check(self, layer: int, variant: object) -> None:
        if isinstance(layer, bool) or not isinstance(layer, numbers.Integral):
            raise TypeError(f"layer must be an int, got {type(layer).__name__}")
        if not 0 <= layer < self.cfg.n_layers:
            raise ValueError(f"layer must be in [0, {self.cfg.n_layers}), got {layer}")
        pool = self.space.attention if isinstance(variant, AttentionConfig) else self.space.ffn
        if variant not in pool:
            raise ValueError(f"variant {variant.name!r} is not in the library's search space")

    def save(self, path: str | Path) -> None:
        """Write tensors to ``path`` (torch.save) and a JSON index next to it."""
        path = Path(path)
        torch.save(self.entries, path)
        index = {
            "cfg": self.cfg.to_dict(),
            "attention": [a.name for a in self.space.attention],
            "ffn": [f.name for f in self.space.ffn],
            "mode": self.mode,
            "training_log": self.training_log,
        }
        path.with_suffix(path.suffix + ".json").write_text(json.dumps(index, indent=1))

    @classmethod
    def load(cls, path: str | Path) -> BlockLibrary:
        """Read a library written by :meth:`save`."""
        path = Path(path)
        index_path = path.with_suffix(path.suffix + ".json")
        try:
            index = json.loads(index_path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{index_path} is not a BlockLibrary index: {e}") from e
        keys = {"cfg", "attention", "ffn", "mode", "training_log"}
        if not isinstance(index, dict) or set(index) != keys:
            raise ValueError(f"{index_path} must hold exactly the keys {sorted(keys)}")
        try:
            cfg = DecoderConfig(**index["cfg"])
            space = SearchSpace.from_names(cfg, index["attention"], index["ffn"])
        except TypeError as e:
            raise ValueError(f"{index_path}: {e}") from e
        try:
            entries = torch.load(path, weights_only=True)
        except (RuntimeError, EOFError, pickle.UnpicklingError, OSError) as e:
            raise ValueError(f"{path} is not a torch.save file of a BlockLibrary: {e}") from e
        return cls(cfg, space, entries, index["training_log"], index["mode"])


def _check_parent_lib(parent: HeteroDecoder, lib: BlockLibrary) -> None:
    """Raise unless ``parent`` is a HeteroDecoder and ``lib`` a BlockLibrary built for its cfg."""
    if not isinstance(parent, HeteroDecoder):
        raise TypeError(f"parent must be a HeteroDecoder, got {type(parent).__name__}")
    if not isinstance(lib, BlockLibrary):
        raise TypeError(f"lib must be a BlockLibrary, got {type(lib).__name__}")
    if lib.cfg != parent.cfg:
        raise ValueError("lib.cfg does not match parent.cfg")


class _Unit(nn.Module):
    """A trainable unit: either a subblock (decoupled) or a whole block (coupled)."""

    def __init__(self, layer: int, kind: str, variant: object, module: nn.Module) -> None:
        super().__init__()
        self.layer, self.kind, self.variant, self.module = layer, kind, variant, module

    def forward(self, x: Tensor, mid: Tensor, parent_block: DecoderBlock, cos, sin) -> Tensor:
        if self.kind == "ffn":  # parent attention frozen -> its output is the parent mid
            delta = self.module(mid)
            return mid if delta is None else mid + delta
        if self.kind == "attention":  # parent FFN frozen (no grads to it)
            delta, _ = self.module(x, cos, sin)
            m = x if delta is None else x + delta
            d2 = parent_block.ffn(m)
            return m if d2 is None else m + d2
        out, _ = self.module(x, cos, sin)
        return out


def _make_units(
    parent: HeteroDecoder, space: SearchSpace, mode: str, calib_mids: list[Tensor]
) -> list[_Unit]:
    units = []
    for i, pblk in enumerate(parent.blocks):
        for kind, v in space.trained_units(mode):
            if kind == "attention":
                mod = init_attention(pblk.attn, v)
            elif kind == "ffn":
                mod = init_ffn(pblk.ffn, v, calib_mids[i])
            else:
                ref = next(parent.parameters())
                with torch.device(ref.device):
                    mod = DecoderBlock(parent.cfg, v).to(ref.dtype)
                mod.attn = init_attention(pblk.attn, v.attention)
                mod.ffn = init_ffn(pblk.ffn, v.ffn, calib_mids[i])
            units.append(_Unit(i, kind, v, mod))
    return units


def build_library(
    parent: HeteroDecoder,
    space: SearchSpace,
    data: str | Tensor,
    mode: str = "decoupled",
    steps: int = 300,
    lr: float = 1e-3,
    batch_size: int = 16,
    seq_len: int | None = None,
    loss: str = "normalized_mse",
    reduction: str = "batch",
    target: str = "block",
    calib_windows: int = 16,
    seed: int = 0,
    verbose: bool = False,
    select: str = "trained",
    distributed: bool = False,
) -> BlockLibrary:
    """Initialize every variant from the parent and train it with BLD.

    Parameters
    ----------
    parent : HeteroDecoder
        The trained parent (not modified).
    space : SearchSpace
        Menu of variants; must match ``parent.cfg``.
    data : str or Tensor (n,)
        Distillation text/tokens.
    mode : {"decoupled", "coupled", "init_only"}
        ``"init_only"`` keeps the training-free initializations (the no-BLD ablation).
    steps, lr, batch_size : int, float, int
        AdamW steps (cosine schedule), learning rate, windows per step.
    seq_len : int, optional
        Window length (default ``cfg.max_seq_len``).
    loss : {"normalized_mse", "mse"}
    reduction : {"batch", "per_token"}
        Passed to :func:`~nas_puzzle.losses.normalized_mse_loss`.
    target : {"block", "delta"}
        Match the full layer output (residual included, paper) or only the residual update.
    calib_windows : int
        Windows used for Channel Contribution.
    seed : int
    verbose : bool
    select : {"trained", "best_of_init"}, default="trained"
        ``"trained"`` (paper): every unit keeps its trained weights; a unit whose held-out loss
        did not fall below its initial loss is reported with a ``UserWarning``.
        ``"best_of_init"``: keep whichever of the initial or trained weights scores better on
        the held-out batch (not in the paper; hides units that never trained).
    distributed : bool, default=False
        Split the units over the ranks of an initialised ``torch.distributed`` process group
        (``torchrun --nproc-per-node N``; gloo on CPU, NCCL on GPU): each rank trains units
        ``i % world_size == rank`` and the libraries are gathered, so every rank returns the
        library a single process would build (units share no parameters and every rank draws
        the same batches).

    Returns
    -------
    BlockLibrary
    """
    if not isinstance(parent, HeteroDecoder):
        raise TypeError(f"parent must be a HeteroDecoder, got {type(parent).__name__}")
    if not isinstance(space, SearchSpace):
        raise TypeError(f"space must be a SearchSpace, got {type(space).__name__}")
    if space.cfg != parent.cfg:
        raise ValueError("space.cfg does not match parent.cfg")
    if any(b != parent.cfg.parent_block for b in parent.block_configs):
        raise ValueError("parent must be homogeneous (every layer = cfg.parent_block)")
    if select not in ("trained", "best_of_init"):
        raise ValueError(f"select must be 'trained' or 'best_of_init', got {select!r}")
    for name, flag in (("verbose", verbose), ("distributed", distributed)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    rank, world = 0, 1
    if distributed:
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise ValueError(
                "distributed=True needs an initialised torch.distributed process group"
            )
        rank, world = dist.get_rank(), dist.get_world_size()
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"mode must be 'decoupled', 'coupled' or 'init_only', got {mode!r}")
    if loss not in ("normalized_mse", "mse"):
        raise ValueError(f"loss must be 'normalized_mse' or 'mse', got {loss!r}")
    if reduction not in ("batch", "per_token"):
        raise ValueError(f"reduction must be 'batch' or 'per_token', got {reduction!r}")
    if target not in ("block", "delta"):
        raise ValueError(f"target must be 'block' or 'delta', got {target!r}")
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    steps = int(steps)
    lr = _check_positive_float(lr, "lr")
    batch_size = _check_positive_int(batch_size, "batch_size")
    calib_windows = _check_positive_int(calib_windows, "calib_windows")
    seed = _check_seed(seed)
    cfg = parent.cfg
    seq_len = cfg.max_seq_len if seq_len is None else _check_positive_int(seq_len, "seq_len")
    if not 0 < seq_len <= cfg.max_seq_len:
        raise ValueError(f"seq_len must be in (0, {cfg.max_seq_len}], got {seq_len}")
    toks = as_tokens(data)
    if int(toks.min()) < 0 or int(toks.max()) >= cfg.vocab_size:
        raise ValueError(f"data token ids must lie in [0, {cfg.vocab_size}) (the vocabulary)")
    if toks.numel() <= seq_len:
        raise ValueError(f"data has {toks.numel()} tokens; seq_len={seq_len} windows need more")
    parent = copy.deepcopy(parent).eval().requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)

    calib = sample_batch(toks, calib_windows, seq_len, gen)[:, :-1]
    _, calib_mids = parent_activations(parent, calib)
    all_units = _make_units(parent, space, mode, calib_mids)
    mine = [i for i in range(len(all_units)) if i % world == rank]
    units = [all_units[i] for i in mine]
    held = sample_batch(toks, batch_size, seq_len, gen)[:, :-1]
    cos, sin = parent.rope_cos[:seq_len], parent.rope_sin[:seq_len]

    def unit_losses(tokens: Tensor) -> list[Tensor]:
        ins, mids = parent_activations(parent, tokens)
        out = []
        for u in units:
            x, target_out = ins[u.layer], ins[u.layer + 1]
            pred = u(x, mids[u.layer], parent.blocks[u.layer], cos, sin)
            if target == "delta":
                pred, target_out = pred - x, target_out - x
            if loss == "normalized_mse":
                out.append(normalized_mse_loss(pred, target_out, reduction=reduction))
            else:
                out.append((pred - target_out).pow(2).mean())
        return out

    with torch.no_grad():
        init_losses = [float(v) for v in unit_losses(held)] if units else []
    params = [p for u in units for p in u.module.parameters()]
    if params and steps > 0 and mode != "init_only":
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
        for u in units:
            u.module.train()
        for step in tqdm(range(steps), disable=not verbose, desc="BLD"):
            for group in opt.param_groups:
                group["lr"] = cosine_lr(step, steps, lr, warmup=min(20, steps // 10))
            batch = sample_batch(toks, batch_size, seq_len, gen)[:, :-1]
            total = torch.stack(unit_losses(batch)).sum()
            opt.zero_grad(set_to_none=True)
            total.backward()
            opt.step()
        for u in units:
            u.module.eval()
    trained = mode != "init_only" and steps > 0
    with torch.no_grad():
        final_losses = [float(v) for v in unit_losses(held)] if units else []

    entries: dict[str, dict[str, Tensor]] = {}
    log: list[dict] = []
    for i, pblk in enumerate(parent.blocks):
        # every subblock variant gets an entry: trained units overwrite their init below
        for a in space.attention:
            entries[_key(i, "attention", a)] = _clone(init_attention(pblk.attn, a))
        for f in space.ffn:
            entries[_key(i, "ffn", f)] = _clone(init_ffn(pblk.ffn, f, calib_mids[i]))
    records = []
    for i, u, l0, l1 in zip(mine, units, init_losses, final_losses, strict=True):
        keep = select == "trained" or l1 <= l0
        records.append(
            (
                i,
                _key(u.layer, u.kind, u.variant),
                _clone(u.module) if keep else None,
                {
                    "layer": u.layer,
                    "kind": u.kind,
                    "variant": u.variant.name,
                    "init_loss": l0,
                    "final_loss": l1 if keep else l0,
                    "trained_loss": l1,
                    "steps": steps if trained else 0,
                },
            )
        )
    if world > 1:
        import torch.distributed as dist

        gathered: list = [None] * world
        dist.all_gather_object(gathered, records)
        records = sorted((r for part in gathered for r in part), key=lambda r: r[0])
    for _, key, state, rec in records:
        if state is not None:
            entries[key] = state
        log.append(rec)
        if trained and not rec["trained_loss"] < rec["init_loss"]:
            warnings.warn(
                f"BLD unit layer {rec['layer']} {rec['kind']} {rec['variant']} did not improve: "
                f"held-out loss {rec['init_loss']:.4g} -> {rec['trained_loss']:.4g}"
                + (
                    " (kept the trained weights)"
                    if select == "trained"
                    else " (kept the initial weights)"
                ),
                UserWarning,
                stacklevel=2,
            )
    return BlockLibrary(cfg, space, entries, log, mode)


def _clone(module: nn.Module) -> dict[str, Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def count_units(space: SearchSpace, mode: str) -> int:
    """Number of units BLD trains for ``mode`` over all layers."""
    if not isinstance(space, SearchSpace):
        raise TypeError(f"space must be a SearchSpace, got {type(space).__name__}")
    return len(space.trained_units(mode)) * space.cfg.n_layers
