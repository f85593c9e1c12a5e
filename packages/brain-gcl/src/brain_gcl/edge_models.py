"""Edge-vector baselines: scikit-learn classifiers on Fisher-z upper-triangle connectivity."""

from __future__ import annotations

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from brain_gcl.base import check_graphs, check_labels, check_sites

__all__ = ["FCSVM", "FCLogReg", "fisher_z_edges"]


def fisher_z_edges(fc: np.ndarray) -> np.ndarray:
    """arctanh of the upper triangle of each (n, n) matrix: (S, n (n - 1) / 2)."""
    n = fc.shape[1]
    iu, ju = np.triu_indices(n, k=1)
    return np.arctanh(np.clip(fc[:, iu, ju], -0.999999, 0.999999))


class _EdgeClassifier:
    def _make(self):
        raise NotImplementedError

    def get_params(self, deep: bool = True) -> dict:
        return {"C": self.C, "random_state": self.random_state}

    def fit(self, graphs, y, sites=None):
        """Fit on the graphs' connectivity (``graphs.fc``); ``sites`` is accepted and unused."""
        graphs = check_graphs(graphs)
        y = check_labels(y, len(graphs))
        check_sites(sites, y.shape)
        if not self.C > 0:
            raise ValueError(f"C must be positive, got {self.C!r}")
        self.model_ = self._make().fit(fisher_z_edges(graphs.fc), y)
        self.n_rois_ = graphs.n_rois
        self.classes_ = np.array([0, 1])
        return self

    def _features(self, graphs):
        if not hasattr(self, "model_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")
        graphs = check_graphs(graphs)
        if graphs.n_rois != self.n_rois_:
            raise ValueError(f"graphs have {graphs.n_rois} ROIs, expected {self.n_rois_}")
        return fisher_z_edges(graphs.fc)

    def predict_proba(self, graphs) -> np.ndarray:
        features = self._features(graphs)  # first: it says "not fitted" before model_ is read
        return self.model_.predict_proba(features)

    def predict(self, graphs) -> np.ndarray:
        return self.predict_proba(graphs).argmax(axis=1)

    def score(self, graphs, y) -> float:
        return float((self.predict(graphs) == check_labels(y, len(graphs))).mean())


class FCLogReg(_EdgeClassifier):
    """Standardised Fisher-z edges -> L2 logistic regression (C = 0.1)."""

    def __init__(self, C: float = 0.1, random_state: int = 0):
        self.C, self.random_state = C, random_state

    def _make(self):
        return make_pipeline(StandardScaler(), LogisticRegression(C=self.C, max_iter=2000))

    @property
    def coef_matrix_(self) -> np.ndarray:
        """|coefficient| per edge as an (n, n) symmetric matrix (the edge-importance baseline)."""
        w = np.abs(self.model_[-1].coef_[0])
        n = self.n_rois_
        iu, ju = np.triu_indices(n, k=1)
        M = np.zeros((n, n))
        M[iu, ju] = M[ju, iu] = w
        return M


class FCSVM(_EdgeClassifier):
    """Standardised Fisher-z edges -> linear SVM, probabilities by sigmoid calibration (CV)."""

    def __init__(self, C: float = 0.01, random_state: int = 0):
        self.C, self.random_state = C, random_state

    def _make(self):
        svm = SVC(kernel="linear", C=self.C, random_state=self.random_state)
        return make_pipeline(StandardScaler(), CalibratedClassifierCV(svm, ensemble=False))
