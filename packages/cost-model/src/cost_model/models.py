"""COGNATE-style cost model (spec §2.4–2.5): shared matrix and hom-knob encoders, per-hardware
mappers for the heterogeneous knobs into one latent space, a shared predictor, ranking loss.

    s(A, c, h) = g([E_A(A); E_hom(c_hom); M_h(c_het^h); w])        lower = predicted faster

``mapper="naive"`` replaces the per-hardware mappers by one MLP over the concatenated one-hot
of every hardware's het knobs (absent hardware = zeros): the spec's ``naive_finetune`` baseline.
"""

from __future__ import annotations

import copy
import itertools
import math
import numbers
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from cost_model.dataset import CostDataset
from cost_model.space import SHARED_KNOBS

__all__ = ["CognateModel", "pairwise_rank_loss"]


def pairwise_rank_loss(
    scores: torch.Tensor, log_runtime: torch.Tensor, groups: torch.Tensor, margin: float = 1.0
) -> torch.Tensor:
    """Mean over pairs (a, b) of one group with t_a < t_b of max(0, margin - (s_b - s_a)).

    Parameters
    ----------
    scores, log_runtime, groups : torch.Tensor, shape (n,)

    Returns
    -------
    torch.Tensor
        Scalar (0 when there is no pair).
    """
    for name, t in (("scores", scores), ("log_runtime", log_runtime), ("groups", groups)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim != 1 or t.shape != scores.shape:
            raise ValueError(f"{name} must be 1-D with the shape of scores {tuple(scores.shape)}, "
                             f"got {tuple(t.shape)}")  # fmt: skip
    for name, t in (("scores", scores), ("log_runtime", log_runtime)):
        if not t.is_floating_point():
            raise TypeError(f"{name} must be floating point, got {t.dtype}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} contains NaN or inf")
    if groups.is_floating_point() or groups.is_complex():
        raise TypeError(f"groups must hold integer ids, got {groups.dtype}")
    if scores.numel() == 0:
        raise ValueError("scores is empty")
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) or not margin >= 0:
        raise ValueError(f"margin must be a non-negative number, got {margin!r}")
    same = groups[:, None] == groups[None, :]
    faster = log_runtime[:, None] < log_runtime[None, :]  # a faster than b
    pairs = same & faster
    if not bool(pairs.any()):
        return scores.sum() * 0.0
    hinge = torch.relu(margin - (scores[None, :] - scores[:, None]))
    return hinge[pairs].mean()


class _MatrixEncoder(nn.Module):
    def __init__(self, n_scalars: int, embed_dim: int) -> None:
        super().__init__()
        ch = (1, 16, 32, 64, 64)
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(ch):
            layers += [nn.Conv2d(a, b, 3, stride=2, padding=1), nn.ReLU()]
        self.conv = nn.Sequential(*layers)
        self.scal = nn.Sequential(nn.Linear(n_scalars, 32), nn.ReLU())
        self.out = nn.Sequential(nn.Linear(64 + 32, embed_dim), nn.ReLU())

    def forward(self, img: torch.Tensor, scal: torch.Tensor) -> torch.Tensor:
        h = self.conv(img[:, None]).mean((2, 3))
        return self.out(torch.cat([h, self.scal(scal)], 1))


class _Net(nn.Module):
    def __init__(
        self,
        n_scalars: int,
        n_workload: int,
        het_sizes: dict[str, tuple[int, ...]],
        embed_dim: int,
        het_dim: int,
        mapper: str,
        resolution: int,
    ) -> None:
        super().__init__()
        self.matrix = _MatrixEncoder(n_scalars, embed_dim)
        self.img_dec = nn.Linear(embed_dim, resolution * resolution)
        self.scal_dec = nn.Linear(embed_dim, n_scalars)
        self.hom_emb = nn.ModuleList(nn.Embedding(len(v) + 1, 16) for v in SHARED_KNOBS.values())
        self.hom = nn.Sequential(nn.Linear(16 * len(SHARED_KNOBS), 64), nn.ReLU())
        self.mapper_kind = mapper
        self.het_sizes = dict(het_sizes)
        self.mappers = nn.ModuleDict()
        self.decoders = nn.ModuleDict()
        self.const = nn.ParameterDict()
        if mapper == "naive":
            total = sum(sum(s) for s in het_sizes.values())
            self.union = nn.Sequential(
                nn.Linear(max(total, 1), 64), nn.ReLU(), nn.Linear(64, het_dim)
            )
        for hw, sizes in het_sizes.items():
            key = _key(hw)
            if sum(sizes) == 0:
                self.const[key] = nn.Parameter(torch.zeros(het_dim))
            elif mapper == "cognate":
                self.mappers[key] = nn.Sequential(
                    nn.Linear(sum(sizes), 64), nn.ReLU(), nn.Linear(64, het_dim)
                )
                self.decoders[key] = nn.Linear(het_dim, sum(sizes))
        self.pred = nn.Sequential(
            nn.Linear(embed_dim + 64 + het_dim + n_workload, 128),
            nn.ReLU(),
            nn.Linear(128, 64),
            nn.ReLU(),
            nn.Linear(64, 1),
        )

    def onehot(self, hw: str, het: torch.Tensor) -> torch.Tensor:
        sizes = self.het_sizes[hw]
        parts = [nn.functional.one_hot(het[:, j], s).float() for j, s in enumerate(sizes)]
        return torch.cat(parts, 1) if parts else het.new_zeros((het.shape[0], 0)).float()

    def het_latent(self, hw: str, het: torch.Tensor) -> torch.Tensor:
        key = _key(hw)
        if key in self.const:
            return self.const[key].expand(het.shape[0], -1)
        oh = self.onehot(hw, het)
        if self.mapper_kind == "naive":
            blocks = []
            for other, sizes in self.het_sizes.items():
                blocks.append(oh if other == hw else oh.new_zeros((oh.shape[0], sum(sizes))))
            return self.union(torch.cat(blocks, 1))
        return self.mappers[key](oh)

    def forward(
        self, z_a: torch.Tensor, hom: torch.Tensor, het: torch.Tensor, hw: str, work: torch.Tensor
    ) -> torch.Tensor:
        e = torch.cat([emb(hom[:, j]) for j, emb in enumerate(self.hom_emb)], 1)
        z = torch.cat([z_a, self.hom(e), self.het_latent(hw, het), work], 1)
        return self.pred(z).squeeze(1)


def _key(hw: str) -> str:
    return hw.replace("-", "_").replace(".", "_")


class CognateModel:
    """Transferable cost model with fit / predict / rank (spec §2.4).

    Parameters
    ----------
    het_sizes : dict
        hardware -> number of values of each of its het knobs (``CostDataset.het_sizes``).
    resolution : int, default=32
        Density image side.
    n_scalars : int, default=16
    n_workload : int, default=1
    embed_dim : int, default=128
    het_dim : int, default=32
    loss : {"rank", "mse_log"}, default="rank"
    margin : float, default=1.0
    mapper : {"cognate", "naive"}, default="cognate"
    hom_present : dict, optional
        hardware -> which :data:`SHARED_KNOBS` it has (``CostDataset.hom_present``). Knobs
        present on every hardware feed the shared encoder E_hom; the others are treated as
        heterogeneous and one-hot encoded into that hardware's mapper. Default: all present.
    seed : int, default=0
    device : str or torch.device, default="cpu"
        Where the network trains and scores (``"cuda"``); it is initialised on the CPU from
        ``seed`` and moved, so every device starts from the same weights.
    """

    def __init__(
        self,
        het_sizes: dict[str, Sequence[int]],
        *,
        resolution: int = 32,
        n_scalars: int = 16,
        n_workload: int = 1,
        embed_dim: int = 128,
        het_dim: int = 32,
        loss: str = "rank",
        margin: float = 1.0,
        mapper: str = "cognate",
        hom_present: dict[str, Sequence[bool]] | None = None,
        seed: int = 0,
        device: str | torch.device = "cpu",
    ) -> None:
        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device must name a torch device, got {device!r}") from exc
        if loss not in ("rank", "mse_log"):
            raise ValueError(f"loss must be 'rank' or 'mse_log', got {loss!r}")
        if mapper not in ("cognate", "naive"):
            raise ValueError(f"mapper must be 'cognate' or 'naive', got {mapper!r}")
        if not het_sizes:
            raise ValueError("het_sizes must name at least one hardware")
        for name, value in (("resolution", resolution), ("n_scalars", n_scalars),
                            ("n_workload", n_workload), ("embed_dim", embed_dim),
                            ("het_dim", het_dim), ("seed", seed)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{name} must be an int, got {value!r}")
            if value < (0 if name == "seed" else 1):
                raise ValueError(f"{name} must be >= {0 if name == 'seed' else 1}, got {value}")
        if (
            isinstance(margin, bool)
            or not isinstance(margin, numbers.Real)
            or not (math.isfinite(margin) and margin >= 0)
        ):
            raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
        torch.manual_seed(seed)
        self.loss, self.margin, self.seed = loss, float(margin), seed
        self.resolution = int(resolution)
        self.het_sizes = {h: tuple(int(x) for x in s) for h, s in het_sizes.items()}
        n_shared = len(SHARED_KNOBS)
        present = {
            h: np.asarray(hom_present[h], dtype=bool)
            if hom_present and h in hom_present
            else np.ones(n_shared, dtype=bool)
            for h in self.het_sizes
        }
        for h, v in present.items():
            if v.shape != (n_shared,):
                raise ValueError(f"hom_present[{h!r}] must have {n_shared} entries")
        # homogeneous = present on every hardware; a shared-vocabulary knob that only some
        # hardware has is heterogeneous for this model and goes through that hardware's mapper
        self.shared_mask = np.logical_and.reduce(list(present.values()))
        self.extra_cols = {h: np.flatnonzero(v & ~self.shared_mask) for h, v in present.items()}
        vocab = [len(v) for v in SHARED_KNOBS.values()]
        self.mapper_sizes = {
            h: self.het_sizes[h] + tuple(vocab[j] for j in self.extra_cols[h])
            for h in self.het_sizes
        }
        self.net = _Net(
            n_scalars, n_workload, self.mapper_sizes, embed_dim, het_dim, mapper, resolution
        ).to(self.device)
        self.scal_mean: np.ndarray | None = None
        self.scal_std: np.ndarray | None = None

    # -- helpers --------------------------------------------------------------------------------
    def _t(self, a: np.ndarray) -> torch.Tensor:
        """An array as a tensor on the model's device (models pickled before ``device``: CPU)."""
        return torch.from_numpy(np.ascontiguousarray(a)).to(getattr(self, "device", "cpu"))

    def _check_ds(self, ds: CostDataset) -> None:
        if not isinstance(ds, CostDataset):
            raise TypeError(f"expected a CostDataset, got {type(ds).__name__}")
        if ds.hardware not in self.het_sizes:
            raise ValueError(f"hardware {ds.hardware!r} is unknown to this model")
        if tuple(ds.het_sizes) != self.het_sizes[ds.hardware]:
            raise ValueError(f"het_sizes of {ds.hardware!r} do not match the model")
        if len(ds) == 0:
            raise ValueError("dataset is empty")

    def _std(self, scalars: np.ndarray) -> torch.Tensor:
        if self.scal_mean is None:
            self.scal_mean = scalars.mean(0)
            self.scal_std = scalars.std(0) + 1e-6
        return self._t(((scalars - self.scal_mean) / self.scal_std).astype(np.float32))

    def _encode(self, ds: CostDataset, mats: np.ndarray) -> torch.Tensor:
        img = self._t(ds.images[mats])
        return self.net.matrix(img, self._std(ds.scalars[mats]))

    def _scores(self, ds: CostDataset, rows: np.ndarray) -> torch.Tensor:
        mats, inv = np.unique(ds.matrix_index[rows], return_inverse=True)
        z = self._encode(ds, mats)[self._t(inv)]
        work = self._t(ds.workload[ds.matrix_index[rows]])
        hom, het = self._config_inputs(ds, rows)
        return self.net(z, hom, het, ds.hardware, work)

    def _config_inputs(
        self, ds: CostDataset, rows: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        hom = ds.hom[rows] * self.shared_mask  # non-shared columns -> 0 ("absent")
        extra = ds.hom[rows][:, self.extra_cols[ds.hardware]] - 1
        het = np.concatenate([ds.het[rows], extra], axis=1)
        return self._t(hom), self._t(het)

    def _objective(self, ds: CostDataset, rows: np.ndarray) -> torch.Tensor:
        s = self._scores(ds, rows)
        lt = self._t(np.log(ds.runtime[rows])).float()
        g = self._t(ds.matrix_index[rows])
        if self.loss == "rank":
            return pairwise_rank_loss(s, lt, g, self.margin)
        # mse_log: per-matrix centred log runtime
        uniq, inv = torch.unique(g, return_inverse=True)
        mean = lt.new_zeros(len(uniq)).index_add_(0, inv, lt) / torch.bincount(inv).float()
        return ((s - (lt - mean[inv])) ** 2).mean()

    # -- pretraining ----------------------------------------------------------------------------
    def pretrain_matrix_encoder(
        self,
        images: np.ndarray,
        scalars: np.ndarray,
        *,
        epochs: int = 20,
        lr: float = 1e-3,
        batch_size: int = 32,
        verbose: bool = False,
    ) -> list[float]:
        """Autoencoder pretraining of E_A on unlabeled matrices (density image + scalars)."""
        imgs = self._t(np.asarray(images, dtype=np.float32))
        sc = self._std(np.asarray(scalars, dtype=np.float32))
        params = [
            *self.net.matrix.parameters(),
            *self.net.img_dec.parameters(),
            *self.net.scal_dec.parameters(),
        ]
        opt = torch.optim.Adam(params, lr=lr)
        g = torch.Generator().manual_seed(self.seed)
        hist = []
        for _ in tqdm(range(epochs), disable=not verbose, desc="matrix AE"):
            perm = torch.randperm(len(imgs), generator=g)
            tot = 0.0
            for s in range(0, len(perm), batch_size):
                i = perm[s : s + batch_size]
                z = self.net.matrix(imgs[i], sc[i])
                rec = torch.sigmoid(self.net.img_dec(z)).view_as(imgs[i])
                loss = ((rec - imgs[i]) ** 2).mean() + ((self.net.scal_dec(z) - sc[i]) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                tot += loss.item() * len(i)
            hist.append(tot / len(imgs))
        return hist

    def pretrain_mapper(
        self,
        hardware: str,
        *,
        n_configs: int = 2000,
        epochs: int = 30,
        lr: float = 1e-3,
    ) -> list[float]:
        """Autoencoder pretraining of M_h on random het configurations (no measurements)."""
        if hardware not in self.het_sizes:
            raise ValueError(f"hardware {hardware!r} is unknown to this model")
        key = _key(hardware)
        if key not in self.net.mappers:
            return []
        sizes = self.mapper_sizes[hardware]
        rng = np.random.default_rng(self.seed)
        het = self._t(np.stack([rng.integers(0, s, n_configs) for s in sizes], 1))
        params = [*self.net.mappers[key].parameters(), *self.net.decoders[key].parameters()]
        opt = torch.optim.Adam(params, lr=lr)
        hist = []
        for _ in range(epochs):
            logits = self.net.decoders[key](self.net.mappers[key](self.net.onehot(hardware, het)))
            loss, off = 0.0, 0
            for j, s in enumerate(sizes):
                loss = loss + nn.functional.cross_entropy(logits[:, off : off + s], het[:, j])
                off += s
            opt.zero_grad()
            loss.backward()  # type: ignore[union-attr]
            opt.step()
            hist.append(float(loss.detach()))  # type: ignore[union-attr]
        return hist

    # -- training / inference -------------------------------------------------------------------
    def parameters(self, part: str = "all") -> list[nn.Parameter]:
        """Parameters of ``all``, ``head`` (predictor) or ``no_matrix`` (all but E_A)."""
        if part == "head":
            return list(self.net.pred.parameters())
        if part == "no_matrix":
            skip = {id(p) for p in self.net.matrix.parameters()}
            return [p for p in self.net.parameters() if id(p) not in skip]
        return list(self.net.parameters())

    def fit(
        self,
        ds: CostDataset,
        *,
        epochs: int = 30,
        lr: float = 1e-3,
        batch_matrices: int = 8,
        part: str = "all",
        val: CostDataset | None = None,
        patience: int | None = None,
        verbose: bool = False,
    ) -> CognateModel:
        """Train on a dataset (ranking within each matrix); optional early stopping on ``val``.

        Returns
        -------
        self
        """
        self._check_ds(ds)
        if epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {epochs}")
        if self.scal_mean is None:
            self._std(ds.scalars)
        opt = torch.optim.Adam(self.parameters(part), lr=lr)
        rng = np.random.default_rng(self.seed)
        best, best_state, bad = np.inf, None, 0
        self.net.train()
        if val is not None and patience is not None:
            # the starting weights are a candidate too: a fine-tune that never improves the
            # validation loss returns the source model unchanged (never below zero-shot on val)
            with torch.no_grad():
                best = float(self._objective(val, np.arange(len(val))))
            best_state = copy.deepcopy(self.net.state_dict())
        for _ in tqdm(range(epochs), disable=not verbose, desc="fit"):
            mats = rng.permutation(ds.n_matrices)
            for s in range(0, len(mats), batch_matrices):
                rows = np.flatnonzero(np.isin(ds.matrix_index, mats[s : s + batch_matrices]))
                loss = self._objective(ds, rows)
                if loss.requires_grad:
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            if val is not None and patience is not None:
                with torch.no_grad():
                    v = float(self._objective(val, np.arange(len(val))))
                if v < best - 1e-6:
                    best, best_state, bad = v, copy.deepcopy(self.net.state_dict()), 0
                else:
                    bad += 1
                    if bad >= patience:
                        break
        if best_state is not None:
            self.net.load_state_dict(best_state)
        self.net.eval()
        return self

    @torch.no_grad()
    def score(self, ds: CostDataset) -> np.ndarray:
        """Scores of every row of a dataset (lower = predicted faster), shape (N,)."""
        if self.scal_mean is None:  # scoring first would take the scalars' statistics from ds
            raise RuntimeError(
                "CognateModel is not fitted: call fit (or pretrain_matrix_encoder) first"
            )
        self._check_ds(ds)
        self.net.eval()
        return self._scores(ds, np.arange(len(ds))).cpu().numpy().astype(np.float64)

    def predict(
        self,
        A: object,
        configs: list[dict],
        *,
        space: object,
        hardware: str,
        dense_width: int = 64,
        resolution: int | None = None,
    ) -> np.ndarray:
        """Scores of configurations of ``space`` on matrix ``A`` (lower = faster), shape (C,).

        ``resolution`` of the matrix image defaults to the one the model was built with.
        """
        from cost_model.features import MatrixFeaturizer

        if not configs:
            raise ValueError("configs is empty")
        own = getattr(self, "resolution", 32)  # models pickled before it was stored used 32
        if resolution is not None and resolution != own:
            raise ValueError(f"resolution must be the model's ({own}), got {resolution}")
        img, sc = MatrixFeaturizer(own)(A)
        enc = [space.encode(c) for c in configs]  # type: ignore[attr-defined]
        ds = CostDataset(
            hardware,
            "?",
            img[None],
            sc[None],
            np.full((1, 1), np.log2(dense_width), dtype=np.float32),
            ["A"],
            np.zeros(len(configs), dtype=np.int64),
            np.stack([e["hom"] for e in enc]),
            np.stack([e["het"] for e in enc]),
            np.ones(len(configs)),
            np.zeros(len(configs), dtype=bool),
            tuple(len(k.values) for k in space.het_knobs),  # type: ignore[attr-defined]
        )
        return self.score(ds)

    def rank_schedules(
        self, A: object, configs: list[dict], *, k: int = 5, **kwargs: object
    ) -> list[dict]:
        """The ``k`` configurations with the lowest predicted cost, best first.

        ``kwargs`` are passed to :meth:`predict` (``space``, ``hardware``, ...).
        """
        if not (isinstance(k, int) and k >= 1):
            raise ValueError(f"k must be a positive int, got {k!r}")
        s = self.predict(A, configs, **kwargs)  # type: ignore[arg-type]
        return [configs[i] for i in np.argsort(s, kind="stable")[:k]]

    def best_schedule(self, A: object, configs: list[dict], **kwargs: object) -> dict:
        """The configuration with the lowest predicted cost (``rank_schedules(..., k=1)[0]``)."""
        return self.rank_schedules(A, configs, k=1, **kwargs)[0]

    def clone(self) -> CognateModel:
        """Deep copy."""
        return copy.deepcopy(self)
