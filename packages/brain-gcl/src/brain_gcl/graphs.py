"""Brain graphs from connectivity: per-subject top-density edges and topological node features."""

from __future__ import annotations

import numbers
import warnings

import numpy as np

__all__ = [
    "BrainGraphs",
    "build_graphs",
    "check_fc",
    "connectivity_from_vectors",
    "topological_node_features",
]

TOPO_FEATURES = ("degree", "strength", "clustering", "eigenvector", "pagerank", "closeness",
                 "betweenness", "local_efficiency")  # fmt: skip


class BrainGraphs:
    """A batch of aligned brain graphs (same ROIs in every subject).

    Attributes
    ----------
    A : ndarray (S, n, n) float32
        Weighted, symmetric adjacency, zero diagonal.
    X : ndarray (S, n, d) float32
        Node features (not standardised; the estimators standardise with training statistics).
    fc : ndarray (S, n, n) float32
        The connectivity the graphs were built from (edge-level baselines use it).
    """

    def __init__(self, A, X, fc):
        self.A = np.asarray(A, dtype=np.float32)
        self.X = np.asarray(X, dtype=np.float32)
        self.fc = np.asarray(fc, dtype=np.float32)
        S, n = self.A.shape[:2]
        if self.A.shape != (S, n, n) or self.X.shape[:2] != (S, n) or self.fc.shape != (S, n, n):
            raise ValueError(
                f"A {self.A.shape}, X {self.X.shape} and fc {self.fc.shape} must be (S, n, n), "
                "(S, n, d) and (S, n, n)"
            )

    def __len__(self) -> int:
        return len(self.A)

    def __getitem__(self, idx) -> BrainGraphs:
        if not isinstance(idx, slice):
            idx = np.atleast_1d(np.asarray(idx))
        return BrainGraphs(self.A[idx], self.X[idx], self.fc[idx])

    @property
    def n_rois(self) -> int:
        return self.A.shape[1]

    def __repr__(self) -> str:
        return f"BrainGraphs(subjects={len(self)}, rois={self.n_rois}, features={self.X.shape[2]})"


def check_fc(fc, name: str = "fc", nan_policy: str = "zero") -> np.ndarray:
    """(S, n, n) float64 copy of square symmetric matrices; NaN rows (zero-variance ROIs) are set to
    0 with a warning (``nan_policy="zero"``) or raise (``"raise"``)."""
    a = np.asarray(fc)
    if a.dtype == object or not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    a = np.array(a, dtype=np.float64)
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3 or a.shape[1] != a.shape[2] or a.shape[0] == 0 or a.shape[1] < 2:
        raise ValueError(f"{name} must be (S, n, n) with n >= 2, got shape {a.shape}")
    if np.isinf(a).any():
        raise ValueError(f"{name} contains inf")
    if np.isnan(a).any():
        # a zero-variance ROI gives NaN in its whole row and column; any other pattern is corrupt
        off = ~np.eye(a.shape[1], dtype=bool)
        nan = np.isnan(a)
        dead = (nan | ~off).all(axis=2)  # (S, n): every off-diagonal entry of the row is NaN
        expect = (dead[:, :, None] | dead[:, None, :]) & off
        if not np.array_equal(nan & off, expect) or (nan & ~off & ~dead[:, :, None]).any():
            raise ValueError(
                f"{name} contains NaN outside whole ROI rows/columns (not a zero-variance ROI)"
            )
        if nan_policy == "raise":
            raise ValueError(f"{name} contains NaN (a zero-variance ROI?)")
        if nan_policy != "zero":
            raise ValueError(f"nan_policy must be 'zero' or 'raise', got {nan_policy!r}")
        warnings.warn(f"{name}: NaN entries (zero-variance ROIs) set to 0", stacklevel=3)
        a = np.nan_to_num(a, nan=0.0)
    if not np.allclose(a, a.transpose(0, 2, 1), atol=1e-6):
        raise ValueError(f"{name} matrices must be symmetric")
    return a


def connectivity_from_vectors(vectors, discard_diagonal: bool | None = None) -> np.ndarray:
    """(S, n, n) matrices from nilearn-style vectors (``ConnectivityMeasure(vectorize=True)``).

    nilearn's ``sym_matrix_to_vec`` keeps the lower triangle row by row and divides the diagonal
    by sqrt(2); with ``discard_diagonal=True`` the diagonal is dropped. A vector of length
    n(n+1)/2 with the diagonal is also a valid length (n+1)n/2 without it, so the layout is read
    from the data: when ``discard_diagonal`` is None, a vector whose would-be diagonal is
    1/sqrt(2) everywhere (correlation matrices) is read with the diagonal, anything else raises.

    Parameters
    ----------
    vectors : array (S, L) or (L,)
    discard_diagonal : bool, optional
        As passed to nilearn. ``True``: the diagonal is set to 1 (correlation).

    Returns
    -------
    ndarray (S, n, n) float64
    """
    v = np.asarray(vectors)
    if v.dtype == object or not np.issubdtype(v.dtype, np.number) or np.iscomplexobj(v):
        raise TypeError(f"vectors must hold real numbers, got dtype {v.dtype}")
    v = np.atleast_2d(np.asarray(v, dtype=np.float64))
    if v.ndim != 2 or v.shape[0] == 0:
        raise ValueError(f"vectors must be (S, L) with S >= 1, got shape {np.shape(vectors)}")
    if not np.isfinite(v).all():
        raise ValueError("vectors contains NaN or inf")
    if discard_diagonal is not None and not isinstance(discard_diagonal, bool | np.bool_):
        raise TypeError(f"discard_diagonal must be a bool or None, got {discard_diagonal!r}")
    L = v.shape[1]
    n_diag = (np.sqrt(8 * L + 1) - 1) / 2  # n(n+1)/2 = L
    if n_diag != round(n_diag) or L < 1:
        raise ValueError(f"vectors of length {L} are not a triangle (n(n+1)/2 or n(n-1)/2)")
    n_diag = round(n_diag)
    il = np.tril_indices(n_diag)
    diag_pos = np.flatnonzero(il[0] == il[1])
    if discard_diagonal is None:
        if np.allclose(v[:, diag_pos], 1 / np.sqrt(2), atol=1e-6):
            discard_diagonal = False
        else:
            raise ValueError(
                f"vectors of length {L} can be n={n_diag} with the diagonal or n={n_diag + 1} "
                "without it, and the would-be diagonal is not that of correlation matrices; pass "
                "discard_diagonal= as given to nilearn"
            )
    n = n_diag if not discard_diagonal else n_diag + 1
    out = np.zeros((len(v), n, n))
    if discard_diagonal:
        il = np.tril_indices(n, k=-1)
        out[:, il[0], il[1]] = v
        out = out + out.transpose(0, 2, 1)
        out[:, np.arange(n), np.arange(n)] = 1.0
    else:
        vals = v.copy()
        vals[:, diag_pos] *= np.sqrt(2)
        out[:, il[0], il[1]] = vals
        out = out + np.tril(out, k=-1).transpose(0, 2, 1)
    return out


def _onnela_clustering(W: np.ndarray) -> np.ndarray:
    """Weighted clustering (Onnela et al.; networkx's weighted ``clustering``), batched."""
    wmax = W.max(axis=(1, 2), keepdims=True)
    C = np.cbrt(np.divide(W, wmax, out=np.zeros_like(W), where=wmax > 0))
    tri = np.einsum("sij,sjk,ski->si", C, C, C)
    k = (W > 0).sum(axis=2)
    den = k * (k - 1)
    return np.divide(tri, den, out=np.zeros_like(tri), where=den > 0)


def _pagerank(W: np.ndarray, alpha: float = 0.85, iters: int = 100) -> np.ndarray:
    """Weighted PageRank by power iteration for all graphs at once (dangling nodes: uniform)."""
    S, n, _ = W.shape
    out = W.sum(axis=2, keepdims=True)
    P = np.divide(W, out, out=np.full_like(W, 1.0 / n), where=out > 0)  # row-stochastic
    r = np.full((S, n), 1.0 / n)
    for _ in range(iters):
        r = alpha * np.einsum("si,sij->sj", r, P) + (1 - alpha) / n
    return r / r.sum(axis=1, keepdims=True)


def _eigenvector(W: np.ndarray) -> np.ndarray:
    """Leading eigenvector of each symmetric W, non-negative, unit Euclidean norm."""
    _, vec = np.linalg.eigh(W)
    v = vec[..., -1]
    v = v * np.sign(v.sum(axis=1, keepdims=True) + 1e-300)
    return np.abs(v) / np.linalg.norm(v, axis=1, keepdims=True)


def topological_node_features(A) -> np.ndarray:
    """The 8 topological node features of each weighted graph (spec §2.1).

    degree, strength, weighted clustering (Onnela), eigenvector centrality, PageRank (0.85),
    closeness and betweenness (shortest paths with distance 1/w), local efficiency (unweighted).
    All batched in numpy (Floyd-Warshall for the path-based three); tested against networkx.

    Parameters
    ----------
    A : array (S, n, n)
        Non-negative symmetric weights, zero diagonal.

    Returns
    -------
    ndarray (S, n, 8)
    """
    W = np.asarray(A, dtype=np.float64)
    if W.ndim == 2:
        W = W[None]
    if W.ndim != 3 or W.shape[1] != W.shape[2]:
        raise ValueError(f"A must be (S, n, n), got shape {W.shape}")
    if (W < 0).any() or not np.isfinite(W).all():
        raise ValueError("A must be finite and non-negative")
    S, n, _ = W.shape
    if S == 0 or n == 0:
        raise ValueError(f"A must hold at least one graph with a node, got shape {W.shape}")
    feats = np.zeros((S, n, 8))
    feats[..., 0] = (W > 0).sum(axis=2)
    feats[..., 1] = W.sum(axis=2)
    feats[..., 2] = _onnela_clustering(W)
    feats[..., 3] = _eigenvector(W)
    feats[..., 4] = _pagerank(W)
    # shortest-path features, batched Floyd-Warshall over all graphs (distance 1/w)
    D = np.where(W > 0, 1.0 / np.where(W > 0, W, 1.0), np.inf)
    D[:, np.arange(n), np.arange(n)] = 0.0
    D = _floyd_warshall(D)
    reach = np.isfinite(D) & (D > 0)
    r = reach.sum(axis=2)
    tot = np.where(reach, D, 0.0).sum(axis=2)
    # networkx closeness with wf_improved: (r / (n - 1)) * (r / total distance)
    feats[..., 5] = np.divide(r * r, (n - 1) * tot, out=np.zeros_like(tot), where=tot > 0)
    feats[..., 6] = _betweenness(D)
    feats[..., 7] = _local_efficiency(W > 0)
    return feats


def _floyd_warshall(D: np.ndarray) -> np.ndarray:
    """All-pairs shortest paths of (..., n, n) distance matrices (inf = no edge)."""
    D = D.copy()
    for k in range(D.shape[-1]):
        np.minimum(D, D[..., :, k, None] + D[..., None, k, :], out=D)
    return D


def _betweenness(D: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """Normalised betweenness (networkx convention) from all-pairs distances (S, n, n).

    v lies on a shortest s-t path iff d(s,v) + d(v,t) = d(s,t); with real-valued weights the
    shortest path is unique almost surely, so no path counting is needed (ties are not split).
    """
    S, n, _ = D.shape
    if n <= 2:
        return np.zeros((S, n))
    via = D[:, :, :, None] + D[:, None, :, :]  # (S, s, v, t): d(s,v) + d(v,t)
    on = np.isclose(via, D[:, :, None, :], rtol=rtol, atol=0) & np.isfinite(D[:, :, None, :])
    idx = np.arange(n)
    on[:, idx, idx, :] = False  # v != s
    on[:, :, idx, idx] = False  # v != t
    on[:, idx, :, idx] = False  # s != t
    return on.sum(axis=(1, 3)) / ((n - 1) * (n - 2))


def _local_efficiency(E: np.ndarray) -> np.ndarray:
    """Unweighted local efficiency (networkx), all nodes of all graphs at once; E (S, n, n) bool."""
    S, n, _ = E.shape
    nb = E[:, :, :, None] & E[:, :, None, :]  # (S, i, u, v): u, v both neighbours of i
    sub = nb & E[:, None, :, :]  # edges of the subgraph induced by i's neighbours
    D = np.where(sub, 1.0, np.inf)
    idx = np.arange(n)
    D[:, :, idx, idx] = 0.0
    D = _floyd_warshall(D)
    k = E.sum(axis=2)  # (S, n)
    inv = np.where(nb & np.isfinite(D) & (D > 0), 1.0 / np.where(D > 0, D, 1.0), 0.0)
    pairs = k * (k - 1)
    return np.divide(inv.sum(axis=(2, 3)), pairs, out=np.zeros((S, n)), where=pairs > 0)


def build_graphs(fc, density: float = 0.2, node_features: str = "topo", nan_policy: str = "zero"):
    """Threshold each subject's FC to its top ``density`` share of |FC| edges.

    Parameters
    ----------
    fc : array (S, n, n)
        Symmetric connectivity; the diagonal is ignored.
    density : float in (0, 1]
        Keeps exactly ``ceil(density * n (n - 1) / 2)`` edges per subject (ties: lower pair index).
    node_features : {"topo", "profile", "topo+profile", "identity"}

    Returns
    -------
    BrainGraphs
        Edge weights |FC|.
    """
    F = check_fc(fc, "fc", nan_policy)
    if isinstance(density, bool) or not isinstance(density, numbers.Real) or not 0 < density <= 1:
        raise ValueError(f"density must be in (0, 1], got {density!r}")
    options = ("topo", "profile", "topo+profile", "identity")
    if node_features not in options:
        raise ValueError(f"node_features must be one of {options}, got {node_features!r}")
    S, n, _ = F.shape
    iu, ju = np.triu_indices(n, k=1)
    k = int(np.ceil(density * len(iu)))
    if k < 1:
        raise ValueError(f"density={density} keeps no edge for n={n}")
    w = np.abs(F[:, iu, ju])
    order = np.argsort(-w, axis=1, kind="stable")[:, :k]
    A = np.zeros_like(F)
    rows = np.repeat(np.arange(S), k)
    A[rows, iu[order.ravel()], ju[order.ravel()]] = w[rows, order.ravel()]
    A = A + A.transpose(0, 2, 1)
    parts = []
    if "topo" in node_features:
        parts.append(topological_node_features(A))
    if "profile" in node_features:
        prof = F.copy()
        prof[:, np.arange(n), np.arange(n)] = 0.0
        parts.append(prof)
    if node_features == "identity":
        parts.append(np.broadcast_to(np.eye(n), (S, n, n)))
    return BrainGraphs(A, np.concatenate(parts, axis=2), F)
