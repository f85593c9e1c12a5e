"""Per-dimension min-max normalisation to ``[-1, 1]`` (Diffuser's ``LimitsNormalizer``)."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["LimitsNormalizer"]


class LimitsNormalizer:
    """Map each feature from its data range to ``[-1, 1]``.

    Parameters
    ----------
    x : ndarray, shape (..., dim)
        Data used to find the per-feature min and max.
    """

    def __init__(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim < 1 or x.size == 0:
            raise ValueError("x must be a non-empty array of shape (..., dim)")
        if not np.isfinite(x).all():
            raise ValueError("x contains NaN or inf")
        flat = x.reshape(-1, x.shape[-1])
        self.mins = flat.min(0)
        self.maxs = flat.max(0)
        # Constant features would divide by zero; give them a unit range.
        self.scale = np.where(self.maxs > self.mins, self.maxs - self.mins, 1.0)

    def normalize(self, x: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        """``2 (x - min) / (max - min) - 1``, same type as the input (shape (..., dim))."""
        mins, scale = self._like(x)
        return 2.0 * (x - mins) / scale - 1.0

    def unnormalize(self, x: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        """Inverse of :meth:`normalize`."""
        mins, scale = self._like(x)
        return (x + 1.0) / 2.0 * scale + mins

    def _like(self, x: np.ndarray | torch.Tensor) -> tuple:
        dim = self.mins.shape[0]
        shape = tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
        if len(shape) < 1 or shape[-1] != dim:  # a size-1 last axis would broadcast silently
            raise ValueError(f"x must have shape (..., {dim}), got {shape}")
        if 0 in shape:
            raise ValueError(f"x is empty (shape {shape})")
        if isinstance(x, torch.Tensor):
            if not x.is_floating_point():
                raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
            if not bool(torch.isfinite(x).all()):
                raise ValueError("x contains NaN or inf")
            kw = {"dtype": x.dtype, "device": x.device}
            return torch.as_tensor(self.mins, **kw), torch.as_tensor(self.scale, **kw)
        arr = np.asarray(x)
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"x must hold real numbers, got dtype {arr.dtype}")
        if not np.isfinite(arr).all():
            raise ValueError("x contains NaN or inf")
        return self.mins, self.scale
