"""Realize a child model from the block library and a chosen architecture (spec §2.8 step 8)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nas_puzzle.bld import BlockLibrary, _check_parent_lib
from nas_puzzle.config import BlockConfig
from nas_puzzle.mip import Solution
from nas_puzzle.model import HeteroDecoder

__all__ = ["realize"]


def realize(
    parent: HeteroDecoder, lib: BlockLibrary, choice: Solution | Sequence[BlockConfig | str]
) -> HeteroDecoder:
    """Assemble the child: parent embeddings / final norm, library weights for every layer.

    Parameters
    ----------
    parent : HeteroDecoder
        Source of the non-block weights (not modified).
    lib : BlockLibrary
    choice : Solution or sequence of BlockConfig / block names
        One variant per layer.

    Returns
    -------
    HeteroDecoder
        A new model in eval mode.
    """
    _check_parent_lib(parent, lib)
    if isinstance(choice, Solution):
        blocks = list(choice.choices)
    elif isinstance(choice, str | BlockConfig) or not isinstance(choice, Sequence):
        raise TypeError(f"choice must be a Solution or one variant per layer, got {choice!r}")
    else:
        blocks = list(choice)
    if len(blocks) != parent.cfg.n_layers:
        raise ValueError(f"choice has {len(blocks)} layers, expected {parent.cfg.n_layers}")
    menu = set(lib.space.variants())
    for i, b in enumerate(blocks):
        if isinstance(b, str):
            try:
                b = blocks[i] = BlockConfig.from_name(b)
            except ValueError as e:
                raise ValueError(f"choice[{i}]: {e}") from e
        if not isinstance(b, BlockConfig):
            raise TypeError(f"choice[{i}] must be a BlockConfig or a name, got {b!r}")
        if b not in menu:
            raise ValueError(f"choice[{i}]={b.name!r} is not in the library's search space")
    ref = next(parent.parameters())
    with torch.device(ref.device):  # the child is built where the parent is
        child = HeteroDecoder(parent.cfg, blocks).to(ref.dtype)
    for i, b in enumerate(blocks):
        child.blocks[i].load_state_dict(lib.block(i, b).state_dict())
    child.embed.load_state_dict(parent.embed.state_dict())
    child.norm.load_state_dict(parent.norm.state_dict())
    if not parent.cfg.tie_embeddings:
        child.lm_head.load_state_dict(parent.lm_head.state_dict())
    return child.eval()
