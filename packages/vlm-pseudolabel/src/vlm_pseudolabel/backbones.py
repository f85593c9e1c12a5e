"""Real vision-language backbones (weights from a local path; never downloaded).

``HFCLIPBackbone`` wraps a ``transformers.CLIPModel`` and its processor, ``OpenCLIPBackbone`` an
``open_clip`` model, tokenizer and preprocess transform. Both expose ``encode_images``,
``encode_texts`` and ``logit_scale``; :func:`encode_task` turns images, labels, class names and
description strings into a :class:`~vlm_pseudolabel.data.VLMTask`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from vlm_pseudolabel.base import check_task
from vlm_pseudolabel.data import VLMTask

__all__ = ["HFCLIPBackbone", "OpenCLIPBackbone", "encode_task"]


def _pooled(out) -> torch.Tensor:
    # transformers >= 5 returns an output object from get_*_features; v4 returned a tensor
    if isinstance(out, torch.Tensor):
        return out
    for name in ("pooler_output", "text_embeds", "image_embeds"):
        val = getattr(out, name, None)
        if isinstance(val, torch.Tensor):
            return val
    raise TypeError(f"cannot read embeddings from {type(out).__name__}")


class _Backbone:
    """Shared by the CLIP wrappers: logit scale and batched, normalised image encoding.

    The wrapped model is used by reference, never copied: a CAP fitted with ``prompt="coop"``
    encodes its prompts through it at prediction time, so editing the CLIP after fitting
    changes those predictions. Each encoding runs the model in eval mode and then restores the
    mode the caller left it in. Half-precision models (bf16, fp16) take their own dtype as
    input and give float32 embeddings.
    """

    model: torch.nn.Module
    batch_size: int

    @contextlib.contextmanager
    def _eval(self):
        was = self.model.training
        self.model.eval()
        try:
            yield
        finally:
            self.model.train(was)

    def _dtype(self) -> torch.dtype:
        p = next(self.model.parameters(), None)
        return p.dtype if p is not None and p.is_floating_point() else torch.float32

    def _pixels(self, images) -> torch.Tensor:
        raise NotImplementedError

    def _image_features(self, pix: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @property
    def logit_scale(self) -> float:
        """``exp(logit_scale)`` of the model."""
        return float(self.model.logit_scale.detach().exp())

    @torch.no_grad()
    def encode_images(self, images) -> np.ndarray:
        """Normalised image embeddings (N, d) of a pixel tensor (N, 3, H, W) or PIL images."""
        out = []
        with self._eval():
            for i in range(0, len(images), self.batch_size):
                chunk = images[i : i + self.batch_size]
                pix = chunk if isinstance(chunk, torch.Tensor) else self._pixels(chunk)
                feats = self._image_features(pix.to(self._dtype()))
                out.append(F.normalize(feats.float(), dim=-1))
        return torch.cat(out).numpy()


class HFCLIPBackbone(_Backbone):
    """``transformers.CLIPModel`` + processor (or tokenizer for text-only use).

    Parameters
    ----------
    model : transformers.CLIPModel
    processor : callable
        ``processor(text=..., images=..., return_tensors="pt", padding=True)``.
    batch_size : int, default=64
    """

    def __init__(self, model, processor, batch_size: int = 64) -> None:
        self.model, self.processor, self.batch_size = model, processor, int(batch_size)

    def _pixels(self, images) -> torch.Tensor:
        return self.processor(images=list(images), return_tensors="pt")["pixel_values"]

    def _image_features(self, pix: torch.Tensor) -> torch.Tensor:
        return _pooled(self.model.get_image_features(pixel_values=pix))

    def tokenize(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Token ids (n, L) and attention mask (or None) of ``texts``."""
        tok = self.processor(text=list(texts), return_tensors="pt", padding=True)
        return tok["input_ids"], tok.get("attention_mask")

    def token_embedding(self) -> torch.nn.Embedding:
        """The text tower's token-embedding table (where learned context tokens go)."""
        return self.model.text_model.embeddings.token_embedding

    def text_features(self, ids: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Unnormalised text embeddings (n, d) of token ids, differentiable."""
        with self._eval():
            return _pooled(self.model.get_text_features(input_ids=ids, attention_mask=mask))

    @torch.no_grad()
    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised text embeddings (len(texts), d)."""
        return F.normalize(self.text_features(*self.tokenize(texts)).float(), dim=-1).numpy()


class OpenCLIPBackbone(_Backbone):
    """``open_clip`` model with its tokenizer and preprocess transform."""

    def __init__(self, model, tokenizer, preprocess=None, batch_size: int = 64) -> None:
        self.model, self.tokenizer, self.preprocess = model, tokenizer, preprocess
        self.batch_size = int(batch_size)

    def _pixels(self, images) -> torch.Tensor:
        return torch.stack([self.preprocess(im) for im in images])

    def _image_features(self, pix: torch.Tensor) -> torch.Tensor:
        return self.model.encode_image(pix)

    def tokenize(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Token ids (n, context_length), zero-padded, and no mask (open_clip pads with 0)."""
        return self.tokenizer(list(texts)), None

    def token_embedding(self) -> torch.nn.Embedding:
        """The text tower's token-embedding table (where learned context tokens go)."""
        emb = getattr(self.model, "token_embedding", None)
        return emb if emb is not None else self.model.text.token_embedding

    def text_features(self, ids: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Unnormalised text embeddings (n, d) of token ids, differentiable."""
        with self._eval():
            return self.model.encode_text(ids)

    @torch.no_grad()
    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised text embeddings (len(texts), d)."""
        return F.normalize(self.text_features(*self.tokenize(texts)).float(), dim=-1).numpy()


def encode_task(
    backbone,
    images_unlabeled,
    images_test,
    y_test: np.ndarray,
    class_names: Sequence[str],
    templates: Sequence[str] = ("a photo of a {}.",),
    descriptions_text: dict[int, Sequence[str]] | None = None,
    y_unlabeled: np.ndarray | None = None,
    *,
    paradigm: str = "ul",
    images_labeled=None,
    y_labeled: np.ndarray | None = None,
    seen: Sequence[int] | None = None,
) -> VLMTask:
    """Encode a task with a real backbone (prompt-ensembled class embeddings).

    Parameters
    ----------
    backbone : HFCLIPBackbone or OpenCLIPBackbone
    images_unlabeled, images_test : pixel tensors (N, 3, H, W) or lists of PIL images
    y_test : ndarray (M,)
    class_names : sequence of str
    templates : sequence of str
        Each with one ``{}`` for the class name; embeddings are averaged over templates.
    descriptions_text : dict of int -> sequence of str, optional
        Candidate descriptions per class (e.g. written by an LLM beforehand).
    y_unlabeled : ndarray, optional
    paradigm : {"ul", "ssl", "trzsl"}, default="ul"
        Unsupervised; semi-supervised (a few labeled images per class); transductive zero-shot
        (labeled images of the ``seen`` classes only, the rest unseen).
    images_labeled : pixel tensor (L, 3, H, W) or list of PIL images, optional
        The labeled images ("ssl" and "trzsl"; not allowed with "ul").
    y_labeled : ndarray (L,), optional
        Their classes; in "trzsl" every one must be in ``seen``.
    seen : sequence of int, optional
        "trzsl" only: the seen classes; the unseen ones are the rest of ``range(C)``.

    Returns
    -------
    VLMTask
        Validated (``check_task``): a bad label, an overlapping split or a missing field raises
        ``ValueError`` naming it.
    """
    if paradigm not in ("ul", "ssl", "trzsl"):
        raise ValueError(f"paradigm must be 'ul', 'ssl' or 'trzsl', got {paradigm!r}")
    if any(t.count("{}") != 1 for t in templates):
        raise ValueError("every template must contain exactly one '{}'")
    names = list(class_names)
    if len(names) < 2:
        raise ValueError("class_names must hold at least 2 classes")
    labeled = images_labeled is not None or y_labeled is not None
    if paradigm == "ul" and (labeled or seen is not None):
        raise ValueError("paradigm 'ul' takes no images_labeled, y_labeled or seen")
    if paradigm != "ul" and (images_labeled is None or y_labeled is None):
        raise ValueError(f"paradigm {paradigm!r} needs images_labeled and y_labeled")
    if paradigm == "ssl" and seen is not None:
        raise ValueError("seen is for paradigm 'trzsl' only")
    if paradigm == "trzsl" and seen is None:
        raise ValueError("paradigm 'trzsl' needs seen (the classes with labeled images)")
    if labeled and len(images_labeled) != len(y_labeled):
        raise ValueError(
            f"images_labeled and y_labeled differ in length ({len(images_labeled)} vs "
            f"{len(y_labeled)})"
        )
    split = {}
    if seen is not None:
        seen_arr = np.asarray(seen)
        if seen_arr.ndim != 1 or not np.issubdtype(seen_arr.dtype, np.integer):
            raise ValueError(f"seen must be a 1-D sequence of class ids, got {seen!r}")
        split = {"seen": seen_arr, "unseen": np.setdiff1d(np.arange(len(names)), seen_arr)}
    text = np.stack(
        [backbone.encode_texts([t.format(n) for t in templates]).mean(0) for n in names]
    )
    text = text / np.linalg.norm(text, axis=1, keepdims=True)
    desc = {}
    for c, strs in (descriptions_text or {}).items():
        if len(strs):
            desc[int(c)] = backbone.encode_texts(list(strs))
    task = VLMTask(
        X_unlabeled=backbone.encode_images(images_unlabeled),
        X_test=backbone.encode_images(images_test),
        y_test=np.asarray(y_test),
        text_features=text.astype(np.float32),
        descriptions=desc,
        class_names=names,
        logit_scale=backbone.logit_scale,
        y_unlabeled=None if y_unlabeled is None else np.asarray(y_unlabeled),
        X_labeled=None if images_labeled is None else backbone.encode_images(images_labeled),
        y_labeled=None if y_labeled is None else np.asarray(y_labeled),
        paradigm=paradigm,
        backbone=backbone,
        templates=list(templates),
        description_texts={c: list(v) for c, v in (descriptions_text or {}).items() if len(v)},
        **split,
    )
    check_task(task)
    return task
