"""TinyViT descendants and ancestry, their specs and the sampled architecture space (spec §5.2)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from learngene._validation import check_choices, check_int, check_range, check_real

__all__ = ["TinyViT", "ViTSpace", "ViTSpec"]


@dataclass(frozen=True)
class ViTSpec:
    """Architecture of a TinyViT: ``depth`` blocks of ``width`` channels and ``heads`` heads.

    Parameters
    ----------
    depth : int >= 1
    width : int, divisible by ``heads``
    heads : int >= 1
    mlp_ratio : int >= 1
        Hidden width of each block's MLP is ``mlp_ratio * width``.
    patch : int
        Side of the square patches; must divide ``img``.
    img : int
        Side of the square input image.
    in_chans : int
        Input channels.
    qkv_bias : bool
        Whether the attention's query/key/value projection has a bias (``transformers`` and
        ``timm`` both default to True).
    ln_eps : float > 0
        LayerNorm epsilon (torch 1e-5; ``transformers`` ViT 1e-12; ``timm`` ViT 1e-6).
    """

    depth: int
    width: int
    heads: int
    mlp_ratio: int = 2
    patch: int = 4
    img: int = 16
    in_chans: int = 1
    qkv_bias: bool = True
    ln_eps: float = 1e-5

    def __post_init__(self):
        for name in ("depth", "width", "heads", "mlp_ratio", "patch", "img", "in_chans"):
            check_int(getattr(self, name), name, 1)
        if not isinstance(self.qkv_bias, bool):
            raise TypeError(f"qkv_bias must be a bool, got {type(self.qkv_bias).__name__}")
        check_real(self.ln_eps, "ln_eps", 0.0, open_low=True)
        if self.width % self.heads:
            raise ValueError(f"width ({self.width}) must be divisible by heads ({self.heads})")
        if self.img % self.patch:
            raise ValueError(f"img ({self.img}) must be divisible by patch ({self.patch})")

    @property
    def n_tokens(self) -> int:
        """Patch tokens plus the class token."""
        return (self.img // self.patch) ** 2 + 1

    def as_dict(self) -> dict:
        return asdict(self)


class SpecSpace:
    """A finite list of specs (``self.specs``) to sample from and split; shared by the families."""

    specs: list

    def __len__(self) -> int:
        return len(self.specs)

    def sample(self, n: int, seed=None) -> list:
        """``n`` specs drawn uniformly with replacement from the space."""
        n = check_int(n, "n", 1)
        if seed is not None:
            seed = check_int(seed, "seed", 0)
        rng = np.random.default_rng(seed)
        return [self.specs[i] for i in rng.integers(0, len(self.specs), n)]

    def split(self, n_eval: int = 4, seed: int = 0) -> tuple[list, list]:
        """Disjoint (train, held-out) specs: ``n_eval`` specs are never trained on."""
        n_eval = check_int(n_eval, "n_eval", 0, len(self.specs) - 1)
        seed = check_int(seed, "seed", 0)
        order = np.random.default_rng(seed).permutation(len(self.specs))
        return [self.specs[i] for i in order[n_eval:]], [self.specs[i] for i in order[:n_eval]]


def check_image_batch(x, in_chans: int, img: int) -> None:
    """Raise unless ``x`` is a non-empty, finite floating tensor of shape (n, in_chans, img, img)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError("x must be a floating torch.Tensor of images")
    if x.dim() != 4 or x.shape[1:] != (in_chans, img, img):
        raise ValueError(f"x must have shape (n, {in_chans}, {img}, {img}), got {tuple(x.shape)}")
    if len(x) == 0:
        raise ValueError("x is empty")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or inf")


class ViTSpace(SpecSpace):
    """The descendant space: depth range, widths, heads; fixed MLP ratio, patch and image size.

    Parameters
    ----------
    depth : (int, int)
        Inclusive range of depths.
    width, heads : tuples of int
        Allowed widths and head counts (pairs with ``width % heads != 0`` are skipped).
    """

    def __init__(
        self, depth=(1, 4), width=(32, 48, 64, 96), heads=(2, 4), mlp_ratio=2, patch=4, img=16
    ):
        depth = check_range(depth, "depth")
        width, heads = check_choices(width, "width"), check_choices(heads, "heads")
        self.depth, self.width, self.heads = tuple(depth), tuple(width), tuple(heads)
        self.mlp_ratio, self.patch, self.img = mlp_ratio, patch, img
        self.specs = [
            ViTSpec(d, w, h, mlp_ratio, patch, img)
            for d in range(depth[0], depth[1] + 1)
            for w in width
            for h in heads
            if w % h == 0
        ]
        if not self.specs:
            raise ValueError("the space holds no valid (width, heads) pair")

    def spec(self, depth: int, width: int, heads: int) -> ViTSpec:
        """The spec with the space's fixed MLP ratio, patch and image size."""
        return ViTSpec(depth, width, heads, self.mlp_ratio, self.patch, self.img)

    def __repr__(self) -> str:
        return (
            f"ViTSpace(depth={self.depth}, width={self.width}, heads={self.heads}, n={len(self)})"
        )


class _Block(nn.Module):
    def __init__(self, width: int, heads: int, mlp_ratio: int, qkv_bias=True, eps=1e-5):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width, eps=eps)
        self.qkv = nn.Linear(width, 3 * width, bias=qkv_bias)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width, eps=eps)
        self.fc1 = nn.Linear(width, mlp_ratio * width)
        self.fc2 = nn.Linear(mlp_ratio * width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, C // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyViT(nn.Module):
    """Pre-LN vision transformer on small images (patch embedding by a linear map of each patch).

    Parameters
    ----------
    spec : ViTSpec
    n_classes : int
        Classifier rows.
    distill_dim : int or None
        If set, a bias-free ``distill_head`` (the projection M of spec §2.4) maps the class-token
        feature to ``distill_dim``.
    head_hidden : int or None
        If set (ancestry models), the head is ``Linear(width, head_hidden) → GELU → Linear``; the
        output of the first layer is the feature that defines task embeddings and KD targets.
    """

    def __init__(self, spec: ViTSpec, n_classes: int, distill_dim=None, head_hidden=None):
        super().__init__()
        if not isinstance(spec, ViTSpec):
            raise TypeError(f"spec must be a ViTSpec, got {type(spec).__name__}")
        check_int(n_classes, "n_classes", 1)
        self.spec, self.n_classes = spec, n_classes
        w = spec.width
        self.patch_embed = nn.Linear(spec.in_chans * spec.patch**2, w)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, w))
        self.pos_embed = nn.Parameter(torch.zeros(1, spec.n_tokens, w))
        self.blocks = nn.ModuleList(
            _Block(w, spec.heads, spec.mlp_ratio, spec.qkv_bias, spec.ln_eps)
            for _ in range(spec.depth)
        )
        self.norm = nn.LayerNorm(w, eps=spec.ln_eps)
        self.pre_logits = (
            None if head_hidden is None else nn.Linear(w, check_int(head_hidden, "head_hidden", 1))
        )
        self.head = nn.Linear(w if head_hidden is None else head_hidden, n_classes)
        self.distill_head = (
            None
            if distill_dim is None
            else nn.Linear(w, check_int(distill_dim, "distill_dim", 1), bias=False)
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """timm-style initialisation: trunc-normal(0.02) weights and tokens, zero biases, LN (1, 0)."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)

    def _patches(self, x):
        s = self.spec
        check_image_batch(x, s.in_chans, s.img)
        x = x.to(self.patch_embed.weight.dtype)
        p = F.unfold(x, kernel_size=s.patch, stride=s.patch)  # (n, c*p*p, tokens)
        return p.transpose(1, 2)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Class-token feature after the final LayerNorm, shape (n, width)."""
        t = self.patch_embed(self._patches(x))
        t = torch.cat([self.cls_token.expand(len(t), -1, -1), t], dim=1) + self.pos_embed
        for blk in self.blocks:
            t = blk(t)
        return self.norm(t[:, 0])

    def head_features(self, feat: torch.Tensor) -> torch.Tensor:
        """The ancestry's task feature: ``pre_logits(feat)`` (requires ``head_hidden``)."""
        if self.pre_logits is None:
            raise ValueError("head_features needs a model built with head_hidden")
        return self.pre_logits(feat)

    def forward(self, x: torch.Tensor, return_features: bool = False):
        """Logits (n, n_classes); with ``return_features`` also the class-token feature (n, width)."""
        f = self.forward_features(x)
        h = f if self.pre_logits is None else F.gelu(self.pre_logits(f))
        out = self.head(h)
        return (out, f) if return_features else out
