"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import numpy as np
import torch

from nas_puzzle import DecoderConfig, HeteroDecoder, kl_to_parent, normalized_mse_loss

CFG = DecoderConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=2, n_kv_heads=1, head_dim=8,
                    ffn_intermediate=32, max_seq_len=16)  # fmt: skip


def _model():
    torch.manual_seed(0)
    return HeteroDecoder(CFG).eval()


_M = None


def _logits(tokens):
    global _M
    _M = _M or _model()
    with torch.no_grad():
        return _M(torch.as_tensor(tokens))[0].numpy()


def _kl(child_logits, parent_logits):
    return kl_to_parent(torch.as_tensor(child_logits), torch.as_tensor(parent_logits)).item()


def _nmse(input, target):
    return normalized_mse_loss(torch.as_tensor(input), torch.as_tensor(target)).item()


def entries() -> list[dict]:
    rng = np.random.default_rng(0)
    toks = rng.integers(0, 32, size=(3, 10))
    a, b = rng.normal(size=(6, 32)).astype(np.float32), rng.normal(size=(6, 32)).astype(np.float32)
    return [
        {"name": "HeteroDecoder.forward", "call": _logits, "kwargs": {"tokens": toks},
         "arrays": {"tokens": {"kind": "labels", "ndim": 2}}, "rows": [["tokens"]],
         "order": "equivariant",
         "known": [{"kwargs": {"tokens": np.array([[1, 40]])}, "raises": ["tokens"], "check": None,
                    "why": "a token id outside the vocabulary"}]},
        {"name": "kl_to_parent", "call": _kl, "kwargs": {"child_logits": a, "parent_logits": b},
         "arrays": {"child_logits": {"kind": "float", "ndim": (2, 3)},
                    "parent_logits": {"kind": "float", "ndim": (2, 3)}},
         "rows": [["child_logits", "parent_logits"]], "order": "invariant",
         "known": [{"kwargs": {"child_logits": a, "parent_logits": a}, "check": lambda v: abs(v) < 1e-6,
                    "why": "KL of a distribution to itself"}]},
        {"name": "normalized_mse_loss", "call": _nmse, "kwargs": {"input": a, "target": b},
         "arrays": {"input": {"kind": "float", "ndim": (2, 3)}, "target": {"kind": "float", "ndim": (2, 3)}},
         "rows": [["input", "target"]], "order": "invariant",
         "known": [{"kwargs": {"input": np.zeros((2, 4), np.float32), "target": np.ones((2, 4), np.float32)},
                    "check": lambda v: abs(v - 1.0) < 1e-6, "why": "||0 - t||^2 / ||t||^2 = 1"}]},
    ]  # fmt: skip
