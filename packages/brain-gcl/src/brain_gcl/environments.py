"""Environments inferred from a reference model's errors, for invariance penalties when the
acquisition sites barely differ (EIIL, Creager et al. 2021; JTT, Liu et al. 2021).

A shortcut that agrees with the label in most subjects of every site gives nearly equal site
risks, so a variance penalty over sites has nothing to act on. The subjects a cross-fitted
reference model gets wrong are mostly those where the shortcut disagrees with the label; with
them as one environment and the rest as the other, a model that leans on the shortcut has very
different risks in the two, and the penalty can see it.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from brain_gcl.base import check_graphs, check_labels
from brain_gcl.edge_models import fisher_z_edges

__all__ = ["infer_environments"]


def infer_environments(graphs, y, n_splits: int = 5, C: float = 0.1, random_state: int = 0):
    """1 where a cross-fitted edge logistic regression misclassifies the subject, else 0.

    Parameters
    ----------
    graphs : BrainGraphs (S subjects)
        Their connectivity ``graphs.fc`` (Fisher-z upper triangle) is the reference model's input.
    y : array (S,) of {0, 1}
    n_splits : int >= 2
        Folds of the cross-fitting: each subject is scored by a model that did not see it.
    C : float > 0
        Inverse L2 strength of the logistic regression.
    random_state : int

    Returns
    -------
    ndarray (S,) of int64 in {0, 1}
    """
    graphs = check_graphs(graphs)
    y = check_labels(y, len(graphs))
    if isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral) or n_splits < 2:
        raise ValueError(f"n_splits must be an int >= 2, got {n_splits!r}")
    if np.bincount(y).min() < n_splits:
        raise ValueError(
            f"n_splits={n_splits} exceeds the smaller class of y ({np.bincount(y).min()} subjects)"
        )
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not np.isfinite(C) or C <= 0:
        raise ValueError(f"C must be a finite positive number, got {C!r}")
    Z = fisher_z_edges(graphs.fc)
    pred = np.empty_like(y)
    folds = StratifiedKFold(n_splits, shuffle=True, random_state=random_state)
    for fit, held in folds.split(Z, y):
        model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
        pred[held] = model.fit(Z[fit], y[fit]).predict(Z[held])
    return (pred != y).astype(np.int64)
