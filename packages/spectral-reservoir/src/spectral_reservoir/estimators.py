"""SARC estimators (scikit-learn / aeon style): transformer, classifier, CV classifier, BiESN."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.linear_model import RidgeClassifierCV
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted
from tqdm.auto import tqdm

from spectral_reservoir.features import model_space_features
from spectral_reservoir.periods import extract_periods, parse_mode
from spectral_reservoir.reservoir import make_weights, states_batch
from spectral_reservoir.validation import check_series

__all__ = ["PAPER_GRID", "BiESNModelSpace", "SARCClassifier", "SARCClassifierCV", "SARCTransformer"]

# SARC §5 hyper-parameter grid (spectral radii tied: 4 * 3 * 2 * 5 = 120 points)
PAPER_GRID = {
    "input_scaling": [0.5, 1.0, 2.0, 4.0],
    "spectral_radius": [(0.4, 0.4), (0.6, 0.6), (0.8, 0.8)],
    "ridge": [0.5, 1.0],
    "leaky": [0.0, 0.2, 0.4, 0.6, 0.8],
}


def _check_int(v, name: str, low: int) -> None:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
        raise ValueError(f"{name} must be an int >= {low}, got {v!r}")


def _real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _norm_mode(normalize) -> str | None:
    """``True``/"series" -> "series", "dataset", ``False``/None -> None; anything else raises."""
    if normalize is None or (isinstance(normalize, bool | np.bool_) and not normalize):
        return None
    if isinstance(normalize, bool | np.bool_):
        return "series"
    if normalize in ("series", "dataset", "offset"):
        return normalize
    raise ValueError(
        f"normalize must be 'dataset', 'offset', 'series', True or False, got {normalize!r}"
    )


def _check_labels(X, y) -> np.ndarray:
    """``y`` as a 1-D array with one label per series of ``X`` and at least two classes."""
    y = np.asarray(y)
    n = len(X) if isinstance(X, list | tuple) else np.asarray(X).shape[0]
    if y.ndim != 1 or len(y) != n:
        raise ValueError(f"y must be 1-D with one label per series ({n}), got shape {y.shape}")
    if len(np.unique(y)) < 2:
        raise ValueError("y must contain at least two classes")
    return y


def znormalize(X: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each series' channels to zero mean and unit variance over its own steps (a new array).

    Reservoir features are not invariant to an offset or a scale (``tanh`` saturates): a
    series shifted by 1e6 drives every unit to +-1. Constant channels get scale 1.
    """
    out = np.zeros_like(X)
    for i, o in enumerate(np.asarray(offsets).tolist()):
        s = X[i, :, o:]
        sd = s.std(axis=1, keepdims=True)
        out[i, :, o:] = (s - s.mean(axis=1, keepdims=True)) / np.where(sd > 0, sd, 1.0)
    return out


class SARCTransformer(TransformerMixin, BaseEstimator):
    """Frequency-informed reservoir features of each series (SARC §3).

    Parameters
    ----------
    n_reservoir : int, default=10
        Units H per reservoir (paper default 10).
    input_scaling : float, default=1.0
    spectral_radius : (float, float), default=(0.8, 0.8)
        Radii of the sequential ``W_s`` and cyclic ``W_c`` matrices.
    ridge : float, default=1.0
        Ridge strength of the per-series readout.
    leaky : float in [0, 1), default=0.0
    bidirectional : bool, default=True
    period_mode : str, default="extended-100"
        ``"base"``, ``"extended-K"`` or ``"all-K"`` (see ``extract_periods``).
    period_source : {"mean", "first"}, default="mean"
        Periodograms averaged over all training series and channels, or channel 0 of the first.
    periods : sequence of int, optional
        Use these periods and skip the spectral analysis.
    top_k : int, default=1
    batch_size : int, default=256
        Series per chunk (memory ~ batch_size * |P| * L * 2H floats).
    dtype : numpy dtype, default=np.float64
    normalize : {"dataset", "offset", "series"} or bool, default="dataset"
        ``"dataset"``: each channel standardised with its mean and standard deviation over the
        training series (kept in ``channel_mean_`` / ``channel_scale_``): removes a shared offset
        or scale, keeps level differences between series (new series more than 10 training
        standard deviations away warn). ``"offset"``: each series' own channel means removed
        first, then the training scale: invariant to any per-series offset, keeps amplitudes.
        ``"series"`` (or ``True``): every series
        z-normalised per channel on its own steps (the UCR convention; it erases per-series
        levels: JapaneseVowels 0.968 -> 0.684). ``False``: raw values (the reference code).
    random_state : int, default=0
    verbose : int, default=0
        1 shows a progress bar over chunks.

    Attributes
    ----------
    periods_ : list of int
    weights_ : ReservoirWeights
    n_channels_ : int
    n_features_out_ : int
        ``|P| * (4 H C + 2 H)`` (bidirectional).
    """

    _cyclic = True

    def __init__(
        self,
        n_reservoir: int = 10,
        input_scaling: float = 1.0,
        spectral_radius: tuple[float, float] = (0.8, 0.8),
        ridge: float = 1.0,
        leaky: float = 0.0,
        bidirectional: bool = True,
        period_mode: str = "extended-100",
        period_source: str = "mean",
        periods=None,
        top_k: int = 1,
        batch_size: int = 256,
        dtype=np.float64,
        normalize: str | bool = "dataset",
        random_state: int = 0,
        verbose: int = 0,
    ) -> None:
        self.n_reservoir = n_reservoir
        self.input_scaling = input_scaling
        self.spectral_radius = spectral_radius
        self.ridge = ridge
        self.leaky = leaky
        self.bidirectional = bidirectional
        self.period_mode = period_mode
        self.period_source = period_source
        self.periods = periods
        self.top_k = top_k
        self.batch_size = batch_size
        self.dtype = dtype
        self.normalize = normalize
        self.random_state = random_state
        self.verbose = verbose

    def _validate_params(self) -> None:
        _check_int(self.n_reservoir, "n_reservoir", 1)
        _check_int(self.batch_size, "batch_size", 1)
        _check_int(self.top_k, "top_k", 1)
        if not (
            _real(self.input_scaling) and np.isfinite(self.input_scaling) and self.input_scaling > 0
        ):
            raise ValueError(f"input_scaling must be > 0, got {self.input_scaling!r}")
        sr = self.spectral_radius
        if not (
            isinstance(sr, tuple | list)
            and len(sr) == 2
            and all(_real(r) and np.isfinite(r) and r > 0 for r in sr)
        ):
            raise ValueError(f"spectral_radius must be two positive numbers, got {sr!r}")
        if not (_real(self.ridge) and np.isfinite(self.ridge) and self.ridge > 0):
            raise ValueError(f"ridge must be > 0, got {self.ridge!r}")
        if not (_real(self.leaky) and 0 <= self.leaky < 1):
            raise ValueError(f"leaky must be in [0, 1), got {self.leaky!r}")
        parse_mode(self.period_mode)
        if self.period_source not in ("mean", "first"):
            raise ValueError(f"period_source must be 'mean' or 'first', got {self.period_source!r}")
        if self.periods is not None:
            p = list(self.periods)
            if not p or any(
                isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1 for v in p
            ):
                raise ValueError(
                    f"periods must be a non-empty sequence of positive ints, got {self.periods!r}"
                )
        if np.dtype(self.dtype) not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype!r}")
        _norm_mode(self.normalize)

    def _find_periods(self, X: np.ndarray, offsets: np.ndarray) -> list[int]:
        if not self._cyclic:
            return [1]
        if self.periods is not None:
            longest = X.shape[2]
            too_long = [int(p) for p in self.periods if p >= longest]
            if too_long:
                raise ValueError(
                    f"periods {too_long} are >= the longest series ({longest} steps): their skip "
                    "connection would never fire and their features would all be zero"
                )
            return sorted({int(p) for p in self.periods})
        # unequal lengths: the last min-length steps hold real data in every (left-padded) series
        common = X[:, :, int(offsets.max()) :]
        src = common[:1, :1] if self.period_source == "first" else common
        return extract_periods(src, self.period_mode, int(self.top_k))

    def fit(self, X, y=None) -> SARCTransformer:
        """Find the periods and draw the reservoir weights.

        Parameters
        ----------
        X : ndarray (n, L) or (n, C, L), or list of (C, L_i) arrays
        y : ignored
        """
        self._validate_params()
        return self._fit_checked(*self._series(X, fit=True))

    def _series(self, X, fit: bool = False) -> tuple[np.ndarray, np.ndarray]:
        Xp, off = check_series(X)
        mode = _norm_mode(self.normalize)
        if mode == "series":
            return znormalize(Xp, off), off
        if mode in ("dataset", "offset"):
            observed = (np.arange(Xp.shape[2])[None, :] >= np.asarray(off)[:, None])[:, None, :]
            vals = np.where(observed, Xp, np.nan)
            if mode == "offset":  # each series' own channel levels removed: offset-invariant
                vals = vals - np.nanmean(vals, axis=2, keepdims=True)
            if fit:  # per-channel statistics over the observed (unpadded) training steps
                sd = np.nanstd(vals, axis=(0, 2))
                self.channel_mean_ = np.nanmean(vals, axis=(0, 2))
                self.channel_scale_ = np.where(sd > 0, sd, 1.0)
            if Xp.shape[1] != len(self.channel_mean_):  # before broadcasting the statistics
                raise ValueError(
                    f"X has {Xp.shape[1]} channels, the transformer was fitted on "
                    f"{len(self.channel_mean_)}"
                )
            out = (vals - self.channel_mean_[:, None]) / self.channel_scale_[:, None]
            if not fit and mode == "dataset":
                self._warn_shift(out)
            return np.nan_to_num(out, nan=0.0).astype(Xp.dtype), off
        return Xp, off

    @staticmethod
    def _warn_shift(z: np.ndarray) -> None:
        """Series far from the training level saturate the reservoir (tanh): a test set shifted
        by 1e6 once scored at chance without a word."""
        level = np.abs(np.nanmean(z, axis=2))  # (n, C) in training standard deviations
        far = np.flatnonzero((level > 10).any(axis=1))
        if far.size:
            warnings.warn(
                f"X: {far.size} series sit more than 10 training standard deviations from the "
                f"training level (first {far[:5].tolist()}); the reservoir saturates there. "
                "normalize='offset' removes each series' own level (offset-invariant)",
                UserWarning,
                stacklevel=4,
            )

    def _fit_checked(self, Xp: np.ndarray, off: np.ndarray) -> SARCTransformer:
        periods = self._find_periods(Xp, off)
        weights = make_weights(
            Xp.shape[1],
            periods,
            int(self.n_reservoir),
            float(self.input_scaling),
            tuple(float(r) for r in self.spectral_radius),
            bidirectional=bool(self.bidirectional),
            cyclic=self._cyclic,
            rng=self.random_state,
        )
        self.periods_, self.weights_, self.n_channels_ = periods, weights, Xp.shape[1]
        E = (2 if self.bidirectional else 1) * int(self.n_reservoir)
        k = 2 if self._cyclic else 1
        self.n_features_out_ = len(periods) * (k * E * self.n_channels_ + E)
        return self

    def transform(self, X) -> np.ndarray:
        """Features (n, n_features_out_); each row depends on its own series only."""
        check_is_fitted(self, "weights_")
        return self._transform_checked(*self._series(X))

    def _transform_checked(self, Xp: np.ndarray, off: np.ndarray) -> np.ndarray:
        return self._features(Xp, off, (float(self.ridge),))[0]

    def _features(self, Xp: np.ndarray, off: np.ndarray, ridges: tuple) -> list[np.ndarray]:
        """Features for each readout ridge in ``ridges`` from one pass of the reservoir."""
        if Xp.shape[1] != self.n_channels_:
            raise ValueError(
                f"X has {Xp.shape[1]} channels, the transformer was fitted on {self.n_channels_}"
            )
        dt = np.dtype(self.dtype)
        w = self.weights_
        if dt != np.float64:
            w = type(w)(
                *(
                    a.astype(dt) if a.dtype.kind == "f" else a
                    for a in (w.W_in, w.W_s, w.W_c, w.periods)
                )
            )
        out: list[list[np.ndarray]] = [[] for _ in ridges]
        bs = int(self.batch_size)
        for i in tqdm(range(0, len(Xp), bs), disable=not self.verbose, desc="SARC features"):
            xb, ob = Xp[i : i + bs].astype(dt), off[i : i + bs]
            S = states_batch(xb, w, float(self.leaky), ob)
            for o, r in zip(out, ridges, strict=True):
                o.append(model_space_features(xb, S, w.periods, float(r), ob, self._cyclic))
        return [np.concatenate(o).astype(np.float64) for o in out]


class SARCClassifier(ClassifierMixin, SARCTransformer):
    """SARC: FreqRes features, standardised, then a linear classifier.

    Every parameter but ``classifier`` is that of :class:`SARCTransformer`.

    Parameters
    ----------
    classifier : sklearn classifier, optional
        Default ``RidgeClassifierCV(alphas=np.logspace(-3, 3, 10))`` (the ROCKET convention);
        pass e.g. ``LogisticRegression(max_iter=1000)`` for ``predict_proba``.

    Attributes
    ----------
    transformer_ : SARCTransformer
    pipeline_ : sklearn Pipeline (StandardScaler, classifier)
    classes_ : ndarray
    periods_ : list of int
    """

    def __init__(
        self,
        n_reservoir: int = 10,
        input_scaling: float = 1.0,
        spectral_radius: tuple[float, float] = (0.8, 0.8),
        ridge: float = 1.0,
        leaky: float = 0.0,
        bidirectional: bool = True,
        period_mode: str = "extended-100",
        period_source: str = "mean",
        periods=None,
        top_k: int = 1,
        classifier=None,
        batch_size: int = 256,
        dtype=np.float64,
        normalize: str | bool = "dataset",
        random_state: int = 0,
        verbose: int = 0,
    ) -> None:
        super().__init__(
            n_reservoir, input_scaling, spectral_radius, ridge, leaky, bidirectional, period_mode,
            period_source, periods, top_k, batch_size, dtype, normalize, random_state, verbose,
        )  # fmt: skip
        self.classifier = classifier

    def _readout(self):
        """Unfitted StandardScaler + classifier (default ``RidgeClassifierCV``, ROCKET's)."""
        clf = (
            RidgeClassifierCV(alphas=np.logspace(-3, 3, 10))
            if self.classifier is None
            else clone(self.classifier)
        )
        return make_pipeline(StandardScaler(), clf)

    def _transformer(self) -> SARCTransformer:
        params = {k: v for k, v in self.get_params(deep=False).items() if k != "classifier"}
        t = SARCTransformer(**params)
        t._cyclic = self._cyclic
        return t

    def fit(self, X, y) -> SARCClassifier:
        """Fit on series ``X`` and labels ``y`` (n,)."""
        y = _check_labels(X, y)
        t = self._transformer()
        t._validate_params()
        Xp, off = t._series(
            X, fit=True
        )  # validated, padded (and normalised) once for fit and features
        F = t._fit_checked(Xp, off)._transform_checked(Xp, off)
        self.pipeline_ = self._readout().fit(F, y)
        self.transformer_ = t
        self.periods_, self.n_features_out_ = t.periods_, t.n_features_out_
        self.classes_ = self.pipeline_.classes_
        return self

    def transform(self, X) -> np.ndarray:
        """The fitted transformer's features of ``X``."""
        check_is_fitted(self, "transformer_")
        return self.transformer_.transform(X)

    def decision_function(self, X) -> np.ndarray:
        """Classifier scores (n,) or (n, K)."""
        check_is_fitted(self, "transformer_")
        return self.pipeline_.decision_function(self.transform(X))

    def predict(self, X) -> np.ndarray:
        """Predicted labels (n,)."""
        check_is_fitted(self, "transformer_")
        return self.pipeline_.predict(self.transform(X))

    def _has_proba(self) -> bool:
        clf = self.classifier if not hasattr(self, "pipeline_") else self.pipeline_[-1]
        return clf is not None and hasattr(clf, "predict_proba")

    @available_if(_has_proba)
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (n, K), when the classifier has ``predict_proba``."""
        check_is_fitted(self, "transformer_")
        return self.pipeline_.predict_proba(self.transform(X))


class BiESNModelSpace(SARCClassifier):
    """Baseline: bidirectional ESN, no period skip, readout on ``eta_{t-1}`` only (spec §3).

    Same parameters as ``SARCClassifier``; the period options are ignored.
    """

    _cyclic = False


class SARCClassifierCV(ClassifierMixin, BaseEstimator):
    """SARC with hyper-parameters chosen by stratified k-fold CV (paper: 5-fold over its grid).

    Parameters
    ----------
    param_grid : "paper" or dict, default="paper"
        ``"paper"`` = ``PAPER_GRID`` (120 points).
    cv : int, default=5
    n_jobs : int, default=1
        Parallel fits of ``per_fold_transform=True`` (GridSearchCV's ``n_jobs``).
    random_state : int, default=0
    per_fold_transform : bool, default=False
        ``True``: scikit-learn's ``GridSearchCV`` over ``SARCClassifier`` (every fold refits
        the whole model: periods, channel statistics, reservoir states). ``False`` (ours, the
        default): the reservoir part is unsupervised and each series' features depend only
        on that series, so the states of every training series are computed once per
        distinct reservoir (grid points that differ only in the readout ``ridge`` share one
        pass) with the periods and channel statistics of all training series (no labels
        used), and only the linear classifier is refit per fold. With fixed ``periods`` and
        ``normalize=False`` both modes give identical scores and choices (tested); otherwise
        they differ only by the unsupervised statistics seen.
    **base_params
        Fixed ``SARCClassifier`` parameters.

    Attributes
    ----------
    best_params_ : dict
    best_estimator_ : SARCClassifier
        Refit on all of ``X`` with ``best_params_``.
    cv_results_ : dict
        ``params``, ``mean_test_score``, ``std_test_score``, ``rank_test_score`` and
        ``split<k>_test_score`` (GridSearchCV's layout, in ParameterGrid order).
    classes_ : ndarray
    """

    def __init__(
        self,
        param_grid="paper",
        cv: int = 5,
        n_jobs: int = 1,
        random_state: int = 0,
        per_fold_transform: bool = False,
        **base_params,
    ) -> None:
        self.param_grid = param_grid
        self.cv = cv
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.per_fold_transform = per_fold_transform
        self.base_params = base_params

    def get_params(self, deep: bool = True) -> dict:
        return {
            "param_grid": self.param_grid, "cv": self.cv, "n_jobs": self.n_jobs,
            "random_state": self.random_state, "per_fold_transform": self.per_fold_transform,
            **self.base_params,
        }  # fmt: skip

    def set_params(self, **params) -> SARCClassifierCV:
        for k, v in params.items():
            if k in ("param_grid", "cv", "n_jobs", "random_state", "per_fold_transform"):
                setattr(self, k, v)
            else:
                self.base_params[k] = v
        return self

    def fit(self, X, y) -> SARCClassifierCV:
        """Grid search, then refit the best setting on all of ``X``."""
        grid = (
            PAPER_GRID
            if isinstance(self.param_grid, str) and self.param_grid == "paper"
            else self.param_grid
        )
        if not isinstance(grid, dict) or not grid:
            raise ValueError(
                f"param_grid must be 'paper' or a non-empty dict, got {self.param_grid!r}"
            )
        _check_int(self.cv, "cv", 2)
        if not isinstance(self.per_fold_transform, bool | np.bool_):
            raise TypeError(f"per_fold_transform must be a bool, got {self.per_fold_transform!r}")
        base = SARCClassifier(random_state=self.random_state, **self.base_params)
        folds = StratifiedKFold(int(self.cv), shuffle=True, random_state=self.random_state)
        if self.per_fold_transform:
            self.search_ = GridSearchCV(
                base, grid, cv=folds, n_jobs=self.n_jobs, error_score="raise"
            ).fit(X, y)
            self.cv_results_ = self.search_.cv_results_
            self.best_estimator_ = self.search_.best_estimator_
            self.best_params_ = self.search_.best_params_
        else:
            self.cv_results_ = self._shared_search(base, grid, folds, X, y)
            best = int(np.argmin(self.cv_results_["rank_test_score"]))
            self.best_params_ = dict(self.cv_results_["params"][best])
            self.best_estimator_ = clone(base).set_params(**self.best_params_).fit(X, y)
        self.classes_ = self.best_estimator_.classes_
        return self

    def _shared_search(self, base: SARCClassifier, grid: dict, folds, X, y) -> dict:
        """Grid search with one reservoir pass per distinct reservoir (see the class doc)."""
        from scipy.stats import rankdata
        from sklearn.model_selection import ParameterGrid

        y = _check_labels(X, y)
        points = list(ParameterGrid(grid))
        splits = list(folds.split(np.zeros((len(y), 1)), y))
        scores = np.empty((len(points), len(splits)))
        groups: dict[tuple, list[int]] = {}
        for i, p in enumerate(points):  # grid points that share a reservoir pass
            groups.setdefault(
                tuple(sorted((k, repr(v)) for k, v in p.items() if k != "ridge")), []
            ).append(i)
        found: dict[tuple, list[int]] = {}  # the spectral analysis, once per period setting
        for idx in groups.values():
            est = clone(base).set_params(
                **{k: v for k, v in points[idx[0]].items() if k != "ridge"}
            )
            t = est._transformer()
            t._validate_params()
            Xp, off = t._series(X, fit=True)
            pkey = tuple(
                repr(getattr(t, k))
                for k in ("period_mode", "period_source", "periods", "top_k", "normalize")
            )
            if pkey in found:  # periods depend on the data, never on the reservoir
                t.periods = found[pkey]
            t._fit_checked(Xp, off)
            found.setdefault(pkey, list(t.periods_))
            ridges = tuple(float(points[i].get("ridge", est.ridge)) for i in idx)
            for i, F in zip(idx, t._features(Xp, off, ridges), strict=True):
                for j, (tr, va) in enumerate(splits):
                    pipe = est._readout().fit(F[tr], y[tr])
                    scores[i, j] = pipe.score(F[va], y[va])
        mean = np.average(scores, axis=1)
        out = {"params": points, "mean_test_score": mean, "std_test_score": scores.std(axis=1),
               "rank_test_score": rankdata(-mean, method="min").astype(np.int32)}  # fmt: skip
        for j in range(len(splits)):
            out[f"split{j}_test_score"] = scores[:, j]
        return out

    def predict(self, X) -> np.ndarray:
        """Labels from the refitted best model."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def decision_function(self, X) -> np.ndarray:
        """Scores from the refitted best model."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)
