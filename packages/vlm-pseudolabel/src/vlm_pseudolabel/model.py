"""Feature-space prompts and residual adapters over frozen VLM embeddings.

The paper tunes MaPLe deep prompts of CLIP ViT-B/32. On frozen embeddings the analogue is a
transformation of the text and image embeddings that starts at the identity, so the untrained
model *is* zero-shot CLIP:

* ``"shared_lowrank"`` (default): ``t' = norm(t + U_t V_t^T t)``, ``v' = norm(v + U_v V_v^T v)``
  with rank-``r`` factors shared by all classes (like context tokens), ``U`` zero-initialised;
* ``"class_offset"``: ``t'_c = norm(t_c + o_c)`` (a CoOp class-specific analogue);
* ``"linear_probe"``: a free classifier initialised at ``t`` (upper-capacity control);
* ``"coop"``: prompt learning *through the model*: learned context tokens run through the
  CLIP text encoder (:class:`~vlm_pseudolabel.text_prompts.TextContextPrompts`); images stay
  frozen embeddings. Slower (one text-encoder pass per forward), closest to the paper.

Adapters (CAP Sec. 3.3, CLIP-Adapter form): ``a -> a + 0.01 * MLP(a)``, d -> 128 -> d, used
only while training; at inference features pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["PROMPTS", "Adapter", "PromptModel"]

PROMPTS = ("shared_lowrank", "class_offset", "linear_probe", "coop")


class Adapter(nn.Module):
    """Residual bottleneck adapter ``a + residual * W2 relu(W1 a)``.

    Parameters
    ----------
    dim : int
    hidden : int, default=128
    residual : float, default=0.01
    """

    def __init__(self, dim: int, hidden: int = 128, residual: float = 0.01) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.residual = float(residual)

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        """a: (..., dim) -> (..., dim)."""
        return a + self.residual * self.net(a)


class PromptModel(nn.Module):
    """Learnable prompts over frozen text embeddings ``t`` (C, d) and image embeddings.

    Parameters
    ----------
    text_features : Tensor (C, d)
    prompt : {"shared_lowrank", "class_offset", "linear_probe", "coop"}
    rank : int, default=8
    logit_scale : float, default=100.0
    generator : torch.Generator, optional
    text_prompts : TextContextPrompts, optional
        Required by (and only used with) ``prompt="coop"``.
    """

    def __init__(
        self,
        text_features: torch.Tensor,
        prompt: str = "shared_lowrank",
        rank: int = 8,
        logit_scale: float = 100.0,
        generator: torch.Generator | None = None,
        text_prompts: nn.Module | None = None,
    ) -> None:
        super().__init__()
        if prompt not in PROMPTS:
            raise ValueError(f"prompt must be one of {PROMPTS}, got {prompt!r}")
        if (prompt == "coop") != (text_prompts is not None):
            raise ValueError("text_prompts: required by prompt='coop' and only used by it")
        t = F.normalize(torch.as_tensor(text_features, dtype=torch.float32), dim=-1)
        c, d = t.shape
        self.register_buffer("text", t.clone())
        self.prompt, self.logit_scale = prompt, float(logit_scale)
        if prompt == "shared_lowrank":
            r = min(rank, d)
            self.u_t = nn.Parameter(torch.zeros(d, r))
            self.v_t = nn.Parameter(torch.randn(d, r, generator=generator) / d**0.5)
            self.u_v = nn.Parameter(torch.zeros(d, r))
            self.v_v = nn.Parameter(torch.randn(d, r, generator=generator) / d**0.5)
        elif prompt == "class_offset":
            self.offset = nn.Parameter(torch.zeros(c, d))
        elif prompt == "coop":
            if len(text_prompts.class_texts) != c:
                raise ValueError(
                    f"text_prompts: {len(text_prompts.class_texts)} class texts for {c} classes"
                )
            self.text_prompts = text_prompts
        else:
            self.weight = nn.Parameter(t.clone())
        self._cached_text: torch.Tensor | None = None

    @contextmanager
    def text_cache(self) -> Iterator[None]:
        """Within the block, ``"coop"`` runs its text encoder once and every forward reuses
        the result (one training iteration's branches share one graph); no-op otherwise."""
        if self.prompt != "coop":
            yield
            return
        self._cached_text = self.text_prompts()
        try:
            yield
        finally:
            self._cached_text = None

    def text_embeddings(self, adapter: nn.Module | None = None) -> torch.Tensor:
        """Normalised class embeddings (C, d), through ``adapter`` if given."""
        t = self.text
        if self.prompt == "shared_lowrank":
            t = t + (t @ self.v_t) @ self.u_t.T
        elif self.prompt == "class_offset":
            t = t + self.offset
        elif self.prompt == "coop":
            t = self._cached_text if self._cached_text is not None else self.text_prompts()
        else:
            t = self.weight
        if adapter is not None:
            t = adapter(t)
        return F.normalize(t, dim=-1)

    def image_embeddings(self, v: torch.Tensor, adapter: nn.Module | None = None) -> torch.Tensor:
        """Normalised image embeddings (B, d), through ``adapter`` if given."""
        if self.prompt == "shared_lowrank":
            v = v + (v @ self.v_v) @ self.u_v.T
        if adapter is not None:
            v = adapter(v)
        return F.normalize(v, dim=-1)

    def forward(
        self,
        v: torch.Tensor,
        visual_adapter: nn.Module | None = None,
        text_adapter: nn.Module | None = None,
    ) -> torch.Tensor:
        """Logits ``s * <v', t'>`` of shape (B, C)."""
        return (
            self.logit_scale
            * self.image_embeddings(v, visual_adapter)
            @ self.text_embeddings(text_adapter).T
        )
