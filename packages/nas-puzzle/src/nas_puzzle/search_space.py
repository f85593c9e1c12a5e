"""The per-layer menu of attention and FFN variants (paper §2)."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nas_puzzle.config import (
    AttentionConfig,
    BlockConfig,
    DecoderConfig,
    FFNConfig,
    _check_positive_int,
)

__all__ = ["PAPER_FFN_RATIOS", "SearchSpace"]

#: FFN widths of the paper's Llama-70B library as fractions of the parent width.
PAPER_FFN_RATIOS = (1.0, 0.87, 0.75, 0.5, 0.25, 0.2, 0.1)


@dataclass(frozen=True)
class SearchSpace:
    """Attention set A and FFN set F shared by every layer; variants are A x F.

    Parameters
    ----------
    cfg : DecoderConfig
        The parent's shape; every variant is checked against it.
    attention : tuple of AttentionConfig
    ffn : tuple of FFNConfig
    """

    cfg: DecoderConfig
    attention: tuple[AttentionConfig, ...]
    ffn: tuple[FFNConfig, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.cfg, DecoderConfig):
            raise TypeError(f"cfg must be a DecoderConfig, got {type(self.cfg).__name__}")
        object.__setattr__(self, "attention", tuple(self.attention))
        object.__setattr__(self, "ffn", tuple(self.ffn))
        if not self.attention:
            raise ValueError("attention must list at least one variant")
        if not self.ffn:
            raise ValueError("ffn must list at least one variant")
        for a in self.attention:
            if not isinstance(a, AttentionConfig):
                raise TypeError(f"attention entries must be AttentionConfig, got {a!r}")
            if a.kind == "gqa" and (
                self.cfg.n_kv_heads % a.n_kv_heads or a.n_kv_heads > self.cfg.n_kv_heads
            ):
                raise ValueError(
                    f"attention variant {a.name}: n_kv_heads must divide the parent's "
                    f"n_kv_heads={self.cfg.n_kv_heads} (KV heads are mean-pooled in groups)"
                )
        for f in self.ffn:
            if not isinstance(f, FFNConfig):
                raise TypeError(f"ffn entries must be FFNConfig, got {f!r}")
            if f.kind == "swiglu" and f.intermediate > self.cfg.ffn_intermediate:
                raise ValueError(
                    f"ffn variant {f.name}: intermediate exceeds the parent's "
                    f"ffn_intermediate={self.cfg.ffn_intermediate}"
                )
        if len(set(self.attention)) != len(self.attention):
            raise ValueError("attention has duplicate variants")
        if len(set(self.ffn)) != len(self.ffn):
            raise ValueError("ffn has duplicate variants")
        if self.cfg.parent_attention not in self.attention:
            raise ValueError(
                f"attention must contain the parent variant {self.cfg.parent_attention.name}"
            )
        if self.cfg.parent_ffn not in self.ffn:
            raise ValueError(f"ffn must contain the parent variant {self.cfg.parent_ffn.name}")

    @classmethod
    def paper_default(
        cls,
        cfg: DecoderConfig,
        attn_kv_heads: Sequence[int] | None = None,
        ffn_ratios: Sequence[float] = PAPER_FFN_RATIOS,
        include_linear: bool = True,
        include_noop: bool = True,
        round_to: int = 8,
    ) -> SearchSpace:
        """The paper's menu mapped to ``cfg`` (6 attention x 9 FFN for an 8-KV-head parent).

        Parameters
        ----------
        attn_kv_heads : sequence of int, optional
            KV-head counts; default the parent's count divided by 1, 2, 4, 8 (integers only).
        ffn_ratios : sequence of float
            FFN widths as fractions of the parent, rounded to multiples of ``round_to``.
        include_linear, include_noop : bool
            Add the linear-replacement and no-op variants to both subblock sets.
        round_to : int
            FFN width granularity (minimum width is ``round_to``).
        """
        if not isinstance(cfg, DecoderConfig):
            raise TypeError(f"cfg must be a DecoderConfig, got {type(cfg).__name__}")
        round_to = _check_positive_int(round_to, "round_to")
        if attn_kv_heads is None:
            attn_kv_heads = [cfg.n_kv_heads // g for g in (1, 2, 4, 8) if cfg.n_kv_heads % g == 0]
        if isinstance(attn_kv_heads, (str, bytes)) or not isinstance(attn_kv_heads, Iterable):
            raise TypeError(f"attn_kv_heads must be a sequence of ints, got {attn_kv_heads!r}")
        # 1.5 KV heads used to become 1 silently
        kv = sorted({_check_positive_int(k, "attn_kv_heads") for k in attn_kv_heads}, reverse=True)
        if cfg.n_kv_heads not in kv:
            kv.insert(0, cfg.n_kv_heads)
        attention = [AttentionConfig("gqa", k) for k in kv]
        widths = []
        if isinstance(ffn_ratios, (str, bytes)) or not isinstance(ffn_ratios, Iterable):
            raise TypeError(f"ffn_ratios must be a sequence of fractions, got {ffn_ratios!r}")
        for r in ffn_ratios:
            if isinstance(r, bool) or not isinstance(r, numbers.Real) or not 0 < r <= 1:
                raise ValueError(f"ffn_ratios must lie in (0, 1], got {r}")
            w = max(round_to, round(r * cfg.ffn_intermediate / round_to) * round_to)
            widths.append(min(w, cfg.ffn_intermediate))
        widths = sorted(set(widths) | {cfg.ffn_intermediate}, reverse=True)
        ffn = [FFNConfig("swiglu", w) for w in widths]
        for flag, kind in ((include_linear, "linear"), (include_noop, "noop")):
            if not isinstance(flag, bool):
                raise TypeError(f"include_{kind} must be a bool, got {flag!r}")
            if flag:
                attention.append(AttentionConfig(kind))
                ffn.append(FFNConfig(kind))
        return cls(cfg, tuple(attention), tuple(ffn))

    @classmethod
    def from_names(
        cls, cfg: DecoderConfig, attention: Sequence[str], ffn: Sequence[str]
    ) -> SearchSpace:
        """Build from variant names such as ``["gqa8", "gqa2", "linear", "noop"]``."""
        if isinstance(attention, str) or isinstance(ffn, str):
            raise TypeError("attention and ffn must be sequences of names, not a single str")
        return cls(
            cfg,
            tuple(AttentionConfig.from_name(n) for n in attention),
            tuple(FFNConfig.from_name(n) for n in ffn),
        )

    @property
    def parent(self) -> BlockConfig:
        """The parent block."""
        return self.cfg.parent_block

    def variants(self) -> list[BlockConfig]:
        """All composed block variants, attention-major; index = position in this list."""
        return [BlockConfig(a, f) for a in self.attention for f in self.ffn]

    def index(self, block: BlockConfig | str) -> int:
        """Position of a block variant (object or name) in :meth:`variants`."""
        if isinstance(block, str):
            block = BlockConfig.from_name(block)
        try:
            return self.variants().index(block)
        except ValueError:
            raise ValueError(f"block variant {block.name!r} is not in the search space") from None

    def restrict(
        self, attention: Sequence[str] | None = None, ffn: Sequence[str] | None = None
    ) -> SearchSpace:
        """Sub-space keeping only the named variants (the parent variants are always kept)."""
        names_a = {a.name for a in self.attention}
        names_f = {f.name for f in self.ffn}
        for n in attention or ():
            if n not in names_a:
                raise ValueError(f"unknown attention variant {n!r}; space has {sorted(names_a)}")
        for n in ffn or ():
            if n not in names_f:
                raise ValueError(f"unknown ffn variant {n!r}; space has {sorted(names_f)}")
        keep_a = set(attention) if attention is not None else names_a
        keep_f = set(ffn) if ffn is not None else names_f
        keep_a.add(self.cfg.parent_attention.name)
        keep_f.add(self.cfg.parent_ffn.name)
        return SearchSpace(
            self.cfg,
            tuple(a for a in self.attention if a.name in keep_a),
            tuple(f for f in self.ffn if f.name in keep_f),
        )

    def trained_units(self, mode: str = "decoupled") -> list[tuple[str, object]]:
        """Units BLD trains in one layer: ``("attention", a)``, ``("ffn", f)`` or ``("block", b)``.

        Decoupled: every non-parent, non-no-op subblock variant (m - 2 + n - 2 per layer for the
        paper menu). Coupled: every composed block except [parent, parent] and [no-op, no-op].
        """
        pa, pf = self.cfg.parent_attention, self.cfg.parent_ffn
        if mode == "decoupled":
            units: list[tuple[str, object]] = [
                ("attention", a) for a in self.attention if a != pa and a.kind != "noop"
            ]
            units += [("ffn", f) for f in self.ffn if f != pf and f.kind != "noop"]
            return units
        if mode == "coupled":
            return [
                ("block", b)
                for b in self.variants()
                if b != self.parent and not (b.attention.kind == "noop" and b.ffn.kind == "noop")
            ]
        if mode == "init_only":
            return []
        raise ValueError(f"mode must be 'decoupled', 'coupled' or 'init_only', got {mode!r}")
