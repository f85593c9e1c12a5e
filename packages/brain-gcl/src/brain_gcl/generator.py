"""``make_multisite_connectomes``: multi-site functional connectomes with a planted invariant
circuit, a site-dependent shortcut circuit that reverses on one site, and site circuits.

Each subject's ROI time series follow a factor model ``x_t = L z_t + sigma_s eps_t`` with AR(1)
factors and noise (unit stationary variance); FC is their correlation matrix. Factors: one per
module, an *invariant* factor loaded ``inv_strength * y`` on the invariant ROIs, a *spurious*
factor loaded ``sp_strength * b`` on the spurious ROIs (``b`` agrees with ``y`` at site rate
``rho_s``), and a site factor on a few site-specific ROIs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["BrainGraphDataset", "correlation", "make_multisite_connectomes"]


@dataclass
class BrainGraphDataset:
    """Subjects' connectivity with labels and sites.

    Attributes
    ----------
    fc : ndarray (S, n, n)
        Functional connectivity (correlation) matrices.
    y : ndarray (S,) of {0, 1}
    site : ndarray (S,) of int
    truth : dict
        Generator ground truth: ``inv_rois``, ``sp_rois``, ``invariant_edges`` (n, n) bool,
        ``spurious_edges`` (n, n) bool, ``site_rois`` list, ``b`` (S,) shortcut variable.
    subject_ids : list
    """

    fc: np.ndarray
    y: np.ndarray
    site: np.ndarray
    truth: dict = field(default_factory=dict)
    subject_ids: list = field(default_factory=list)


def correlation(ts: np.ndarray) -> np.ndarray:
    """Pearson correlation matrices (S, n, n) of time series (S, n, T), all subjects at once."""
    xc = ts - ts.mean(axis=-1, keepdims=True)
    sd = np.sqrt((xc**2).sum(axis=-1, keepdims=True))
    xn = np.divide(xc, sd, out=np.zeros_like(xc), where=sd > 0)
    out = xn @ xn.transpose(0, 2, 1)
    idx = np.arange(out.shape[-1])
    out[:, idx, idx] = 1.0
    return np.clip(out, -1.0, 1.0)


def _ar1(rng, shape, T, phi):
    """(..., T) AR(1) series with unit stationary variance, vectorised over the leading dims."""
    out = np.empty((*shape, T))
    out[..., 0] = rng.standard_normal(shape)
    scale = np.sqrt(1 - phi**2)
    for t in range(1, T):  # sequential in time, vectorised over subjects and factors
        out[..., t] = phi * out[..., t - 1] + scale * rng.standard_normal(shape)
    return out


def make_multisite_connectomes(
    n_rois: int = 40,
    n_sites: int = 5,
    subjects_per_site: int = 120,
    n_modules: int = 5,
    inv_size: int = 6,
    sp_size: int = 6,
    site_size: int = 5,
    rho=(0.9, 0.85, 0.9, 0.8, 0.1),
    inv_strength: float = 0.3,
    sp_strength: float = 0.6,
    site_strength: float = 0.3,
    phi: float = 0.3,
    length_range: tuple[int, int] = (100, 200),
    seed: int = 0,
) -> BrainGraphDataset:
    """Generate the multi-site benchmark of spec ``brain-gcl`` §5.1.

    Parameters
    ----------
    rho : sequence of length n_sites
        Per-site agreement rate of the shortcut variable with the label (0.1: reversed site).

    Returns
    -------
    BrainGraphDataset
    """
    for name, v, lo in (("n_rois", n_rois, 4), ("n_sites", n_sites, 1),
                        ("subjects_per_site", subjects_per_site, 2), ("n_modules", n_modules, 1)):  # fmt: skip
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    rho = np.asarray(rho, dtype=float)
    if rho.shape != (n_sites,) or not ((rho >= 0) & (rho <= 1)).all():
        raise ValueError(f"rho must hold {n_sites} rates in [0, 1], got {rho.tolist()}")
    if inv_size + sp_size > n_rois or site_size > n_rois:
        raise ValueError("inv_size + sp_size and site_size must fit in n_rois")
    if not 0 <= phi < 1:
        raise ValueError(f"phi must be in [0, 1), got {phi}")
    lo, hi = length_range
    if not 3 <= lo <= hi:
        raise ValueError(
            f"length_range must be (low, high) with 3 <= low <= high, got {length_range}"
        )
    rng = np.random.default_rng(seed)
    n = n_rois
    module = rng.integers(0, n_modules, size=n)
    perm = rng.permutation(n)
    inv_rois, sp_rois = np.sort(perm[:inv_size]), np.sort(perm[inv_size : inv_size + sp_size])
    site_rois = [np.sort(rng.choice(n, size=site_size, replace=False)) for _ in range(n_sites)]
    base = rng.uniform(0.3, 0.6, size=n)
    fcs, ys, sites, bs = [], [], [], []
    for s in range(n_sites):
        m = subjects_per_site
        pi = rng.uniform(0.35, 0.65)
        y = (rng.uniform(size=m) < pi).astype(int)
        agree = rng.uniform(size=m) < rho[s]
        b = np.where(agree, y, 1 - y)
        T = int(rng.integers(lo, hi + 1))
        sigma = rng.uniform(0.8, 1.2)
        K = n_modules + 3
        L = np.zeros((m, n, K))
        L[:, np.arange(n), module] = base + rng.uniform(-0.1, 0.1, size=(m, n))
        L[:, inv_rois, n_modules] = inv_strength * y[:, None]
        L[:, sp_rois, n_modules + 1] = sp_strength * b[:, None]
        L[:, site_rois[s], n_modules + 2] = site_strength
        z = _ar1(rng, (m, K), T, phi)
        eps = _ar1(rng, (m, n), T, phi)
        x = L @ z + sigma * eps  # (m, n, T)
        fcs.append(correlation(x))
        ys.append(y), sites.append(np.full(m, s)), bs.append(b)
    inv_edges = np.zeros((n, n), bool)
    inv_edges[np.ix_(inv_rois, inv_rois)] = True
    np.fill_diagonal(inv_edges, False)
    sp_edges = np.zeros((n, n), bool)
    sp_edges[np.ix_(sp_rois, sp_rois)] = True
    np.fill_diagonal(sp_edges, False)
    truth = {"inv_rois": inv_rois, "sp_rois": sp_rois, "invariant_edges": inv_edges,
             "spurious_edges": sp_edges, "site_rois": site_rois, "module": module,
             "b": np.concatenate(bs), "rho": rho}  # fmt: skip
    fc = np.concatenate(fcs)
    return BrainGraphDataset(fc, np.concatenate(ys), np.concatenate(sites), truth,
                             [f"sub-{k:04d}" for k in range(len(fc))])  # fmt: skip
