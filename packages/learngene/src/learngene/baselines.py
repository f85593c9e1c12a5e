"""Baselines of spec §3; each gives an initialised ``TinyViT`` for (architecture, task).

``GHN``, ``GHNMultiTask`` and ``TALNoAncestry`` are ``TAL`` with one component removed, so they
share its hypernetwork, training loops and budget:

=================  ==========================  =====================
name               stage 1                     stage 2
=================  ==========================  =====================
``TAL``            CE + ancestry KD (α = 0.2)  multi-task, with TSL
``GHN``            CE only                     none
``GHNMultiTask``   CE only                     multi-task, no TSL
``TALNoAncestry``  CE only                     multi-task, with TSL
=================  ==========================  =====================
"""

from __future__ import annotations

import numpy as np
import torch

from learngene._validation import check_int
from learngene.cnn import ResNetSpec
from learngene.nets import SPECS, make_net
from learngene.tal import TAL
from learngene.vit import TinyViT, ViTSpec

__all__ = ["GHN", "GHNMultiTask", "RandInit", "TALNoAncestry", "WeightSelection"]


class RandInit:
    """timm-style random initialisation (trunc-normal 0.02 weights, zero biases, LN (1, 0))."""

    def __init__(self, random_state: int = 0):
        self.random_state = check_int(random_state, "random_state", 0)

    def predict(self, arch: ViTSpec | ResNetSpec, task_emb=None, n_classes: int = 10):
        """A fresh ``TinyViT`` / ``TinyResNet`` drawn from ``random_state``."""
        if not isinstance(arch, SPECS):
            raise TypeError(f"arch must be a ViTSpec or a ResNetSpec, got {type(arch).__name__}")
        n_classes = check_int(n_classes, "n_classes", 1)
        with torch.random.fork_rng(devices=[]):  # the caller's RNG is left as it was
            torch.manual_seed(self.random_state)
            return make_net(arch, n_classes).eval()


class GHN(TAL):
    """Architecture-only graph hypernetwork (GHN-3 / LoGAH): stage 1 with cross-entropy only, no
    task layer; a task's head is the first C_τ rows of the proxy head."""

    def __init__(self, **kwargs):
        kwargs["use_tsl"] = False
        super().__init__(**kwargs)

    def fit(self, proxy, space, **kwargs) -> GHN:
        """``fit_stage1(proxy, None, space, kd_alpha=0, **kwargs)``."""
        kwargs["kd_alpha"] = 0.0
        return self.fit_stage1(proxy, None, space, **kwargs)


class GHNMultiTask(TAL):
    """Multi-task GHN without the task-specific layer (task-agnostic predictions).

    Its own stage 1 is cross-entropy only (the table above); ``GHNMultiTask.from_stage1(m)``
    continues from any stage-1 model, e.g. an ancestry-distilled one for "TAL without TSL".
    """

    def __init__(self, **kwargs):
        kwargs["use_tsl"] = False
        super().__init__(**kwargs)

    def fit_stage1(self, proxy, ancestry=None, space=None, **kwargs) -> GHNMultiTask:
        # the ancestry was used (kd_alpha 0.2 by default) although the table says CE only
        kwargs["kd_alpha"] = 0.0
        return super().fit_stage1(proxy, None, space, **kwargs)


class TALNoAncestry(TAL):
    """TAL without the ancestry: stage 1 uses cross-entropy only (α = 0)."""

    def fit_stage1(self, proxy, ancestry=None, space=None, **kwargs) -> TALNoAncestry:
        kwargs["kd_alpha"] = 0.0
        return super().fit_stage1(proxy, None, space, **kwargs)


def _evenly_spaced(n_from: int, n_to: int) -> np.ndarray:
    return np.round(np.linspace(0, n_from - 1, n_to)).astype(int)


class WeightSelection:
    """Inherit weights from the larger ancestry (Xu et al., ICLR 2024, "initializing models with
    larger ones"): evenly spaced blocks, the leading rows/columns of every tensor (q, k and v
    sliced separately); the classifier head is freshly initialised (the task differs).

    Parameters
    ----------
    ancestry : TinyViT
        The trained large model; descendants must have depth and width <= its own and the same
        MLP ratio, patch and image size.
    """

    def __init__(self, ancestry: TinyViT, random_state: int = 0):
        if not isinstance(ancestry, TinyViT):
            raise TypeError(f"ancestry must be a TinyViT, got {type(ancestry).__name__}")
        self.ancestry = ancestry
        self.random_state = check_int(random_state, "random_state", 0)

    @torch.no_grad()
    def predict(self, arch: ViTSpec, task_emb=None, n_classes: int = 10) -> TinyViT:
        a = self.ancestry.spec
        if not isinstance(arch, ViTSpec):
            raise TypeError(f"arch must be a ViTSpec, got {type(arch).__name__}")
        if arch.depth > a.depth or arch.width > a.width:
            raise ValueError(f"arch {arch} is larger than the ancestry {a}")
        shared = ("mlp_ratio", "patch", "img", "in_chans", "qkv_bias", "ln_eps")
        if any(getattr(arch, k) != getattr(a, k) for k in shared):
            raise ValueError(f"arch must share the ancestry's {', '.join(shared)}")
        n_classes = check_int(n_classes, "n_classes", 1)
        with torch.random.fork_rng(devices=[]):  # the caller's RNG is left as it was
            torch.manual_seed(self.random_state)
            net = TinyViT(arch, n_classes)
        src = self.ancestry.state_dict()
        w = arch.width
        new = {}
        for name, p in net.state_dict().items():
            if name.startswith("head."):
                new[name] = p
                continue
            key = name
            if name.startswith("blocks."):
                parts = name.split(".")
                parts[1] = str(_evenly_spaced(a.depth, arch.depth)[int(parts[1])])
                key = ".".join(parts)
            s = src[key]
            if name.endswith("qkv.weight"):
                s = s.view(3, a.width, a.width)[:, :w, :w].reshape(3 * w, w)
            elif name.endswith("qkv.bias"):
                s = s.view(3, a.width)[:, :w].reshape(3 * w)
            else:
                s = s[tuple(slice(0, n) for n in p.shape)]
            new[name] = s.clone()
        net.load_state_dict(new)
        return net.eval()
