"""Conversion between :class:`~brain_gcl.graphs.BrainGraphs` and PyTorch Geometric data.

Needs the optional ``pyg`` extra (``pip install brain-gcl[pyg]``). Brain graphs here are aligned
(every subject has the same ROIs), so a list of ``Data`` converts back only when every graph has
the same ``num_nodes``; node ``i`` of every graph is ROI ``i``.
"""

from __future__ import annotations

import numpy as np
import torch

from brain_gcl.graphs import BrainGraphs

__all__ = ["from_pyg", "to_pyg"]


def _pyg():
    try:
        import torch_geometric.data as tgd
    except ImportError as e:  # pragma: no cover - exercised without the extra only
        raise ImportError("PyG conversion needs torch-geometric: pip install brain-gcl[pyg]") from e
    return tgd


def to_pyg(graphs: BrainGraphs, y=None, sites=None) -> list:
    """One ``torch_geometric.data.Data`` per subject.

    Parameters
    ----------
    graphs : BrainGraphs (S subjects, n ROIs, d features)
    y, sites : array (S,), optional
        Stored as ``data.y`` (long, shape (1,)) and ``data.site``.

    Returns
    -------
    list of Data
        ``x`` (n, d) float32, ``edge_index`` (2, 2|E|) both directions, ``edge_attr`` (2|E|,)
        the weights, ``fc`` (1, n, n) the connectivity the graph was built from.
    """
    tgd = _pyg()
    if not isinstance(graphs, BrainGraphs):
        raise TypeError(f"graphs must be BrainGraphs, got {type(graphs).__name__}")
    S = len(graphs)
    for name, v in (("y", y), ("sites", sites)):
        if v is not None and np.shape(v) != (S,):
            raise ValueError(f"{name} must have shape ({S},), got {np.shape(v)}")
    out = []
    for k in range(S):
        A = torch.as_tensor(graphs.A[k])
        src, dst = torch.nonzero(A, as_tuple=True)
        d = tgd.Data(x=torch.as_tensor(graphs.X[k]), edge_index=torch.stack([src, dst]),
                     edge_attr=A[src, dst], fc=torch.as_tensor(graphs.fc[k])[None],
                     num_nodes=graphs.n_rois)  # fmt: skip
        if y is not None:
            d.y = torch.as_tensor([int(np.asarray(y)[k])])
        if sites is not None:
            d.site = torch.as_tensor([int(np.asarray(sites)[k])])
        out.append(d)
    return out


def from_pyg(data) -> BrainGraphs:
    """:class:`BrainGraphs` from a list of ``Data`` or a ``Batch`` of aligned graphs.

    Every graph needs ``x`` and ``edge_index`` and the same ``num_nodes``; ``edge_attr`` (one
    weight per edge) defaults to 1; ``fc`` defaults to the adjacency. Undirected edges may be given
    once or in both directions; a pair given both ways must carry the same weight.

    Raises
    ------
    ValueError
        Different node counts, multi-dimensional edge attributes, self-loops, asymmetric weights,
        or a ``fc`` of the wrong shape -- nothing is dropped silently.
    """
    tgd = _pyg()
    if isinstance(data, tgd.Batch):
        data = data.to_data_list()
    if isinstance(data, tgd.Data):
        data = [data]
    data = list(data)
    if not data:
        raise ValueError("data is empty")
    ns = {int(d.num_nodes) for d in data}
    if len(ns) != 1:
        raise ValueError(f"brain graphs must be aligned (same ROIs); got node counts {sorted(ns)}")
    n = ns.pop()
    As, Xs, Fs = [], [], []
    for k, d in enumerate(data):
        if d.x is None:
            raise ValueError(f"graph {k} has no node features x")
        ei = d.edge_index
        w = torch.ones(ei.shape[1]) if d.edge_attr is None else d.edge_attr
        if w.dim() > 1:
            if w.shape[1] != 1:
                raise ValueError(
                    f"graph {k}: edge_attr must hold one weight per edge, got {tuple(w.shape)}"
                )
            w = w[:, 0]
        if (ei[0] == ei[1]).any():
            raise ValueError(f"graph {k} has self-loops; brain graphs have a zero diagonal")
        A = torch.zeros(n, n, dtype=torch.float64)
        A[ei[0], ei[1]] = w.double()
        both = (A != 0) & (A.T != 0)
        if not torch.allclose(A[both], A.T[both]):
            raise ValueError(f"graph {k}: an edge given in both directions has two weights")
        A = torch.where(A != 0, A, A.T)
        fc = getattr(d, "fc", None)
        if fc is None:
            fc = A
        fc = (
            torch.as_tensor(fc).reshape(-1, n, n)[0]
            if torch.as_tensor(fc).numel() == n * n
            else None
        )
        if fc is None:
            raise ValueError(f"graph {k}: fc must hold n x n = {n * n} values")
        As.append(A.numpy()), Xs.append(d.x.numpy()), Fs.append(np.asarray(fc, dtype=np.float64))
    if len({x.shape for x in Xs}) != 1:
        raise ValueError("graphs have different node-feature widths")
    return BrainGraphs(np.stack(As), np.stack(Xs), np.stack(Fs))
