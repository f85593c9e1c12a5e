"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import numpy as np

from brain_gcl import (
    CIAGCL,
    FCSVM,
    GCN,
    GIN,
    BrainNetCNN,
    CIGALike,
    FCLogReg,
    GraphCL,
    infer_environments,
)
from brain_gcl.data import (
    build_graphs,
    connectivity_from_vectors,
    load_connectomes,
    make_multisite_connectomes,
    topological_node_features,
)
from brain_gcl.metrics import brain_report, edge_recovery


def _data():
    return make_multisite_connectomes(n_rois=8, n_sites=2, subjects_per_site=8, inv_size=2,
                                      sp_size=2, site_size=2, rho=(0.9, 0.2), seed=0)  # fmt: skip


def _write_abide(folder):
    rng = np.random.default_rng(0)
    rows = ["SUB_ID,DX_GROUP,SITE_ID"]
    for k, sid in enumerate((50001, 50002, 50003)):
        rows.append(f"{sid},{1 + k % 2},NYU")
        np.savetxt(folder / f"NYU_00{sid}_rois_cc200.1D", rng.normal(size=(30, 5)),
                   header="\t".join(f"#{j}" for j in range(5)))  # fmt: skip
    (folder / "pheno.csv").write_text("\n".join(rows) + "\n")
    return folder


def _build_graphs(**kw):
    g = build_graphs(**kw)
    return g.A, g.X, g.fc


def entries() -> list[dict]:
    d = _data()
    g = build_graphs(d.fc, density=0.4, node_features="profile")
    fit = {"graphs": g, "y": d.y, "sites": d.site}
    common = {
        "fit": fit,
        "not_sklearn": "fit(graphs, y, sites) takes a batch of brain graphs, not 2-D features",
        "methods": {"predict_proba": {"graphs": g}},
        "arrays": {"y": "labels", "sites": {"kind": "int"}},
        "rows": [["y", "sites"]],
        "order": None,
        "min_rows": {"y": 2},
    }
    net = {"epochs": 2, "hidden": 8, "batch_size": 8, "random_state": 0}
    train = {"epochs": {"type": "int", "bad": [0]}, "batch_size": {"type": "int", "bad": [1, 0]},
             "lr": {"type": "float", "bad": [0.0, float("nan")]},
             "val_fraction": {"type": "float", "bad": [1.0, -0.1]},
             "device": {"type": "str", "bad": ["warp-drive"]}}  # fmt: skip
    ratio = {"edge_ratio": {"type": "float", "bad": [0.0, 1.5]},
             "extractor": {"type": "str", "bad": ["mlp"]}}  # fmt: skip
    nan_graphs = {"graphs": build_graphs(d.fc, density=0.4, node_features="profile")}
    nan_graphs["graphs"].A[0, 0, 1] = np.nan
    known_nan = {"kwargs": {**fit, **nan_graphs}, "raises": ["graphs"],
                 "why": "a NaN edge weight in the graphs is rejected by fit"}  # fmt: skip
    il = np.tril_indices(5)
    fc5 = d.fc[:3, :5, :5].copy()
    v5 = fc5[:, il[0], il[1]] * np.where(il[0] == il[1], 1 / np.sqrt(2), 1.0)
    return [
        {"name": "GIN", "kind": "estimator", "cls": GIN, "init": net, "params": train,
         "known": [known_nan], **common},
        {"name": "CIGALike", "kind": "estimator", "cls": CIGALike, "init": net,
         "params": {**train, **ratio}, "grid": {"extractor": ["roi", "gnn+roi"]}, **common},
        {"name": "CIAGCL", "kind": "estimator", "cls": CIAGCL, "init": net,
         "params": {**train, **ratio,
                    "p_keep": {"type": "float", "bad": [1.5, -0.1]},
                    "lambda_var": {"type": "float", "bad": [-1.0, float("inf")]},
                    "tau": {"type": "float", "bad": [0.0, float("nan")]},
                    "n_envs": {"type": "int", "bad": [0]},
                    "partner": {"type": "str", "bad": ["same_site"]},
                    "invariance": {"type": "str", "bad": ["env"]}},
         "grid": {"partner": ["any"], "mixing": ["random"], "extractor": ["roi", "gnn+roi"],
                  "invariance": ["site", "inferred"]}, **common},
        {"name": "infer_environments", "call": infer_environments,
         "kwargs": {"graphs": g, "y": d.y, "n_splits": 2}, "arrays": {"y": "labels"},
         "rows": [["y"]],
         "order": None, "min_rows": {"y": 2},
         "params": {"n_splits": {"type": "int", "bad": [1]},
                    "C": {"type": "float", "bad": [0.0, float("inf")]}}},
        {"name": "FCLogReg", "kind": "estimator", "cls": FCLogReg, "init": {},
         "params": {"C": {"type": "float", "bad": [0.0, -1.0]}}, **common},
        {"name": "FCSVM", "kind": "estimator", "cls": FCSVM, "init": {},
         "params": {"C": {"type": "float", "bad": [0.0, -1.0]}}, **common},
        {"name": "GCN", "kind": "estimator", "cls": GCN, "init": net, "params": train, **common},
        {"name": "BrainNetCNN", "kind": "estimator", "cls": BrainNetCNN, "init": net,
         "params": train, **common},
        {"name": "GraphCL", "kind": "estimator", "cls": GraphCL, "init": net,
         "params": {**train, "edge_drop": {"type": "float", "bad": [1.0, -0.1]},
                    "feature_mask": {"type": "float", "bad": [1.0, -0.1]},
                    "tau": {"type": "float", "bad": [0.0, float("nan")]}}, **common},
        {"name": "build_graphs", "call": _build_graphs,
         "kwargs": {"fc": d.fc, "density": 0.3},
         "arrays": {"fc": {"kind": "float", "ndim": (2, 3)}}, "rows": [["fc"]],
         "order": "equivariant",
         "params": {"density": {"type": "float", "bad": [0.0, 1.5]},
                    "node_features": {"type": "str", "bad": ["degree"]}}},
        {"name": "topological_node_features", "call": topological_node_features,
         "kwargs": {"A": g.A}, "arrays": {"A": {"kind": "float", "ndim": (2, 3)}},
         "rows": [["A"]], "order": "equivariant"},
        {"name": "connectivity_from_vectors", "call": connectivity_from_vectors,
         "kwargs": {"vectors": v5}, "arrays": {"vectors": {"kind": "float", "ndim": (1, 2)}},
         "rows": [["vectors"]], "order": "equivariant",
         "known": [{"kwargs": {"vectors": v5},
                    "check": lambda out: np.allclose(out, fc5, atol=1e-12),
                    "why": "nilearn's layout (lower triangle, diagonal / sqrt 2) read back"}]},
        {"name": "brain_report", "call": brain_report,
         "kwargs": {"y_true": d.y, "proba": np.linspace(0.1, 0.9, len(d.y))},
         "arrays": {"y_true": "labels", "proba": {"kind": "float", "ndim": (1, 2)}},
         "rows": [["y_true", "proba"]], "order": None, "min_rows": 2},
        {"name": "edge_recovery", "call": edge_recovery,
         "kwargs": {"scores": g.A, "truth_edges": d.truth["invariant_edges"], "graphs_A": g.A},
         "arrays": {"scores": {"kind": "float", "ndim": 3}}, "order": None,
         "known": [{"kwargs": {"scores": np.where(d.truth["invariant_edges"], 2.0, 1.0)[None],
                               "truth_edges": d.truth["invariant_edges"], "graphs_A": None},
                    "check": lambda r: r["auroc"] == 1.0 and r["precision_at_k"] == 1.0,
                    "why": "scores that rank the planted edges first recover them exactly"}]},
        {"name": "load_connectomes", "kind": "loader", "write": _write_abide,
         "read": lambda p: load_connectomes(p, p / "pheno.csv"),
         "check": lambda r: r.fc.shape == (3, 5, 5) and r.y.tolist() == [1, 0, 1],
         "corrupt": [
             ("duplicate-subject", lambda p: np.save(p / "sub50001.npy", np.eye(5))),
             ("second-atlas", lambda p: np.savetxt(p / "NYU_0050001_rois_aal.1D", np.ones((30, 3)))),
             ("empty-phenotype", lambda p: (p / "pheno.csv").write_text("")),
             ("ragged-series", lambda p: (p / "NYU_0050002_rois_cc200.1D").write_text("1 2 3\n4 5\n")),
         ]},
    ]  # fmt: skip
