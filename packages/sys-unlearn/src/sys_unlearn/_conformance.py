"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import numpy as np
from sklearn.kernel_approximation import RBFSampler

from sys_unlearn import (
    NewtonRemovalLogisticRegression,
    OracleSelectiveSamplingClassifier,
    RetrainingClassifier,
    SelectiveSamplingClassifier,
    SISAClassifier,
    audit_unlearning,
    make_margin_stream,
    memory_bound,
    states_equal,
)

_BINARY_ONLY = {
    # scikit-learn's partial_fit checks call partial_fit(X, y) without ids; this learner keeps
    # no counter of what it has read (a counter would reveal deletions), so it needs them
    "SelectiveSamplingClassifier": {
        c: "partial_fit needs sample_ids: the learner keeps no counter of the points it read "
        "(a counter would reveal deletions), so it cannot number a batch itself"
        for c in (
            "check_fit_score_takes_y",
            "check_n_features_in_after_fitting",
            "check_estimators_partial_fit_n_features",
        )
    },
}


_AUDIT: dict = {}


def _unlearned():
    if "m" not in _AUDIT:
        X, y = make_margin_stream(120, 4, margin=0.05, random_state=2)
        m = SelectiveSamplingClassifier(kappa=0.3).fit(X, y)
        stored = m.stored_ids_[:3]
        _AUDIT.update(m=m.unlearn(stored), X=X, y=y, deleted=stored)
    return _AUDIT


def _audit(X, y, deleted_ids=None):
    a = _unlearned()
    import copy

    return audit_unlearning(copy.deepcopy(a["m"]), X, y,
                            a["deleted"] if deleted_ids is None else deleted_ids)  # fmt: skip


def _states(atol=1e-8, nan=False):
    state = _unlearned()["m"].stored_state()
    other = {k: np.array(v, copy=True) for k, v in state.items()}
    if nan:
        key = next(
            k
            for k, v in other.items()
            if np.asarray(v).dtype.kind == "f" and k not in ("X", "Y", "y")
        )
        other[key] = other[key].astype(float)
        other[key].reshape(-1)[0] = np.nan
    return states_equal(state, other, atol)


def init_keys(cls) -> set[str]:
    import inspect

    return set(inspect.signature(cls).parameters)


def entries() -> list[dict]:
    X, y = make_margin_stream(300, 5, margin=0.05, random_state=0)
    X_test, _ = make_margin_stream(40, 5, margin=0.05, random_state=1)
    arrays = {
        "X": {"kind": "float", "ndim": 2},
        "y": {"kind": "labels", "ndim": (1, 2)},  # a column vector warns, as scikit-learn does
        "predict:X": {"kind": "float", "ndim": 2},
        "decision_function:X": {"kind": "float", "ndim": 2},
    }
    models = [
        (SelectiveSamplingClassifier, {"kappa": 0.3},
         {"kappa": {"type": "float", "bad": [0.0, 1.5, -1.0]},
          "reg": {"type": "float", "bad": [0.0, float("nan")]},
          "horizon": {"type": "int", "bad": [0, -5], "good": 300}}),
        (RetrainingClassifier, {}, {}),
        (SISAClassifier, {"n_shards": 3},
         {"n_shards": {"type": "int", "bad": [0, 10**6]}}),
        (NewtonRemovalLogisticRegression, {"lam": 1e-3},
         {"lam": {"type": "float", "bad": [0.0, -1.0]},
          "delta": {"type": "float", "bad": [0.0, 1.0]}}),
        (OracleSelectiveSamplingClassifier, {"kappa": 0.5},
         {"kappa": {"type": "float", "bad": [0.0, 2.0]},
          "beta": {"type": "float", "bad": [0.0, float("inf")]},
          "horizon": {"type": "int", "bad": [0], "good": 300}}),
    ]  # fmt: skip
    out = []
    a = _unlearned()
    out.append(
        {
            "name": "audit_unlearning",
            "call": _audit,
            "kwargs": {"X": a["X"], "y": a["y"]},
            "arrays": {"X": {"kind": "float", "ndim": 2},
                       "y": {"kind": "labels", "ndim": (1, 2)}},  # a column vector warns
            "rows": [["X", "y"]],
            "min_rows": 2,
            "known": [{"kwargs": {}, "check": lambda r: r.exact and r.deleted_still_stored == 0,
                       "why": "exact unlearning: the state equals a refit without the deletions"}],
        }
    )  # fmt: skip
    out.append(
        {
            "name": "states_equal",
            "call": _states,
            "kwargs": {},
            "fixed": {"nan": "the wrapper's switch for the known case that a NaN state raises"},
            "params": {"atol": {"type": "float", "bad": [-1.0, float("nan")]}},
            "known": [{"kwargs": {}, "check": lambda r: r == (True, 0.0), "why": "a state equals its copy"},
                      {"kwargs": {"nan": True}, "raises": ["a, b"], "why": "a NaN in a stored state"}],
        }
    )  # fmt: skip
    for cls, init, params in models:
        methods = {"predict": {"X": X_test}}
        if hasattr(cls, "decision_function"):
            methods["decision_function"] = {"X": X_test}
        out.append(
            {
                "name": cls.__name__,
                "kind": "estimator",
                "cls": cls,
                "init": init,
                "fit": {"X": X, "y": y},
                "methods": methods,
                "arrays": {
                    k: v for k, v in arrays.items() if k.split(":")[0] in {"X", "y", *methods}
                },
                "rows": [["predict:X"], ["X", "y"]],
                "order": "equivariant",
                "params": params,
                "sklearn": True,
                "expected_failed": _BINARY_ONLY.get(cls.__name__, {}),
                "grid": {"fit_intercept": [False]} if "fit_intercept" in init_keys(cls) else {},
            }
        )
    out.append(
        {
            "name": "OracleSelectiveSamplingClassifier[features]",
            "kind": "estimator",
            "cls": OracleSelectiveSamplingClassifier,
            "init": {"features": RBFSampler(n_components=20, random_state=0), "kappa": 0.5},
            "sklearn": True,
            "fit": {"X": X, "y": y},
            "methods": {"predict": {"X": X_test}, "decision_function": {"X": X_test}},
            "arrays": arrays,
            "rows": [["predict:X"], ["X", "y"]],
            "order": "equivariant",
        }
    )
    out.append(
        {
            "name": "make_margin_stream",
            "call": make_margin_stream,
            "kwargs": {"n_samples": 50, "n_features": 4, "margin": 0.1, "random_state": 0},
            "params": {
                "n_samples": {"type": "int", "bad": [0, -1]},
                "n_features": {"type": "int", "bad": [1]},
                "margin": {"type": "float", "bad": [-0.1, float("nan")]},
                "label_noise": {"type": "float", "bad": [-0.1, 1.5]},
            },
        }
    )
    out.append(
        {
            "name": "memory_bound",
            "call": memory_bound,
            "kwargs": {"n_features": 10, "horizon": 1000, "tau": 0.1, "beta": 1.0, "reg": 1.0},
            "params": {
                "n_features": {"type": "int", "bad": [0]},
                "horizon": {"type": "int", "bad": [0]},
                "tau": {"type": "float", "bad": [0.0, -1.0]},
                "beta": {"type": "float", "bad": [0.0]},
                "reg": {"type": "float", "bad": [0.0]},
            },
        }
    )
    return out
