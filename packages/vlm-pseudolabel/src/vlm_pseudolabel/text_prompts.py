"""CoOp-style prompt learning through a CLIP text encoder.

The paper tunes prompts inside CLIP (MaPLe). :class:`TextContextPrompts` is the text half of
that: the words of a template's prefix (``"a photo of a"`` in ``"a photo of a {}."``) become
learnable context vectors in the token-embedding space, shared by all classes, and every class
prompt ``[context] [class text]`` is run through the frozen text encoder (CoOp, Zhou et al. 2022;
MaPLe's first-layer text prompts). Initialised from the template's own token embeddings, the
untrained module reproduces the template's text features exactly. Only the context vectors are
parameters; the encoder's weights never receive gradients. Visual (MaPLe) prompts are not
implemented: the image side stays frozen embeddings.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["TextContextPrompts", "split_template"]


def split_template(template: str) -> tuple[str, str]:
    """``"a photo of a {}."`` -> (``"a photo of a"``, ``"{}."``): context words, class part."""
    if not isinstance(template, str) or template.count("{}") != 1:
        raise ValueError(f"template must hold exactly one '{{}}', got {template!r}")
    prefix, rest = template.split("{}")
    if not prefix.strip():
        raise ValueError(
            f"template {template!r} has no words before '{{}}' to initialise the learned context"
        )
    if not prefix[-1].isspace():
        # the context is followed by the class text after a space, so "a photo of a{}" would
        # silently become "a photo of a cat" instead of the template's "a photo of acat"
        raise ValueError(
            f"template {template!r} has no space before '{{}}': the learned context is joined "
            "to the class text by a space; write the template with one"
        )
    return prefix.strip(), "{}" + rest


def _common_prefix(a: torch.Tensor, b: torch.Tensor) -> int:
    n = min(len(a), len(b))
    neq = (a[:n] != b[:n]).nonzero()
    return int(neq[0]) if len(neq) else n


class TextContextPrompts(nn.Module):
    """Learned context tokens before each class text, through a frozen CLIP text encoder.

    Parameters
    ----------
    backbone : HFCLIPBackbone or OpenCLIPBackbone
        Provides ``tokenize``, ``token_embedding`` and ``text_features`` (not registered as a
        submodule: its weights are not parameters of this module).
    class_texts : sequence of str
        Per class, the text after the context (``"cat."``, or a description).
    context : str, default="a photo of a"
        The words the context vectors start from.

    Attributes
    ----------
    ctx : Parameter (n_ctx, width)
        The learned context vectors (the only parameters).
    """

    def __init__(self, backbone, class_texts: Sequence[str], context: str = "a photo of a") -> None:
        super().__init__()
        for name in ("tokenize", "token_embedding", "text_features"):
            if not callable(getattr(backbone, name, None)):
                raise TypeError(
                    f"backbone: needs a {name}() method (HFCLIPBackbone, OpenCLIPBackbone)"
                )
        if not isinstance(context, str) or not context.strip():
            raise ValueError(f"context: needs at least one word, got {context!r}")
        self._backbone = [backbone]  # a list keeps the encoder out of .parameters()
        self.context = context.strip()
        # tokens a tokenizer puts before any text (CLIP's start token): the common prefix of
        # two one-word texts; the context starts after them
        ids2, _ = backbone.tokenize(["a", "b"])
        self.start = _common_prefix(ids2[0], ids2[1])
        ctx_ids, ctx_mask = backbone.tokenize([self.context])
        n_ctx_tok = int(ctx_mask[0].sum()) if ctx_mask is not None else int((ctx_ids[0] != 0).sum())
        self._ctx_tokens = ctx_ids[0, :n_ctx_tok]
        self.class_texts: list[str] = []
        self.set_class_texts(class_texts, _first=True)
        with torch.no_grad():
            emb = backbone.token_embedding()
            init = emb(self._ids[:1, self.start : self.start + self.n_ctx].to(emb.weight.device))[0]
        self.ctx = nn.Parameter(init.detach().clone().float())

    def set_class_texts(self, class_texts: Sequence[str], _first: bool = False) -> None:
        """Replace the class texts (e.g. a description swapped in by concept alignment)."""
        if isinstance(class_texts, str) or not isinstance(class_texts, Sequence):
            # a bare "cat" would become three classes "c", "a", "t"
            raise TypeError(f"class_texts: expected a list of str, got {class_texts!r}")
        texts = list(class_texts)
        if len(texts) < 1:
            raise ValueError("class_texts: needs at least one class")
        if not all(isinstance(t, str) and t.strip() for t in texts):
            raise TypeError("class_texts: every class text must be a non-empty str")
        if len(set(texts)) != len(texts):
            raise ValueError("class_texts: has duplicates (two classes with one prompt)")
        ids, mask = self._backbone[0].tokenize([f"{self.context} {t}" for t in texts])
        # the context must tokenize the same inside every prompt as alone
        lcp = min(_common_prefix(self._ctx_tokens, row) for row in ids)
        n_ctx = lcp - self.start
        if n_ctx < 1 or (not _first and n_ctx != self.n_ctx):
            raise ValueError(
                f"context {self.context!r} does not tokenize to the same leading tokens in every "
                "class prompt; choose context words that end at a word boundary"
            )
        self.n_ctx = n_ctx
        self.class_texts, self._ids, self._mask = texts, ids, mask

    def forward(self) -> torch.Tensor:
        """Normalised class text embeddings (C, d), differentiable in ``ctx`` only."""
        bb = self._backbone[0]
        emb = bb.token_embedding()
        lo, hi = self.start, self.start + self.n_ctx
        ctx = self.ctx

        def put_context(module, args, out):
            c = ctx.to(out.dtype).expand(out.shape[0], -1, -1)
            return torch.cat([out[:, :lo], c, out[:, hi:]], dim=1)

        params = [p for p in bb.model.parameters() if p.requires_grad]
        for p in params:  # keep the encoder out of the graph: no grads, no side effects
            p.requires_grad_(False)
        handle = emb.register_forward_hook(put_context)
        ids = self._ids.to(ctx.device)  # token ids follow the context vectors' device
        mask = None if self._mask is None else self._mask.to(ctx.device)
        try:
            feats = bb.text_features(ids, mask)
        finally:
            handle.remove()
            for p in params:
                p.requires_grad_(True)
        return F.normalize(feats.float(), dim=-1)
