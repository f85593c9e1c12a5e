"""Shared estimator machinery: validation, per-domain batch sampling, the epoch loop with
intermediate-domain model selection, and sequence scoring (spec §2.1, §2.6)."""

from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator
from tqdm.auto import tqdm

from evolving_dg._validation import check_array, check_domains

__all__ = ["EvolvingEstimator"]


class EvolvingEstimator(BaseEstimator):
    """Base class: subclasses define ``_build``, ``_train_step`` and ``_predict_logits``."""

    _min_source = 1

    # ---------------------------------------------------------------- checks
    def _check_common(self) -> None:
        for name in ("epochs", "iters_per_epoch", "batch_per_domain"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not (isinstance(self.lr, numbers.Real) and np.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive number, got {self.lr!r}")
        if (
            isinstance(self.width, bool)
            or not isinstance(self.width, numbers.Integral)
            or self.width <= 0
        ):
            raise ValueError(f"width must be a positive int, got {self.width!r}")
        try:
            torch.device(getattr(self, "device", "cpu"))
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device must name a torch device, got {self.device!r}") from exc

    def _check_fit_input(self, domains, val_domains):
        doms = check_domains(domains, "domains", min_len=self._min_source)
        shape = doms[0][0].shape[1:]
        for t, (X, _) in enumerate(doms):
            if X.shape[1:] != shape:
                raise ValueError(f"domains[{t}] has sample shape {X.shape[1:]}, expected {shape}")
        vals = []
        if val_domains is not None and len(val_domains):
            vals = check_domains(val_domains, "val_domains")
            for t, (X, _) in enumerate(vals):
                if X.shape[1:] != shape:
                    raise ValueError(f"val_domains[{t}] has sample shape {X.shape[1:]}")
        k = int(max(max(y.max() for _, y in doms), max((y.max() for _, y in vals), default=0)))
        seen = np.unique(np.concatenate([y for _, y in doms]))
        if len(seen) < 2:
            raise ValueError(
                f"domains: every source label is {int(seen[0])}; a classifier needs >= 2 classes"
            )
        single = [t for t, (_, y) in enumerate(doms) if len(np.unique(y)) == 1]
        if single:
            warnings.warn(
                f"domains {single[:8]} hold a single class each: their class-conditional "
                "statistics are undefined, and a model may learn the domain instead of the label",
                UserWarning,
                stacklevel=3,
            )
        return doms, vals, shape, k + 1

    @staticmethod
    def _check_eval(eval_domains, shape, n_classes: int) -> list:
        """Validate ``eval_domains`` (monitoring only) against the training data's shape."""
        if eval_domains is None or not len(eval_domains):
            return []
        evals = check_domains(eval_domains, "eval_domains")
        for t, (X, y) in enumerate(evals):
            if X.shape[1:] != shape:
                raise ValueError(
                    f"eval_domains[{t}] has sample shape {X.shape[1:]}, expected {shape}"
                )
            if y.max() >= n_classes:
                raise ValueError(f"eval_domains[{t}]: labels must lie in [0, {n_classes})")
        return evals

    def _check_X(self, X, name: str = "X") -> np.ndarray:
        self._check_fitted()
        return check_array(X, name, self.input_shape_)

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    @property
    def _device(self) -> torch.device:
        return torch.device(getattr(self, "device", "cpu"))

    def _tensor(self, a: np.ndarray) -> torch.Tensor:
        """A validated array as a tensor on the estimator's device."""
        return torch.from_numpy(a).to(self._device)

    # ---------------------------------------------------------------- training loop
    def _sampler(self, doms, rng: np.random.Generator):
        B = self.batch_per_domain
        small = [t for t, (X, _) in enumerate(doms) if len(X) < B]
        if small:
            warnings.warn(
                f"batch_per_domain={B} exceeds the size of domain(s) {small[:5]}; sampling with "
                "replacement there",
                stacklevel=3,
            )
        Xs = [self._tensor(X) for X, _ in doms]
        ys = [self._tensor(y) for _, y in doms]

        def draw():
            idx = [rng.choice(len(X), B, replace=len(X) < B) for X in Xs]
            x = torch.stack([X[i] for X, i in zip(Xs, idx, strict=True)], 1)  # (B, T, ...)
            y = torch.stack([Y[i] for Y, i in zip(ys, idx, strict=True)], 1)  # (B, T)
            return x, y

        return draw

    def _fit_loop(self, doms, vals, evals=()) -> None:
        rng = np.random.default_rng(self.random_state)
        self.net_.to(self._device)  # built on the CPU from random_state, trained on the device
        draw = self._sampler(doms, rng)
        opt = torch.optim.Adam(self.net_.parameters(), lr=self.lr)
        self.history_ = []
        best, best_state = -np.inf, None
        bar = tqdm(range(self.epochs), disable=not self.verbose, desc=type(self).__name__)
        for ep in bar:
            self.net_.train()
            sums: dict[str, float] = {}
            for _ in range(self.iters_per_epoch):
                x, y = draw()
                terms = self._train_step(x, y, ep)
                opt.zero_grad(set_to_none=True)
                terms["loss"].backward()
                opt.step()
                for k, v in terms.items():
                    sums[k] = sums.get(k, 0.0) + float(v.detach())
            rec = {k: v / self.iters_per_epoch for k, v in sums.items()}
            rec["epoch"] = ep
            if vals or evals:
                self._after_training(doms)  # sequence state of this epoch's weights
            if vals:
                accs = self._score(vals, len(doms))
                rec["val_acc"] = float(np.mean(accs))
                if rec["val_acc"] > best:
                    best, best_state = rec["val_acc"], copy.deepcopy(self.net_.state_dict())
            if evals:  # monitoring only: never used for selection, state restored by _score
                accs = self._score(list(vals) + list(evals), len(doms))[len(vals) :]
                rec["eval_acc"] = float(np.mean(accs))
                rec["eval_accs"] = accs
            self.history_.append(rec)
            bar.set_postfix(loss=rec["loss"], val=rec.get("val_acc", float("nan")))
        if best_state is not None:
            self.net_.load_state_dict(best_state)
            self.best_epoch_ = int(np.argmax([r["val_acc"] for r in self.history_]))
        else:
            self.best_epoch_ = self.epochs - 1
        self._after_training(doms)
        self.next_index_ = len(doms)
        if vals:  # advance the sequence state through the intermediate domains
            self._score(vals, len(doms), advance=True)
            self.next_index_ = len(doms) + len(vals)

    def _after_training(self, doms) -> None:
        """Hook: rebuild any sequence state after (re)loading weights."""

    # ---------------------------------------------------------------- inference
    @torch.no_grad()
    def _score(self, domains, start: int, advance: bool = False) -> list[float]:
        state = self._sequence_state()
        accs = []
        for k, (X, y) in enumerate(domains):
            logits = self._predict_logits(self._tensor(X), start + k, transductive=True)
            accs.append(float((logits.argmax(1).cpu().numpy() == y).mean()))
        if not advance:
            self._set_sequence_state(state)
        return accs

    def _sequence_state(self):
        return None

    def _set_sequence_state(self, state) -> None:
        pass

    def score_sequence(self, target_domains) -> np.ndarray:
        """Accuracy on each target domain, processed in order after the fitted sequence.

        Parameters
        ----------
        target_domains : list of (X_t, y_t)

        Returns
        -------
        ndarray, shape (n_target,)
        """
        self._check_fitted()
        doms = check_domains(target_domains, "target_domains")
        for t, (X, y) in enumerate(doms):
            if X.shape[1:] != self.input_shape_:
                raise ValueError(f"target_domains[{t}] has sample shape {X.shape[1:]}")
            if y.max() >= self.n_classes_:
                raise ValueError(f"target_domains[{t}]: labels must lie in [0, {self.n_classes_})")
        self.net_.eval()
        return np.array(self._score(doms, self.next_index_))

    @torch.no_grad()
    def predict_sequence(self, X_list) -> list[np.ndarray]:
        """Labels for consecutive unlabelled target domains (transductive where supported)."""
        self._check_fitted()
        if isinstance(X_list, np.ndarray) or not hasattr(X_list, "__len__") or not len(X_list):
            raise TypeError("X_list must be a non-empty list of arrays, one per target domain")
        Xs = [self._check_X(X, f"X_list[{k}]") for k, X in enumerate(X_list)]
        self.net_.eval()
        state = self._sequence_state()
        out = [
            self._predict_logits(self._tensor(X), self.next_index_ + k, True)
            .argmax(1)
            .cpu()
            .numpy()
            for k, X in enumerate(Xs)
        ]
        self._set_sequence_state(state)
        return out

    @torch.no_grad()
    def predict_proba(self, X, domain_index: int | None = None) -> np.ndarray:
        """Class probabilities for one domain, non-transductive (no sequence state is used).

        Parameters
        ----------
        X : array, shape (n, *input_shape)
        domain_index : int, optional
            Time index of the domain (default: the first domain after the fitted sequence).

        Returns
        -------
        ndarray, shape (n, n_classes)
        """
        X = self._check_X(X)
        t = self.next_index_ if domain_index is None else domain_index
        if isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0:
            raise ValueError(f"domain_index must be a non-negative int, got {domain_index!r}")
        self.net_.eval()
        return self._predict_logits(self._tensor(X), int(t), False).softmax(1).cpu().numpy()

    def predict(self, X, domain_index: int | None = None) -> np.ndarray:
        """Labels, shape (n,); see :meth:`predict_proba`."""
        return self.predict_proba(X, domain_index).argmax(1)
