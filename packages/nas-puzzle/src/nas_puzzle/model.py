"""Llama-style decoder whose layers may each use a different attention / FFN variant.

The parent is a ``HeteroDecoder`` with every layer equal to ``cfg.parent_block``; a Puzzle
child is the same class with a per-layer list of :class:`~nas_puzzle.config.BlockConfig`.
Pre-norm RMSNorm, RoPE, SwiGLU FFN, grouped-query attention via ``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nas_puzzle.config import AttentionConfig, BlockConfig, DecoderConfig, FFNConfig

__all__ = [
    "AttentionSubblock",
    "DecoderBlock",
    "DecoderOutput",
    "FFNSubblock",
    "HeteroDecoder",
    "KVCache",
    "check_tokens",
    "infer_block_configs",
    "rope_tables",
]


def rope_tables(cfg: DecoderConfig, device: torch.device | None = None) -> tuple[Tensor, Tensor]:
    """Rotary tables for positions ``0 .. max_seq_len - 1``.

    Returns
    -------
    cos, sin : Tensor, shape (max_seq_len, head_dim // 2)
    """
    half = cfg.head_dim // 2
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(half, dtype=torch.float64, device=device) / half))
    ang = torch.arange(cfg.max_seq_len, dtype=torch.float64, device=device)[:, None] * inv
    return ang.cos().float(), ang.sin().float()


def _apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    # x: (B, h, T, hd); cos/sin: (T, hd/2). Rotate-half convention.
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def check_tokens(tokens: Tensor, cfg: DecoderConfig, name: str = "tokens") -> Tensor:
    """Validate a (batch, seq) integer token tensor and return it (unchanged)."""
    if not isinstance(tokens, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tokens).__name__}")
    if tokens.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise TypeError(f"{name} must have an integer dtype, got {tokens.dtype}")
    if tokens.ndim != 2 or tokens.numel() == 0:
        raise ValueError(
            f"{name} must be a non-empty (batch, seq) tensor, got {tuple(tokens.shape)}"
        )
    if tokens.shape[1] > cfg.max_seq_len:
        raise ValueError(f"{name} has seq length {tokens.shape[1]} > max_seq_len={cfg.max_seq_len}")
    if int(tokens.min()) < 0 or int(tokens.max()) >= cfg.vocab_size:
        raise ValueError(f"{name} values must lie in [0, {cfg.vocab_size})")
    return tokens


@dataclass
class KVCache:
    """Per-layer key/value tensors, each (batch, n_kv_heads, t, head_dim) or ``None``."""

    layers: list[tuple[Tensor, Tensor] | None]
    length: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.layers, str) or not isinstance(self.layers, Sequence):
            raise TypeError(
                f"layers must be a list of (key, value) pairs or None, got {self.layers!r}"
            )
        layers = list(self.layers)
        n = self.length
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"length must be a non-negative int, got {n!r}")
        for i, kv in enumerate(layers):
            if kv is None:
                continue
            if not (isinstance(kv, tuple | list) and len(kv) == 2
                    and all(isinstance(t, Tensor) and t.ndim == 4 for t in kv)):  # fmt: skip
                raise TypeError(f"layers[{i}] must be a (key, value) pair of 4-D tensors or None")
            if kv[0].shape != kv[1].shape:
                raise ValueError(f"layers[{i}]: key {tuple(kv[0].shape)} and value "
                                 f"{tuple(kv[1].shape)} differ")  # fmt: skip
            if kv[0].shape[2] != n:
                raise ValueError(f"layers[{i}] holds {kv[0].shape[2]} positions, length={n}: "
                                 "positions would continue from the wrong offset")  # fmt: skip
            layers[i] = (kv[0], kv[1])
        self.layers, self.length = layers, int(n)

    def nbytes(self) -> int:
        """Bytes held by the cache."""
        return sum(k.nbytes + v.nbytes for kv in self.layers if kv is not None for k, v in [kv])


@dataclass
class DecoderOutput:
    """Auxiliary outputs of :meth:`HeteroDecoder.forward`.

    Attributes
    ----------
    hidden : list of Tensor
        Output of each block, (batch, seq, d_model); empty unless ``return_hidden``.
    kv_cache : KVCache or None
        Updated cache when one was passed or ``use_cache`` was set.
    """

    hidden: list[Tensor] = field(default_factory=list)
    kv_cache: KVCache | None = None


class AttentionSubblock(nn.Module):
    """Pre-norm attention subblock; ``forward`` returns the residual *delta*.

    ``kind="gqa"``: RoPE grouped-query attention; ``"linear"``: one ``d_model x d_model``
    linear map of the normed input; ``"noop"``: no parameters, returns ``None``.
    """

    def __init__(self, cfg: DecoderConfig, variant: AttentionConfig) -> None:
        super().__init__()
        self.cfg, self.variant = cfg, variant
        d, hd = cfg.d_model, cfg.head_dim
        if variant.kind == "gqa":
            if cfg.n_heads % variant.n_kv_heads:
                raise ValueError(
                    f"n_kv_heads={variant.n_kv_heads} must divide n_heads={cfg.n_heads}"
                )
            self.norm = nn.RMSNorm(d, eps=cfg.norm_eps)
            self.q_proj = nn.Linear(d, cfg.n_heads * hd, bias=False)
            self.k_proj = nn.Linear(d, variant.n_kv_heads * hd, bias=False)
            self.v_proj = nn.Linear(d, variant.n_kv_heads * hd, bias=False)
            self.o_proj = nn.Linear(cfg.n_heads * hd, d, bias=False)
        elif variant.kind == "linear":
            self.norm = nn.RMSNorm(d, eps=cfg.norm_eps)
            self.linear = nn.Linear(d, d, bias=False)

    def forward(
        self,
        x: Tensor,
        cos: Tensor,
        sin: Tensor,
        cache: tuple[Tensor, Tensor] | None = None,
    ) -> tuple[Tensor | None, tuple[Tensor, Tensor] | None]:
        """x: (B, T, d); cos/sin: (T, hd/2) for the new positions. Returns (delta, new cache)."""
        kind = self.variant.kind
        if kind == "noop":
            return None, None
        h = self.norm(x)
        if kind == "linear":
            return self.linear(h), None
        b, t, _ = x.shape
        hd, nq, nkv = self.cfg.head_dim, self.cfg.n_heads, self.variant.n_kv_heads
        q = self.q_proj(h).view(b, t, nq, hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, nkv, hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, nkv, hd).transpose(1, 2)
        q, k = _apply_rope(q, cos, sin), _apply_rope(k, cos, sin)
        past = 0
        if cache is not None:
            past = cache[0].shape[2]
            k, v = torch.cat((cache[0], k), dim=2), torch.cat((cache[1], v), dim=2)
        if past == 0:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=nkv != nq)
        elif t == 1:
            out = F.scaled_dot_product_attention(q, k, v, enable_gqa=nkv != nq)
        else:
            # chunked prefill on top of a cache: query i sees keys 0 .. past + i
            mask = torch.ones(t, past + t, dtype=torch.bool, device=x.device).tril(past)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=nkv != nq)
        out = out.transpose(1, 2).reshape(b, t, nq * hd)
        return self.o_proj(out), (k, v)


class FFNSubblock(nn.Module):
    """Pre-norm FFN subblock; ``forward`` returns the residual delta (``None`` for no-op)."""

    def __init__(self, cfg: DecoderConfig, variant: FFNConfig) -> None:
        super().__init__()
        self.cfg, self.variant = cfg, variant
        d = cfg.d_model
        if variant.kind == "swiglu":
            self.norm = nn.RMSNorm(d, eps=cfg.norm_eps)
            self.gate_proj = nn.Linear(d, variant.intermediate, bias=False)
            self.up_proj = nn.Linear(d, variant.intermediate, bias=False)
            self.down_proj = nn.Linear(variant.intermediate, d, bias=False)
        elif variant.kind == "linear":
            self.norm = nn.RMSNorm(d, eps=cfg.norm_eps)
            self.linear = nn.Linear(d, d, bias=False)

    def intermediate(self, x: Tensor) -> Tensor:
        """SwiGLU activation X = silu(W_gate h) * (W_up h), shape (..., intermediate)."""
        h = self.norm(x)
        return F.silu(self.gate_proj(h)) * self.up_proj(h)

    def forward(self, x: Tensor) -> Tensor | None:
        """x: (B, T, d) -> delta (B, T, d) or ``None``."""
        kind = self.variant.kind
        if kind == "noop":
            return None
        if kind == "linear":
            return self.linear(self.norm(x))
        return self.down_proj(self.intermediate(x))


class DecoderBlock(nn.Module):
    """One transformer layer: ``x + attn(x)`` then ``+ ffn(.)``."""

    def __init__(self, cfg: DecoderConfig, block: BlockConfig) -> None:
        super().__init__()
        self.config = block
        self.attn = AttentionSubblock(cfg, block.attention)
        self.ffn = FFNSubblock(cfg, block.ffn)

    def forward(
        self,
        x: Tensor,
        cos: Tensor,
        sin: Tensor,
        cache: tuple[Tensor, Tensor] | None = None,
        return_mid: bool = False,
    ) -> tuple[Tensor, tuple[Tensor, Tensor] | None] | tuple[Tensor, Tensor, object]:
        """x: (B, T, d). Returns (out, new_cache), or (out, mid, new_cache) with ``return_mid``."""
        delta, new_cache = self.attn(x, cos, sin, cache)
        mid = x if delta is None else x + delta
        delta = self.ffn(mid)
        out = mid if delta is None else mid + delta
        if return_mid:
            return out, mid, new_cache
        return out, new_cache


class HeteroDecoder(nn.Module):
    """Decoder-only LM with a per-layer choice of attention and FFN variants.

    Parameters
    ----------
    cfg : DecoderConfig
        Shared shape (vocabulary, hidden size, depth, heads).
    block_configs : sequence of BlockConfig, optional
        One per layer; ``None`` builds the parent (``cfg.parent_block`` everywhere).
    """

    def __init__(self, cfg: DecoderConfig, block_configs: Sequence[BlockConfig] | None = None):
        super().__init__()
        if not isinstance(cfg, DecoderConfig):
            raise TypeError(f"cfg must be a DecoderConfig, got {type(cfg).__name__}")
        if block_configs is None:
            block_configs = [cfg.parent_block] * cfg.n_layers
        block_configs = list(block_configs)
        if len(block_configs) != cfg.n_layers:
            raise ValueError(
                f"block_configs has {len(block_configs)} entries, expected n_layers={cfg.n_layers}"
            )
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(DecoderBlock(cfg, b) for b in block_configs)
        self.norm = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        if not cfg.tie_embeddings:
            self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    @property
    def block_configs(self) -> list[BlockConfig]:
        """Per-layer block configurations."""
        return [b.config for b in self.blocks]

    def logits(self, h: Tensor) -> Tensor:
        """Final norm + LM head. h: (..., d) -> (..., vocab)."""
        h = self.norm(h)
        w = self.embed.weight if self.cfg.tie_embeddings else self.lm_head.weight
        return h @ w.T

    def run_blocks(
        self, h: Tensor, start: int = 0, stop: int | None = None, pos: int = 0
    ) -> tuple[Tensor, list[Tensor]]:
        """Run layers ``start .. stop-1`` without a cache.

        Parameters
        ----------
        h : Tensor, shape (B, T, d)
            Hidden state entering layer ``start``.

        Returns
        -------
        out : Tensor, shape (B, T, d)
        hidden : list of Tensor
            Output of each layer that was run.
        """
        stop = self.cfg.n_layers if stop is None else stop
        t = h.shape[1]
        cos, sin = self.rope_cos[pos : pos + t], self.rope_sin[pos : pos + t]
        hidden = []
        for blk in self.blocks[start:stop]:
            h, _ = blk(h, cos, sin)
            hidden.append(h)
        return h, hidden

    def forward(
        self,
        tokens: Tensor,
        kv_cache: KVCache | None = None,
        return_hidden: bool = False,
        use_cache: bool = False,
    ) -> tuple[Tensor, DecoderOutput]:
        """Next-token logits.

        Parameters
        ----------
        tokens : Tensor, shape (B, T), integer
        kv_cache : KVCache, optional
            Cache of earlier positions; positions continue from ``kv_cache.length``.
        return_hidden : bool, default=False
            Collect each layer's output in ``aux.hidden``.
        use_cache : bool, default=False
            Build and return a cache even when ``kv_cache`` is ``None``.

        Returns
        -------
        logits : Tensor, shape (B, T, vocab)
        aux : DecoderOutput
        """
        check_tokens(tokens, self.cfg)
        if kv_cache is not None:
            self._check_cache(kv_cache, tokens.shape[0])
        past = 0 if kv_cache is None else kv_cache.length
        t = tokens.shape[1]
        if past + t > self.cfg.max_seq_len:
            raise ValueError(
                f"tokens: cache length {past} + {t} new tokens exceeds max_seq_len="
                f"{self.cfg.max_seq_len}"
            )
        cos, sin = self.rope_cos[past : past + t], self.rope_sin[past : past + t]
        h = self.embed(tokens.long())
        want_cache = use_cache or kv_cache is not None
        new_layers: list[tuple[Tensor, Tensor] | None] = []
        hidden = []
        for i, blk in enumerate(self.blocks):
            layer_cache = None if kv_cache is None else kv_cache.layers[i]
            h, c = blk(h, cos, sin, layer_cache)
            new_layers.append(c)
            if return_hidden:
                hidden.append(h)
        cache = KVCache(new_layers, past + t) if want_cache else None
        return self.logits(h), DecoderOutput(hidden=hidden, kv_cache=cache)

    def _check_cache(self, cache: object, batch: int) -> None:
        """The cache must come from a model of these blocks and this batch."""
        if not isinstance(cache, KVCache):
            raise TypeError(f"kv_cache must be a KVCache, got {type(cache).__name__}")
        if len(cache.layers) != len(self.blocks):
            raise ValueError(
                f"kv_cache has {len(cache.layers)} layers, the model {len(self.blocks)}"
            )
        for i, (blk, kv) in enumerate(zip(self.blocks, cache.layers, strict=True)):
            a = blk.config.attention
            if a.kind != "gqa":
                if kv is not None:
                    raise ValueError(f"kv_cache.layers[{i}] holds keys for a {a.name} layer")
                continue
            want = (batch, a.n_kv_heads, cache.length, self.cfg.head_dim)
            if cache.length and (kv is None or tuple(kv[0].shape) != want):
                got = None if kv is None else tuple(kv[0].shape)
                raise ValueError(f"kv_cache.layers[{i}] has shape {got}, expected {want} "
                                 "(batch, n_kv_heads, length, head_dim)")  # fmt: skip

    @torch.no_grad()
    def prefill(self, tokens: Tensor) -> tuple[Tensor, KVCache]:
        """Process a prompt. tokens: (B, T) -> (last-position logits (B, vocab), cache)."""
        logits, aux = self.forward(tokens, use_cache=True)
        return logits[:, -1], aux.kv_cache

    @torch.no_grad()
    def decode_step(self, token: Tensor, cache: KVCache) -> tuple[Tensor, KVCache]:
        """One autoregressive step. token: (B,) or (B, 1) -> (logits (B, vocab), cache)."""
        if isinstance(token, Tensor) and token.ndim == 1:
            token = token[:, None]
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
        logits, aux = self.forward(token, kv_cache=cache)
        return logits[:, -1], aux.kv_cache

    # ---------------------------------------------------------------- state dicts
    def check_state_dict(self, state_dict: Mapping[str, Tensor]) -> None:
        """Raise ``ValueError`` naming every missing, unexpected or mis-shaped key."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"state_dict must be a mapping, got {type(state_dict).__name__}")
        own = self.state_dict()
        missing = sorted(set(own) - set(state_dict))
        unexpected = sorted(set(state_dict) - set(own))
        bad = [
            f"{k}: expected {tuple(own[k].shape)}, got {tuple(state_dict[k].shape)}"
            for k in own
            if k in state_dict and tuple(state_dict[k].shape) != tuple(own[k].shape)
        ]
        if missing or unexpected or bad:
            parts = []
            if missing:
                parts.append(f"missing keys {missing[:6]}{' ...' if len(missing) > 6 else ''}")
            if unexpected:
                parts.append(
                    f"unexpected keys {unexpected[:6]}{' ...' if len(unexpected) > 6 else ''}"
                )
            if bad:
                parts.append(f"shape mismatch {bad[:6]}")
            raise ValueError("state_dict does not match the config: " + "; ".join(parts))
        for k, v in state_dict.items():
            if v.is_floating_point() and not torch.isfinite(v).all():
                raise ValueError(f"state_dict entry {k!r} contains NaN or inf")

    @classmethod
    def from_state_dict(
        cls,
        cfg: DecoderConfig,
        state_dict: Mapping[str, Tensor],
        block_configs: Sequence[BlockConfig] | None = None,
    ) -> HeteroDecoder:
        """Build a model and load a plain ``state_dict`` (copied, never mutated).

        ``block_configs=None`` infers the per-layer variants from the tensor shapes.
        """
        if block_configs is None:
            block_configs = infer_block_configs(cfg, state_dict)
        model = cls(cfg, block_configs)
        model.check_state_dict(state_dict)
        model.load_state_dict({k: v.detach().clone() for k, v in state_dict.items()})
        return model


def infer_block_configs(cfg: DecoderConfig, state_dict: Mapping[str, Tensor]) -> list[BlockConfig]:
    """Read per-layer variants off the key names and shapes of a ``HeteroDecoder`` state_dict."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict must be a mapping, got {type(state_dict).__name__}")
    out = []
    for i in range(cfg.n_layers):
        p = f"blocks.{i}."
        if p + "attn.k_proj.weight" in state_dict:
            n_kv = state_dict[p + "attn.k_proj.weight"].shape[0] // cfg.head_dim
            attn = AttentionConfig("gqa", int(n_kv))
        elif p + "attn.linear.weight" in state_dict:
            attn = AttentionConfig("linear")
        else:
            attn = AttentionConfig("noop")
        if p + "ffn.up_proj.weight" in state_dict:
            ffn = FFNConfig("swiglu", int(state_dict[p + "ffn.up_proj.weight"].shape[0]))
        elif p + "ffn.linear.weight" in state_dict:
            ffn = FFNConfig("linear")
        else:
            ffn = FFNConfig("noop")
        out.append(BlockConfig(attn, ffn))
    extra = [k for k in state_dict if k.startswith(f"blocks.{cfg.n_layers}.")]
    if extra:
        raise ValueError(
            f"state_dict has layer {cfg.n_layers} keys but cfg.n_layers={cfg.n_layers}"
        )
    return out
