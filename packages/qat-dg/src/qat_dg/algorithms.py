"""DomainBed-style algorithms: ERM, QT-DoG (ERM + LSQ QAT), SAM, ERM_SMA, NoiseInjection, PTQ.

Interface (DomainBed): ``Algorithm(input_shape, num_classes, num_domains, hparams)``,
``update(minibatches, step=None) -> dict``, ``predict(x) -> logits``, ``forward = predict``.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qat_dg.models import build_model
from qat_dg.quant import (
    QuantConfig,
    init_step_size,
    is_quantized,
    quant_parameters,
    quant_range,
    quantize_model,
    quantized_modules,
)

__all__ = [
    "ERM",
    "ERM_SMA",
    "PTQ",
    "SAM",
    "Algorithm",
    "NoiseInjection",
    "QTDoG",
    "default_hparams",
    "get_algorithm_class",
]

_BASE_HP: dict[str, Any] = {
    "lr": 1e-3,
    "weight_decay": 0.0,
    "batch_size": 32,
    "arch": "small_cnn",
    "width": None,
}
_EXTRA_HP: dict[str, dict[str, Any]] = {
    "QTDoG": {
        "bits": 7,
        "quant_start_step": 600,
        "per_channel": True,
        "symmetric": False,
        "quant_targets": None,  # None: ("conv",) for small_cnn, ("linear",) for mlp
        "grad_scale": "tensor",
        "step_lr": None,  # None: same lr as the weights
        "freeze_quantized_after_switch": False,
    },
    "SAM": {"rho": 0.05},
    "ERM_SMA": {"sma_start_step": 100},
    "NoiseInjection": {"bits": 7, "quant_start_step": 600, "quant_targets": None},
    "PTQ": {"bits": 7, "quant_targets": None},
}


def default_hparams(algorithm: str) -> dict[str, Any]:
    """Default hyper-parameters of ``algorithm`` (a fresh dict)."""
    get_algorithm_class(algorithm)
    return {**_BASE_HP, **_EXTRA_HP.get(algorithm, {})}


def _targets(hp: dict[str, Any]) -> tuple[str, ...]:
    t = hp.get("quant_targets")
    if t is None:
        return ("linear",) if hp["arch"] == "mlp" else ("conv",)
    return (t,) if isinstance(t, str) else tuple(t)


class Algorithm(nn.Module):
    """Base class: holds ``hparams`` and counts updates.

    Parameters
    ----------
    input_shape : tuple of int
        (C, H, W) of one input.
    num_classes : int
        Number of classes.
    num_domains : int
        Number of training domains (minibatches per update).
    hparams : dict or None
        Overrides of :func:`default_hparams`. Keys of other algorithms are ignored (one dict
        can drive a whole comparison); keys no algorithm knows raise ``ValueError``.
    """

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        num_domains: int,
        hparams: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        defaults = default_hparams(name)
        hparams = dict(hparams or {})
        # keys of other algorithms are ignored so one dict can drive a whole comparison
        known = set(_BASE_HP).union(*(set(v) for v in _EXTRA_HP.values()))
        unknown = set(hparams) - known
        if unknown:
            raise ValueError(f"hparams has unknown keys for {name}: {sorted(unknown)}")
        self.hparams = {**defaults, **{k: v for k, v in hparams.items() if k in defaults}}
        for key in ("lr",):
            v = self.hparams[key]
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise ValueError(f"hparams['{key}'] must be a positive finite number, got {v!r}")
        for key in ("weight_decay", "rho", "sma_start_step", "quant_start_step"):
            v = self.hparams.get(key, 0)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise ValueError(f"hparams['{key}'] must be a finite number >= 0, got {v!r}")
        b = self.hparams["batch_size"]
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"hparams['batch_size'] must be an int >= 1, got {b!r}")
        if "bits" in self.hparams:
            quant_range(self.hparams["bits"])  # raises ValueError naming bits
        if int(num_domains) < 1:
            raise ValueError(f"num_domains must be >= 1, got {num_domains}")
        self.input_shape = tuple(int(d) for d in input_shape)
        self.num_classes = int(num_classes)
        self.num_domains = int(num_domains)
        self.num_updates = 0

    @property
    def selectable(self) -> bool:
        """Whether the current state may be chosen by model selection (the deployed form)."""
        return True

    def _check_minibatches(self, minibatches: list[tuple[Tensor, Tensor]]) -> tuple[Tensor, Tensor]:
        if not isinstance(minibatches, list | tuple) or len(minibatches) == 0:
            raise ValueError("minibatches must be a non-empty list of (x, y) pairs")
        for x, y in minibatches:
            if x.shape[0] != y.shape[0] or x.shape[0] == 0:
                raise ValueError("minibatches: each x and y must have the same non-zero length")
            if tuple(x.shape[1:]) != self.input_shape:
                raise ValueError(
                    f"minibatches: x has shape {tuple(x.shape[1:])}, expected {self.input_shape}"
                )
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        if not torch.isfinite(x).all():
            raise ValueError("minibatches: x contains NaN or inf")
        return x, y

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """One optimisation step on one minibatch per training domain; returns logged values."""
        raise NotImplementedError

    def predict_network(self) -> nn.Module:
        """The ``nn.Module`` that :meth:`predict` runs (for flatness probes and size counts)."""
        raise NotImplementedError

    def predict(self, x: Tensor) -> Tensor:
        """Logits of shape (B, num_classes) for x of shape (B, C, H, W)."""
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """Same as :meth:`predict` (DomainBed)."""
        return self.predict(x)


class ERM(Algorithm):
    """Empirical risk minimisation on the pooled source minibatches (Adam)."""

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        num_domains: int,
        hparams: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(input_shape, num_classes, num_domains, hparams)
        hp = self.hparams
        self.network = build_model(hp["arch"], self.input_shape, self.num_classes, hp["width"])
        self.optimizer = torch.optim.Adam(
            self.network.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"]
        )

    def _loss(self, x: Tensor, y: Tensor) -> Tensor:
        return F.cross_entropy(self.network(x), y)

    def _step_at(self, x: Tensor, y: Tensor, shifts: list[tuple[Tensor, Tensor]]) -> Tensor:
        """Loss gradient at the weights moved by ``shifts`` ((param, delta) pairs), applied from
        the unmoved weights; counts the update and returns the loss at the moved weights."""
        with torch.no_grad():
            for p, d in shifts:
                p.add_(d)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self._loss(x, y)
        loss.backward()
        with torch.no_grad():
            for p, d in shifts:
                p.sub_(d)
        self.optimizer.step()
        self.num_updates += 1
        return loss

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """Cross-entropy step on the concatenated minibatches; returns ``{"loss": float}``."""
        x, y = self._check_minibatches(minibatches)
        loss = self._step_at(x, y, [])
        return {"loss": float(loss.detach())}

    def predict_network(self) -> nn.Module:
        """The trained network itself."""
        return self.network

    def predict(self, x: Tensor) -> Tensor:
        """Logits (B, num_classes)."""
        return self.network(x)


class QTDoG(ERM):
    """ERM, then LSQ quantization-aware training from ``quant_start_step`` on (QT-DoG Sec. 3).

    At the switch the target layers are swapped in place for fake-quant layers (same weight
    ``Parameter`` objects, so Adam's state carries over), the step sizes are initialised from
    the current weights and added to the optimiser as a new parameter group, and training of the
    same cross-entropy objective continues. ``freeze_quantized_after_switch=True`` instead stops
    updating the quantized layers' weights and steps (ablation).
    """

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        num_domains: int,
        hparams: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(input_shape, num_classes, num_domains, hparams)
        hp = self.hparams
        self.quant_config = QuantConfig(
            bits=hp["bits"],
            per_channel=hp["per_channel"],
            symmetric=hp["symmetric"],
            targets=_targets(hp),
            grad_scale=hp["grad_scale"],
        )
        if int(hp["quant_start_step"]) < 0:
            raise ValueError(
                f"hparams['quant_start_step'] must be >= 0, got {hp['quant_start_step']}"
            )
        # fail early (not at the switch) if nothing would be quantized
        quantize_model(self.network, self.quant_config, inplace=False)

    @property
    def is_quantized(self) -> bool:
        """True once the QAT switch happened."""
        return is_quantized(self.network)

    @property
    def selectable(self) -> bool:
        """Only quantized checkpoints are the deployed QT-DoG model."""
        return self.is_quantized

    def switch_to_quantized(self) -> None:
        """Swap in fake-quant layers and extend the optimiser (idempotent)."""
        if self.is_quantized:
            return
        quantize_model(self.network, self.quant_config, inplace=True)
        if self.hparams["freeze_quantized_after_switch"]:
            for _, m in quantized_modules(self.network):
                for p in m.parameters():
                    p.requires_grad_(False)
                    p.grad = None
            return
        lr = self.hparams["step_lr"] or self.hparams["lr"]
        self.optimizer.add_param_group(
            {"params": list(quant_parameters(self.network)), "lr": lr, "weight_decay": 0.0}
        )

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """ERM step; switches to QAT first when ``step`` (default: update count) reaches the start."""
        step = self.num_updates if step is None else int(step)
        if step >= int(self.hparams["quant_start_step"]):
            self.switch_to_quantized()
        out = super().update(minibatches, step)
        out["quantized"] = float(self.is_quantized)
        return out


class SAM(ERM):
    """Sharpness-aware minimisation (Foret et al., 2021) with Adam as the base optimiser."""

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """Ascent to ``w + rho g/||g||``, gradient there, descent from ``w``."""
        x, y = self._check_minibatches(minibatches)
        params = [p for p in self.network.parameters() if p.requires_grad]
        loss = self._loss(x, y)
        grads = torch.autograd.grad(loss, params)
        norm = torch.sqrt(sum((g.detach() ** 2).sum() for g in grads)) + 1e-12
        scale = float(self.hparams["rho"]) / norm
        eps = [g * scale for g in grads]
        self._step_at(x, y, list(zip(params, eps, strict=True)))
        return {"loss": float(loss.detach())}


class ERM_SMA(ERM):
    """ERM whose predictions use the uniform average of the weights from ``sma_start_step`` on."""

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        num_domains: int,
        hparams: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(input_shape, num_classes, num_domains, hparams)
        self.network_sma = copy.deepcopy(self.network)
        for p in self.network_sma.parameters():
            p.requires_grad_(False)
        self.sma_count = 0

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """ERM step, then fold the new weights into the running average."""
        out = super().update(minibatches, step)
        with torch.no_grad():
            averaging = self.num_updates >= int(self.hparams["sma_start_step"])
            if averaging:
                self.sma_count += 1
            for pa, p in zip(self.network_sma.parameters(), self.network.parameters(), strict=True):
                if averaging:
                    pa.mul_((self.sma_count - 1) / self.sma_count).add_(p / self.sma_count)
                else:
                    pa.copy_(p)
            for ba, b in zip(self.network_sma.buffers(), self.network.buffers(), strict=True):
                ba.copy_(b)
        return out

    def predict_network(self) -> nn.Module:
        """The weight-averaged network."""
        self.network_sma.train(self.training)
        return self.network_sma

    def predict(self, x: Tensor) -> Tensor:
        """Logits of the averaged network."""
        self.network_sma.train(self.training)
        return self.network_sma(x)


class NoiseInjection(ERM):
    """Control: ERM whose target weights get uniform noise ``U(-s/2, s/2)`` at every step.

    ``s`` is LSQ's per-channel initial step ``2 mean|w_c| / sqrt(Q_P)`` of the current weights,
    so the noise matches QT-DoG's rounding-error scale without rounding (from
    ``quant_start_step`` on). Predictions use the clean weights.
    """

    def _noisy_layers(self) -> list[nn.Module]:
        kinds = {"conv": nn.Conv2d, "linear": nn.Linear}
        wanted = tuple(kinds[t] for t in _targets(self.hparams))
        return [
            m
            for name, m in self.network.named_modules()
            if isinstance(m, wanted) and "classifier" not in name.split(".")
        ]

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """Gradient at the noisy weights, applied to the clean ones."""
        step = self.num_updates if step is None else int(step)
        if step < int(self.hparams["quant_start_step"]):
            return super().update(minibatches, step)
        x, y = self._check_minibatches(minibatches)
        bits = int(self.hparams["bits"])
        noises = []
        with torch.no_grad():
            for m in self._noisy_layers():
                s = init_step_size(m.weight, bits).reshape(-1, *([1] * (m.weight.ndim - 1)))
                noises.append((m.weight, (torch.rand_like(m.weight) - 0.5) * s))
        loss = self._step_at(x, y, noises)
        return {"loss": float(loss.detach())}


class PTQ(ERM):
    """Control: ERM training, predictions from a round-to-nearest ``bits``-bit copy (no QAT).

    Per-channel scale ``max|w_c| / Q_P`` (no clipping error), recomputed after each update.
    """

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        num_domains: int,
        hparams: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(input_shape, num_classes, num_domains, hparams)
        self._cache: tuple[int, nn.Module] | None = None

    def quantized_network(self) -> nn.Module:
        """The RTN-quantized copy of the current network."""
        if self._cache is None or self._cache[0] != self.num_updates:
            q = quantize_model(
                self.network, bits=int(self.hparams["bits"]), targets=_targets(self.hparams)
            )
            _, q_p = quant_range(int(self.hparams["bits"]))
            with torch.no_grad():
                for _, m in quantized_modules(q):
                    amax = m.weight.abs().reshape(m.weight.shape[0], -1).amax(dim=1)
                    m.quantizer.step.copy_((amax / q_p).clamp_min(1e-8))
            self._cache = (self.num_updates, q)
        return self._cache[1]

    def predict_network(self) -> nn.Module:
        """The round-to-nearest quantized copy."""
        return self.quantized_network()

    def predict(self, x: Tensor) -> Tensor:
        """Logits of the quantized copy."""
        net = self.quantized_network()
        net.train(self.training)
        return net(x)


_REGISTRY = {c.__name__: c for c in (ERM, QTDoG, SAM, ERM_SMA, NoiseInjection, PTQ)}


def get_algorithm_class(name: str) -> type[Algorithm]:
    """Algorithm class by name: ``ERM``, ``QTDoG``, ``SAM``, ``ERM_SMA``, ``NoiseInjection``, ``PTQ``."""
    if name not in _REGISTRY:
        raise ValueError(f"algorithm must be one of {sorted(_REGISTRY)}, got {name!r}")
    return _REGISTRY[name]
