"""Matrix featurization: a density image plus standardized structural scalars (spec §2.4).

The image is the nnz count per cell after mapping rows and columns to ``R`` bins, transformed
``log1p(count) / log1p(max count)``. The scalars are the row/column statistics that drive sparse
kernel performance (sizes, degree spread, locality, block fill, dense-operand reuse).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from cost_model.matrices import check_matrix

__all__ = ["SCALAR_NAMES", "MatrixFeaturizer", "density_counts", "matrix_stats"]

SCALAR_NAMES = (
    "log_m",
    "log_k",
    "log_nnz",
    "log10_density",
    "row_mean",
    "row_std",
    "log_row_max",
    "row_cv",
    "col_cv",
    "bandwidth",
    "diag_frac",
    "bsr_fill_2",
    "bsr_fill_4",
    "bsr_fill_8",
    "log_col_reuse",
    "empty_rows",
)


def density_counts(A: sp.csr_array, resolution: int = 32) -> np.ndarray:
    """Raw nnz count per (row bin, column bin); sums to ``A.nnz``.

    Parameters
    ----------
    A : sparse matrix, shape (m, k)
    resolution : int, default=32
        Bins per axis.

    Returns
    -------
    np.ndarray, shape (resolution, resolution), float64
    """
    A = check_matrix(A)
    if resolution < 1:
        raise ValueError(f"resolution must be >= 1, got {resolution}")
    coo = A.tocoo()
    m, k = A.shape
    r = (coo.row.astype(np.int64) * resolution) // m
    c = (coo.col.astype(np.int64) * resolution) // k
    return (
        np.bincount(r * resolution + c, minlength=resolution * resolution)
        .reshape(resolution, resolution)
        .astype(np.float64)
    )


def _bsr_fill(coo: sp.coo_array, b: int) -> float:
    blocks = np.unique((coo.row.astype(np.int64) // b) * (coo.col.max() // b + 1) + coo.col // b)
    return coo.nnz / (blocks.size * b * b)


def matrix_stats(A: sp.csr_array) -> dict[str, float]:
    """Structural statistics of a matrix (the unstandardized scalar features).

    Parameters
    ----------
    A : sparse matrix, shape (m, k)

    Returns
    -------
    dict
        Keys :data:`SCALAR_NAMES`.
    """
    A = check_matrix(A)
    m, k = A.shape
    coo = A.tocoo()
    rl = np.diff(A.indptr).astype(np.float64)
    cl = np.bincount(coo.col, minlength=k).astype(np.float64)
    # dense-operand reuse: nnz per distinct column inside 256-row panels
    panel = coo.row.astype(np.int64) // 256
    distinct = np.unique(panel * k + coo.col).size
    return {
        "log_m": float(np.log(m)),
        "log_k": float(np.log(k)),
        "log_nnz": float(np.log(A.nnz)),
        "log10_density": float(np.log10(A.nnz / (m * k))),
        "row_mean": float(rl.mean()),
        "row_std": float(rl.std()),
        "log_row_max": float(np.log1p(rl.max())),
        "row_cv": float(rl.std() / max(rl.mean(), 1e-12)),
        "col_cv": float(cl.std() / max(cl.mean(), 1e-12)),
        "bandwidth": float(np.abs(coo.row / m - coo.col / k).mean()),
        "diag_frac": float(np.mean(coo.row == coo.col)),
        "bsr_fill_2": _bsr_fill(coo, 2),
        "bsr_fill_4": _bsr_fill(coo, 4),
        "bsr_fill_8": _bsr_fill(coo, 8),
        "log_col_reuse": float(np.log(A.nnz / distinct)),
        "empty_rows": float(np.mean(rl == 0)),
    }


class MatrixFeaturizer:
    """Map a sparse matrix to ``(image (R, R), scalars (S,))`` float32 features.

    Parameters
    ----------
    resolution : int, default=32
        Side of the density image.

    Notes
    -----
    Scalars are returned raw-but-squashed (logs, ratios); :class:`cost_model.models` standardizes
    them with training-set statistics.
    """

    def __init__(self, resolution: int = 32) -> None:
        if not isinstance(resolution, int) or resolution < 2:
            raise ValueError(f"resolution must be an int >= 2, got {resolution!r}")
        self.resolution = resolution

    def __call__(self, A: sp.csr_array) -> tuple[np.ndarray, np.ndarray]:
        counts = density_counts(A, self.resolution)
        img = (np.log1p(counts) / np.log1p(counts.max())).astype(np.float32)
        st = matrix_stats(A)
        scal = np.array([st[n] for n in SCALAR_NAMES], dtype=np.float32)
        scal[4] = np.log1p(scal[4])  # row_mean, row_std: log scale
        scal[5] = np.log1p(scal[5])
        return img, scal
