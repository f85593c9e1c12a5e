"""Loaders for the Cola-GNN / EpiGNN / EARTH text layout: ``name.txt`` (T x N) + ``name-adj.txt``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from epi_ode.validation import check_adjacency, check_series

__all__ = ["load_colagnn", "save_colagnn"]


def load_colagnn(series_path, adjacency_path=None, delimiter: str = ","):
    """Read a comma-separated (T, N) count matrix and, optionally, its (N, N) adjacency.

    Empty fields or ``nan`` are read as missing (NaN).

    Returns
    -------
    Y : ndarray (T, N)
    A : ndarray (N, N) or None
    """
    path = Path(series_path)
    if not path.is_file():
        raise FileNotFoundError(f"series_path {path} does not exist")
    Y = np.genfromtxt(path, delimiter=delimiter, dtype=np.float64, ndmin=2)
    Y = check_series(Y, f"series file {path.name}")
    A = None
    if adjacency_path is not None:
        apath = Path(adjacency_path)
        if not apath.is_file():
            raise FileNotFoundError(f"adjacency_path {apath} does not exist")
        A = np.genfromtxt(apath, delimiter=delimiter, dtype=np.float64, ndmin=2)
        A = check_adjacency(A, name=f"adjacency file {apath.name}")
        if A.shape[0] != Y.shape[1]:
            raise ValueError(
                f"adjacency file {apath.name} has {A.shape[0]} regions, series has {Y.shape[1]}"
            )
    return Y, A


def save_colagnn(series_path, Y, adjacency_path=None, adjacency=None) -> None:
    """Write ``Y`` (T, N) and optionally ``adjacency`` (N, N) in the same layout."""
    Y = check_series(Y, "Y")
    np.savetxt(series_path, Y, delimiter=",", fmt="%.10g")
    if adjacency_path is not None:
        if adjacency is None:
            raise ValueError("adjacency is required with adjacency_path")
        A = check_adjacency(adjacency, Y.shape[1])
        np.savetxt(adjacency_path, A, delimiter=",", fmt="%.10g")
