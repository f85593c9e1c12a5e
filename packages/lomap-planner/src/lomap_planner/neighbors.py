"""Exact k-nearest-neighbour search over flattened trajectory windows."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["NeighborIndex"]


class NeighborIndex:
    """Exact kNN index over a fixed set of vectors.

    Parameters
    ----------
    data : ndarray or Tensor, shape (n, dim)
        Reference vectors (e.g. flattened, normalised trajectory windows).
    metric : {"cosine", "euclidean"}, default="cosine"
        LoMAP uses cosine similarity (official configs ``faiss_similarity: cosine``).
    backend : {"torch", "kdtree"}, default="torch"
        ``torch``: blocked matrix products with a running top-k (fast for the
        high-dimensional windows LoMAP queries).  ``kdtree``: ``scipy.spatial.cKDTree``
        (cosine is searched as euclidean distance between unit vectors).
    block_size : int, default=8192
        Rows of ``data`` scored per block by the torch backend (bounds memory).
    """

    def __init__(
        self,
        data: np.ndarray | torch.Tensor,
        metric: str = "cosine",
        backend: str = "torch",
        block_size: int = 8192,
    ) -> None:
        if metric not in ("cosine", "euclidean"):
            raise ValueError(f"metric must be 'cosine' or 'euclidean', got {metric!r}")
        if backend not in ("torch", "kdtree"):
            raise ValueError(f"backend must be 'torch' or 'kdtree', got {backend!r}")
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        x = torch.as_tensor(np.asarray(data) if not isinstance(data, torch.Tensor) else data)
        if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
            raise ValueError(f"data must be a non-empty 2-D array (n, dim), got {tuple(x.shape)}")
        if not torch.isfinite(x).all():
            raise ValueError("data contains NaN or inf")
        self.data = x.float()
        self.metric, self.backend, self.block_size = metric, backend, block_size
        self._keys = self._prep(self.data)
        self._tree = None
        if backend == "kdtree":
            from scipy.spatial import cKDTree

            self._tree = cKDTree(self._keys.numpy())

    def __len__(self) -> int:
        return self.data.shape[0]

    def _prep(self, x: torch.Tensor) -> torch.Tensor:
        if self.metric == "cosine":
            return x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)
        return x

    @torch.no_grad()
    def search(
        self, queries: np.ndarray | torch.Tensor, k: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Find the ``k`` nearest reference vectors of each query.

        Parameters
        ----------
        queries : ndarray or Tensor, shape (b, dim)
        k : int

        Returns
        -------
        dist : Tensor, shape (b, k)
            Cosine distance ``1 - cos`` or euclidean distance, ascending.
        idx : Tensor of int64, shape (b, k)
        """
        q = torch.as_tensor(queries).float().cpu()
        if q.ndim != 2 or q.shape[1] != self.data.shape[1]:
            raise ValueError(
                f"queries must have shape (b, {self.data.shape[1]}), got {tuple(q.shape)}"
            )
        if not torch.isfinite(q).all():
            raise ValueError("queries contain NaN or inf")
        if not (1 <= k <= len(self)):
            raise ValueError(f"k must be in [1, {len(self)}], got {k}")
        q = self._prep(q)
        if self._tree is not None:
            d, i = self._tree.query(q.numpy(), k=k)
            d, i = np.asarray(d).reshape(len(q), k), np.asarray(i).reshape(len(q), k)
            d = torch.from_numpy(d).float()
            if self.metric == "cosine":
                d = d**2 / 2  # |u - v|^2 = 2 - 2 cos for unit vectors
            return d, torch.from_numpy(i).long()
        best_d = torch.full((len(q), 0), float("inf"))
        best_i = torch.zeros((len(q), 0), dtype=torch.long)
        for s in range(0, len(self), self.block_size):
            keys = self._keys[s : s + self.block_size]
            if self.metric == "cosine":
                d = 1.0 - q @ keys.T
            else:
                d = torch.cdist(q, keys)
            d = torch.cat([best_d, d], 1)
            i = torch.cat([best_i, torch.arange(s, s + len(keys)).expand(len(q), -1)], 1)
            best_d, pos = d.topk(min(k, d.shape[1]), dim=1, largest=False)
            best_i = i.gather(1, pos)
        return best_d, best_i
