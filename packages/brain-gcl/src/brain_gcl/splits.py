"""The two evaluation protocols: leave-one-site-out and pooled stratified k-fold."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import StratifiedKFold

__all__ = ["cv_splits", "site_splits"]


def site_splits(site, test_site) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, test indices) with every subject of ``test_site`` held out."""
    site = np.asarray(site)
    test = np.flatnonzero(site == test_site)
    if len(test) == 0:
        raise ValueError(f"test_site {test_site!r} has no subject")
    if len(test) == len(site):
        raise ValueError("test_site holds every subject; nothing left to train on")
    return np.flatnonzero(site != test_site), test


def cv_splits(y, site=None, k: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pooled stratified k-fold (strata = label x site when sites are given)."""
    y = np.asarray(y)
    strata = (
        y
        if site is None
        else np.char.add(y.astype(str), np.char.add("_", np.asarray(site).astype(str)))
    )
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(tr, te) for tr, te in skf.split(np.zeros(len(y)), strata)]
