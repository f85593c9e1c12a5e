"""The comparison protocol shared by the demo and the benchmark: fit, then serve deletions."""

import time
from collections.abc import Mapping, Sequence

import numpy as np
from sklearn.base import BaseEstimator, clone

__all__ = ["deletion_experiment", "format_table"]


def deletion_experiment(
    methods: Mapping[str, BaseEstimator],
    X: np.ndarray,
    y: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    delete_ids: np.ndarray,
    *,
    checkpoints: Sequence[int] = (0, 10, 100),
    time_budget: float = 20.0,
) -> list[dict[str, object]]:
    """Fit every method on the stream, then serve single-point deletion requests in order.

    Deletions arrive one id per request, as in the paper's sequential model. After each
    checkpoint (a number of requests served) the test accuracy is recorded. A method whose
    deletions have used ``time_budget`` seconds serves the rest of a checkpoint as one batch, so
    its ``ms/deletion`` is measured on the requests it served one at a time.

    Parameters
    ----------
    methods : mapping of name -> unfitted estimator with ``fit``, ``unlearn``, ``memory_bytes``
    X, y : training stream, shapes (n, d) and (n,)
    X_test, y_test : held-out data
    delete_ids : ndarray of shape (m,)
        Stream ids to delete, in request order (``m >= max(checkpoints)``).
    checkpoints : sequence of int, default=(0, 10, 100)
    time_budget : float, default=20.0
        Seconds of one-at-a-time deletions per method before it switches to batches.

    Returns
    -------
    list of dict
        One row per (method, checkpoint) with keys ``method``, ``deletions``, ``accuracy``,
        ``stored_frac``, ``memory_mb``, ``fit_s``, ``ms_per_deletion``.
    """
    if max(checkpoints) > len(delete_ids):
        raise ValueError(
            f"delete_ids: {len(delete_ids)} ids, but checkpoints go to {max(checkpoints)}"
        )
    rows: list[dict[str, object]] = []
    for name, est in methods.items():
        model = clone(est)
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
        served, spent, timed = 0, 0.0, 0
        for k in sorted(checkpoints):
            while served < k:
                if spent < time_budget:
                    t0 = time.perf_counter()
                    model.unlearn(delete_ids[served : served + 1])
                    spent += time.perf_counter() - t0
                    served, timed = served + 1, timed + 1
                else:
                    model.unlearn(delete_ids[served:k])
                    served = k
            rows.append(
                {
                    "method": name,
                    "deletions": k,
                    "accuracy": float(np.mean(model.predict(X_test) == y_test)),
                    "stored_frac": len(model.stored_ids_) / len(X),
                    "memory_mb": model.memory_bytes() / 2**20,
                    "fit_s": fit_s,
                    "ms_per_deletion": 1e3 * spent / timed if timed else float("nan"),
                }
            )
    return rows


def format_table(rows: Sequence[Mapping[str, object]], reference: str) -> str:
    """Render rows as a text table with time and memory ratios against ``reference``."""
    ref = {r["deletions"]: r for r in rows if r["method"] == reference}
    head = (
        f"{'method':<22}{'dels':>6}{'acc':>8}{'stored':>8}{'mem MB':>9}{'fit s':>8}"
        f"{'ms/del':>10}{'x time':>9}{'x mem':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        base = ref.get(r["deletions"])
        t_ratio = r["ms_per_deletion"] / base["ms_per_deletion"] if base else float("nan")
        m_ratio = r["memory_mb"] / base["memory_mb"] if base and base["memory_mb"] else float("nan")
        lines.append(
            f"{r['method']:<22}{r['deletions']:>6}{r['accuracy']:>8.3f}{r['stored_frac']:>8.3f}"
            f"{r['memory_mb']:>9.2f}{r['fit_s']:>8.2f}{r['ms_per_deletion']:>10.2f}"
            f"{t_ratio:>9.2f}{m_ratio:>8.3f}"
        )
    return "\n".join(lines)
