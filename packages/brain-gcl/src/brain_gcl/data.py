"""Data: the multi-site generator, graph construction, loaders and evaluation splits."""

from brain_gcl.generator import BrainGraphDataset, correlation, make_multisite_connectomes
from brain_gcl.graphs import (
    BrainGraphs,
    build_graphs,
    connectivity_from_vectors,
    topological_node_features,
)
from brain_gcl.loaders import load_connectomes
from brain_gcl.splits import cv_splits, site_splits

__all__ = [
    "BrainGraphDataset",
    "BrainGraphs",
    "build_graphs",
    "connectivity_from_vectors",
    "correlation",
    "cv_splits",
    "load_connectomes",
    "make_multisite_connectomes",
    "site_splits",
    "topological_node_features",
]
