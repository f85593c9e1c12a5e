"""Pareto Merging (Chen & Kwok, ICML 2025): one training run, a merged model for every preference.

For a preference ``gamma`` on the simplex the merged weights are

    theta(gamma) = theta_0 + sum_k lambda_k * tau_k            (preference-independent base)
                 + G x_1 A x_2 B x_3 gamma                     (preference-dependent, low rank)

per weight matrix ``W`` of shape (m, n) (conv kernels are flattened to (out, in*k*k)):
``A`` is (m, r), ``B`` is (n, r) and the core tensor ``G`` is (r, r, K), so the personal term is
``A (sum_k gamma_k G_k) B^T``. ``lambda`` is AdaMerging's layer-wise coefficients (learned and clipped to
[0, 1] as in AdaMerging's code, or the fixed Task-Arithmetic scale). Training samples
``gamma ~ Dirichlet(alpha)`` each step and minimizes the linear scalarization
``sum_k gamma_k * L_k(theta(gamma))`` (or the Tchebycheff one, ``max_k gamma_k * L_k``) of the
per-task objectives, plus an L2 penalty on the tensor factors. ``conditioned=False`` is the
capacity control: the same parameters with the preference fixed to the uniform vector.
"""

import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import combinations

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from pareto_merge.objectives import Objective
from pareto_merge.state import StateDict, check_state_dicts, is_mergeable

__all__ = ["ParetoMerger", "adamerging", "check_preference", "simplex_grid"]


def check_preference(
    preference: Sequence[float] | np.ndarray | torch.Tensor, n_tasks: int
) -> torch.Tensor:
    """Validate a preference vector: length ``n_tasks``, finite, non-negative, summing to 1.

    Returns
    -------
    Tensor of shape (n_tasks,), float32
    """
    p = torch.as_tensor(np.asarray(preference, dtype=np.float64))
    if p.ndim != 1 or p.numel() != n_tasks:
        raise ValueError(
            f"preference: expected a vector of length {n_tasks}, got shape {tuple(p.shape)}"
        )
    if not torch.isfinite(p).all():
        raise ValueError("preference: contains NaN or inf")
    if (p < -1e-9).any() or abs(float(p.sum()) - 1.0) > 1e-6:
        raise ValueError(f"preference: must lie on the simplex (>= 0, sum 1), got {p.tolist()}")
    return p.clamp(min=0).float()


def simplex_grid(n_points: int, n_tasks: int) -> np.ndarray:
    """Evenly spread preferences: ``n_points`` on a line for K=2, a Das-Dennis lattice for K>2.

    For K > 2 the lattice has the fewest divisions giving at least ``n_points`` points, and all
    its points are returned.

    Returns
    -------
    ndarray of shape (n, n_tasks)
    """
    if isinstance(n_points, bool) or not (isinstance(n_points, int | np.integer) and n_points >= 2):
        raise ValueError(f"n_points: must be an int >= 2, got {n_points!r}")
    if isinstance(n_tasks, bool) or not isinstance(n_tasks, int | np.integer) or n_tasks < 2:
        raise ValueError(f"n_tasks: must be an int >= 2, got {n_tasks!r}")
    n_points, n_tasks = int(n_points), int(n_tasks)
    if n_tasks == 2:
        t = np.linspace(0.0, 1.0, n_points)
        return np.column_stack([t, 1 - t])
    h = 1
    while _n_lattice(h, n_tasks) < n_points:
        h += 1
    # stars and bars: choose K-1 bar positions among h + K - 1 slots
    points = []
    for bars in combinations(range(h + n_tasks - 1), n_tasks - 1):
        edges = (-1, *bars, h + n_tasks - 1)
        points.append([edges[i + 1] - edges[i] - 1 for i in range(n_tasks)])
    return np.asarray(points, dtype=float) / h


def _n_lattice(h: int, k: int) -> int:
    from math import comb

    return comb(h + k - 1, k - 1)


class _MergedWeights(nn.Module):
    """theta(gamma) = theta_0 + sum_k lambda[k, l] tau_k[l] + A_l (gamma . G_l) B_l^T."""

    def __init__(
        self,
        pretrained: StateDict,
        finetuned: Sequence[StateDict],
        *,
        rank: int,
        init_scale: float,
        learn_coefficients: bool,
        seed: int | None,
        fixed_keys: Collection[str] | None = None,
    ) -> None:
        super().__init__()
        self.keys = [k for k, v in pretrained.items() if is_mergeable(v)]
        # normalization statistics are merged at the base scale but never learned (autograd
        # cannot differentiate batch norm with respect to its running buffers)
        if fixed_keys is None:
            fixed_keys = [k for k in self.keys if k.endswith(("running_mean", "running_var"))]
        unknown = set(fixed_keys) - set(self.keys)
        if unknown:
            raise ValueError(
                f"fixed_keys: not floating entries of the state_dict: {sorted(unknown)[:3]}"
            )
        self.fixed = set(fixed_keys)
        self.frozen = {k: v.detach().clone() for k, v in pretrained.items() if not is_mergeable(v)}
        self.K = len(finetuned)
        self.theta0 = {k: pretrained[k].detach().float().clone() for k in self.keys}
        self.tau = {
            k: torch.stack([sd[k].detach().float() - self.theta0[k] for sd in finetuned])
            for k in self.keys
        }
        self.dtypes = {k: pretrained[k].dtype for k in self.keys}
        coef = torch.full((self.K, len(self.keys)), float(init_scale))
        self.coef = nn.Parameter(coef, requires_grad=learn_coefficients)
        gen = torch.Generator().manual_seed(0 if seed is None else seed)
        self.factors = nn.ParameterDict()
        self.lowrank = [
            k for k in self.keys if pretrained[k].ndim >= 2 and rank > 0 and k not in self.fixed
        ]
        for k in self.lowrank:
            m, n = pretrained[k].shape[0], pretrained[k][0].numel()
            r = min(rank, m, n)
            name = k.replace(".", "__")
            # G starts at zero so theta(gamma) is the base merge before training (as LoRA's B = 0)
            self.factors[name + "__A"] = nn.Parameter(torch.randn(m, r, generator=gen) / np.sqrt(m))
            self.factors[name + "__B"] = nn.Parameter(torch.randn(n, r, generator=gen) / np.sqrt(n))
            self.factors[name + "__G"] = nn.Parameter(torch.zeros(r, r, self.K))

    def coefficients(self) -> torch.Tensor:
        """The base merge's coefficients, clipped to [0, 1] when learned (AdaMerging's code)."""
        return self.coef.clamp(0.0, 1.0) if self.coef.requires_grad else self.coef

    def forward(self, gamma: torch.Tensor, base_only: bool = False) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        coefs = self.coefficients()
        for i, k in enumerate(self.keys):
            coef = coefs[:, i].detach() if k in self.fixed else coefs[:, i]
            w = self.theta0[k] + torch.tensordot(coef, self.tau[k], dims=1)
            if k in self.fixed:
                out[k] = w.detach()
                continue
            if k in self.lowrank and not base_only:
                name = k.replace(".", "__")
                A, B, G = (self.factors[name + s] for s in ("__A", "__B", "__G"))
                w = w + (A @ (G @ gamma) @ B.T).view_as(w)
            out[k] = w
        return out

    def penalty(self) -> torch.Tensor:
        return (
            sum((p**2).sum() for p in self.factors.values())
            if len(self.factors)
            else torch.zeros(())
        )

    def to_state_dict(
        self, weights: Mapping[str, torch.Tensor], order: Sequence[str]
    ) -> dict[str, torch.Tensor]:
        merged = {k: weights[k].detach().to(self.dtypes[k]).clone() for k in self.keys}
        merged |= {k: v.clone() for k, v in self.frozen.items()}
        return {k: merged[k] for k in order}


def _evaluate(objectives: Sequence[Objective], weights: dict[str, torch.Tensor]) -> torch.Tensor:
    """Stack the K objective values; a non-tensor, non-scalar or non-finite value raises."""
    values = []
    for k, f in enumerate(objectives):
        v = f(weights)
        if not isinstance(v, torch.Tensor) or v.numel() != 1 or not v.is_floating_point():
            raise ValueError(
                f"objectives[{k}]: must return a scalar floating tensor, got "
                f"{type(v).__name__}{tuple(v.shape) if isinstance(v, torch.Tensor) else ''}"
            )
        if not torch.isfinite(v.detach()).all():
            raise ValueError(
                f"objectives[{k}]: returned {float(v.detach())} (non-finite: NaN input, "
                "overflow, or a diverging merge; lower lr or init_scale)"
            )
        values.append(v.reshape(()))
    return torch.stack(values)


def _check_finite_params(params: Sequence[torch.Tensor], what: str) -> None:
    if not all(bool(torch.isfinite(p.detach()).all()) for p in params):
        raise ValueError(f"{what}: the merge weights became non-finite (overflow); lower lr")


def _check_objectives(objectives: Sequence[Objective], n_tasks: int) -> None:
    if len(objectives) != n_tasks:
        raise ValueError(f"objectives: expected {n_tasks} (one per task), got {len(objectives)}")
    if not all(callable(f) for f in objectives):
        raise TypeError("objectives: every entry must be callable params -> scalar tensor")


def _check_positive(
    value: float, name: str, *, integer: bool = False, allow_zero: bool = False
) -> None:
    if isinstance(value, bool):
        ok = False
    elif integer:
        ok = isinstance(value, int | np.integer)
    else:
        ok = isinstance(value, int | float | np.integer | np.floating)
    if not ok or not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(
            f"{name}: must be a {'non-negative' if allow_zero else 'positive'} "
            f"{'int' if integer else 'number'}, got {value!r}"
        )


class ParetoMerger:
    """Preference-conditioned model merging: ``merge(preference)`` is instant after ``fit``.

    Parameters
    ----------
    pretrained : state_dict
        Weights ``theta_0`` of the pre-trained model.
    finetuned : sequence of K state_dicts
        Task-fine-tuned weights, same keys, shapes and dtypes (never modified).
    rank : int, default=4
        Rank ``r`` of the tensor factors (0 disables the preference-dependent term).
    base : {"adamerging", "task_arithmetic"}, default="adamerging"
        Learn layer-wise coefficients ``lambda`` (AdaMerging + PM) or fix them to ``init_scale``
        (Task Arithmetic + PM).
    init_scale : float, default=0.3
        Initial (or fixed) merging coefficient.
    scalarization : {"linear", "tchebycheff"}, default="linear"
        ``sum_k gamma_k L_k`` or ``max_k gamma_k L_k`` at the sampled preference.
    conditioned : bool, default=True
        False gives the capacity control: the low-rank term is trained and evaluated with the
        uniform preference, so it has the same parameters but ignores the preference.
    alpha : float, default=1.0
        Dirichlet concentration of the sampled preferences (1 = uniform on the simplex).
    n_steps : int, default=300
    lr : float, default=1e-3
        Adam learning rate (tensor factors and coefficients).
    reg : float, default=1e-4
        L2 penalty on the tensor factors.
    random_state : int or None, default=0
    verbose : bool, default=False
        Show a progress bar.
    fixed_keys : collection of str, optional
        Floating entries merged at ``init_scale`` but never learned and given no preference
        term; default: BatchNorm running statistics (keys ending in ``running_mean``/``running_var``).

    Attributes
    ----------
    history_ : list of float
        Scalarized loss per step.
    n_tasks_ : int
    """

    def __init__(
        self,
        pretrained: StateDict,
        finetuned: Sequence[StateDict],
        *,
        rank: int = 4,
        base: str = "adamerging",
        init_scale: float = 0.3,
        scalarization: str = "linear",
        conditioned: bool = True,
        alpha: float = 1.0,
        n_steps: int = 300,
        lr: float = 1e-3,
        reg: float = 1e-4,
        random_state: int | None = 0,
        verbose: bool = False,
        fixed_keys: Collection[str] | None = None,
    ) -> None:
        check_state_dicts(pretrained, finetuned)
        _check_positive(rank, "rank", integer=True, allow_zero=True)
        if base not in ("adamerging", "task_arithmetic"):
            raise ValueError(f"base: must be 'adamerging' or 'task_arithmetic', got {base!r}")
        if scalarization not in ("tchebycheff", "linear"):
            raise ValueError(
                f"scalarization: must be 'tchebycheff' or 'linear', got {scalarization!r}"
            )
        _check_positive(alpha, "alpha")
        _check_positive(n_steps, "n_steps", integer=True)
        _check_positive(lr, "lr")
        _check_positive(reg, "reg", allow_zero=True)
        if not np.isfinite(init_scale):
            raise ValueError(f"init_scale: must be finite, got {init_scale!r}")
        if not isinstance(conditioned, bool):
            raise TypeError(f"conditioned: must be a bool, got {type(conditioned).__name__}")
        rank, n_steps = int(rank), int(n_steps)
        self.rank, self.base, self.init_scale = rank, base, init_scale
        self.conditioned = conditioned
        self.scalarization, self.alpha, self.n_steps = scalarization, alpha, n_steps
        self.lr, self.reg, self.random_state, self.verbose = lr, reg, random_state, verbose
        self.n_tasks_ = len(finetuned)
        self._order = list(pretrained)
        self._weights = _MergedWeights(
            pretrained,
            finetuned,
            rank=rank,
            init_scale=init_scale,
            learn_coefficients=base == "adamerging",
            seed=random_state,
            fixed_keys=fixed_keys,
        )
        self._objectives: Sequence[Objective] | None = None

    def fit(self, objectives: Sequence[Objective]) -> "ParetoMerger":
        """Learn the Pareto set in one run.

        Parameters
        ----------
        objectives : sequence of K callables
            ``objectives[k](params) -> scalar Tensor``: task k's loss (lower is better) of the
            merged parameters, e.g. :func:`~pareto_merge.entropy_objective` on unlabeled data.

        Returns
        -------
        self
        """
        _check_objectives(objectives, self.n_tasks_)
        params = [p for p in self._weights.parameters() if p.requires_grad]
        opt = torch.optim.Adam(params, lr=self.lr)
        rng = np.random.default_rng(self.random_state)
        # a rejected fit (bad objective mid-run) leaves the merger as it was
        before = {k: v.detach().clone() for k, v in self._weights.state_dict().items()}
        history: list[float] = []
        try:
            for _ in tqdm(range(self.n_steps), disable=not self.verbose, desc="Pareto merging"):
                gamma = torch.as_tensor(
                    rng.dirichlet(np.full(self.n_tasks_, self.alpha)), dtype=torch.float32
                )
                weights = self._weights(gamma if self.conditioned else self._uniform())
                losses = _evaluate(objectives, weights)
                if self.scalarization == "tchebycheff":
                    loss = (gamma * losses).max()
                else:
                    loss = (gamma * losses).sum()
                loss = loss + self.reg * self._weights.penalty()
                opt.zero_grad()
                loss.backward()
                opt.step()
                _check_finite_params(params, "fit")
                history.append(float(loss.detach()))
        except (ValueError, TypeError):
            self._weights.load_state_dict(before)
            raise
        self._objectives = objectives
        self.history_ = history
        return self

    def merge(
        self, preference: Sequence[float] | np.ndarray | torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """The merged state_dict for a preference on the simplex (same keys/dtypes as the input).

        Parameters
        ----------
        preference : array-like of shape (K,)

        Returns
        -------
        dict
        """
        gamma = check_preference(preference, self.n_tasks_)
        if not self.conditioned:
            gamma = self._uniform()
        with torch.no_grad():
            return self._weights.to_state_dict(self._weights(gamma), self._order)

    def base_state_dict(self) -> dict[str, torch.Tensor]:
        """The preference-independent part ``theta_0 + sum_k lambda_k tau_k`` as a state_dict
        (``merge(p) - base_state_dict()`` is the low-rank personal term at ``p``)."""
        with torch.no_grad():
            return self._weights.to_state_dict(
                self._weights(self._uniform(), base_only=True), self._order
            )

    def _uniform(self) -> torch.Tensor:
        return torch.full((self.n_tasks_,), 1.0 / self.n_tasks_)

    def front(
        self,
        n_points: int = 11,
        objectives: Sequence[Callable[[dict[str, torch.Tensor]], float]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate merged models along a spread of preferences.

        Parameters
        ----------
        n_points : int, default=11
            See :func:`simplex_grid`.
        objectives : sequence of K callables, optional
            ``f(state_dict) -> float`` per task (e.g. test error); default: the fit objectives.

        Returns
        -------
        preferences : ndarray of shape (n, K)
        values : ndarray of shape (n, K)
        """
        funcs = objectives if objectives is not None else self._objectives
        if funcs is None:
            raise ValueError("objectives: call fit first or pass objectives")
        _check_objectives(funcs, self.n_tasks_)
        prefs = simplex_grid(n_points, self.n_tasks_)
        values = np.empty_like(prefs)
        with torch.no_grad():
            for i, p in enumerate(prefs):
                sd = self.merge(p)
                values[i] = [float(f(sd)) for f in funcs]
        return prefs, values

    _CONFIG = ("rank", "base", "init_scale", "scalarization", "conditioned", "alpha", "n_steps",
               "lr", "reg", "random_state")  # fmt: skip

    def save(self, path: str | os.PathLike) -> None:
        """Write the learned parameters (coefficients and tensor factors) and the settings.

        The file holds only what ``fit`` learned (a few MB), not the models: :meth:`load`
        takes the same pre-trained and fine-tuned state_dicts again.

        Parameters
        ----------
        path : str or PathLike
            A ``.safetensors`` file.
        """
        from safetensors.torch import save_file

        meta = {
            "pareto_merge.merger": json.dumps(
                {
                    **{k: getattr(self, k) for k in self._CONFIG},
                    "n_tasks": self.n_tasks_,
                    "keys": self._weights.keys,
                    "fixed_keys": sorted(self._weights.fixed),
                    "fitted": hasattr(self, "history_"),
                }
            )
        }
        tensors = {k: v.detach().contiguous() for k, v in self._weights.state_dict().items()}
        save_file(tensors, os.fspath(path), metadata=meta)

    @classmethod
    def load(
        cls, path: str | os.PathLike, pretrained: StateDict, finetuned: Sequence[StateDict]
    ) -> "ParetoMerger":
        """A merger written by :meth:`save`, on the same pre-trained and fine-tuned weights.

        Raises ``ValueError`` when the models' mergeable entries or the number of tasks differ
        from those the merger was fitted on.
        """
        from safetensors import safe_open
        from safetensors.torch import load_file

        path = os.fspath(path)
        try:
            with safe_open(path, framework="pt") as f:
                meta = json.loads((f.metadata() or {})["pareto_merge.merger"])
            tensors = load_file(path)
        except Exception as e:  # safetensors' own errors on a damaged file, or no metadata
            raise ValueError(
                f"path: {path!r} is not a file written by ParetoMerger.save ({e})"
            ) from e
        if len(finetuned) != meta["n_tasks"]:
            raise ValueError(
                f"finetuned: the merger was fitted on {meta['n_tasks']} tasks, got {len(finetuned)}"
            )
        merger = cls(
            pretrained, finetuned, **{k: meta[k] for k in cls._CONFIG},
            fixed_keys=meta["fixed_keys"],
        )  # fmt: skip
        if merger._weights.keys != meta["keys"]:
            missing = sorted(set(meta["keys"]) - set(merger._weights.keys))
            extra = sorted(set(merger._weights.keys) - set(meta["keys"]))
            raise ValueError(
                "pretrained: its floating entries differ from the merger's: missing "
                f"{missing[:5]}, not fitted {extra[:5]}"
            )
        try:
            merger._weights.load_state_dict(tensors, strict=True)
        except RuntimeError as e:
            raise ValueError(f"path: parameters do not fit these models ({e})") from e
        if meta["fitted"]:
            merger.history_ = []
        return merger

    @property
    def coefficients_(self) -> np.ndarray:
        """Layer-wise merging coefficients ``lambda``, shape (K, n_merged_entries)."""
        return self._weights.coefficients().detach().numpy().copy()

    def n_extra_parameters(self) -> int:
        """Parameters added on top of one model: tensor factors plus coefficients."""
        return int(
            sum(p.numel() for p in self._weights.factors.values()) + self._weights.coef.numel()
        )


def adamerging(
    pretrained: StateDict,
    finetuned: Sequence[StateDict],
    objectives: Sequence[Objective],
    *,
    init_scale: float = 0.3,
    n_steps: int = 300,
    lr: float = 1e-3,
    preference: Sequence[float] | np.ndarray | None = None,
    verbose: bool = False,
) -> tuple[dict[str, torch.Tensor], np.ndarray]:
    """Layer-wise AdaMerging (Yang et al., 2024): learn ``lambda`` by minimizing summed entropy.

    The coefficients are clipped to [0, 1] in the forward pass, as in AdaMerging's code.

    Parameters
    ----------
    pretrained, finetuned : as in :class:`ParetoMerger`
    objectives : sequence of K callables (unlabeled entropy per task)
    init_scale, n_steps, lr, verbose : optimization settings
    preference : array-like of shape (K,), optional
        Weights of the summed objectives (``sum_k p_k L_k``): one AdaMerging run per preference
        is the expensive way to a front. Default: all ones (AdaMerging).

    Returns
    -------
    merged : dict
        The merged state_dict.
    coefficients : ndarray of shape (K, n_merged_entries)
    """
    check_state_dicts(pretrained, finetuned)
    _check_objectives(objectives, len(finetuned))
    _check_positive(n_steps, "n_steps", integer=True)
    _check_positive(lr, "lr")
    if (
        isinstance(init_scale, bool)
        or not isinstance(init_scale, int | float | np.integer | np.floating)
        or not np.isfinite(init_scale)
    ):
        raise ValueError(f"init_scale: must be a finite number, got {init_scale!r}")
    weights = _MergedWeights(
        pretrained, finetuned, rank=0, init_scale=init_scale, learn_coefficients=True, seed=0
    )
    opt = torch.optim.Adam([weights.coef], lr=lr)
    gamma = torch.full((len(finetuned),), 1.0 / len(finetuned))
    w = (
        torch.ones(len(finetuned))
        if preference is None
        else check_preference(preference, len(finetuned)) * len(finetuned)
    )
    for _ in tqdm(range(n_steps), disable=not verbose, desc="AdaMerging"):
        loss = (w * _evaluate(objectives, weights(gamma))).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        _check_finite_params([weights.coef], "adamerging")
    with torch.no_grad():
        merged = weights.to_state_dict(weights(gamma), list(pretrained))
    return merged, weights.coefficients().detach().numpy().copy()
