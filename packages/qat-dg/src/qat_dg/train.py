"""DomainBed-style leave-one-domain-out training with training-domain validation selection."""

from __future__ import annotations

import copy
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tqdm.auto import tqdm

from qat_dg._sources import batches, concat_sources, take
from qat_dg._validation import check_bool, check_int
from qat_dg.algorithms import Algorithm, get_algorithm_class
from qat_dg.data import DomainDataset, split_domains

__all__ = ["TrainConfig", "accuracy", "train_domain", "train_loo"]


@dataclass
class TrainConfig:
    """Training-loop settings.

    Parameters
    ----------
    n_steps : int, default=1500
        Optimisation steps (each takes ``batch_size`` images from every source domain).
    checkpoint_freq : int, default=100
        Evaluate every this many steps (and at the last step).
    holdout_fraction : float, default=0.2
        Per-domain validation fraction.
    test_envs : list of int or None
        Target domains for :func:`train_loo`; None = every domain once.
    seed : int, default=0
        Seeds model init, minibatch sampling and the in/out split.
    threads : int or None
        ``torch.set_num_threads`` value; None leaves it.
    keep_model : bool, default=True
        Return a copy of the selected (training-domain validation) algorithm.
    verbose : bool, default=False
        tqdm progress bar.
    """

    n_steps: int = 1500
    checkpoint_freq: int = 100
    holdout_fraction: float = 0.2
    test_envs: list[int] | None = None
    seed: int = 0
    threads: int | None = None
    keep_model: bool = True
    verbose: bool = False

    def __post_init__(self) -> None:
        for name in ("n_steps", "checkpoint_freq"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
            setattr(self, name, int(v))
        h = self.holdout_fraction
        if isinstance(h, bool) or not isinstance(h, numbers.Real) or not 0.0 < h < 1.0:
            raise ValueError(f"holdout_fraction must be a number in (0, 1), got {h!r}")
        self.holdout_fraction = float(h)
        if self.test_envs is not None:
            t = self.test_envs
            if isinstance(t, str | bytes) or not isinstance(t, Sequence) or not t:
                raise TypeError(f"test_envs must be a non-empty list of domain indices, got {t!r}")
            self.test_envs = [check_int("test_envs", e, 0) for e in t]
            if len(set(self.test_envs)) != len(self.test_envs):
                raise ValueError(f"test_envs has duplicates: {self.test_envs}")
        self.seed = check_int("seed", self.seed, 0)
        if self.threads is not None:
            self.threads = check_int("threads", self.threads)
        self.keep_model = check_bool("keep_model", self.keep_model)
        self.verbose = check_bool("verbose", self.verbose)


@torch.no_grad()
def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy of ``model.predict`` (or ``model``) on x (N, C, H, W), y (N,), in eval mode.

    ``x`` may be an :class:`~qat_dg.folders.ImageFiles` (decoded 256 images at a time).
    """
    if not isinstance(y, torch.Tensor) or y.is_floating_point() or y.is_complex():
        raise TypeError("y must be an integer tensor of class ids")
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {tuple(y.shape)}")
    if len(x) != len(y) or len(x) == 0:
        raise ValueError("x and y must have the same non-zero length")
    was = model.training
    model.eval()
    try:
        run = model.predict if hasattr(model, "predict") else model
        hits = [run(xb).argmax(dim=1) for xb in batches(x, 256)]  # streamed images: chunks
    finally:
        model.train(was)
    return float((torch.cat(hits) == y).float().mean())


def _select(records: list[dict], key: str) -> dict:
    cands = [r for r in records if r["selectable"]] or records
    return max(cands, key=lambda r: (r[key], r["step"]))


def train_domain(
    dataset: DomainDataset,
    algorithm: str,
    test_env: int,
    hparams: dict[str, Any] | None = None,
    cfg: TrainConfig | None = None,
) -> dict[str, Any]:
    """Train ``algorithm`` on every domain but ``test_env`` and evaluate on it.

    Parameters
    ----------
    dataset : DomainDataset
        Domains.
    algorithm : str
        Name for :func:`~qat_dg.algorithms.get_algorithm_class`.
    test_env : int
        Index of the held-out target domain.
    hparams : dict or None
        Algorithm hyper-parameters.
    cfg : TrainConfig or None
        Loop settings.

    Returns
    -------
    dict
        ``"iid"``: target accuracy (80 % "in" split) of the checkpoint with the best mean
        source-validation accuracy among selectable checkpoints (for QTDoG: quantized ones);
        ``"oracle"``: the same selected by target "out" accuracy; ``"last"``: final checkpoint;
        ``"records"``: per-checkpoint accuracies; ``"model"``: the selected algorithm (copy) if
        ``cfg.keep_model``; ``"source"``: (x, y) of the source train splits, ``"target"``: (x, y)
        of the whole target domain (for flatness probes).
    """
    cfg = TrainConfig() if cfg is None else cfg
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    if not isinstance(dataset, DomainDataset):
        raise TypeError(f"dataset must be a DomainDataset, got {type(dataset).__name__}")
    if len(dataset) < 2:
        raise ValueError("dataset must hold at least 2 domains")
    test_env = check_int("test_env", test_env, 0)  # 1.7 was read as domain 1
    if test_env >= len(dataset):
        raise ValueError(f"test_env must be in [0, {len(dataset) - 1}], got {test_env}")
    if hparams is not None and not isinstance(hparams, Mapping):
        raise TypeError(f"hparams must be a dict or None, got {type(hparams).__name__}")
    cls = get_algorithm_class(algorithm)
    old_threads = torch.get_num_threads()
    try:  # the caller's thread count is restored
        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        return _train_domain(dataset, algorithm, cls, test_env, hparams, cfg)
    finally:
        torch.set_num_threads(old_threads)


def _train_domain(dataset, algorithm, cls, test_env, hparams, cfg) -> dict[str, Any]:
    splits = split_domains(dataset, cfg.holdout_fraction, seed=cfg.seed)
    sources = [e for e in range(len(dataset)) if e != test_env]
    torch.manual_seed(cfg.seed)
    algo: Algorithm = cls(dataset.input_shape, dataset.num_classes, len(sources), hparams)
    bs = int(algo.hparams["batch_size"])
    gen = torch.Generator().manual_seed(cfg.seed)
    views = {}
    for e, (i_in, i_out) in enumerate(splits):
        x, y = dataset.envs[e]
        views[e] = {"in": (take(x, i_in), y[i_in]), "out": (take(x, i_out), y[i_out])}
    val_x = concat_sources([views[e]["out"][0] for e in sources])
    val_y = torch.cat([views[e]["out"][1] for e in sources])
    src_x = concat_sources([views[e]["in"][0] for e in sources])
    src_y = torch.cat([views[e]["in"][1] for e in sources])

    def evaluated(rec: dict[str, Any]) -> dict[str, Any]:
        """``rec`` with every environment's in/out accuracy and the selection keys."""
        for e in range(len(dataset)):
            for split in ("in", "out"):
                rec[f"env{e}_{split}"] = accuracy(algo, *views[e][split])
        rec["src_val"] = sum(rec[f"env{e}_out"] for e in sources) / len(sources)
        rec["tgt_val"] = rec[f"env{test_env}_out"]
        rec["target"] = rec[f"env{test_env}_in"]
        return rec

    records: list[dict] = []
    best_key, best_model = None, None
    bar = tqdm(range(cfg.n_steps), disable=not cfg.verbose, desc=f"{algorithm} test_env={test_env}")
    for step in bar:
        mbs = []
        for e in sources:
            xi, yi = views[e]["in"]
            idx = torch.randint(len(xi), (bs,), generator=gen)
            mbs.append((xi[idx], yi[idx]))  # streamed images are decoded here
        stats = algo.update(mbs, step=step)
        if (step + 1) % cfg.checkpoint_freq == 0 or step + 1 == cfg.n_steps:
            algo.on_checkpoint(val_x, val_y)
            rec = evaluated({"step": step + 1, "loss": stats["loss"]})
            rec["selectable"] = bool(algo.selectable)
            records.append(rec)
            key = (rec["selectable"], rec["src_val"])
            if cfg.keep_model and (best_key is None or key >= best_key):
                best_key, best_model = key, copy.deepcopy(algo)
            bar.set_postfix(loss=f"{stats['loss']:.3f}", src_val=f"{rec['src_val']:.3f}")
    algo.finalize(src_x, src_y)
    if algo.final_only:  # SWA-style outputs: only the finalized model is the method's answer
        for rec in records:
            rec["selectable"] = False
        rec = evaluated({"step": cfg.n_steps, "loss": records[-1]["loss"], "final": True})
        rec["selectable"] = True
        records.append(rec)
        if cfg.keep_model:
            best_model = copy.deepcopy(algo)
    iid, oracle = _select(records, "src_val"), _select(records, "tgt_val")
    return {
        "test_env": int(test_env),
        "iid": iid["target"],
        "iid_step": iid["step"],
        "oracle": oracle["target"],
        "last": records[-1]["target"],
        "records": records,
        "model": best_model,
        "source": (src_x, src_y),
        "target": dataset.envs[test_env],
        "target_in": views[test_env]["in"],
    }


def train_loo(
    dataset: DomainDataset,
    algorithm: str = "QTDoG",
    hparams: dict[str, Any] | None = None,
    cfg: TrainConfig | None = None,
) -> dict[int, dict[str, Any]]:
    """Leave-one-domain-out: :func:`train_domain` once per target in ``cfg.test_envs``.

    Returns
    -------
    dict
        ``{test_env: result of train_domain}``.
    """
    cfg = TrainConfig() if cfg is None else cfg
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    if not isinstance(dataset, DomainDataset):
        raise TypeError(f"dataset must be a DomainDataset, got {type(dataset).__name__}")
    envs = range(len(dataset)) if cfg.test_envs is None else cfg.test_envs
    outside = [e for e in envs if e >= len(dataset)]
    if outside:  # checked before the first (long) run, not after it
        raise ValueError(
            f"cfg.test_envs {outside} are not domains of this {len(dataset)}-domain set"
        )
    get_algorithm_class(algorithm)
    return {int(e): train_domain(dataset, algorithm, int(e), hparams, cfg) for e in envs}
