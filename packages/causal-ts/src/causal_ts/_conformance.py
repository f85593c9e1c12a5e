"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import csv

import numpy as np
import torch

from causal_ts import (
    CAROTS,
    GivenGraphDiscoverer,
    IsolationForestWindows,
    NeuralGrangerDiscoverer,
    PCAReconstruction,
    PlainOneClassContrastive,
    VARGrangerDiscoverer,
    VARResidual,
    alpha_schedule,
    inject_anomalies,
    load_daphnet,
    load_mtsad,
    make_lorenz96,
    make_var,
    point_adjust,
    sliding_windows,
    soc_loss,
    window_labels,
)
from causal_ts.data import ANOMALY_KINDS
from causal_ts.metrics import evaluate as _evaluate

TINY = {
    "window": 6,
    "encoder": "mlp",
    "hidden_dim": 16,
    "proj_dim": 16,
    "epochs": 1,
    "batch_size": 32,
}


def _rows(path, head, rows):
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows(rows)


def _psm(folder):
    rng = np.random.default_rng(0)
    tr, te = rng.normal(size=(30, 3)), rng.normal(size=(20, 3))
    y = (np.arange(20) % 7 == 0).astype(int)
    root = folder / "psm"
    root.mkdir()
    head = ["timestamp_(min)", "a", "b", "c"]
    _rows(root / "train.csv", head, [[i, *np.round(r, 6)] for i, r in enumerate(tr)])
    _rows(root / "test.csv", head, [[i, *np.round(r, 6)] for i, r in enumerate(te)])
    _rows(root / "test_label.csv", ["timestamp_(min)", "label"], [[i, v] for i, v in enumerate(y)])
    return root


def _smd(folder):
    rng = np.random.default_rng(0)
    root = folder / "smd"
    for sub, arr in (
        ("train", rng.normal(size=(30, 3))),
        ("test", rng.normal(size=(20, 3))),
        ("test_label", (np.arange(20) % 7 == 0).astype(float)[:, None]),
    ):
        (root / sub).mkdir(parents=True)
        np.savetxt(root / sub / "machine-1-1.txt", arr, delimiter=",")
    return root


def _psm_ok(b):
    return (
        b.X_train.shape == (30, 3)
        and b.X_test.shape == (20, 3)
        and b.y_test.sum() == 3
        and b.columns == ["a", "b", "c"]
    )


def _psm_corrupt():
    def header_in_data(p):
        t = (p / "test.csv").read_text().splitlines()
        (p / "test.csv").write_text("\n".join([t[0], t[0], *t[1:]]) + "\n")

    def fractional_label(p):
        (p / "test_label.csv").write_text(
            (p / "test_label.csv").read_text().replace("\n0,1", "\n0,0.5")
        )

    def ragged(p):
        (p / "train.csv").write_text((p / "train.csv").read_text() + "99,1.0,2.0\n")

    def short_labels(p):
        (p / "test_label.csv").write_text(
            "\n".join((p / "test_label.csv").read_text().splitlines()[:-3]) + "\n"
        )

    return [
        ("header-in-data", header_in_data),
        ("fractional-label", fractional_label),
        ("ragged-row", ragged),
        ("short-labels", short_labels),
        ("no-labels", lambda p: (p / "test_label.csv").unlink()),
    ]


WINDOWED = {
    "check_methods_sample_order_invariance": (
        "one score per sliding window of a time series: shuffling time steps changes the "
        "windows and their number, so row order cannot be irrelevant"
    ),
    "check_methods_subset_invariance": (
        "a window needs `window` consecutive time steps; scoring rows one at a time is not defined"
    ),
}
CAROTS_SKIPS = {
    **WINDOWED,
    "check_fit_score_takes_y": (
        "CAROTS's constructor parameter `score` (the paper's score choice) shadows a `score` method"
    ),
    "check_pipeline_consistency": "the same `score` parameter name",
    "check_n_features_in_after_fitting": (
        "the causal-discovery VAR needs more time steps than the check's 15-row series"
    ),
    "check_estimators_dtypes": "the same minimum series length for the discovery VAR",
    "check_estimators_nan_inf": "the same minimum series length for the discovery VAR",
    **{
        c: "the same minimum series length for the discovery VAR (20-row check data)"
        for c in (
            "check_dont_overwrite_parameters",
            "check_dtype_object",
            "check_f_contiguous_array_estimator",
            "check_dict_unchanged",
            "check_fit2d_predict1d",
        )
    },
}


def _daphnet(folder):
    """An original UCI Daphnet file: time (ms), 9 channels (mg), annotation 0/1/2; 16 ms steps."""
    rng = np.random.default_rng(0)
    ann = [0] * 3 + [1] * 6 + [2] * 4 + [1] * 3
    rows = [f"{15 + 16 * i} " + " ".join(str(v) for v in rng.integers(-1200, 1200, 9)) + f" {a}"
            for i, a in enumerate(ann)]  # fmt: skip
    path = folder / "S01R01.txt"
    path.write_text("\n".join(rows) + "\n")
    return path


def _daphnet_ok(b):
    assert b.X.shape == (16, 9) and b.X.dtype == np.float64
    assert b.y.tolist() == [0] * 9 + [1] * 4 + [0] * 3
    assert b.in_experiment.tolist() == [False] * 3 + [True] * 13
    assert b.time_ms[0] == 15 and np.all(np.diff(b.time_ms) == 16)


def entries() -> list[dict]:
    data = make_var(n_vars=4, n_train=200, n_test=400, seed=0)
    Xtr, Xte = data.X_train, data.X_test[:40]
    out = [
        {
            "name": "sliding_windows",
            "call": sliding_windows,
            "kwargs": {"X": Xte, "window": 5},
            "arrays": {"X": {"kind": "float", "ndim": 2}},
            "min_rows": 5,
            "params": {
                "window": {"type": "int", "bad": [0, 1000]},
                "stride": {"type": "int", "bad": [0]},
            },
            "known": [
                {
                    "kwargs": {"X": np.arange(6.0)[:, None], "window": 3, "stride": 2},
                    "check": lambda w: w[:, :, 0].tolist() == [[0, 1, 2], [2, 3, 4]],
                    "why": "windows at 0 and 2",
                }
            ],
        },
    ]
    GRIDS = {
        "CAROTS": {
            "encoder": ["gru", "mlp"],
            "noise_step": ["last"],
            "bias_unit": ["standardized"],
            "use_cpa": [False],
            "use_cda": [False],
            "score": ["cl", "cd"],
            "combine": ["validated"],
            "score_type": ["cos"],
            "cd_reduce": ["mean", "last"],
            "nan_policy": ["ffill"],
            "discoverer": ["neural"],
        },
        "VARResidual": {"reduce": ["mean", "last"], "nan_policy": ["ffill"]},
        "IsolationForestWindows": {"nan_policy": ["ffill"], "max_samples": [8]},
        "PCAReconstruction": {"nan_policy": ["ffill"]},
    }
    for cls, init, params in (
        (
            CAROTS,
            TINY,
            {"epochs": {"type": "int", "bad": [0]}, "window": {"type": "int", "bad": [0]}},
        ),
        (VARResidual, {"window": 6}, {"window": {"type": "int", "bad": [0]}}),
        (IsolationForestWindows, {"window": 6}, {}),
        (PCAReconstruction, {"window": 6}, {}),
    ):
        out.append(
            {
                "name": cls.__name__,
                "kind": "estimator",
                "cls": cls,
                "init": {**init, "random_state": 0}
                if "random_state" in cls().get_params()
                else init,
                "fit": {"X": Xtr},
                "methods": {"decision_function": {"X": Xte}},
                "arrays": {
                    "fit:X": {"kind": "float", "ndim": 2},
                    "decision_function:X": {"kind": "float", "ndim": 2},
                },
                "min_rows": {"fit:X": 12, "decision_function:X": 6},
                "params": params,
                "sklearn": True,
                "expected_failed": CAROTS_SKIPS if cls is CAROTS else WINDOWED,
                "grid": GRIDS.get(cls.__name__, {}),
            }
        )
    labels = np.zeros(30, int)
    labels[5:9] = 1
    labels[20:22] = 1
    pred = np.zeros(30, int)
    pred[7] = 1
    scores = np.random.default_rng(0).random(30) + labels
    z = torch.randn(
        8,
        4,
        generator=torch.Generator().manual_seed(0),
        dtype=torch.float64,
    )
    out += [
        {"name": "point_adjust", "call": point_adjust, "kwargs": {"pred": pred, "labels": labels},
         "arrays": {"pred": {"kind": "labels", "ndim": 1}, "labels": {"kind": "labels", "ndim": 1}},
         "rows": [["pred", "labels"]],
         "known": [{"kwargs": {"pred": pred, "labels": labels},
                    "check": lambda v: v[5:9].tolist() == [1] * 4 and v[20:22].tolist() == [0, 0],
                    "why": "one hit marks its whole true segment, a missed segment stays 0"}]},
        {"name": "window_labels", "call": window_labels, "kwargs": {"labels": labels, "window": 4},
         "arrays": {"labels": {"kind": "labels", "ndim": 1}}, "rows": [["labels"]],
         "min_rows": 4, "params": {"window": {"type": "int", "bad": [0, 31]}},
         "known": [{"kwargs": {"labels": np.array([0, 0, 1, 0, 0]), "window": 2},
                    "check": lambda v: v.tolist() == [0, 1, 1, 0],
                    "why": "a window is anomalous iff any of its points is"}]},
        {"name": "evaluate", "call": _evaluate, "kwargs": {"scores": scores, "labels": labels},
         "arrays": {"scores": {"kind": "float", "ndim": 1}, "labels": {"kind": "labels", "ndim": 1}},
         "rows": [["scores", "labels"]], "order": "invariant"},
        {"name": "soc_loss", "call": lambda z, alpha=0.5, temperature=0.1: soc_loss(z, alpha, temperature)[0],
         "kwargs": {"z": z}, "arrays": {"z": {"kind": "float", "ndim": 2}}, "rows": [["z"]],
         "min_rows": 2,
         "params": {"alpha": {"type": "float", "bad": [1.5, float("nan")]},
                    "temperature": {"type": "float", "bad": [0.0, -1.0]}}},
        {"name": "alpha_schedule", "call": alpha_schedule,
         "kwargs": {"alpha": (0.5, 0.9), "epoch": 2, "n_epochs": 5},
         "params": {"epoch": {"type": "int", "bad": [-1, 5]}, "n_epochs": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {"alpha": (0.5, 0.9), "epoch": 2, "n_epochs": 5},
                    "check": lambda a: abs(a - 0.7) < 1e-12, "why": "linear from 0.5 to 0.9"}]},
        {"name": "make_var", "call": lambda **kw: make_var(**kw).X_test,
         "kwargs": {"n_vars": 3, "n_train": 50, "n_test": 200, "seed": 0},
         "params": {"n_vars": {"type": "int", "bad": [0]}, "n_train": {"type": "int", "bad": [0]},
                    "kind": {"type": "str", "bad": ["spikes"]}}},
        {"name": "make_lorenz96", "call": lambda **kw: make_lorenz96(**kw).X_test,
         "kwargs": {"n_vars": 5, "n_train": 50, "n_test": 200, "seed": 0, "F": 10.0},
         "params": {"n_vars": {"type": "int", "bad": [0]}, "F": {"type": "float", "bad": [float("nan")]},
                    "kind": {"type": "str", "bad": ["spikes"]}}},
        {"name": "inject_anomalies", "call": lambda X, kind="spike", ratio=0.05: inject_anomalies(
            X, kind, ratio=ratio, seed=0)[0],
         "kwargs": {"X": Xte}, "arrays": {"X": {"kind": "float", "ndim": 2}},
         "params": {"ratio": {"type": "float", "bad": [0.0, 1.5]}, "kind": {"type": "str", "bad": ["meteor"]}},
         "grid": {"kind": [k for k in ANOMALY_KINDS if k != "spike"]}},
    ]  # fmt: skip
    graph = np.eye(Xtr.shape[1], dtype=bool) | np.eye(Xtr.shape[1], k=1, dtype=bool)
    for cls, init, params in (
        (GivenGraphDiscoverer, {"graph": graph, "lag": 2}, {"lag": {"type": "int", "bad": [0]}}),
        (NeuralGrangerDiscoverer, {"lag": 2, "hidden_dim": 4, "epochs": 5},
         {"lag": {"type": "int", "bad": [0]}, "epochs": {"type": "int", "bad": [0]},
          "threshold": {"type": "float", "bad": [float("nan")]}}),
    ):  # fmt: skip
        out.append(
            {
                "name": cls.__name__,
                "kind": "estimator",
                "cls": cls,
                "init": init,
                "not_sklearn": "fit(X) reads one multivariate time series; sklearn's checks "
                "shuffle and subsample rows, which are time steps here",
                "fit": {"X": Xtr},
                "methods": {"predict_next": {"prefix": sliding_windows(Xte, 5)}},
                "arrays": {"fit:X": {"kind": "float", "ndim": 2}},
                "min_rows": {"fit:X": 12},
                "params": params,
            }
        )
    out.append(
        {
            "name": "PlainOneClassContrastive",
            "kind": "estimator",
            "cls": PlainOneClassContrastive,
            "init": {k: v for k, v in {**TINY, "random_state": 0}.items()
                     if k in PlainOneClassContrastive().get_params()},
            "not_sklearn": "as CAROTS (windowed scores; the sklearn checks run on CAROTS)",
            "fit": {"X": Xtr},
            "methods": {"decision_function": {"X": Xte}},
            "arrays": {"fit:X": {"kind": "float", "ndim": 2},
                       "decision_function:X": {"kind": "float", "ndim": 2}},
            "min_rows": {"fit:X": 12, "decision_function:X": 6},
            "params": {"epochs": {"type": "int", "bad": [0]}, "window": {"type": "int", "bad": [0]}},
            "grid": {"encoder": ["gru", "mlp"], "bias_unit": ["standardized"], "nan_policy": ["ffill"]},
        }
    )  # fmt: skip
    out.append(
        {
            "name": "VARGrangerDiscoverer",
            "kind": "estimator",
            "cls": VARGrangerDiscoverer,
            "init": {"lag": 1},  # sklearn's checks fit on 10-20 rows: a VAR(3) needs more
            "grid": {"restricted": [False]},
            "sklearn": True,
            "expected_failed": {
                "check_fit2d_1sample": (
                    "the error for a 1-row X says a VAR(lag) needs more time steps, not "
                    "'1 sample': a row is a time step, not a sample"
                ),
            },
            "fit": {"X": Xtr},
            "methods": {"predict_next": {"prefix": sliding_windows(Xte, 5)}},
            "arrays": {"fit:X": {"kind": "float", "ndim": 2}},
            "min_rows": {"fit:X": 12},
        }
    )
    out.append(
        {
            "name": "load_daphnet",
            "kind": "loader",
            "write": _daphnet,
            "read": load_daphnet,
            "check": _daphnet_ok,
            "corrupt": ["truncate", "header", "empty", ("comma-separated", lambda p: p.write_text(p.read_text().replace(" ", ","))),
                        ("bad-annotation", lambda p: p.write_text(p.read_text().replace(" 1\n", " 7\n", 1))),
                        ("concatenated", lambda p: p.write_text(p.read_text() * 2))],
        }
    )  # fmt: skip
    out.append(
        {
            "name": "load_mtsad(psm)",
            "kind": "loader",
            "write": _psm,
            "read": lambda p: load_mtsad("psm", p),
            "check": _psm_ok,
            "corrupt": [("empty-test", lambda p: (p / "test.csv").write_text("")), *_psm_corrupt()],
        }
    )
    out.append(
        {
            "name": "load_mtsad(smd)",
            "kind": "loader",
            "write": _smd,
            "read": lambda p: load_mtsad("smd", p, machine="machine-1-1"),
            "check": lambda b: b.X_test.shape == (20, 3) and b.y_test.sum() == 3,
            "corrupt": [
                (
                    "header-row",
                    lambda p: (p / "train" / "machine-1-1.txt").write_text(
                        "a,b,c\n" + (p / "train" / "machine-1-1.txt").read_text()
                    ),
                )
            ],
        }
    )
    return [*out, *_simulator_entries()]  # fmt: skip


def _simulator_entries() -> list[dict]:
    """The data generators: shapes, the planted graph, and a break that respects it."""
    from causal_ts import dfs_subgraph, inject_causal_break, simulate_lorenz96, simulate_var

    sim = {"n_vars": {"type": "int", "bad": [0]}, "T": {"type": "int", "bad": [0]},
           "sd": {"type": "float", "bad": [-0.1, float("nan")]}}  # fmt: skip
    X, G = simulate_var(n_vars=4, T=200, seed=0)
    X2, _ = simulate_var(n_vars=4, T=200, seed=1)
    W = np.stack([X[i : i + 10] for i in range(0, 60, 10)])  # (6, 10, 4) windows

    def _disturb(x, start=None, cutoff_prob=0.1, bias_fraction=0.5, subgraph="dfs"):
        from causal_ts import CausalityDisturbingAugmentor

        aug = CausalityDisturbingAugmentor(G, cutoff_prob=cutoff_prob, bias_fraction=bias_fraction,
                                           subgraph=subgraph, rng=0)  # fmt: skip
        xn, info = aug(x, start=start)
        x = np.asarray(x, dtype=float)
        cells = np.zeros(x.shape[1:], dtype=bool)
        cells[np.ix_(info.steps, info.subgraph)] = True
        d = xn - x
        mags = np.round(np.abs(d[:, cells]), 12)
        ok = bool((d[:, ~cells] == 0).all()) and bool(
            np.isin(mags, np.round(np.abs(aug.bias_candidates), 12)).all()
        )
        return {
            "x_neg": xn,
            "only_on_cells": ok,
            "nodes": info.subgraph.tolist(),
            "steps": info.steps.tolist(),
        }

    def _preserve(x, start=None, noise_level=0.1, noise_step="last_input", per_sample=False):
        from causal_ts import CausalityPreservingAugmentor, VARGrangerDiscoverer

        disc = VARGrangerDiscoverer(lag=2).fit(X)
        aug = CausalityPreservingAugmentor(disc, noise_level=noise_level, noise_step=noise_step,
                                           per_sample=per_sample, rng=0)  # fmt: skip
        out = aug(x, start=start)
        x = np.asarray(x, dtype=float)
        eff = aug._effects[0] if start == 0 else None
        forecast = disc.predict_next(x[:, :-1]) if eff is not None and noise_level == 0 else None
        return {"x_aug": out,
                "exact": None if forecast is None else bool(
                    np.allclose(out[:, -1, eff], forecast[:, eff], atol=1e-12)
                    and np.array_equal(out[:, :-1], x[:, :-1])
                    and np.array_equal(out[:, -1, ~eff], x[:, -1, ~eff]))}  # fmt: skip

    return [
        {"name": "CausalityPreservingAugmentor", "call": _preserve,
         "kwargs": {"x": W, "start": 0}, "arrays": {"x": {"kind": "float", "ndim": 3}},
         "params": {"start": {"type": "int", "bad": [-1, 4]},
                    "noise_level": {"type": "float", "bad": [-0.1, float("nan")]},
                    "noise_step": {"type": "str", "bad": ["first"]}},
         "grid": {"noise_step": ["last"], "per_sample": [True]},
         "known": [{"kwargs": {"x": W, "start": 0, "noise_level": 0.0},
                    "check": lambda r: r["exact"] is True,
                    "why": "without noise only the start variable's effects at the last step "
                           "change, to the discoverer's forecast from the prefix"}]},
        {"name": "simulate_var", "call": lambda n_vars=4, T=200, sd=0.1, lag=3: simulate_var(
            n_vars=n_vars, T=T, sd=sd, lag=lag, seed=0)[0], "kwargs": {},
         "params": {**sim, "lag": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {}, "check": lambda x: x.shape == (200, 4) and bool(
             np.isfinite(x).all()), "why": "T rows, one column per variable"}]},
        {"name": "simulate_lorenz96", "call": lambda n_vars=4, T=200, sd=0.1, F=10.0:
            simulate_lorenz96(n_vars=n_vars, T=T, sd=sd, F=F, burn_in=100, seed=0)[0],
         "kwargs": {}, "params": sim,
         "known": [{"kwargs": {}, "check": lambda x: x.shape == (200, 4),
                    "why": "T rows, one column per variable"}]},
        {"name": "dfs_subgraph", "call": lambda start=0, cutoff_prob=0.1: dfs_subgraph(
            G, start, cutoff_prob, np.random.default_rng(0)), "kwargs": {},
         "params": {"start": {"type": "int", "bad": [-1, 4]},
                    "cutoff_prob": {"type": "float", "bad": [-0.1, 1.5]}},
         "known": [{"kwargs": {}, "check": lambda nodes: 0 in set(np.asarray(nodes).tolist()),
                    "why": "the subgraph contains its start node"}]},
        {"name": "CausalityDisturbingAugmentor", "call": _disturb, "kwargs": {"x": W, "start": 0},
         "arrays": {"x": {"kind": "float", "ndim": 3}},
         "params": {"start": {"type": "int", "bad": [-1, 4]},
                    "cutoff_prob": {"type": "float", "bad": [-0.1, 1.5, float("nan")]},
                    "bias_fraction": {"type": "float", "bad": [0.0, 1.5]},
                    "subgraph": {"type": "str", "bad": ["graph"]}},
         "grid": {"subgraph": ["random", "all"]},
         "known": [{"kwargs": {"x": W, "start": 0}, "check": lambda r: r["only_on_cells"],
                    "why": "x changes only on the disturbed (steps x subgraph) cells, each by one "
                           "of the +-bias candidates"},
                   {"kwargs": {"x": W, "start": 0, "subgraph": "all"},
                    "check": lambda r: r["nodes"] == [0, 1, 2, 3],
                    "why": "subgraph='all' disturbs every variable"}]},
        {"name": "inject_causal_break", "call": lambda X, n_segments=2, length=10:
            inject_causal_break(X, G, X2, n_segments=n_segments, length=length, seed=0)[0],
         "kwargs": {"X": X}, "arrays": {"X": {"kind": "float", "ndim": 2}}, "min_rows": 40,
         "params": {"n_segments": {"type": "int", "bad": [0]}, "length": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {"X": X}, "check": lambda x: x.shape == X.shape,
                    "why": "the series keeps its shape; only the broken segments change"}]},
    ]  # fmt: skip
