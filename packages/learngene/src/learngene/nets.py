"""The model families a hypernetwork can initialise, behind one constructor."""

from __future__ import annotations

from torch import nn

from learngene.cnn import ResNetSpec, TinyResNet
from learngene.vit import TinyViT, ViTSpec

__all__ = ["NETS", "SPECS", "make_net"]

#: spec types and the network classes they build
SPECS = (ViTSpec, ResNetSpec)
NETS = (TinyViT, TinyResNet)


def make_net(spec: ViTSpec | ResNetSpec, n_classes: int, distill_dim=None) -> nn.Module:
    """``TinyViT(spec, ...)`` or ``TinyResNet(spec, ...)``, by the spec's type."""
    if isinstance(spec, ViTSpec):
        return TinyViT(spec, n_classes, distill_dim=distill_dim)
    if isinstance(spec, ResNetSpec):
        return TinyResNet(spec, n_classes, distill_dim=distill_dim)
    raise TypeError(f"arch must be a ViTSpec or a ResNetSpec, got {type(spec).__name__}")
