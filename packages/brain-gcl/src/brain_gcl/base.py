"""Shared estimator plumbing: validation, standardisation, stratified validation split,
mini-batch training with early stopping, prediction, gradient saliency."""

from __future__ import annotations

import copy
import inspect
import numbers
import time

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from brain_gcl.graphs import BrainGraphs

__all__ = ["GraphClassifierBase", "check_graphs", "check_labels", "check_sites"]

# BatchNorm and the contrastive losses need two graphs per step: with batch_size=1 every step
# would be skipped and the model would silently stay at its initialisation
_MIN_BATCH_SIZE = 2


def check_graphs(graphs, name: str = "graphs") -> BrainGraphs:
    if not isinstance(graphs, BrainGraphs):
        raise TypeError(
            f"{name} must be BrainGraphs (see build_graphs), got {type(graphs).__name__}"
        )
    if len(graphs) == 0:
        raise ValueError(f"{name} is empty")
    if not (np.isfinite(graphs.A).all() and np.isfinite(graphs.X).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return graphs


def check_labels(y, n: int, name: str = "y") -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 1 or len(a) != n:
        raise ValueError(f"{name} must be 1-D with {n} entries, got shape {a.shape}")
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.bool_)
                                 or (np.issubdtype(a.dtype, np.floating) and np.all(a == np.round(a)))):  # fmt: skip
        raise TypeError(f"{name} must hold integer labels 0/1, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if not np.isin(a, (0, 1)).all():
        raise ValueError(f"{name} must be binary (0/1); multi-class is out of scope")
    if len(np.unique(a)) < 2:
        raise ValueError(f"{name} has a single class; both classes are needed to fit")
    return a


def check_sites(sites, shape: tuple, name: str = "sites") -> np.ndarray | None:
    """Integer site codes (S,) (names are mapped to codes), or None."""
    if sites is None:
        return None
    sites = np.asarray(sites)
    if sites.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {sites.shape}")
    if sites.dtype.kind == "f" and not np.isfinite(sites).all():
        raise ValueError(f"{name} contains NaN or inf")
    if not np.issubdtype(sites.dtype, np.integer):
        _, sites = np.unique(sites, return_inverse=True)
    return sites.astype(np.int64)


class GraphClassifierBase:
    """``fit(graphs, y, sites=None)``, ``predict_proba``, ``predict``, ``score`` for torch models.

    Subclasses define ``_build(n_rois, d_in) -> nn.Module``, ``_logits(net, X, A)`` (inference
    path) and optionally ``_loss(net, X, A, y, sites, gen) -> (loss, parts)``.
    """

    def _param_names(self):
        sig = inspect.signature(type(self).__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params):
        valid = set(self._param_names())
        for k in params:
            if k not in valid:
                raise ValueError(f"unknown parameter {k!r} for {type(self).__name__}")
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_params().items())})"

    # ------------------------------------------------------------------ hooks
    def _loss(self, net, X, A, y, sites, gen):
        loss = F.cross_entropy(self._logits(net, X, A), y)
        return loss, {"ce": loss.item()}

    def _environments(self, graphs, y, sites):
        """Per-subject environments handed to ``_loss`` as ``env`` (None: not used)."""
        return None

    def _check_params(self):
        for name in ("hidden", "layers", "epochs", "batch_size", "patience"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.batch_size < _MIN_BATCH_SIZE:
            raise ValueError(f"batch_size must be >= {_MIN_BATCH_SIZE}, got {self.batch_size}")
        v = self.val_fraction
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v < 1:
            raise ValueError(f"val_fraction must be in [0, 1), got {v!r}")
        if isinstance(self.random_state, bool) or not isinstance(
            self.random_state, numbers.Integral
        ):
            raise ValueError(f"random_state must be an int, got {self.random_state!r}")
        try:
            torch.device(getattr(self, "device", "cpu"))
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device must name a torch device, got {self.device!r}") from exc
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, numbers.Real)
                or not np.isfinite(v)
                or v < 0
                or (name == "lr" and v == 0)
            ):
                raise ValueError(
                    f"{name} must be a finite {'positive' if name == 'lr' else 'non-negative'} number"
                )

    # ------------------------------------------------------------------ fit
    def _split(self, y, sites, rng):
        """Validation indices stratified by label x site."""
        if self.val_fraction == 0:
            return np.arange(len(y)), np.array([], dtype=int)
        strata = y * (int(sites.max()) + 1) + sites if sites is not None else y
        val = []
        for s in np.unique(strata):
            idx = rng.permutation(np.flatnonzero(strata == s))
            val.extend(idx[: round(self.val_fraction * len(idx))])
        val = np.sort(np.asarray(val, dtype=int))
        return np.setdiff1d(np.arange(len(y)), val), val

    @property
    def _device(self) -> torch.device:
        return torch.device(getattr(self, "device", "cpu"))

    def _tensors(self, graphs: BrainGraphs):
        X = (graphs.X - self.x_mean_) / self.x_std_
        return torch.as_tensor(X, dtype=torch.float32, device=self._device), torch.as_tensor(
            graphs.A, dtype=torch.float32, device=self._device
        )

    def fit(self, graphs, y, sites=None):
        """Train on brain graphs.

        Parameters
        ----------
        graphs : BrainGraphs (S subjects)
        y : array (S,) of {0, 1}
        sites : array (S,) of int, optional
            Acquisition sites (environments); used by the invariant methods and to stratify the
            validation split.

        Returns
        -------
        self
        """
        self._check_params()
        graphs = check_graphs(graphs)
        y = check_labels(y, len(graphs))
        sites = check_sites(sites, y.shape)
        rng = np.random.default_rng(self.random_state)
        tr, va = self._split(y, sites, rng)
        if len(np.unique(y[tr])) < 2:
            raise ValueError("the training split holds a single class")
        Xtr = graphs.X[tr].reshape(-1, graphs.X.shape[2])
        self.x_mean_ = Xtr.mean(axis=0)
        sd = Xtr.std(axis=0)
        self.x_std_ = np.where(sd > 0, sd, 1.0)
        X, A = self._tensors(graphs)
        Y = torch.as_tensor(y, device=self._device)
        St = torch.as_tensor(sites, device=self._device) if sites is not None else None
        env = self._environments(graphs, y, sites)
        Et = torch.as_tensor(env, device=self._device) if env is not None else None
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.random_state)
            gen = torch.Generator().manual_seed(self.random_state)
            # built on the CPU from random_state, trained on the device
            net = self._build(graphs.n_rois, graphs.X.shape[2]).to(self._device)
            opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            best, best_state, stale, hist = np.inf, None, 0, []
            trt = torch.as_tensor(tr)
            bar = tqdm(
                range(self.epochs), desc=type(self).__name__, disable=not self.verbose, leave=False
            )
            for epoch in bar:
                t0 = time.process_time()
                net.train()
                parts_sum, nb = {}, 0
                for idx in trt[torch.randperm(len(tr), generator=gen)].split(int(self.batch_size)):
                    if len(idx) < 2:
                        continue  # BatchNorm needs two graphs
                    kw = {} if Et is None else {"env": Et[idx]}
                    loss, parts = self._loss(net, X[idx], A[idx], Y[idx],
                                             None if St is None else St[idx], gen, **kw)  # fmt: skip
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    for k, v in parts.items():
                        parts_sum[k] = parts_sum.get(k, 0.0) + v
                    nb += 1
                rec = {"epoch": epoch + 1, **{k: v / max(nb, 1) for k, v in parts_sum.items()}}
                if len(va):
                    net.eval()
                    with torch.no_grad():
                        logits = self._logits(net, X[va], A[va])
                        rec["val_loss"] = F.cross_entropy(logits, Y[va]).item()
                        rec["val_acc"] = (logits.argmax(1) == Y[va]).float().mean().item()
                rec["seconds"] = time.process_time() - t0
                hist.append(rec)
                crit = rec.get("val_loss", rec.get("ce", 0.0))
                if crit < best - 1e-6:
                    best, best_state, stale = crit, copy.deepcopy(net.state_dict()), 0
                else:
                    stale += 1
                    if stale >= self.patience:
                        break
            if best_state is not None:
                net.load_state_dict(best_state)
        net.eval()
        self.net_, self.history_, self.n_rois_ = net, hist, graphs.n_rois
        if env is not None:
            self.environments_ = env
        elif hasattr(self, "environments_"):
            del self.environments_  # from an earlier fit with other settings
        self.n_features_ = graphs.X.shape[2]
        self.classes_ = np.array([0, 1])
        return self

    # ------------------------------------------------------------------ predict
    def _check_fitted(self, graphs):
        if not hasattr(self, "net_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")
        graphs = check_graphs(graphs)
        if graphs.n_rois != self.n_rois_ or graphs.X.shape[2] != self.n_features_:
            raise ValueError(
                f"graphs have {graphs.n_rois} ROIs / {graphs.X.shape[2]} features, the model was "
                f"fitted on {self.n_rois_} / {self.n_features_}"
            )
        return graphs

    @torch.no_grad()
    def predict_proba(self, graphs) -> np.ndarray:
        """Class probabilities (m, 2)."""
        graphs = self._check_fitted(graphs)
        X, A = self._tensors(graphs)
        self.net_.eval()
        return torch.softmax(self._logits(self.net_, X, A), dim=1).double().cpu().numpy()

    def predict(self, graphs) -> np.ndarray:
        return self.predict_proba(graphs).argmax(axis=1)

    def score(self, graphs, y) -> float:
        return float((self.predict(graphs) == check_labels(y, len(graphs))).mean())

    def edge_saliency(self, graphs) -> np.ndarray:
        """|d logit(predicted class) / d A_ij|, symmetrised, zero off-graph: (m, n, n)."""
        graphs = self._check_fitted(graphs)
        X, A = self._tensors(graphs)
        A = A.clone().requires_grad_(True)
        self.net_.eval()
        logits = self._logits(self.net_, X, A)
        logits.gather(1, logits.argmax(1, keepdim=True)).sum().backward()
        g = A.grad.abs()
        g = (g + g.transpose(1, 2)) * (A.detach() > 0)
        return g.cpu().numpy()
