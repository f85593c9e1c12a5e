"""Networks: small from-scratch ones for the digits DG benchmark, and torchvision's ResNet-18."""

from __future__ import annotations

from torch import Tensor, nn

__all__ = ["MLP", "ResNet18", "SmallCNN", "build_model"]


class SmallCNN(nn.Module):
    """conv3x3(C->w)-BN-ReLU-conv3x3(w->2w, /2)-BN-ReLU-conv3x3(2w->4w, /2)-BN-ReLU-GAP-Linear.

    Parameters
    ----------
    in_channels : int
        Input channels (1 grey, 3 colour).
    num_classes : int
        Output classes.
    width : int, default=16
        Channels of the first convolution (16 gives ~24k parameters).
    """

    def __init__(self, in_channels: int, num_classes: int, width: int = 16) -> None:
        super().__init__()
        w = int(width)
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, w, 3, padding=1, bias=False),
            nn.BatchNorm2d(w),
            nn.ReLU(),
            nn.Conv2d(w, 2 * w, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(2 * w),
            nn.ReLU(),
            nn.Conv2d(2 * w, 4 * w, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(4 * w),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(4 * w, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, C, H, W) -> logits (B, num_classes)."""
        return self.classifier(self.features(x))


class MLP(nn.Module):
    """Flatten-Linear-ReLU-Linear-ReLU-Linear classifier (fastest option, for CI).

    Parameters
    ----------
    in_features : int
        Flattened input size.
    num_classes : int
        Output classes.
    hidden : int, default=64
        Hidden width.
    """

    def __init__(self, in_features: int, num_classes: int, hidden: int = 64) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Flatten(),
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.classifier = nn.Linear(hidden, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, ...) -> logits (B, num_classes)."""
        return self.classifier(self.features(x))


class ResNet18(nn.Module):
    """torchvision's ResNet-18 as ``features`` (its ``fc`` replaced by the identity) + ``classifier``.

    ``features`` holds torchvision's own module names, so an ImageNet state dict without its
    ``fc.*`` entries loads into it unchanged (``hparams["pretrained"]``); DomainBed's recipe.
    Needs the ``torchvision`` extra.

    Parameters
    ----------
    in_channels : int
        Input channels; 3 is torchvision's stem, anything else replaces its first convolution.
    num_classes : int
        Output classes.
    """

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        try:
            from torchvision.models import resnet18
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError(
                "arch='resnet18' needs torchvision: pip install 'qat-dg[torchvision]'"
            ) from err
        net = resnet18(weights=None)
        if in_channels != 3:
            net.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        net.fc = nn.Identity()
        self.features = net
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, C, H, W) with H, W >= 1 -> logits (B, num_classes)."""
        return self.classifier(self.features(x))


def build_model(
    arch: str, input_shape: tuple[int, ...], num_classes: int, width: int | None = None
) -> nn.Module:
    """Build ``"small_cnn"``, ``"mlp"`` or ``"resnet18"`` for inputs of shape (C, H, W).

    Parameters
    ----------
    arch : {"small_cnn", "mlp", "resnet18"}
        Architecture name (``"resnet18"``: torchvision's, needs the ``torchvision`` extra).
    input_shape : tuple of int
        (C, H, W) of one input.
    num_classes : int
        Output classes (>= 2).
    width : int or None
        ``SmallCNN`` first-layer width (default 16) or ``MLP`` hidden width (default 64);
        must be None for ``"resnet18"``.

    Returns
    -------
    nn.Module
    """
    if len(input_shape) != 3 or any(int(d) < 1 for d in input_shape):
        raise ValueError(f"input_shape must be (C, H, W) with positive sizes, got {input_shape}")
    if int(num_classes) < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    if arch == "small_cnn":
        return SmallCNN(input_shape[0], num_classes, width or 16)
    if arch == "mlp":
        n = input_shape[0] * input_shape[1] * input_shape[2]
        return MLP(n, num_classes, width or 64)
    if arch == "resnet18":
        if width is not None:
            raise ValueError(f"width must be None for arch='resnet18', got {width!r}")
        return ResNet18(input_shape[0], num_classes)
    raise ValueError(f"arch must be 'small_cnn', 'mlp' or 'resnet18', got {arch!r}")
