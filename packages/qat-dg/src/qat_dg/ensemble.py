"""Ensembles of independently trained models: ERM ensembles and EoQ (QT-DoG Sec. 4.3).

EoQ follows the Ensemble-of-Averages rule: sum the members' logits, then argmax.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from qat_dg._validation import check_batch
from qat_dg.quant import is_quantized, model_size_bits

__all__ = ["Ensemble", "EoQ"]


def _network(member: nn.Module) -> nn.Module:
    # an Algorithm predicts with predict_network() (e.g. PTQ's quantized copy)
    return member.predict_network() if hasattr(member, "predict_network") else member


def _signature(member: nn.Module) -> list[tuple[str, str, tuple[int, ...]]]:
    net = _network(member)
    mods = [(n, type(m).__name__) for n, m in net.named_modules()]
    shapes = [(n, "", tuple(p.shape)) for n, p in net.named_parameters()]
    return [(n, t, ()) for n, t in mods] + shapes


class Ensemble(nn.Module):
    """Prediction ensemble of same-architecture members.

    Parameters
    ----------
    members : sequence of nn.Module
        Trained models or :class:`~qat_dg.algorithms.Algorithm` objects (their ``predict`` is
        used). All must share one architecture (module types and parameter shapes).
    combine : {"logits", "probs"}, default="logits"
        ``"logits"``: sum of member logits (EoA / EoQ rule); ``"probs"``: mean softmax.

    Raises
    ------
    ValueError
        Empty ``members``, unknown ``combine`` or mismatched architectures.
    """

    def __init__(self, members: Sequence[nn.Module], combine: str = "logits") -> None:
        super().__init__()
        members = list(members)
        if not members:
            raise ValueError("members must hold at least one model")
        if not all(isinstance(m, nn.Module) for m in members):
            raise TypeError("members must be torch.nn.Module objects")
        if combine not in ("logits", "probs"):
            raise ValueError(f"combine must be 'logits' or 'probs', got {combine!r}")
        ref = _signature(members[0])
        for i, m in enumerate(members[1:], start=1):
            if _signature(m) != ref:
                raise ValueError(f"members have mismatched architectures (member 0 vs member {i})")
        self.members = nn.ModuleList(members)
        self.combine = combine

    def member_outputs(self, x: Tensor) -> Tensor:
        """Logits of every member, shape (M, B, num_classes)."""
        outs = [m.predict(x) if hasattr(m, "predict") else m(x) for m in self.members]
        return torch.stack(outs)

    def predict(self, x: Tensor) -> Tensor:
        """Combined scores (B, num_classes): summed logits, or mean probabilities."""
        x = check_batch(x, self)
        try:
            z = self.member_outputs(x)
        except RuntimeError as e:  # a shape the members cannot take (conv/linear size errors)
            raise ValueError(f"x of shape {tuple(x.shape)} does not fit the members: {e}") from e
        if self.combine == "logits":
            return z.sum(dim=0)
        return z.softmax(dim=-1).mean(dim=0)

    def forward(self, x: Tensor) -> Tensor:
        """Same as :meth:`predict`."""
        return self.predict(x)

    def size_bits(self) -> int:
        """Total parameter storage of the members (see :func:`~qat_dg.quant.model_size_bits`)."""
        return sum(model_size_bits(_network(m)) for m in self.members)


class EoQ(Ensemble):
    """Ensemble of Quantized models: every member must hold fake-quant layers.

    Parameters
    ----------
    members : sequence of nn.Module
        Quantized models or QTDoG algorithms after the QAT switch.
    combine : {"logits", "probs"}, default="logits"
        See :class:`Ensemble`.
    """

    def __init__(self, members: Sequence[nn.Module], combine: str = "logits") -> None:
        for i, m in enumerate(members):
            if isinstance(m, nn.Module) and not is_quantized(_network(m)):
                raise ValueError(f"members[{i}] is not quantized (EoQ needs quantized members)")
        super().__init__(members, combine)
