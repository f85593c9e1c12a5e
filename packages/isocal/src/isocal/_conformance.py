"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()`` and holds every entry
to one contract (named errors for bad input, no mutation, determinism, pickling).
"""

from __future__ import annotations

import numpy as np

from isocal import (
    CalibratedClassifier,
    DirichletCalibrator,
    FIRCalibrator,
    HistogramBinningCalibrator,
    MatrixScaling,
    NAFIRCalibrator,
    OvRIsotonicCalibrator,
    SCIRCalibrator,
    TemperatureScaling,
    VectorScaling,
    accuracy,
    adaptive_ece,
    brier_score,
    classwise_ece,
    isotonic_regression_rank2d,
    log_loss,
    normalized_isotonic_logloss,
    sorted_cumulative,
    tie_groups,
    top_label_ece,
)


def _probs(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    P = np.exp(logits - logits.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=p) for p in P])
    y[:k] = np.arange(k)  # every class present
    return P, y


def entries() -> list[dict]:
    P, y = _probs(40, 3, 0)
    P_test, _ = _probs(12, 3, 1)
    fit_arrays = {
        "probs": {"kind": "float", "ndim": 2},
        "y": {"kind": "labels", "ndim": 1},
    }
    calibrators = [
        (
            NAFIRCalibrator,
            {"max_iter": 50},
            {
                "max_iter": {"type": "int", "bad": [0, -3]},
                "prior_count": {"type": "float", "bad": [-1.0]},
            },
        ),
        (
            SCIRCalibrator,
            {},
            {
                "max_bins": {"type": "int", "bad": [0, 1]},
                "prior_count": {"type": "float", "bad": [-1.0]},
            },
        ),
        (FIRCalibrator, {}, {"sum_tol": {"type": "float", "bad": [-1e-3]}}),
        (OvRIsotonicCalibrator, {}, {"min_prob": {"type": "float", "bad": [-0.1, 1.5]}}),
        (TemperatureScaling, {}, {"inputs": {"type": "str", "bad": ["probabilities"]}}),
        (VectorScaling, {"max_iter": 50}, {"max_iter": {"type": "int", "bad": [0]}}),
        (MatrixScaling, {"max_iter": 50}, {"l2": {"type": "float", "bad": [-1.0]}}),
        (DirichletCalibrator, {}, {"reg_lambda": {"type": "float", "bad": [-1.0]}}),
        (
            HistogramBinningCalibrator,
            {},
            {"n_bins": {"type": "int", "bad": [0]}, "strategy": {"type": "str", "bad": ["kmeans"]}},
        ),
    ]
    out: list[dict] = []
    for cls, init, params in calibrators:
        out.append(
            {
                "name": cls.__name__,
                "kind": "estimator",
                "cls": cls,
                "init": init,
                "fit": {"probs": P, "y": y},
                "not_sklearn": (
                    "fit(probs, y) takes a probability matrix (rows on the simplex), which "
                    "sklearn's checks never generate; CalibratedClassifier, which wraps each "
                    "calibrator around a classifier on features, runs the checks"
                ),
                "methods": {"predict_proba": {"probs": P_test}, "predict": {"probs": P_test}},
                "arrays": {
                    **fit_arrays,
                    "predict_proba:probs": {"kind": "float", "ndim": 2},
                    "predict:probs": {"kind": "float", "ndim": 2},
                },
                "rows": [["predict_proba:probs"], ["probs", "y"]],
                "order": "equivariant",
                "params": params,
                "grid": {"inputs": ["logits"]}
                if cls in (TemperatureScaling, VectorScaling, MatrixScaling)
                else {"strategy": ["quantile"]}
                if cls is HistogramBinningCalibrator
                else {},
            }
        )
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    labels = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 2] > 0.8)
    for method in ("nafir", "scir", "temperature"):
        out.append(
            {
                "name": f"CalibratedClassifier[{method}]",
                "kind": "estimator",
                "cls": CalibratedClassifier,
                "init": {"method": method, "cv": 3},
                "fit": {"X": X, "y": labels},
                "methods": {"predict_proba": {"X": X[:15]}, "predict": {"X": X[:15]}},
                "arrays": {
                    "X": {"kind": "float", "ndim": 2},
                    "y": {
                        "kind": "any",
                        "ndim": (1, 2),
                    },  # a column vector: sklearn warns, as its checks require
                    "predict_proba:X": {"kind": "float", "ndim": 2},
                },
                "rows": [["predict_proba:X"], ["X", "y"]],
                "order": "equivariant",
                "params": {
                    "cv": {"type": "int", "bad": [1, 0]},
                    "method": {"type": "str", "bad": ["sigmoid-ish"]},
                },
                "sklearn": True,
                "grid": {"ensemble": [False]},
                "fixed": {"method": "one entry per method (nafir, scir, temperature)"},
                "expected_failed": {}
                if method != "nafir"
                else {
                    f"check_sample_weight_equivalence_on_{kind}_data": (
                        "cross-fitting: a sample of weight 2 and two copies of it fall into "
                        "different folds, so the fits differ (scikit-learn's "
                        "CalibratedClassifierCV has the same property)"
                    )
                    for kind in ("dense", "sparse")
                },
            }
        )
    default = dict(out[-3])  # the nafir entry at the default cv=5
    default.update(
        name="CalibratedClassifier[default]",
        init={},
        expected_failed={
            **default["expected_failed"],
            "check_fit2d_1feature": (
                "its 10 samples give some class fewer than the default cv=5 folds, so fit "
                "raises the fold-count ValueError, which the check does not accept (scikit-learn "
                "runs CalibratedClassifierCV's checks at cv=3 for the same reason)"
            ),
        },
    )
    out.append(default)
    metrics = [log_loss, brier_score]
    for fn in metrics:
        out.append(
            {
                "name": fn.__name__,
                "call": fn,
                "kwargs": {"y": y, "probs": P},
                "arrays": fit_arrays,
                "rows": [["y", "probs"]],
                "order": "invariant",
            }
        )
    for fn in (top_label_ece, classwise_ece, adaptive_ece):
        out.append(
            {
                "name": fn.__name__,
                "call": fn,
                "kwargs": {"y": y, "probs": P, "n_bins": 5},
                "arrays": fit_arrays,
                "rows": [["y", "probs"]],
                "params": {"n_bins": {"type": "int", "bad": [0, -1]}},
                "order": "invariant" if fn is not adaptive_ece else None,
            }
        )
    out.append(
        {
            "name": "accuracy",
            "call": accuracy,
            "kwargs": {"y": y, "probs": P},
            "arrays": fit_arrays,
            "rows": [["y", "probs"]],
            "order": "invariant",
            "known": [
                {
                    "kwargs": {"y": np.array([0, 1]), "probs": np.array([[0.9, 0.1], [0.7, 0.3]])},
                    "check": lambda a: a == 0.5,
                    "why": "one of two argmax predictions right",
                }
            ],
        }
    )
    out.append(
        {
            "name": "sorted_cumulative",
            "call": lambda P: sorted_cumulative(P),
            "kwargs": {"P": P},
            "arrays": {"P": {"kind": "float", "ndim": 2}},
            "rows": [["P"]],
            "order": "equivariant",
            "known": [
                {
                    "kwargs": {"P": np.array([[0.2, 0.5, 0.3]])},
                    "check": lambda out: (
                        out[0].tolist() == [[1, 2, 0]] and np.allclose(out[1], [[0.5, 0.8, 1.0]])
                    ),
                    "why": "ranks by decreasing probability and their running sums",
                }
            ],
        }
    )
    out.append(
        {
            "name": "tie_groups",
            "call": tie_groups,
            "kwargs": {"sorted_P": -np.sort(-P, axis=1)},
            "arrays": {"sorted_P": {"kind": "float", "ndim": 2}},
            "rows": [["sorted_P"]],
            "order": "equivariant",
            "known": [
                {
                    "kwargs": {"sorted_P": np.array([[0.4, 0.3, 0.3]])},
                    "check": lambda out: (
                        out[0].tolist() == [[0, 1, 1]] and out[1].tolist() == [[0, 2, 2]]
                    ),
                    "why": "ranks 1 and 2 tie",
                },
                {
                    "kwargs": {"sorted_P": np.array([[0.2, 0.5, 0.3]])},
                    "raises": ["sorted_P"],
                    "why": "a row that is not sorted in decreasing order",
                },
            ],
        }
    )
    rank = rng_rank = np.random.default_rng(3).integers(0, 3, 30)
    value = np.random.default_rng(4).random(30)
    target = (value + 0.3 * rank > 0.8).astype(float)
    out.append(
        {
            "name": "isotonic_regression_rank2d",
            "call": isotonic_regression_rank2d,
            "kwargs": {"rank": rng_rank, "value": value, "y": target},
            "arrays": {"rank": {"kind": "labels", "ndim": 1}, "value": {"kind": "float", "ndim": 1},
                       "y": {"kind": "float", "ndim": 1}},
            "rows": [["rank", "value", "y"]],
            "order": "equivariant",
            "known": [
                {
                    "kwargs": {"rank": np.zeros(3, int), "value": np.array([0.1, 0.2, 0.3]),
                               "y": np.array([1.0, 0.0, 2.0])},
                    "check": lambda g: np.allclose(g, [0.5, 0.5, 2.0]),
                    "why": "one rank: 1-D isotonic regression (pool the violating pair)",
                }
            ],
        }
    )  # fmt: skip
    out.append(
        {
            "name": "normalized_isotonic_logloss",
            "call": lambda P, y, max_iter=50: normalized_isotonic_logloss(P, y, max_iter=max_iter)[
                0
            ],
            "kwargs": {"P": P, "y": y},
            "arrays": {"P": {"kind": "float", "ndim": 2}, "y": {"kind": "labels", "ndim": 1}},
            "rows": [["P", "y"]],
            "params": {"max_iter": {"type": "int", "bad": [0]}},
        }
    )
    return [*out, *_helper_entries(P, y)]


def _diagram_points(y, probs):
    """The reliability curve reliability_diagram draws (its lines' data), figure closed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from isocal import reliability_diagram

    ax = reliability_diagram(y, probs)
    pts = np.concatenate([np.asarray(line.get_xydata(), float).ravel() for line in ax.lines])
    plt.close(ax.figure)
    return pts


def _helper_entries(P, y) -> list[dict]:
    """The synthetic miscalibrated problem and the reliability diagram."""
    from isocal import make_miscalibrated

    return [
        {"name": "make_miscalibrated", "call": lambda n_samples=50, n_classes=3, temperature=2.0:
            make_miscalibrated(n_samples, n_classes, temperature, random_state=0)[0],
         "kwargs": {},
         "params": {"n_samples": {"type": "int", "bad": [0]},
                    "n_classes": {"type": "int", "bad": [1]},
                    "temperature": {"type": "float", "bad": [0.0, float("nan")]}},
         "known": [{"kwargs": {}, "check": lambda p: p.shape == (50, 3) and bool(
             np.allclose(p.sum(1), 1.0)), "why": "rows on the simplex"}]},
        {"name": "reliability_diagram", "call": _diagram_points,
         "kwargs": {"y": y, "probs": P},
         "arrays": {"y": {"kind": "labels", "ndim": 1}, "probs": {"kind": "float", "ndim": 2}},
         "rows": [["y", "probs"]], "order": "invariant"},
    ]  # fmt: skip
