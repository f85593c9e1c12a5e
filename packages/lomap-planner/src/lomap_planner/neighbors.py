"""k-nearest-neighbour search over flattened trajectory windows: exact (torch, k-d tree) or
approximate (faiss IVF, optional extra ``faiss``)."""

from __future__ import annotations

import numbers

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
    backend : {"torch", "kdtree", "faiss", "auto"}, default="torch"
        ``torch``: exact, blocked matrix products with a running top-k (fast for the
        high-dimensional windows LoMAP queries).  ``kdtree``: exact, ``scipy.spatial.cKDTree``
        (cosine is searched as euclidean distance between unit vectors).  ``faiss``:
        approximate inverted-file index (``IndexIVFFlat``, ``nlist`` = 4·sqrt(n) cells,
        ``nprobe`` of them searched) from ``faiss-cpu``.  ``auto``: faiss when installed and
        ``n >= 100_000``, else torch.
    block_size : int, default=8192
        Rows of ``data`` scored per block by the torch backend (bounds memory).
    nprobe : int, default=16
        Inverted lists searched per query by the faiss backend (recall/speed trade-off).
    """

    def __init__(
        self,
        data: np.ndarray | torch.Tensor,
        metric: str = "cosine",
        backend: str = "torch",
        block_size: int = 8192,
        nprobe: int = 16,
    ) -> None:
        if metric not in ("cosine", "euclidean"):
            raise ValueError(f"metric must be 'cosine' or 'euclidean', got {metric!r}")
        if backend not in ("torch", "kdtree", "faiss", "auto"):
            raise ValueError(
                f"backend must be 'torch', 'kdtree', 'faiss' or 'auto', got {backend!r}"
            )
        for name, v in (("block_size", block_size), ("nprobe", nprobe)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        block_size, nprobe = int(block_size), int(nprobe)
        x = torch.as_tensor(np.asarray(data) if not isinstance(data, torch.Tensor) else data)
        if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
            raise ValueError(f"data must be a non-empty 2-D array (n, dim), got {tuple(x.shape)}")
        if not torch.isfinite(x).all():
            raise ValueError("data contains NaN or inf")
        _check_direction(x, metric, "data")
        self.data = x.float()
        if backend == "auto":
            backend = "faiss" if _has_faiss() and len(x) >= 100_000 else "torch"
        self.metric, self.backend, self.block_size = metric, backend, block_size
        self._keys = self._prep(self.data)
        self._tree = None
        self._faiss = None
        if backend == "kdtree":
            from scipy.spatial import cKDTree

            self._tree = cKDTree(self._keys.numpy())
        elif backend == "faiss":
            self._faiss = _build_ivf(self._keys.numpy(), metric, nprobe)

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
        q = torch.as_tensor(queries, device="cpu").float()  # the index lives on the CPU
        if q.ndim != 2 or q.shape[1] != self.data.shape[1]:
            raise ValueError(
                f"queries must have shape (b, {self.data.shape[1]}), got {tuple(q.shape)}"
            )
        if not torch.isfinite(q).all():
            raise ValueError("queries contain NaN or inf")
        _check_direction(q, self.metric, "queries")
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= len(self):
            raise ValueError(f"k must be an int in [1, {len(self)}], got {k!r}")  # 2.5 reached topk
        k = int(k)
        q = self._prep(q)
        if self._faiss is not None:
            d, i = self._faiss.search(np.ascontiguousarray(q.numpy(), dtype=np.float32), k)
            d, i = torch.from_numpy(d).float(), torch.from_numpy(i).long()
            if self.metric == "cosine":
                d = 1.0 - d  # inner products of unit vectors
            else:
                d = d.clamp_min(0).sqrt()
            return d, i
        if self._tree is not None:
            d, i = self._tree.query(q.numpy(), k=k)
            d, i = np.asarray(d).reshape(len(q), k), np.asarray(i).reshape(len(q), k)
            d = torch.from_numpy(d).float()
            if self.metric == "cosine":
                d = d**2 / 2  # |u - v|^2 = 2 - 2 cos for unit vectors
            return d, torch.from_numpy(i).long()
        best_d = torch.full((len(q), 0), float("inf"), device=q.device)
        best_i = torch.zeros((len(q), 0), dtype=torch.long, device=q.device)
        for s in range(0, len(self), self.block_size):
            keys = self._keys[s : s + self.block_size]
            if self.metric == "cosine":
                d = 1.0 - q @ keys.T
            else:
                d = torch.cdist(q, keys)
            d = torch.cat([best_d, d], 1)
            i = torch.cat(
                [best_i, torch.arange(s, s + len(keys), device=q.device).expand(len(q), -1)], 1
            )
            best_d, pos = d.topk(min(k, d.shape[1]), dim=1, largest=False)
            best_i = i.gather(1, pos)
        return best_d, best_i


def _check_direction(x: torch.Tensor, metric: str, name: str) -> None:
    """A zero vector has no direction: its cosine neighbours would be arbitrary."""
    if metric == "cosine":
        zero = torch.nonzero(x.norm(dim=1) <= 1e-12).flatten()
        if len(zero):
            raise ValueError(
                f"{name}: rows {zero[:5].tolist()} are zero vectors, whose cosine similarity is "
                "undefined (every neighbour would tie); use metric='euclidean' or drop them"
            )


def _has_faiss() -> bool:
    import importlib.util

    return importlib.util.find_spec("faiss") is not None


def _build_ivf(keys: np.ndarray, metric: str, nprobe: int):
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ImportError(
            "backend='faiss' needs faiss-cpu: pip install 'lomap-planner[faiss]'"
        ) from exc
    n, d = keys.shape
    nlist = max(1, min(n // 39, int(4 * np.sqrt(n))))  # faiss wants >= 39 points per centroid
    kind = faiss.METRIC_INNER_PRODUCT if metric == "cosine" else faiss.METRIC_L2
    quantizer = faiss.IndexFlatIP(d) if metric == "cosine" else faiss.IndexFlatL2(d)
    index = faiss.IndexIVFFlat(quantizer, d, nlist, kind)
    index.cp.max_points_per_centroid = 32  # k-means on a subsample: seconds, not minutes, at 1M
    keys = np.ascontiguousarray(keys, dtype=np.float32)
    index.train(keys)
    index.add(keys)
    index.nprobe = min(nprobe, nlist)
    return index
