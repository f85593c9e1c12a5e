"""Image sources the training loop takes: tensors, or lazy ones that decode on indexing.

A lazy source (:class:`~qat_dg.folders.ImageFiles`) decodes a batch when indexed with a slice
or an index tensor, like a tensor would return one; these helpers keep it lazy where the loop
only selects rows (splits, concatenation) and decode it in chunks where it evaluates.
"""

from __future__ import annotations

import torch


def is_lazy(x: object) -> bool:
    """An image source that decodes on indexing (``ImageFiles``), not a tensor."""
    return not isinstance(x, torch.Tensor) and hasattr(x, "subset")


def take(x, idx: torch.Tensor):
    """``x[idx]`` that keeps a lazy image source lazy."""
    return x.subset(idx) if is_lazy(x) else x[idx]


def concat_sources(parts: list):
    """``torch.cat`` for tensors, a joined lazy source for ``ImageFiles``."""
    return type(parts[0]).concat(parts) if is_lazy(parts[0]) else torch.cat(parts)


def batches(x, size: int):
    """``x`` in decoded chunks of ``size`` rows (one chunk for a tensor)."""
    if not is_lazy(x):
        yield x
        return
    for i in range(0, len(x), size):
        yield x[i : i + size]
