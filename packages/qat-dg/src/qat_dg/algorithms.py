"""DomainBed-style algorithms: ERM, QT-DoG (ERM + LSQ QAT) and the controls and baselines.

Interface (DomainBed): ``Algorithm(input_shape, num_classes, num_domains, hparams)``,
``update(minibatches, step=None) -> dict``, ``predict(x) -> logits``, ``forward = predict``;
plus two hooks the training loop calls: ``on_checkpoint(x_val, y_val)`` at every checkpoint
(SWAD's validation-loss valley) and ``finalize(x_source, y_source)`` after the last step.

``hparams["pretrained"]`` (a ``features`` state_dict) starts from a pre-trained backbone with a
fresh classifier, and ``hparams["freeze_bn"]`` keeps BatchNorm in eval mode, as DomainBed does
with its ImageNet ResNet-50.
"""

from __future__ import annotations

import copy
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.ao.quantization import FakeQuantize, MovingAveragePerChannelMinMaxObserver
from torch.nn.utils import parametrize
from torch.optim import swa_utils

from qat_dg._sources import batches, is_lazy
from qat_dg._validation import check_batch, check_int
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
    "SWA",
    "SWAD",
    "Algorithm",
    "FrozenFP",
    "NoiseInjection",
    "QTDoG",
    "TorchQAT",
    "default_hparams",
    "get_algorithm_class",
]

_BASE_HP: dict[str, Any] = {
    "lr": 1e-3,
    "weight_decay": 0.0,
    "batch_size": 32,
    "arch": "small_cnn",
    "width": None,
    "pretrained": None,  # state_dict of the network's ``features`` (fresh classifier)
    "freeze_bn": False,  # BatchNorm in eval mode throughout (DomainBed with pre-trained nets)
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
    "FrozenFP": {"quant_start_step": 600, "quant_targets": None},
    "TorchQAT": {"bits": 7, "quant_start_step": 600, "quant_targets": None},
    "SWA": {"swa_start_step": 750, "swa_freq": 10},
    "SWAD": {"swad_n_converge": 3, "swad_n_tolerance": 6, "swad_ratio": 1.2},
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


def _is_real(v: object) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


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
            if not (_is_real(v) and math.isfinite(v) and v > 0):
                raise ValueError(f"hparams['{key}'] must be a positive finite number, got {v!r}")
        for key in ("weight_decay", "rho", "sma_start_step", "quant_start_step", "swa_start_step"):
            v = self.hparams.get(key, 0)
            if not (_is_real(v) and math.isfinite(v) and v >= 0):
                raise ValueError(f"hparams['{key}'] must be a finite number >= 0, got {v!r}")
        b = self.hparams["batch_size"]
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < 1:
            raise ValueError(f"hparams['batch_size'] must be an int >= 1, got {b!r}")
        self.hparams["batch_size"] = int(b)
        if "bits" in self.hparams:
            quant_range(self.hparams["bits"])  # raises ValueError naming bits
        for key in ("swa_freq", "swad_n_converge", "swad_n_tolerance"):
            v = self.hparams.get(key, 1)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"hparams['{key}'] must be an int >= 1, got {v!r}")
        r = self.hparams.get("swad_ratio", 1.0)
        if not (isinstance(r, int | float) and math.isfinite(r) and r >= 1):
            raise ValueError(f"hparams['swad_ratio'] must be a finite number >= 1, got {r!r}")
        pre = self.hparams["pretrained"]
        if pre is not None and not isinstance(pre, Mapping):
            raise TypeError(f"hparams['pretrained'] must be a state_dict or None, got {type(pre)}")
        if isinstance(input_shape, str) or not isinstance(input_shape, Sequence) or not input_shape:
            raise TypeError(f"input_shape must be a tuple of ints (C, H, W), got {input_shape!r}")
        self.input_shape = tuple(check_int("input_shape", d) for d in input_shape)
        self.num_classes = check_int("num_classes", num_classes, 2)
        self.num_domains = check_int("num_domains", num_domains)
        self.num_updates = 0

    @property
    def selectable(self) -> bool:
        """Whether the current state may be chosen by model selection (the deployed form)."""
        return True

    def train(self, mode: bool = True) -> Algorithm:
        """``nn.Module.train``; with ``freeze_bn`` every BatchNorm stays in eval mode."""
        super().train(mode)
        if self.hparams.get("freeze_bn"):
            for m in self.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    m.eval()
        return self

    def on_checkpoint(self, x_val: Tensor, y_val: Tensor) -> None:
        """Called by the training loop at every checkpoint with the source validation data."""

    def finalize(self, x_source: Tensor, y_source: Tensor) -> None:
        """Called once after the last step with the source training data."""

    @property
    def final_only(self) -> bool:
        """True when only the state after :meth:`finalize` is the method's output (SWA/SWAD)."""
        return False

    def _check_minibatches(self, minibatches: list[tuple[Tensor, Tensor]]) -> tuple[Tensor, Tensor]:
        """Every (x, y): x a finite float batch (B, *input_shape), y integer labels (B,) in
        [0, num_classes); x cast to the network's dtype."""
        if not isinstance(minibatches, list | tuple) or len(minibatches) == 0:
            raise ValueError("minibatches must be a non-empty list of (x, y) pairs")
        xs, ys = [], []
        for x, y in minibatches:
            try:  # names x: dtype, shape, empty, NaN/inf
                x = check_batch(x, self, self.input_shape)
            except (TypeError, ValueError) as err:
                raise type(err)(f"minibatches: {err}") from err
            if not isinstance(y, Tensor):
                raise TypeError(f"minibatches: y must be a torch.Tensor, got {type(y).__name__}")
            if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
                raise TypeError(f"minibatches: y must hold integer class labels, got {y.dtype}")
            if y.ndim != 1 or len(y) != len(x):
                raise ValueError(
                    f"minibatches: y must have shape ({len(x)},) like x, got {tuple(y.shape)}"
                )
            if int(y.min()) < 0 or int(y.max()) >= self.num_classes:
                raise ValueError(f"minibatches: y holds labels outside [0, {self.num_classes})")
            xs.append(x)
            ys.append(y.long())
        x, y = torch.cat(xs), torch.cat(ys)
        if getattr(self, "_pretrained_unchecked", False):
            self._pretrained_unchecked = False
            if float(x.min()) >= 0.0 and float(x.max()) <= 1.0:
                warnings.warn(
                    "minibatches: the first batch lies in [0, 1], but a pretrained resnet18 "
                    "backbone was loaded; torchvision's ImageNet weights expect "
                    "ImageNet-normalised inputs (mean (0.485, 0.456, 0.406), std (0.229, 0.224, "
                    "0.225)), as load_domainbed gives by default. Ignore this if the weights "
                    "were trained on [0, 1] inputs",
                    UserWarning,
                    stacklevel=3,
                )
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

    def _check_input(self, x: Tensor) -> Tensor:
        """``x``: a non-empty finite float tensor (B, *input_shape), in the network's dtype."""
        return check_batch(x, self, self.input_shape)

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
        if hp["pretrained"] is not None:
            try:
                self.network.features.load_state_dict(hp["pretrained"], strict=True)
            except RuntimeError as err:
                raise ValueError(
                    f"hparams['pretrained'] does not fit the {hp['arch']}: {err}"
                ) from err
            self.hparams["pretrained"] = None  # loaded; do not carry a copy in every checkpoint
            # torchvision's ImageNet weights: the first batch's range is checked once
            self._pretrained_unchecked = hp["arch"] == "resnet18"
        self.train(True)
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
        x = self._check_input(x)
        return self.network(x)


class _SwitchAtStep(ERM):
    """ERM that changes regime once, when the step reaches ``quant_start_step``."""

    def _switch(self) -> None:
        """The regime change; must be idempotent (it is called on every later step)."""
        raise NotImplementedError

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """ERM step; makes the switch first when ``step`` (default: update count) reaches the start."""
        step = self.num_updates if step is None else int(step)
        if step >= int(self.hparams["quant_start_step"]):
            self._switch()
        return super().update(minibatches, step)


class QTDoG(_SwitchAtStep):
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

    def _switch(self) -> None:
        self.switch_to_quantized()

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """ERM step; switches to QAT first when ``step`` (default: update count) reaches the start."""
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
        x = self._check_input(x)
        self.network_sma.train(self.training)
        return self.network_sma(x)


class NoiseInjection(ERM):
    """Control: ERM whose target weights get uniform noise ``U(-s/2, s/2)`` at every step.

    ``s`` is LSQ's per-channel initial step ``2 mean|w_c| / sqrt(Q_P)`` of the current weights,
    so the noise matches QT-DoG's rounding-error scale without rounding (from
    ``quant_start_step`` on). Predictions use the clean weights.
    """

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """Gradient at the noisy weights, applied to the clean ones."""
        step = self.num_updates if step is None else int(step)
        if step < int(self.hparams["quant_start_step"]):
            return super().update(minibatches, step)
        x, y = self._check_minibatches(minibatches)
        bits = int(self.hparams["bits"])
        noises = []
        with torch.no_grad():
            for m in _target_layers(self.network, self.hparams):
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
        x = self._check_input(x)
        net = self.quantized_network()
        net.train(self.training)
        return net(x)


def _target_layers(network: nn.Module, hp: dict[str, Any]) -> list[nn.Module]:
    """The layers QT-DoG would quantize (same selection rule: targets, classifier excluded)."""
    kinds = {"conv": nn.Conv2d, "linear": nn.Linear}
    wanted = tuple(kinds[t] for t in _targets(hp))
    return [
        m
        for name, m in network.named_modules()
        if isinstance(m, wanted) and "classifier" not in name.split(".")
    ]


class FrozenFP(_SwitchAtStep):
    """Control: at ``quant_start_step`` stop training QT-DoG's target layers, in full precision.

    The same parameters stop moving as in ``QTDoG(freeze_quantized_after_switch=True)`` (the
    released code's effective behaviour), without any quantization: if this control matches the
    frozen QT-DoG, freezing, not quantization, explains the gain.
    """

    def _switch(self) -> None:
        """Freeze the target layers (once: later calls find them frozen)."""
        params = [p for m in _target_layers(self.network, self.hparams) for p in m.parameters()]
        if any(p.requires_grad for p in params):
            for p in params:
                p.requires_grad_(False)
                p.grad = None


class TorchQAT(_SwitchAtStep):
    """Control: PyTorch's own QAT recipe (``torch.ao`` observer-based fake quantization).

    At ``quant_start_step`` the target layers' weights get a ``torch.ao.quantization.FakeQuantize``
    parametrization: per-channel symmetric ``bits``-bit grid whose scale follows a moving-average
    min/max observer (no learned step size, straight-through gradient). Observers run only in
    training mode.
    """

    @property
    def is_quantized(self) -> bool:
        """True once the switch happened."""
        return any(parametrize.is_parametrized(m) for m in self.network.modules())

    @property
    def selectable(self) -> bool:
        """Only fake-quantized checkpoints are the deployed model."""
        return self.is_quantized

    def switch_to_quantized(self) -> None:
        """Register the fake-quant parametrization on every target weight (idempotent)."""
        if self.is_quantized:
            return
        q_n, q_p = quant_range(int(self.hparams["bits"]), symmetric=True)
        for m in _target_layers(self.network, self.hparams):
            fq = FakeQuantize(
                observer=MovingAveragePerChannelMinMaxObserver,
                quant_min=-q_n,
                quant_max=q_p,
                dtype=torch.qint8,
                qscheme=torch.per_channel_symmetric,
                ch_axis=0,
            )
            # unsafe: FakeQuantize has no right_inverse; the original Parameter object is kept,
            # so Adam's state carries over
            parametrize.register_parametrization(m, "weight", fq, unsafe=True)
        self.train(self.training)

    def train(self, mode: bool = True) -> TorchQAT:
        """Observers update in training mode only."""
        super().train(mode)
        for m in self.modules():
            if isinstance(m, FakeQuantize):
                (m.enable_observer if mode else m.disable_observer)()
        return self

    def _switch(self) -> None:
        self.switch_to_quantized()


class SWA(ERM):
    """Stochastic Weight Averaging (Izmailov et al., 2018) via ``torch.optim.swa_utils``.

    From ``swa_start_step`` on, every ``swa_freq`` steps the current weights are folded into a
    uniform average (``AveragedModel``); predictions use the average once it exists. Without
    ``freeze_bn``, :meth:`finalize` recomputes BatchNorm statistics on the source data
    (``update_bn``), as SWA prescribes.
    """

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        num_domains: int,
        hparams: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(input_shape, num_classes, num_domains, hparams)
        self.network_swa = swa_utils.AveragedModel(self.network, use_buffers=True)
        for p in self.network_swa.parameters():
            p.requires_grad_(False)

    @property
    def final_only(self) -> bool:
        """SWA's output is the final average (with recomputed BatchNorm statistics)."""
        return True

    @property
    def averaging(self) -> bool:
        """True once at least one model has been averaged."""
        return int(self.network_swa.n_averaged) > 0

    @property
    def selectable(self) -> bool:
        """Only averaged states are SWA's output."""
        return self.averaging

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """ERM step, then fold the weights into the average on the SWA schedule."""
        out = super().update(minibatches, step)
        k = self.num_updates - int(self.hparams["swa_start_step"])
        if k >= 0 and k % int(self.hparams["swa_freq"]) == 0:
            self.network_swa.update_parameters(self.network)
        return out

    def finalize(self, x_source: Tensor, y_source: Tensor) -> None:
        """BatchNorm statistics of the averaged weights (skipped with ``freeze_bn``)."""
        if not is_lazy(x_source):  # streamed images are checked as they are decoded
            x_source, _ = self._check_minibatches([(x_source, y_source)])
        if not self.averaging:
            self.network_swa.update_parameters(self.network)
        if not self.hparams["freeze_bn"]:
            bs = int(self.hparams["batch_size"]) * self.num_domains
            loader = (
                self._check_minibatches([(x_source[i : i + bs], y_source[i : i + bs])])[0]
                for i in range(0, len(x_source), bs)
            )
            swa_utils.update_bn(loader, self.network_swa)

    def predict_network(self) -> nn.Module:
        """The averaged network (the current one before averaging starts)."""
        net = self.network_swa.module if self.averaging else self.network
        return net

    def predict(self, x: Tensor) -> Tensor:
        """Logits of :meth:`predict_network`."""
        x = self._check_input(x)
        return self.predict_network()(x)


class SWAD(ERM):
    """SWAD (Cha et al., NeurIPS 2021): dense weight averaging over the validation-loss valley.

    The weights of every step are averaged within each checkpoint interval (a *segment*). At
    each checkpoint the segment average's source-validation loss ``E_i`` is recorded
    (:meth:`on_checkpoint`). :meth:`finalize` then applies the paper's rule (Sec. 3.3): the
    start ``t_s`` is the first segment that is the minimum of itself and the next
    ``swad_n_converge - 1`` segments (the loss stopped decreasing), the end ``t_e`` is the
    last segment before the first window of ``swad_n_tolerance`` segments whose losses all
    exceed ``swad_ratio * E_{t_s}`` (the loss left the valley). The output is the dense average
    of the weights of every step in segments ``t_s..t_e``. Paper: N_s = 3, N_e = 6, r = 1.2;
    the released code uses a tolerance on the mean of the first window, ratio 1.3.
    """

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        num_domains: int,
        hparams: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(input_shape, num_classes, num_domains, hparams)
        self._sum: list[Tensor] | None = None
        self._count = 0
        self.segments: list[tuple[list[Tensor], int, float]] = []  # (mean weights, steps, loss)
        self.network_swad: nn.Module | None = None
        self.valley_: tuple[int, int] | None = None

    @property
    def final_only(self) -> bool:
        """SWAD's output is the averaged model built by :meth:`finalize`."""
        return True

    @property
    def selectable(self) -> bool:
        """Only the finalized average is selectable."""
        return self.network_swad is not None

    def update(self, minibatches: list[tuple[Tensor, Tensor]], step: int | None = None) -> dict:
        """ERM step, then add the new weights to the running segment sum."""
        out = super().update(minibatches, step)
        with torch.no_grad():
            params = [p.detach() for p in self.network.parameters()]
            if self._sum is None:
                self._sum = [p.clone() for p in params]
            else:
                for a, p in zip(self._sum, params, strict=True):
                    a.add_(p)
            self._count += 1
        return out

    def on_checkpoint(self, x_val: Tensor, y_val: Tensor) -> None:
        """Close the segment: record its average weights and their source-validation loss."""
        if not is_lazy(x_val):
            x_val, y_val = self._check_minibatches([(x_val, y_val)])
        if self._sum is None:
            return
        mean = [a / self._count for a in self._sum]
        net = self._with_weights(mean)
        net.eval()
        total, bs = 0.0, 256
        with torch.no_grad():  # in chunks: streamed validation images are decoded per chunk
            for i, xb in enumerate(batches(x_val, bs)):
                yb = y_val[i * bs : i * bs + len(xb)]
                xb, yb = self._check_minibatches([(xb, yb)])
                total += float(F.cross_entropy(net(xb), yb, reduction="sum"))
        loss = total / len(y_val)
        self.segments.append((mean, self._count, loss))
        self._sum, self._count = None, 0

    def _with_weights(self, weights: list[Tensor]) -> nn.Module:
        net = copy.deepcopy(self.network)
        with torch.no_grad():
            for p, w in zip(net.parameters(), weights, strict=True):
                p.copy_(w)
        return net

    def valley(self) -> tuple[int, int]:
        """Segment indices ``(t_s, t_e)`` (inclusive) of the loss valley."""
        losses = [seg[2] for seg in self.segments]
        n = len(losses)
        if n == 0:
            raise RuntimeError("SWAD has no segments; call on_checkpoint during training")
        n_s, n_e = int(self.hparams["swad_n_converge"]), int(self.hparams["swad_n_tolerance"])
        t_s = next((i for i in range(n - n_s + 1) if losses[i] <= min(losses[i : i + n_s])), n - 1)
        thr = float(self.hparams["swad_ratio"]) * losses[t_s]
        t_e = n - 1
        for j in range(t_s + 1, n - n_e + 1):
            if min(losses[j : j + n_e]) > thr:
                t_e = j - 1
                break
        return t_s, t_e

    def finalize(self, x_source: Tensor, y_source: Tensor) -> None:
        """Average the segments of the valley (weighted by their step counts)."""
        if self._sum is not None:  # steps after the last checkpoint: not validated, dropped
            self._sum, self._count = None, 0
        t_s, t_e = self.valley()
        segs = self.segments[t_s : t_e + 1]
        total = sum(c for _, c, _ in segs)
        avg = [sum(w[i] * c for w, c, _ in segs) / total for i in range(len(segs[0][0]))]
        self.network_swad = self._with_weights(avg)
        self.valley_ = (t_s, t_e)
        self.train(self.training)

    def predict_network(self) -> nn.Module:
        """The SWAD average after :meth:`finalize`, the current network before."""
        return self.network_swad if self.network_swad is not None else self.network

    def predict(self, x: Tensor) -> Tensor:
        """Logits of :meth:`predict_network`."""
        x = self._check_input(x)
        return self.predict_network()(x)


_REGISTRY = {
    c.__name__: c
    for c in (ERM, QTDoG, SAM, ERM_SMA, NoiseInjection, PTQ, FrozenFP, TorchQAT, SWA, SWAD)
}


def get_algorithm_class(name: str) -> type[Algorithm]:
    """Algorithm class by name: ``ERM``, ``QTDoG``, ``SAM``, ``ERM_SMA``, ``NoiseInjection``,
    ``PTQ``, ``FrozenFP``, ``TorchQAT``, ``SWA``, ``SWAD``."""
    if name not in _REGISTRY:
        raise ValueError(f"algorithm name must be one of {sorted(_REGISTRY)}, got {name!r}")
    return _REGISTRY[name]
