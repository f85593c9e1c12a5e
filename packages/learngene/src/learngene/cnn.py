"""TinyResNet: the CNN family a TAL hypernetwork can also initialise (ResNet-style, GroupNorm).

Basic residual blocks (two 3×3 convolutions) in stages; the first block of every stage after the
first halves the resolution, and a 1×1 convolution with its norm projects the shortcut where the
shape changes. Normalisation is GroupNorm, as in BiT / ResNet-v2-GN, not BatchNorm: a predicted
network has no running statistics, and with BatchNorm its accuracy would depend on whether it is
evaluated with batch statistics (GHN-2's workaround) or with the identity running statistics of a
fresh model. Convolutions have no bias (each is followed by a norm).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from learngene._validation import check_choices, check_int, check_range
from learngene.vit import SpecSpace, check_image_batch

__all__ = ["ResNetSpace", "ResNetSpec", "TinyResNet"]


@dataclass(frozen=True)
class ResNetSpec:
    """Architecture of a TinyResNet.

    Parameters
    ----------
    blocks : tuple of int
        Residual blocks per stage (one entry per stage).
    widths : tuple of int
        Channels per stage, each divisible by ``groups``.
    in_chans : int
        Input channels.
    img : int
        Side of the square input image; must be divisible by ``2 ** (len(blocks) - 1)``.
    groups : int
        GroupNorm groups.
    """

    blocks: tuple
    widths: tuple
    in_chans: int = 1
    img: int = 16
    groups: int = 4

    def __post_init__(self):
        for name in ("blocks", "widths"):
            v = getattr(self, name)
            if not isinstance(v, tuple | list) or not v:
                raise TypeError(f"{name} must be a non-empty tuple of int, got {v!r}")
            object.__setattr__(self, name, tuple(check_int(x, name, 1) for x in v))
        if len(self.blocks) != len(self.widths):
            raise ValueError(
                f"blocks ({len(self.blocks)} stages) and widths ({len(self.widths)}) differ in length"
            )
        for name in ("in_chans", "img", "groups"):
            check_int(getattr(self, name), name, 1)
        bad = [w for w in self.widths if w % self.groups]
        if bad:
            raise ValueError(f"widths {bad} are not divisible by groups ({self.groups})")
        if self.img % 2 ** (len(self.blocks) - 1):
            raise ValueError(f"img ({self.img}) must be divisible by 2**(stages - 1)")

    @property
    def depth(self) -> int:
        """Convolutions on the main path (stem included)."""
        return 1 + 2 * sum(self.blocks)

    def as_dict(self) -> dict:
        return asdict(self)


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int, groups: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.norm1 = nn.GroupNorm(groups, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.norm2 = nn.GroupNorm(groups, c_out)
        self.down_conv = self.down_norm = None
        if stride != 1 or c_in != c_out:
            self.down_conv = nn.Conv2d(c_in, c_out, 1, stride, bias=False)
            self.down_norm = nn.GroupNorm(groups, c_out)

    def forward(self, x):
        h = self.norm2(self.conv2(F.relu(self.norm1(self.conv1(x)))))
        s = x if self.down_conv is None else self.down_norm(self.down_conv(x))
        return F.relu(h + s)


class TinyResNet(nn.Module):
    """ResNet-style CNN on small images, with the same interface as :class:`~learngene.TinyViT`.

    Parameters
    ----------
    spec : ResNetSpec
    n_classes : int
    distill_dim : int or None
        If set, a bias-free ``distill_head`` maps the pooled feature to ``distill_dim``.
    """

    def __init__(self, spec: ResNetSpec, n_classes: int, distill_dim=None, head_hidden=None):
        super().__init__()
        if not isinstance(spec, ResNetSpec):
            raise TypeError(f"spec must be a ResNetSpec, got {type(spec).__name__}")
        if head_hidden is not None:
            raise ValueError("head_hidden: a TinyResNet has no hidden head (ancestries are ViTs)")
        check_int(n_classes, "n_classes", 1)
        self.spec, self.n_classes = spec, n_classes
        self.pre_logits = None
        w0 = spec.widths[0]
        self.stem_conv = nn.Conv2d(spec.in_chans, w0, 3, 1, 1, bias=False)
        self.stem_norm = nn.GroupNorm(spec.groups, w0)
        stages, c = [], w0
        for s, (n, w) in enumerate(zip(spec.blocks, spec.widths, strict=True)):
            blocks = []
            for b in range(n):
                blocks.append(_Block(c, w, 2 if (s > 0 and b == 0) else 1, spec.groups))
                c = w
            stages.append(nn.ModuleList(blocks))
        self.stages = nn.ModuleList(stages)
        self.head = nn.Linear(c, n_classes)
        self.distill_head = (
            None
            if distill_dim is None
            else nn.Linear(c, check_int(distill_dim, "distill_dim", 1), bias=False)
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Kaiming-normal (fan-out) convolutions, norms (1, 0), trunc-normal(0.02) linear heads."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.GroupNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def _check(self, x):
        check_image_batch(x, self.spec.in_chans, self.spec.img)
        return x.to(self.stem_conv.weight.dtype)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Globally pooled feature, shape (n, widths[-1])."""
        h = F.relu(self.stem_norm(self.stem_conv(self._check(x))))
        for stage in self.stages:
            for blk in stage:
                h = blk(h)
        return h.mean(dim=(2, 3))

    def forward(self, x: torch.Tensor, return_features: bool = False):
        """Logits (n, n_classes); with ``return_features`` also the pooled feature."""
        f = self.forward_features(x)
        out = self.head(f)
        return (out, f) if return_features else out


class ResNetSpace(SpecSpace):
    """A sampled TinyResNet family: stage count, blocks per stage and base width (doubling per stage).

    Parameters
    ----------
    stages : (int, int)
        Inclusive range of stage counts.
    blocks : (int, int)
        Inclusive range of blocks in every stage (all stages of a spec share it).
    base_width : tuple of int
        Width of the first stage; stage s has ``base_width * 2**s`` channels.
    """

    def __init__(self, stages=(2, 3), blocks=(1, 2), base_width=(8, 16), in_chans=1, img=16,
                 groups=4):  # fmt: skip
        stages, blocks = check_range(stages, "stages"), check_range(blocks, "blocks")
        base_width = check_choices(base_width, "base_width")
        self.stages, self.blocks, self.base_width = tuple(stages), tuple(blocks), tuple(base_width)
        self.in_chans, self.img, self.groups = in_chans, img, groups
        self.specs = [
            ResNetSpec((b,) * s, tuple(w * 2**i for i in range(s)), in_chans, img, groups)
            for s in range(stages[0], stages[1] + 1)
            for b in range(blocks[0], blocks[1] + 1)
            for w in base_width
        ]

    def split(self, n_eval: int = 2, seed: int = 0) -> tuple[list[ResNetSpec], list[ResNetSpec]]:
        """Disjoint (train, held-out) specs: ``n_eval`` specs are never trained on."""
        return super().split(n_eval, seed)

    def __repr__(self) -> str:
        return (
            f"ResNetSpace(stages={self.stages}, blocks={self.blocks}, "
            f"base_width={self.base_width}, n={len(self)})"
        )
