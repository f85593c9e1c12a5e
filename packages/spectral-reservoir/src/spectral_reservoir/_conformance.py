"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import numpy as np

from spectral_reservoir import (
    SARCClassifier,
    SARCTransformer,
    extract_periods,
    make_lag_sign,
)


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
    return [
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
            "grid": {"bidirectional": [False], "normalize": ["series", False]},
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
    ]
