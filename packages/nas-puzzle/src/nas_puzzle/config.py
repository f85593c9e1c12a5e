"""Configuration dataclasses for the parent decoder and its heterogeneous children.

A *block* is one transformer layer; its two *subblocks* are attention and FFN (paper §2).
Each subblock variant is described by a small frozen dataclass so that variants can be used
as dictionary keys and compared by value.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

__all__ = ["AttentionConfig", "BlockConfig", "DecoderConfig", "FFNConfig"]

_ATTN_KINDS = ("gqa", "linear", "noop")
_FFN_KINDS = ("swiglu", "linear", "noop")


def _check_positive_int(value: object, name: str) -> int:
    # numpy integers from a sweep are ints too; bools are not
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return int(value)


def _set_int(obj: object, name: str) -> None:
    """Validate a positive-int field of a frozen dataclass and store it as a Python int."""
    object.__setattr__(obj, name, _check_positive_int(getattr(obj, name), name))


def _check_seed(seed: object) -> int:
    """A non-negative int seed as a Python int (torch.Generator refuses numpy integers)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return int(seed)


def _check_positive_float(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be positive and finite, got {value}")
    return float(value)


@dataclass(frozen=True)
class DecoderConfig:
    """Shape of the llama-style parent decoder.

    Parameters
    ----------
    vocab_size : int, default=256
        Vocabulary size (byte-level tokenizer by default).
    d_model : int, default=64
        Hidden size H.
    n_layers : int, default=6
        Number of transformer layers L.
    n_heads : int, default=8
        Number of query heads.
    n_kv_heads : int, default=8
        Number of key/value heads of the parent (``n_heads`` means multi-head attention).
    head_dim : int or None, default=None
        Per-head width; ``None`` means ``d_model // n_heads``.
    ffn_intermediate : int, default=256
        SwiGLU intermediate size I of the parent.
    max_seq_len : int, default=128
        Longest sequence (prompt + generated tokens) the model is used with.
    rope_theta : float, default=10000.0
        RoPE base frequency.
    norm_eps : float, default=1e-5
        RMSNorm epsilon.
    tie_embeddings : bool, default=True
        Share the input embedding with the LM head.
    """

    vocab_size: int = 256
    d_model: int = 64
    n_layers: int = 6
    n_heads: int = 8
    n_kv_heads: int = 8
    head_dim: int | None = None
    ffn_intermediate: int = 256
    max_seq_len: int = 128
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads"):
            _set_int(self, name)
        for name in ("ffn_intermediate", "max_seq_len"):
            _set_int(self, name)
        if self.head_dim is None:
            if self.d_model % self.n_heads:
                raise ValueError(
                    f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                    "pass head_dim explicitly"
                )
            object.__setattr__(self, "head_dim", self.d_model // self.n_heads)
        _set_int(self, "head_dim")
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even for RoPE, got {self.head_dim}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads={self.n_heads} must be a multiple of n_kv_heads={self.n_kv_heads}"
            )
        for name in ("rope_theta", "norm_eps"):
            object.__setattr__(self, name, _check_positive_float(getattr(self, name), name))
        if not isinstance(self.tie_embeddings, (bool, np.bool_)):
            raise TypeError(
                f"tie_embeddings must be a bool, got {type(self.tie_embeddings).__name__}"
            )
        object.__setattr__(self, "tie_embeddings", bool(self.tie_embeddings))

    @property
    def parent_attention(self) -> AttentionConfig:
        """The parent's attention variant."""
        return AttentionConfig("gqa", self.n_kv_heads)

    @property
    def parent_ffn(self) -> FFNConfig:
        """The parent's FFN variant."""
        return FFNConfig("swiglu", self.ffn_intermediate)

    @property
    def parent_block(self) -> BlockConfig:
        """The parent's block (identical in every layer)."""
        return BlockConfig(self.parent_attention, self.parent_ffn)

    def to_dict(self) -> dict:
        """Plain-dict form (JSON-serialisable)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class AttentionConfig:
    """One attention subblock variant.

    Parameters
    ----------
    kind : {"gqa", "linear", "noop"}
        Grouped-query attention, a single linear layer, or skip (identity residual).
    n_kv_heads : int or None
        Number of KV heads; required for ``"gqa"``, must be ``None`` otherwise.
    """

    kind: str = "gqa"
    n_kv_heads: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in _ATTN_KINDS:
            raise ValueError(f"unknown attention kind {self.kind!r}; expected one of {_ATTN_KINDS}")
        if self.kind == "gqa":
            if self.n_kv_heads is None:
                raise ValueError("n_kv_heads is required for kind='gqa'")
            _set_int(self, "n_kv_heads")
        elif self.n_kv_heads is not None:
            raise ValueError(f"n_kv_heads must be None for kind={self.kind!r}")

    @property
    def name(self) -> str:
        """Short variant name, e.g. ``"gqa4"``, ``"linear"``, ``"noop"``."""
        return f"gqa{self.n_kv_heads}" if self.kind == "gqa" else self.kind

    @classmethod
    def from_name(cls, name: str) -> AttentionConfig:
        """Parse a name produced by :attr:`name`."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if name in ("linear", "noop"):
            return cls(name)
        if name.startswith("gqa") and name[3:].isdigit() and int(name[3:]) > 0:
            return cls("gqa", int(name[3:]))
        raise ValueError(f"unknown attention variant name {name!r}")


@dataclass(frozen=True)
class FFNConfig:
    """One FFN subblock variant.

    Parameters
    ----------
    kind : {"swiglu", "linear", "noop"}
        SwiGLU MLP, a single linear layer, or skip.
    intermediate : int or None
        Intermediate width; required for ``"swiglu"``, must be ``None`` otherwise.
    """

    kind: str = "swiglu"
    intermediate: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in _FFN_KINDS:
            raise ValueError(f"unknown FFN kind {self.kind!r}; expected one of {_FFN_KINDS}")
        if self.kind == "swiglu":
            if self.intermediate is None:
                raise ValueError("intermediate is required for kind='swiglu'")
            _set_int(self, "intermediate")
        elif self.intermediate is not None:
            raise ValueError(f"intermediate must be None for kind={self.kind!r}")

    @property
    def name(self) -> str:
        """Short variant name, e.g. ``"ffn128"``, ``"linear"``, ``"noop"``."""
        return f"ffn{self.intermediate}" if self.kind == "swiglu" else self.kind

    @classmethod
    def from_name(cls, name: str) -> FFNConfig:
        """Parse a name produced by :attr:`name`."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if name in ("linear", "noop"):
            return cls(name)
        if name.startswith("ffn") and name[3:].isdigit() and int(name[3:]) > 0:
            return cls("swiglu", int(name[3:]))
        raise ValueError(f"unknown FFN variant name {name!r}")


@dataclass(frozen=True)
class BlockConfig:
    """One transformer block = an attention variant and an FFN variant."""

    attention: AttentionConfig = field(default_factory=lambda: AttentionConfig("gqa", 8))
    ffn: FFNConfig = field(default_factory=lambda: FFNConfig("swiglu", 256))

    def __post_init__(self) -> None:
        if not isinstance(self.attention, AttentionConfig):
            raise TypeError(
                f"attention must be an AttentionConfig, got {type(self.attention).__name__}"
            )
        if not isinstance(self.ffn, FFNConfig):
            raise TypeError(f"ffn must be an FFNConfig, got {type(self.ffn).__name__}")

    @property
    def name(self) -> str:
        """Short name ``"<attention>/<ffn>"``, e.g. ``"gqa2/ffn128"``."""
        return f"{self.attention.name}/{self.ffn.name}"

    @classmethod
    def from_name(cls, name: str) -> BlockConfig:
        """Parse a name produced by :attr:`name`."""
        if not isinstance(name, str) or name.count("/") != 1:
            raise ValueError(f"unknown block variant name {name!r}; expected '<attn>/<ffn>'")
        a, f = name.split("/")
        return cls(AttentionConfig.from_name(a), FFNConfig.from_name(f))
