"""CAROTS: causality-aware contrastive anomaly detection (paper method section, Fig. 1).

Pipeline of :meth:`CAROTS.fit` on a normal series:

1. standardise with the training mean/std; keep the last ``val_fraction`` as validation;
2. fit the causal discoverer (graph + one-step forecaster) and freeze it;
3. contrastive training: per mini-batch of B windows (G1), build G2 = CPA(G1),
   [G3; G4] = CDA([G1; G2]), encode all 4B windows and minimise the SOC loss with the
   similarity threshold scheduled per epoch; keep the epoch with the lowest validation loss;
4. centroid of the projections of all training windows and their CPA copies.

Anomaly score of a window: distance of its projection to the centroid (s_CL) plus the
forecaster's squared error on the last step (s_CD), each standardised with its mean/std on
the training windows.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from sklearn.base import clone
from tqdm.auto import tqdm

from causal_ts._validation import check_fraction, check_int, check_positive
from causal_ts.augment import CausalityDisturbingAugmentor, CausalityPreservingAugmentor
from causal_ts.base import BaseWindowDetector
from causal_ts.data import sliding_windows
from causal_ts.discovery import (
    GivenGraphDiscoverer,
    VARGrangerDiscoverer,
    reduce_windows,
    step_errors,
)
from causal_ts.encoders import ENCODERS, ContrastiveNet
from causal_ts.losses import alpha_schedule, soc_loss
from causal_ts.neural_discovery import NeuralGrangerDiscoverer

__all__ = ["CAROTS", "PlainOneClassContrastive"]


def _check_alpha(alpha: Any) -> float | tuple[float, float]:
    if isinstance(alpha, tuple | list):
        if len(alpha) != 2:
            raise ValueError(f"alpha must be a float or a (start, end) pair; got {alpha!r}")
        a = tuple(float(v) for v in alpha)
        if not all(-1 <= v <= 1 for v in a):
            raise ValueError(f"alpha values must lie in [-1, 1]; got {alpha!r}")
        return a  # type: ignore[return-value]
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise TypeError(f"alpha must be a float or a (start, end) pair; got {alpha!r}")
    if not -1 <= alpha <= 1:
        raise ValueError(f"alpha must lie in [-1, 1] (-1 disables filtering); got {alpha}")
    return float(alpha)


@contextmanager
def _limit_threads(n_jobs: int | None) -> Iterator[None]:
    """Temporarily cap torch and BLAS threads (restored on exit); None changes nothing."""
    if n_jobs is None:
        yield
        return
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    old = torch.get_num_threads()
    torch.set_num_threads(n_jobs)
    try:
        with threadpool_limits(n_jobs):
            yield
    finally:
        torch.set_num_threads(old)


class CAROTS(BaseWindowDetector):
    """Causality-aware contrastive anomaly detector for multivariate time series.

    Parameters
    ----------
    window : int, default=10
        Window length W.
    discoverer : "var", "neural" or discoverer instance, default="var"
        ``"var"``: :class:`~causal_ts.discovery.VARGrangerDiscoverer` with lag
        ``min(3, W - 1)``; ``"neural"``:
        :class:`~causal_ts.neural_discovery.NeuralGrangerDiscoverer` (CUTS+-style, slower). An instance (e.g. ``GivenGraphDiscoverer(true_graph)``) is cloned
        and fit on the standardised training part; its ``lag`` must be < W.
    encoder : {"lstm", "gru", "mlp"}, default="lstm"
    hidden_dim, proj_dim : int, default=64
        Encoder width H and projection size D.
    epochs : int, default=10
    batch_size : int, default=64
        B original windows per step (4B windows are encoded).
    lr, weight_decay : float, default=1e-3, 0.0
        Adam; cosine decay after ``warmup_epochs`` linear warm-up epochs.
    warmup_epochs : int, default=1
    patience : int or None, default=None
        Early stopping (an option of this package; the paper trains a fixed ``epochs``): stop
        once the validation loss has not improved for ``patience`` epochs; the best epoch's
        weights are kept as always and the learning-rate schedule is still planned over
        ``epochs``. None trains every epoch; ignored without a validation tail.
    grad_clip : float, default=0.5
        Gradient-norm clip (0 disables).
    temperature : float, default=0.1
    alpha : float or (float, float), default=(0.5, 0.9)
        SOC similarity threshold: fixed, or a linear per-epoch schedule; -1 disables the filter.
    noise_level : float, default=0.1
        CPA noise std (standardised units).
    noise_step : {"last_input", "last"}, default="last_input"
    bias_candidates : tuple of float, default=(0.5, 1.0, 1.5, 2.0, 2.5)
        Disturbance magnitudes, in units of ``bias_unit``.
    bias_unit : {"residual", "standardized"}, default="residual"
        ``"residual"``: each variable's one-step forecast residual std on the training data
        (its innovation scale); ``"standardized"``: the standardised data's unit, as the
        official code (whose candidates are 0.1..0.5). On our N = 10 systems the official
        biases sit below the one-step noise (0.13-0.64 residual std on VAR) and the contrastive
        stage collapses to identical embeddings (loss = log(1 + 2B)); a disturbance has to be
        visible against the innovations to define a learnable negative.
    bias_fraction : float, default=0.5
    cutoff_prob : float, default=0.1
        CDA depth-first-search cut probability.
    use_cpa : bool, default=True
        False: positives are G1 only (ablation).
    use_cda : bool, default=True
        False: negatives disturb random variable subsets instead of causal subgraphs.
    score : {"combined", "cl", "cd"}, default="combined"
    combine : {"sum", "validated"}, default="sum"
        How the combined score weighs its halves. ``"sum"`` (the paper): z_CL + z_CD, each
        standardised on the training windows. ``"validated"`` (an option of this package, not
        the paper's): both halves standardised on the held-out validation tail, and the weight
        w in {0, 0.1, ..., 1} of 2 (w z_CL + (1 - w) z_CD) chosen to best separate the tail's
        windows from CDA-disturbed copies of them (the method's own anomaly model; window
        AUROC, ties to 0.5); without a validation tail it falls back to ``"sum"``.
    score_type : {"l2", "cos"}, default="l2"
        Distance to the centroid for s_CL.
    cd_reduce : {"max", "mean", "last"}, default="max"
        How s_CD covers the window: the max or mean over the window's steps of the one-step
        forecast error (each step predicted from its ``lag`` predecessors), or the last step
        only (the official code). Window labels mark every window containing an anomalous
        step, so a last-step score misses windows whose anomaly is not at the end.
    val_fraction : float, default=0.2
        Tail of the training series used for checkpoint selection.
    contamination : float, default=0.01
        Sets ``threshold_`` for :meth:`predict`.
    nan_policy : {"raise", "ffill"}, default="raise"
    random_state : int or None, default=0
    device : str, default="cpu"
    n_jobs : int or None, default=1
        torch intra-op and BLAS threads while fitting/scoring (restored afterwards); None
        keeps the current settings. Small nets and small VARs run fastest single-threaded on
        a busy CPU.
    verbose : bool, default=False
        Show a tqdm bar over epochs.

    Attributes
    ----------
    discoverer_ : fitted discoverer
    causal_graph_ : numpy.ndarray of shape (N, N), bool
        ``causal_graph_[c, e]`` = c causes e (row = cause).
    net_ : ContrastiveNet
        Encoder + projector (eval mode, best validation epoch).
    centroid_ : numpy.ndarray of shape (D,)
    score_stats_ : dict
        Mean/std of s_CL and s_CD on the training windows (on the validation tail with
        ``combine="validated"``).
    combine_weights_ : (float, float)
        Weights of z_CL and z_CD in the combined score ((0.5, 0.5) for ``combine="sum"``).
    combine_auroc_ : dict
        ``combine="validated"``: each candidate w's AUROC of held-out windows vs their CDA
        copies (empty otherwise).
    history_ : list of dict
        Per epoch trained: ``epoch``, ``alpha``, ``train_loss``, ``val_loss``, ``unfiltered_ratio``.
    best_epoch_ : int
    collapse_ratio_ : float
        Final training SOC loss over ``log(1 + 2B)``, its value for identical embeddings (a
        warning is raised above 0.95).
    decision_scores_, threshold_, labels_, mean_, scale_, n_features_in_ : see
        :class:`~causal_ts.base.BaseWindowDetector`.

    Examples
    --------
    >>> from causal_ts import CAROTS, make_var
    >>> d = make_var(n_vars=5, n_train=600, n_test=400, seed=0)
    >>> det = CAROTS(window=8, epochs=1, encoder="mlp").fit(d.X_train)
    >>> det.decision_function(d.X_test).shape
    (393,)
    """

    def __init__(
        self,
        window: int = 10,
        discoverer: Any = "var",
        encoder: str = "lstm",
        hidden_dim: int = 64,
        proj_dim: int = 64,
        epochs: int = 10,
        batch_size: int = 64,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        warmup_epochs: int = 1,
        patience: int | None = None,
        grad_clip: float = 0.5,
        temperature: float = 0.1,
        alpha: float | tuple[float, float] = (0.5, 0.9),
        noise_level: float = 0.1,
        noise_step: str = "last_input",
        bias_candidates: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 2.5),
        bias_unit: str = "residual",
        bias_fraction: float = 0.5,
        cutoff_prob: float = 0.1,
        use_cpa: bool = True,
        use_cda: bool = True,
        score: str = "combined",
        combine: str = "sum",
        score_type: str = "l2",
        cd_reduce: str = "max",
        val_fraction: float = 0.2,
        contamination: float = 0.01,
        nan_policy: str = "raise",
        random_state: int | None = 0,
        device: str = "cpu",
        n_jobs: int | None = 1,
        verbose: bool = False,
    ) -> None:
        self.window = window
        self.discoverer = discoverer
        self.encoder = encoder
        self.hidden_dim = hidden_dim
        self.proj_dim = proj_dim
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.warmup_epochs = warmup_epochs
        self.patience = patience
        self.grad_clip = grad_clip
        self.temperature = temperature
        self.alpha = alpha
        self.noise_level = noise_level
        self.noise_step = noise_step
        self.bias_candidates = bias_candidates
        self.bias_unit = bias_unit
        self.bias_fraction = bias_fraction
        self.cutoff_prob = cutoff_prob
        self.use_cpa = use_cpa
        self.use_cda = use_cda
        self.score = score
        self.combine = combine
        self.score_type = score_type
        self.cd_reduce = cd_reduce
        self.val_fraction = val_fraction
        self.contamination = contamination
        self.nan_policy = nan_policy
        self.random_state = random_state
        self.device = device
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------- config
    def _make_discoverer(self, n_vars: int) -> Any:
        if isinstance(self.discoverer, str):
            lag = min(3, self.window - 1)
            if self.discoverer == "var":
                return VARGrangerDiscoverer(lag=lag)
            if self.discoverer == "neural":
                return NeuralGrangerDiscoverer(lag=lag, random_state=self.random_state)
            raise ValueError(
                "discoverer must be 'var', 'neural' or a discoverer instance; "
                f"got {self.discoverer!r}"
            )
        if not hasattr(self.discoverer, "fit"):
            raise TypeError("discoverer must be 'var' or an object with fit/predict_next")
        disc = clone(self.discoverer)
        if getattr(disc, "lag", 1) >= self.window:
            raise ValueError(f"window={self.window} must exceed the discoverer's lag ({disc.lag})")
        return disc

    def _check_params(self) -> None:
        for name in ("hidden_dim", "proj_dim", "epochs"):
            check_int(getattr(self, name), name, low=1)
        check_int(self.batch_size, "batch_size", low=2)
        check_int(self.warmup_epochs, "warmup_epochs", low=0)
        if self.patience is not None:
            check_int(self.patience, "patience", low=1)
        check_positive(self.lr, "lr")
        check_positive(self.weight_decay, "weight_decay", allow_zero=True)
        check_positive(self.grad_clip, "grad_clip", allow_zero=True)
        check_positive(self.temperature, "temperature")
        check_positive(self.noise_level, "noise_level", allow_zero=True)
        check_fraction(self.val_fraction, "val_fraction", high_open=True)
        _check_alpha(self.alpha)
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}; got {self.encoder!r}")
        if self.score not in ("combined", "cl", "cd"):
            raise ValueError(f"score must be 'combined', 'cl' or 'cd'; got {self.score!r}")
        if self.combine not in ("sum", "validated"):
            raise ValueError(f"combine must be 'sum' or 'validated'; got {self.combine!r}")
        if self.bias_unit not in ("residual", "standardized"):
            raise ValueError(
                f"bias_unit must be 'residual' or 'standardized'; got {self.bias_unit!r}"
            )
        if self.cd_reduce not in ("max", "mean", "last"):
            raise ValueError(f"cd_reduce must be 'max', 'mean' or 'last'; got {self.cd_reduce!r}")
        if self.score_type not in ("l2", "cos"):
            raise ValueError(f"score_type must be 'l2' or 'cos'; got {self.score_type!r}")
        if self.random_state is not None:
            check_int(self.random_state, "random_state", low=0)
        if self.n_jobs is not None:
            check_int(self.n_jobs, "n_jobs", low=1)

    def _variant(self) -> tuple[str, bool, str]:
        """(score mode, use CPA, CDA subgraph mode) of this detector."""
        return self.score, bool(self.use_cpa), "dfs" if self.use_cda else "random"

    # ------------------------------------------------------------ training
    def _fit(self, Xs: np.ndarray) -> None:
        self._check_params()
        with _limit_threads(self.n_jobs):
            self._fit_impl(Xs)

    def _fit_impl(self, Xs: np.ndarray) -> None:
        self._score_mode, self._use_cpa, subgraph = self._variant()
        T, N = Xs.shape
        W = self.window
        n_val = round(self.val_fraction * T)
        if n_val < W + 1:
            n_val = 0  # too short to hold validation windows: train on everything
        X_tr, X_val = Xs[: T - n_val], Xs[T - n_val :]
        if X_tr.shape[0] < W + 1:
            raise ValueError(
                f"X is too short: {X_tr.shape[0]} training steps after the validation split; "
                f"need more than window={W}"
            )
        rng = np.random.default_rng(self.random_state)
        torch_seed = int(rng.integers(2**31 - 1))
        self.discoverer_ = self._make_discoverer(N).fit(X_tr)
        self.causal_graph_ = np.asarray(self.discoverer_.graph_, dtype=bool).copy()
        self._cpa = CausalityPreservingAugmentor(
            self.discoverer_, self.noise_level, self.noise_step, rng=rng
        )
        train_w = sliding_windows(X_tr, W).astype(np.float32)
        resid = train_w[:, -1].astype(np.float64) - self.discoverer_.predict_next(
            train_w[:, :-1].astype(np.float64)
        )
        self.residual_std_ = np.maximum(resid.std(axis=0), 1e-6)
        unit = self.bias_unit
        self._cda = CausalityDisturbingAugmentor(
            self.causal_graph_,
            self.cutoff_prob,
            self.bias_candidates,
            self.bias_fraction,
            subgraph,
            rng,
            scale=self.residual_std_ if unit == "residual" else None,
        )
        val_w = sliding_windows(X_val, W).astype(np.float32) if n_val else None
        dev = torch.device(self.device)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            self._train(train_w, val_w, rng, dev)
        self.net_.eval()
        all_w = sliding_windows(Xs, W).astype(np.float32)
        pos = np.concatenate([all_w, self._augment_pos(all_w)]) if self._use_cpa else all_w
        self.centroid_ = self._embed(pos).mean(axis=0)
        validated = self.combine == "validated" and val_w is not None and len(val_w) >= 2
        if self.combine == "validated" and not validated:
            warnings.warn(
                "combine='validated' needs a validation tail longer than the window; "
                "using the paper's sum",
                UserWarning,
                stacklevel=3,
            )
        s_cl, s_cd = self._raw_scores(val_w, X_val) if validated else self._raw_scores(all_w, Xs)
        self.score_stats_ = {
            "cl_mean": float(s_cl.mean()),
            "cl_std": float(max(s_cl.std(), 1e-12)),
            "cd_mean": float(s_cd.mean()),
            "cd_std": float(max(s_cd.std(), 1e-12)),
        }
        self.combine_weights_ = (0.5, 0.5)
        self.combine_auroc_: dict[float, float] = {}
        if validated:
            self.combine_weights_, self.combine_auroc_ = self._validate_weights(val_w, rng)

    def _augment_pos(self, g1: np.ndarray) -> np.ndarray:
        return self._cpa(g1).astype(np.float32)

    def _batch(self, g1: np.ndarray) -> np.ndarray:
        """[G1; G2; G3; G4] (or [G1; CDA(G1)] without CPA) for one mini-batch."""
        pos = np.concatenate([g1, self._augment_pos(g1)]) if self._use_cpa else g1
        neg, _ = self._cda(pos)
        return np.concatenate([pos, neg.astype(np.float32)])

    def _train(
        self,
        train_w: np.ndarray,
        val_w: np.ndarray | None,
        rng: np.random.Generator,
        dev: torch.device,
    ) -> None:
        N, W = train_w.shape[2], train_w.shape[1]
        net = ContrastiveNet(N, W, self.hidden_dim, self.proj_dim, self.encoder).to(dev)
        opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        B = min(self.batch_size, train_w.shape[0])
        if B < 2:
            raise ValueError("X is too short: fewer than 2 training windows")
        steps_per_epoch = train_w.shape[0] // B
        total = steps_per_epoch * self.epochs
        warm = steps_per_epoch * self.warmup_epochs

        def lr_factor(step: int) -> float:
            if step < warm:
                return (step + 1) / warm
            return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(total - warm, 1)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
        tau = float(self.temperature)
        alpha = _check_alpha(self.alpha)
        val_seed = int(rng.integers(2**31 - 1))
        self.history_: list[dict[str, float]] = []
        best, best_state, self.best_epoch_ = math.inf, None, self.epochs - 1
        for epoch in tqdm(range(self.epochs), disable=not self.verbose, desc="CAROTS"):
            a = alpha_schedule(alpha, epoch, self.epochs)
            net.train()
            order = rng.permutation(train_w.shape[0])
            losses, ratios = [], []
            for k in range(steps_per_epoch):
                batch = self._batch(train_w[order[k * B : (k + 1) * B]])
                z = net(torch.from_numpy(batch).to(dev))
                loss, stats = soc_loss(z, a, tau)
                opt.zero_grad()
                loss.backward()
                if self.grad_clip > 0:
                    torch.nn.utils.clip_grad_norm_(net.parameters(), self.grad_clip)
                opt.step()
                sched.step()
                losses.append(loss.item())
                ratios.append(stats.unfiltered_ratio)
            record = {
                "epoch": epoch,
                "alpha": a,
                "train_loss": float(np.mean(losses)),
                "unfiltered_ratio": float(np.mean(ratios)),
                "val_loss": math.nan,
            }
            if val_w is not None and val_w.shape[0] >= 2:
                record["val_loss"] = self._val_loss(net, val_w, a, tau, val_seed, dev)
                if record["val_loss"] < best:
                    best, self.best_epoch_ = record["val_loss"], epoch
                    best_state = copy.deepcopy(net.state_dict())
            self.history_.append(record)
            if self.patience is not None and epoch - self.best_epoch_ >= self.patience:
                break
        if best_state is not None:
            net.load_state_dict(best_state)
        self.net_ = net.eval()
        # identical embeddings give every anchor the loss log(1 + 2B): the contrastive stage
        # learned nothing (typically disturbances below the noise level)
        collapsed = math.log(1 + 2 * B)
        self.collapse_ratio_ = self.history_[-1]["train_loss"] / collapsed
        if self.collapse_ratio_ > 0.95:
            warnings.warn(
                f"CAROTS: the contrastive training ended collapsed (final SOC loss "
                f"{self.history_[-1]['train_loss']:.3f} vs {collapsed:.3f} for identical "
                "embeddings); larger bias_candidates or more epochs usually fix it",
                UserWarning,
                stacklevel=3,
            )

    @torch.no_grad()
    def _val_loss(
        self,
        net: ContrastiveNet,
        val_w: np.ndarray,
        alpha: float,
        tau: float,
        seed: int,
        dev: torch.device,
    ) -> float:
        # same augmentation draws every epoch so validation losses are comparable
        saved = (self._cpa.rng, self._cda.rng)
        self._cpa.rng = self._cda.rng = np.random.default_rng(seed)
        net.eval()
        B = min(self.batch_size, val_w.shape[0])
        total, count = 0.0, 0
        for k in range(0, val_w.shape[0] - B + 1, B):
            loss, _ = soc_loss(
                net(torch.from_numpy(self._batch(val_w[k : k + B])).to(dev)), alpha, tau
            )
            total += loss.item()
            count += 1
        self._cpa.rng, self._cda.rng = saved
        return total / max(count, 1)

    # ------------------------------------------------------------- scoring
    def _window_cd(self, windows: np.ndarray) -> np.ndarray:
        """s_CD from each window alone: steps lag..W-1 predicted from their in-window lags."""
        lag = self.discoverer_.lag_
        w = windows.astype(np.float64)
        n, W, N = w.shape
        ctx = np.lib.stride_tricks.sliding_window_view(w[:, :-1], lag, axis=1)  # (n, W-lag, N, lag)
        ctx = np.moveaxis(ctx, -1, 2).reshape(n * (W - lag), lag, N)
        err = ((w[:, lag:] - self.discoverer_.predict_next(ctx).reshape(n, W - lag, N)) ** 2).mean(
            -1
        )
        if self.cd_reduce == "last":
            return err[:, -1]
        return err.max(axis=1) if self.cd_reduce == "max" else err.mean(axis=1)

    def _validate_weights(
        self, val_w: np.ndarray, rng: np.random.Generator
    ) -> tuple[tuple[float, float], dict[float, float]]:
        """The half weights that best separate held-out windows from their CDA copies."""
        from sklearn.metrics import roc_auc_score

        saved = self._cda.rng
        self._cda.rng = np.random.default_rng(rng.integers(2**63))
        neg = np.concatenate(
            [self._cda(val_w[k : k + 32])[0] for k in range(0, len(val_w), 32)]
        ).astype(np.float32)  # a fresh causal subgraph every 32 windows
        self._cda.rng = saved
        both = np.concatenate([val_w, neg])
        y = np.r_[np.zeros(len(val_w)), np.ones(len(neg))]
        z = []
        for s in (self._cl_score(both), self._window_cd(both)):
            ref = s[: len(val_w)]  # standardised on the normal windows
            z.append((s - ref.mean()) / max(ref.std(), 1e-12))
        aucs = {}
        for w in np.round(np.linspace(0.0, 1.0, 11), 1):
            aucs[float(w)] = float(roc_auc_score(y, w * z[0] + (1.0 - w) * z[1]))
        best = max(aucs.values())
        w = min((k for k, v in aucs.items() if v >= best - 1e-12), key=lambda k: abs(k - 0.5))
        return (w, 1.0 - w), aucs

    @torch.no_grad()
    def _embed(self, windows: np.ndarray, chunk: int = 4096) -> np.ndarray:
        dev = next(self.net_.parameters()).device
        out = [
            self.net_(torch.from_numpy(windows[i : i + chunk]).to(dev)).cpu().numpy()
            for i in range(0, windows.shape[0], chunk)
        ]
        return np.concatenate(out).astype(np.float64)

    def _cl_score(self, windows: np.ndarray) -> np.ndarray:
        """s_CL: distance of each window's projection to the centroid, (n,)."""
        z = self._embed(windows)
        if self.score_type == "l2":
            return np.linalg.norm(z - self.centroid_, axis=1)
        norms = np.linalg.norm(z, axis=1) * np.linalg.norm(self.centroid_) + 1e-12
        return (1.0 - z @ self.centroid_ / norms) / 2.0

    def _raw_scores(
        self, windows: np.ndarray, Xs: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """s_CL (distance to the centroid) and s_CD (forecast error over the window), (n,).

        ``Xs`` is the standardised series the (stride-1) windows come from; without it (or
        with ``cd_reduce="last"``) s_CD is the last step's error.
        """
        s_cl = self._cl_score(windows)
        reduce = self.cd_reduce
        if Xs is None or reduce == "last":
            w = windows.astype(np.float64)
            pred = self.discoverer_.predict_next(w[:, :-1])
            return s_cl, np.mean((w[:, -1] - pred) ** 2, axis=1)
        return s_cl, reduce_windows(step_errors(self.discoverer_, Xs), self.window, reduce)

    def _score(self, Xs: np.ndarray) -> np.ndarray:
        windows = sliding_windows(Xs, self.window).astype(np.float32)
        with _limit_threads(self.n_jobs):
            s_cl, s_cd = self._raw_scores(windows, Xs)
        st = self.score_stats_
        z_cl = (s_cl - st["cl_mean"]) / st["cl_std"]
        z_cd = (s_cd - st["cd_mean"]) / st["cd_std"]
        if self._score_mode == "cl":
            return z_cl
        if self._score_mode == "cd":
            return z_cd
        w_cl, w_cd = getattr(self, "combine_weights_", (0.5, 0.5))
        return 2.0 * (w_cl * z_cl + w_cd * z_cd)  # (0.5, 0.5): the paper's z_CL + z_CD


class PlainOneClassContrastive(CAROTS):
    """One-class contrastive baseline without causality ("contrastive without causality").

    Same encoder, SOC loss and training as :class:`CAROTS`, but positives are originals plus
    Gaussian jitter on one random variable (no forecasting), negatives add random biases to
    random variable subsets (no causal subgraph), and the score is the centroid distance only.
    Parameters are those of :class:`CAROTS` that remain meaningful.
    """

    def __init__(
        self,
        window: int = 10,
        encoder: str = "lstm",
        hidden_dim: int = 64,
        proj_dim: int = 64,
        epochs: int = 10,
        batch_size: int = 64,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        warmup_epochs: int = 1,
        patience: int | None = None,
        grad_clip: float = 0.5,
        temperature: float = 0.1,
        alpha: float | tuple[float, float] = (0.5, 0.9),
        noise_level: float = 0.1,
        bias_candidates: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 2.5),
        bias_unit: str = "residual",
        bias_fraction: float = 0.5,
        val_fraction: float = 0.2,
        contamination: float = 0.01,
        nan_policy: str = "raise",
        random_state: int | None = 0,
        device: str = "cpu",
        n_jobs: int | None = 1,
        verbose: bool = False,
    ) -> None:
        super().__init__(
            window=window, encoder=encoder, hidden_dim=hidden_dim, proj_dim=proj_dim,
            epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=weight_decay,
            warmup_epochs=warmup_epochs, patience=patience, grad_clip=grad_clip, temperature=temperature,
            alpha=alpha, noise_level=noise_level, bias_candidates=bias_candidates,
            bias_unit=bias_unit, bias_fraction=bias_fraction, val_fraction=val_fraction, contamination=contamination,
            nan_policy=nan_policy, random_state=random_state, device=device, n_jobs=n_jobs,
            verbose=verbose,
        )  # fmt: skip

    def _make_discoverer(self, n_vars: int) -> Any:
        # an empty graph: the CPA then only jitters one variable, the CDA ignores structure
        return GivenGraphDiscoverer(np.zeros((n_vars, n_vars), dtype=bool), lag=1)

    def _variant(self) -> tuple[str, bool, str]:
        return "cl", True, "random"
