"""A tiny random CLIP with a real tokenizer, for tests, the benchmark and offline trials.

Built from a config (``transformers.CLIPConfig``), a small byte-pair vocabulary written to
``directory`` (``transformers.CLIPTokenizer`` reads it) and a ``CLIPImageProcessor``; no weights
and nothing downloaded. Its embeddings are random: use it to exercise code paths and to time
them, never to judge accuracy.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import torch

__all__ = ["tiny_hf_clip"]

_MERGES = ["p h", "o t", "ph ot", "phot o</w>", "o f</w>"]


def tiny_hf_clip(
    directory: str | Path,
    *,
    text_width: int = 16,
    text_layers: int = 1,
    text_heads: int = 2,
    image_size: int = 32,
    projection_dim: int = 8,
    seed: int = 0,
):
    """(CLIPModel, CLIPProcessor): a random CLIP whose tokenizer knows lowercase letters, ``.``
    and ``,`` (words are spelled out; ``"a photo of"`` are single tokens).

    Parameters
    ----------
    directory : path
        Where ``vocab.json`` and ``merges.txt`` are written.
    text_width, text_layers, text_heads : int
        Text tower size (ViT-B/32's is 512, 12, 8).
    image_size : int
        Square input size of the (one-layer, width-16) vision tower.
    projection_dim : int
        Joint embedding size d.
    seed : int
        ``torch.manual_seed`` for the weights.
    """
    import transformers

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    chars = list(string.ascii_lowercase) + list(".,")
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    for m in _MERGES:
        vocab.setdefault(m.replace(" ", ""), len(vocab))
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = eos = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab))
    (directory / "merges.txt").write_text("#version: 0.2\n" + "\n".join(_MERGES) + "\n")
    tok = transformers.CLIPTokenizer(str(directory / "vocab.json"), str(directory / "merges.txt"))
    image_proc = transformers.CLIPImageProcessor(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    cfg = transformers.CLIPConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": text_width,
                     "intermediate_size": 4 * text_width, "num_hidden_layers": text_layers,
                     "num_attention_heads": text_heads, "max_position_embeddings": 77,
                     "eos_token_id": eos, "bos_token_id": eos - 1, "pad_token_id": eos},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": image_size, "patch_size": 8},
        projection_dim=projection_dim,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = transformers.CLIPModel(cfg).eval()
    return model, transformers.CLIPProcessor(image_processor=image_proc, tokenizer=tok)
