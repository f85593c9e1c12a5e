"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import pathlib
import tempfile

import numpy as np

from spectral_reservoir import (
    BiESNModelSpace,
    SARCClassifier,
    SARCClassifierCV,
    SARCTransformer,
    archive_names,
    extract_periods,
    freqres_states,
    hp_filter,
    load_archive,
    load_bundled,
    make_lag_sign,
    make_periodic_motifs,
    make_weights,
    model_space_features,
    states_batch,
    wavelet_components,
)

_TS_HEADER = """@problemName Toy
@timeStamps false
@missing false
@univariate true
@equalLength true
@seriesLength 6
@classLabel true a b
@data
"""


def _write_ts(folder):
    """A UCR archive folder holding Toy/Toy_TRAIN.ts (4 series of length 6, labels a/b)."""
    (folder / "Toy").mkdir()
    rows = [",".join(f"{v:.2f}" for v in np.sin(np.arange(6) + i)) + f":{'ab'[i % 2]}"
            for i in range(4)]  # fmt: skip
    path = folder / "Toy" / "Toy_TRAIN.ts"
    path.write_text(_TS_HEADER + "\n".join(rows) + "\n")
    return path


def _write_tsv(folder):
    """The older UCR 2018 layout: Toy/Toy_TRAIN.tsv, the label first on each row."""
    (folder / "Toy").mkdir()
    rows = [f"{i % 2 + 1}\t" + "\t".join(f"{v:.2f}" for v in np.cos(np.arange(6) + i))
            for i in range(4)]  # fmt: skip
    path = folder / "Toy" / "Toy_TRAIN.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _drop_data_tag(path):
    path.write_text(path.read_text().replace("@data\n", ""))


def _cut_mid_row(path):
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\t")])  # the last row loses its last value


def _read_archive(path):
    return load_archive(path.parent.parent, "Toy", "train")


def _check_ts(out):
    X, y = out
    assert np.asarray(X).shape == (4, 1, 6), np.asarray(X).shape
    assert list(y) == ["a", "b", "a", "b"], list(y)
    np.testing.assert_allclose(np.asarray(X)[1, 0], np.round(np.sin(np.arange(6) + 1), 2))


def _check_tsv(out):
    X, y = out
    assert np.asarray(X).shape == (4, 1, 6), np.asarray(X).shape
    assert y.tolist() == [1, 2, 1, 2], y
    np.testing.assert_allclose(np.asarray(X)[2, 0], np.round(np.cos(np.arange(6) + 2), 2))


_W = None


def _states(X, leaky=0.0):
    global _W
    _W = _W or make_weights(1, [3, 5], n_reservoir=4, rng=0)
    return states_batch(X, _W, leaky=leaky)


def _weights(W_in, W_s, W_c, periods=(3, 5)):
    """States of hand-built weights on a fixed batch (a ReservoirWeights a user assembles)."""
    from spectral_reservoir import ReservoirWeights

    w = ReservoirWeights(W_in, W_s, W_c, np.asarray(periods))
    X = np.cos(np.arange(24.0)).reshape(2, 1, 12)
    return states_batch(X, w)


def _weights_like_make():
    w = make_weights(1, [3, 5], n_reservoir=4, rng=0)
    return w.W_in, w.W_s, w.W_c


_RNG = np.random.default_rng(0)
_FW = (0.5 * _RNG.standard_normal((4, 1)), 0.3 * _RNG.standard_normal((4, 4)),
      0.3 * _RNG.standard_normal((4, 4)))  # fmt: skip


def _msf_example():
    X, _ = make_lag_sign(6, L=24, period=3, seed=2)
    w = make_weights(1, [3, 5], n_reservoir=4, rng=1)
    return X, states_batch(X, w), w.periods


def _msf_by_hand(X, S, periods, ridge, i):
    """Series ``i``: one ridge solve per period on z_t = [eta_{t-1}; eta_{t-p}], then the maxima."""
    out = []
    for j, p in enumerate(periods):
        Z = np.array(
            [np.concatenate([S[i, j, t - 1], S[i, j, t - p]]) for t in range(p, X.shape[2])]
        )
        Y = X[i, :, p:].T
        theta = np.linalg.solve(Z.T @ Z + ridge * np.eye(Z.shape[1]), Z.T @ Y)
        out += [theta.ravel(), S[i, j].max(0)]
    return np.concatenate(out)


def _toy_archive() -> str:
    """A two-problem UCR 2018 layout (``root/<Name>/<Name>_TRAIN.tsv``) and an empty folder."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="sarc_archive_"))
    for name in ("Beta", "Alpha"):
        (root / name).mkdir()
        for split in ("TRAIN", "TEST"):
            (root / name / f"{name}_{split}.tsv").write_text("1\t0.5\t0.25\n2\t0.1\t0.2\n")
    (root / "notes").mkdir()
    return str(root)


def entries() -> list[dict]:
    X, y = make_lag_sign(40, L=60, period=6, seed=0)
    Xt, _ = make_lag_sign(12, L=60, period=6, seed=1)
    init = {"n_reservoir": 4, "period_mode": "base"}
    base_series = SARCClassifier(**init, normalize="series").fit(X, y).predict(Xt)
    arrays = {
        "X": {"kind": "float", "ndim": (2, 3)},
        "y": {"kind": "any", "ndim": 1},
        "predict:X": {"kind": "float", "ndim": (2, 3)},
        "decision_function:X": {"kind": "float", "ndim": (2, 3)},
    }
    params = {
        "n_reservoir": {"type": "int", "bad": [0]},
        "ridge": {"type": "float", "bad": [0.0, -1.0, float("nan")]},
        "leaky": {"type": "float", "bad": [1.0, -0.1]},
        "input_scaling": {"type": "float", "bad": [0.0]},
        "periods": {"bad": [[100], [0]]},
        "period_mode": {"type": "str", "bad": ["spectral"]},
    }
    out = [
        {
            "name": "SARCClassifier",
            "kind": "estimator",
            "cls": SARCClassifier,
            "init": init,
            "not_sklearn": (
                "X is a panel of series (n, C, L); sklearn's checks pass 2-D features, read here "
                "as univariate series of length 1-3; SARCAeonClassifier passes aeon's checks"
            ),
            "fit": {"X": X, "y": y},
            "methods": {"predict": {"X": Xt}, "decision_function": {"X": Xt}},
            "arrays": arrays,
            "rows": [["predict:X"], ["X", "y"]],
            "order": "equivariant",
            "min_rows": {"X": 2},
            "params": params,
            "grid": {
                "bidirectional": [False],
                "period_mode": ["base", "all-50"],
                "period_source": ["first"],
                "normalize": ["offset", "series", False],
            },
            "known": [
                {
                    "kwargs": {"X": X + 1e6},
                    "init": {**init, "normalize": "series"},
                    "check": lambda out: np.array_equal(out["predict"], base_series),
                    "why": "normalize='series': a 1e6 offset on the training series changes no prediction",
                },
            ],
        },
        {
            "name": "BiESNModelSpace",
            "kind": "estimator",
            "cls": BiESNModelSpace,
            "init": init,
            "not_sklearn": "X is a panel of series (n, C, L), as SARCClassifier",
            "fit": {"X": X, "y": y},
            "methods": {"predict": {"X": Xt}, "decision_function": {"X": Xt}},
            "arrays": arrays,
            "rows": [["predict:X"], ["X", "y"]],
            "order": "equivariant",
            "min_rows": {"X": 2},
            "params": {"n_reservoir": {"type": "int", "bad": [0]}},
            "grid": {
                "bidirectional": [False],
                "period_mode": ["base"],
                "period_source": ["first"],
                "normalize": ["series"],
            },
        },
        {
            "name": "SARCClassifierCV",
            "kind": "estimator",
            "cls": SARCClassifierCV,
            "init": {"param_grid": {"ridge": [0.1, 10.0]}, "cv": 2, **init},
            "not_sklearn": "X is a panel of series (n, C, L), as SARCClassifier",
            "fit": {"X": X, "y": y},
            "methods": {"predict": {"X": Xt}},
            "arrays": {k: v for k, v in arrays.items() if not k.startswith("decision")},
            "rows": [["predict:X"], ["X", "y"]],
            "order": "equivariant",
            "min_rows": {"X": 4},
            "params": {"cv": {"type": "int", "bad": [1, 0]}},
            "grid": {"per_fold_transform": [True]},
            "fixed": {
                "param_grid": "'paper' is the paper's full search (too many fits for a contract "
                "run); the example's explicit grid runs the same search code"
            },
        },
        {
            "name": "SARCTransformer",
            "kind": "estimator",
            "cls": SARCTransformer,
            "init": init,
            "not_sklearn": "X is a panel of series (n, C, L), not 2-D features (see SARCClassifier)",
            "fit": {"X": X},
            "methods": {"transform": {"X": Xt}},
            "arrays": {
                "X": {"kind": "float", "ndim": (2, 3)},
                "transform:X": {"kind": "float", "ndim": (2, 3)},
            },
            "rows": [["transform:X"], ["X"]],
            "order": "equivariant",
            "params": {"top_k": {"type": "int", "bad": [0]}},
            "grid": {
                "bidirectional": [False],
                "normalize": ["series", False],
                "period_mode": ["base"],
                "period_source": ["first"],
            },
        },
        {
            "name": "extract_periods",
            "call": extract_periods,
            "kwargs": {"X": X[:10], "mode": "base"},
            "arrays": {"X": {"kind": "float", "ndim": (2, 3)}},
            "rows": [["X"]],
            "params": {"mode": {"type": "str", "bad": ["nope"]}},
            "grid": {"mode": ["extended-100", "all-50"], "wavelet": ["haar", "sym5"]},
        },
        {
            "name": "hp_filter",
            "call": hp_filter,
            "kwargs": {"u": X[:6, 0]},
            "arrays": {"u": {"kind": "float", "ndim": (1, 2)}},
            "rows": [["u"]],
            "order": "equivariant",
            "params": {"lamb": {"type": "float", "bad": [-1.0, float("nan")]}},
            "known": [
                {
                    "kwargs": {"u": np.linspace(0, 1, 20)},
                    "check": lambda out: np.allclose(out[0], 0, atol=1e-8),
                    "why": "a straight line is all trend: its cycle is 0",
                }
            ],
        },
        {
            "name": "wavelet_components",
            "call": wavelet_components,
            "kwargs": {"c": X[:6, 0]},
            "arrays": {"c": {"kind": "float", "ndim": (1, 2)}},
            "rows": [["c"]],
            "order": "equivariant",
            "params": {"wavelet": {"type": "str", "bad": ["nope"]}},
            "grid": {"wavelet": ["haar", "sym5"]},
            "known": [
                {
                    "kwargs": {"c": X[:6, 0]},
                    "check": lambda bands: np.allclose(sum(bands), X[:6, 0], atol=1e-8),
                    "why": "the bands sum to the signal (perfect reconstruction)",
                }
            ],
        },
        {
            "name": "make_weights",
            "call": lambda n_inputs=2, n_reservoir=4, input_scaling=1.0: (
                make_weights(
                    n_inputs, [3, 5], n_reservoir=n_reservoir, input_scaling=input_scaling, rng=0
                ).W_s
            ),
            "kwargs": {},
            "params": {
                "n_inputs": {"type": "int", "bad": [0]},
                "n_reservoir": {"type": "int", "bad": [0]},
                "input_scaling": {"type": "float", "bad": [0.0, float("nan")]},
            },
        },
        {
            "name": "states_batch",
            "call": _states,
            "kwargs": {"X": X[:5, :1]},
            "arrays": {"X": {"kind": "float", "ndim": 3}},
            "rows": [["X"]],
            "order": "equivariant",
            "params": {"leaky": {"type": "float", "bad": [1.0, -0.1]}},
        },
        {
            "name": "ReservoirWeights",
            "call": _weights,
            "kwargs": dict(zip(("W_in", "W_s", "W_c"), _weights_like_make(), strict=True)),
            "arrays": {
                "W_in": {"kind": "float", "ndim": 2},
                "W_s": {"kind": "float", "ndim": 3},
                "W_c": {"kind": "float", "ndim": 4},
            },
            "params": {"periods": {"bad": [(), (0, 5), (3,), (2.5, 5)]}},
            "known": [
                {
                    "kwargs": dict(zip(("W_in", "W_s", "W_c"), _weights_like_make(), strict=True)),
                    "check": lambda S: np.array_equal(
                        S,
                        states_batch(
                            np.cos(np.arange(24.0)).reshape(2, 1, 12),
                            make_weights(1, [3, 5], n_reservoir=4, rng=0),
                        ),
                    ),
                    "why": "the same arrays give make_weights' states",
                },
                {
                    "kwargs": {
                        **dict(zip(("W_in", "W_s", "W_c"), _weights_like_make(), strict=True)),
                        "W_s": np.zeros((3, 4, 4)),
                    },
                    "raises": ["W_s"],
                    "why": "three directions",
                },
            ],
        },
        {
            "name": "archive_names",
            "call": archive_names,
            "kwargs": {"root": _toy_archive()},
            "known": [
                {
                    "kwargs": {"root": _toy_archive()},
                    "check": lambda names: names == ["Alpha", "Beta"],
                    "why": "both problems, sorted; a folder without splits is not a problem",
                },
                {
                    "kwargs": {"root": pathlib.Path(_toy_archive()) / "Alpha"},
                    "raises": ["root"],
                    "check": None,
                    "why": "one problem's folder passed as the archive",
                },
                {"kwargs": {"root": 3}, "raises": ["root"], "check": None, "why": "not a path"},
            ],
        },
        {
            "name": "model_space_features",
            "call": model_space_features,
            "kwargs": dict(zip(("X", "S", "periods"), _msf_example(), strict=True)),
            "arrays": {"X": {"kind": "float", "ndim": 3}, "S": {"kind": "float", "ndim": 4}},
            "rows": [["X", "S"]],
            "order": "equivariant",
            "params": {
                "ridge": {"type": "float", "bad": [0.0, -1.0, float("nan"), float("inf")]},
                "skip_regressor": {"type": "bool", "bad": ["yes"]},
            },
            "grid": {"skip_regressor": [False]},
            "known": [
                {
                    "kwargs": {"ridge": 0.7},
                    "check": lambda F: all(
                        np.allclose(F[i], _msf_by_hand(*_msf_example(), 0.7, i), atol=1e-10)
                        for i in range(6)
                    ),
                    "why": "each series' ridge readout solved by hand (spec section 2.3)",
                },
                {
                    "kwargs": {"periods": np.array([3.0, 5.0])},
                    "raises": ["periods"],
                    "check": None,
                    "why": "fractional-typed periods",
                },
                {
                    "kwargs": {"offsets": np.array([0, 0, 0, 0, 0, 24])},
                    "raises": ["offsets"],
                    "check": None,
                    "why": "an offset past the series",
                },
            ],
        },
        {
            "name": "freqres_states",
            "call": lambda x, period=3, leaky=0.0: freqres_states(x, period, *_FW, leaky=leaky),
            "kwargs": {"x": X[0, :1, :20]},
            "arrays": {"x": {"kind": "float", "ndim": 2}},
            "params": {
                "period": {"type": "int", "bad": [0, -2]},
                "leaky": {"type": "float", "bad": [1.0, -0.1, float("nan")]},
            },
            "known": [
                {
                    "kwargs": {"x": X[0, :1, :20]},
                    "check": lambda h: np.allclose(
                        h, freqres_states(X[0, :1, :20], 3, _FW[0], _FW[1], _FW[2])
                    ),
                    "why": "deterministic reference loop",
                },
                {
                    "kwargs": {"x": np.zeros((1, 20))},
                    "check": lambda h: np.array_equal(h, np.zeros((20, 4))),
                    "why": "a zero input leaves the zero state (tanh(0) = 0, no bias)",
                },
            ],
        },
        {
            "name": "make_periodic_motifs",
            "call": lambda n=10, L=80, noise=0.3: make_periodic_motifs(n, L=L, noise=noise)[0],
            "kwargs": {},
            "params": {
                "n": {"type": "int", "bad": [0]},
                "L": {"type": "int", "bad": [0]},
                "noise": {"type": "float", "bad": [-1.0, float("nan")]},
            },
        },
        {
            "name": "load_bundled",
            "call": load_bundled,
            "kwargs": {"name": "ArrowHead"},
            "params": {
                "name": {"type": "str", "bad": ["NotAProblem"]},
                "split": {"type": "str", "bad": ["valid"]},
            },
            "grid": {"split": ["test"]},
            "known": [
                {
                    "kwargs": {"name": "ArrowHead", "split": "test"},
                    "check": lambda out: np.asarray(out[0]).shape == (175, 1, 251),
                    "why": "ArrowHead's test split as aeon ships it: 175 series of length 251",
                }
            ],
        },
        {
            "name": "load_archive(ts)",
            "kind": "loader",
            "write": _write_ts,
            "read": _read_archive,
            "check": _check_ts,
            # the first line (@problemName) is informational: the "header" corruption of a
            # .ts file is its @data tag
            "corrupt": ["truncate", ("no-data-tag", _drop_data_tag), "empty"],
        },
        {
            "name": "load_archive(tsv)",
            "kind": "loader",
            "write": _write_tsv,
            "read": _read_archive,
            "check": _check_tsv,
            "corrupt": [("cut-mid-row", _cut_mid_row), "header", "empty", "delimiter"],
        },
    ]
    return [
        *out,
        {"name": "make_lag_sign", "call": lambda n=6, L=60, period=6: make_lag_sign(
            n, L=L, period=period, seed=0)[0], "kwargs": {},
         "params": {"n": {"type": "int", "bad": [0]}, "L": {"type": "int", "bad": [0]},
                    "period": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {}, "check": lambda x: x.shape == (6, 1, 60),
                    "why": "n univariate series of length L"}]},
    ]  # fmt: skip
