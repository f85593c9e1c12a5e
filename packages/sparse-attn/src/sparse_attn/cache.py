"""KV caches for decoding: CCA (core tokens + local window), dense, and sink + window.

All caches take already position-encoded keys and give outputs equal to a full forward over
the concatenated sequence (tested). Positions for RoPE must come from ``cache.seen`` (absolute
token count), never from the number of cached entries.

CCA decode (our formulation of paper Sec. 3.4 / the authors' cache): per layer keep the visible
core tokens, *pending* core tokens (groups complete but still covered by the local window), the
raw window and the absolute token count. A group is pooled when its last token arrives, with
that token's query (the group's last query, as in the forward pass).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from sparse_attn.cca import cca_attention, cca_core_tokens
from sparse_attn.validation import check_positive_int, check_qkv, expand_kv, softmax_hp

__all__ = [
    "CCAKVCache",
    "DenseKVCache",
    "KVCache",
    "SinkWindowKVCache",
    "analytic_cache_entries",
]


def _empty_like(x: torch.Tensor, length: int = 0) -> torch.Tensor:
    return x.new_zeros(*x.shape[:-2], length, x.shape[-1])


class _CCALayer:
    """Decode state of one layer (tensors are per query head, as in the paper's code)."""

    def __init__(self, group_size: int, local_window: int, pool_scale: float | None) -> None:
        self.g, self.s, self.pool_scale = group_size, local_window, pool_scale
        self.seen = 0
        self.raw_start = 0
        self.core_k = self.core_v = self.pend_k = self.pend_v = None
        self.raw_k = self.raw_v = None

    def _target_visible(self) -> int:
        return max(0, (self.seen - self.s) // self.g)

    def prefill(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None):
        length = q.shape[-2]
        out = cca_attention(
            q, k, v, scale=scale, group_size=self.g, local_window=self.s, pool_scale=self.pool_scale
        )
        ck, cv = cca_core_tokens(q, k, v, group_size=self.g, pool_scale=self.pool_scale)
        self.seen = length
        nv = self._target_visible()
        self.core_k, self.core_v = ck[..., :nv, :], cv[..., :nv, :]
        self.pend_k, self.pend_v = ck[..., nv:, :], cv[..., nv:, :]
        self.raw_start = nv * self.g
        self.raw_k, self.raw_v = k[..., self.raw_start :, :], v[..., self.raw_start :, :]
        return out

    def step(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None):
        """One new token: q, k, v of shape (B, H, 1, D)."""
        self.raw_k = torch.cat([self.raw_k, k], dim=-2)
        self.raw_v = torch.cat([self.raw_v, v], dim=-2)
        self.seen += 1
        if self.seen % self.g == 0:  # group j just completed: pool it with its last query
            start = self.seen - self.g - self.raw_start
            kg, vg = self.raw_k[..., start:, :], self.raw_v[..., start:, :]
            tau = 1.0 / math.sqrt(q.shape[-1]) if self.pool_scale is None else self.pool_scale
            w = softmax_hp(q @ kg.transpose(-1, -2) * tau).to(kg.dtype)
            ck, cv = w @ kg, w @ vg  # (B, H, 1, D): the new core token
            self.pend_k = torch.cat([self.pend_k, ck], dim=-2)
            self.pend_v = torch.cat([self.pend_v, cv], dim=-2)
        move = self._target_visible() - self.core_k.shape[-2]
        if move > 0:  # groups that left the window become visible core tokens
            self.core_k = torch.cat([self.core_k, self.pend_k[..., :move, :]], dim=-2)
            self.core_v = torch.cat([self.core_v, self.pend_v[..., :move, :]], dim=-2)
            self.pend_k, self.pend_v = self.pend_k[..., move:, :], self.pend_v[..., move:, :]
            drop = move * self.g
            self.raw_k, self.raw_v = self.raw_k[..., drop:, :], self.raw_v[..., drop:, :]
            self.raw_start += drop
        keys = torch.cat([self.core_k, self.raw_k], dim=-2)
        values = torch.cat([self.core_v, self.raw_v], dim=-2)
        return F.scaled_dot_product_attention(q, keys, values, scale=scale)

    def tensors(self) -> list[torch.Tensor]:
        return [t for t in (self.core_k, self.core_v, self.pend_k, self.pend_v, self.raw_k,
                            self.raw_v) if t is not None]  # fmt: skip

    def num_entries(self) -> int:
        if self.raw_k is None:
            return 0
        return self.core_k.shape[-2] + self.pend_k.shape[-2] + self.raw_k.shape[-2]


class _WindowLayer:
    """Dense (``window=None``) or sink + window state of one layer, with absolute positions."""

    def __init__(self, num_sink: int, window: int | None) -> None:
        self.num_sink, self.window = num_sink, window
        self.seen = 0
        self.k = self.v = self.pos = None

    def attend(self, q, k, v, scale):
        length = q.shape[-2]
        new_pos = torch.arange(self.seen, self.seen + length, device=q.device)
        if self.k is None:
            self.k, self.v, self.pos = k, v, new_pos
        else:
            self.k = torch.cat([self.k, k], dim=-2)
            self.v = torch.cat([self.v, v], dim=-2)
            self.pos = torch.cat([self.pos, new_pos])
        self.seen += length
        u, t = self.pos[None, :], new_pos[:, None]
        mask = u <= t
        if self.window is not None:
            mask &= (u > t - self.window) | (u < self.num_sink)
        out = F.scaled_dot_product_attention(q, self.k, self.v, attn_mask=mask, scale=scale)
        if self.window is not None:  # future queries t >= seen only need u > seen - 1 - window
            keep = (self.pos < self.num_sink) | (self.pos >= self.seen - self.window)
            self.k, self.v, self.pos = self.k[..., keep, :], self.v[..., keep, :], self.pos[keep]
        return out

    def tensors(self) -> list[torch.Tensor]:
        return [] if self.k is None else [self.k, self.v]

    def num_entries(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]


class KVCache:
    """Per-layer KV cache for causal self-attention decoding (base class).

    Parameters
    ----------
    num_layers : int
        Number of attention layers sharing this cache.
    """

    def __init__(self, num_layers: int) -> None:
        check_positive_int(num_layers, "num_layers")
        self.layers = [self._new_layer() for _ in range(num_layers)]

    def _new_layer(self):
        raise NotImplementedError

    @property
    def seen(self) -> int:
        """Tokens processed so far (absolute position of the next token)."""
        return self.layers[0].seen

    def num_entries(self, layer: int = 0) -> int:
        """Cached key positions of ``layer`` (per head)."""
        return self.layers[layer].num_entries()

    def memory_bytes(self) -> int:
        """Bytes held by all cached tensors."""
        return sum(t.numel() * t.element_size() for lay in self.layers for t in lay.tensors())

    def attend(
        self,
        layer: int,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *,
        scale: float | None = None,
        enable_gqa: bool = True,
    ) -> torch.Tensor:
        """Append ``k``/``v`` of new tokens to ``layer`` and attend ``q`` causally.

        Parameters
        ----------
        layer : int
            Layer index.
        q : torch.Tensor
            Queries of the new tokens (B, Hq, Lnew, D), position-encoded from ``self.seen``.
        k, v : torch.Tensor
            Keys / values of the new tokens (B, Hkv, Lnew, D).
        scale : float, optional
            Softmax scale.
        enable_gqa : bool, default=True
            Allow Hq to be a multiple of Hkv.

        Returns
        -------
        torch.Tensor
            (B, Hq, Lnew, Dv), equal to the new rows of a full forward.
        """
        if not 0 <= layer < len(self.layers):
            raise ValueError(f"layer must be in [0, {len(self.layers)}), got {layer}")
        check_qkv(q, k, v, enable_gqa=enable_gqa)
        k, v = expand_kv(k, q.shape[1]), expand_kv(v, q.shape[1])
        return self._attend(self.layers[layer], q, k, v, scale)

    def _attend(self, state, q, k, v, scale):
        return state.attend(q, k, v, scale)


class DenseKVCache(KVCache):
    """Full KV cache (exact dense causal attention)."""

    def _new_layer(self) -> _WindowLayer:
        return _WindowLayer(0, None)


class SinkWindowKVCache(KVCache):
    """StreamingLLM-style cache: ``num_sink`` first tokens + the last ``window`` tokens.

    Parameters
    ----------
    num_layers : int
        Number of layers.
    num_sink : int, default=4
        Sink tokens kept (0 gives a plain sliding window).
    window : int, default=1024
        Recent tokens attended (t sees u in (t - window, t]).
    """

    def __init__(self, num_layers: int, num_sink: int = 4, window: int = 1024) -> None:
        if isinstance(num_sink, bool) or not isinstance(num_sink, int) or num_sink < 0:
            raise ValueError(f"num_sink must be an int >= 0, got {num_sink!r}")
        self.num_sink, self.window = num_sink, check_positive_int(window, "window")
        super().__init__(num_layers)

    def _new_layer(self) -> _WindowLayer:
        return _WindowLayer(self.num_sink, self.window)


class CCAKVCache(KVCache):
    """CCA decode cache: visible + pending core tokens and a raw window of < s + g tokens.

    Parameters
    ----------
    num_layers : int
        Number of layers.
    group_size : int, default=16
        g.
    local_window : int, default=1024
        s.
    pool_scale : float, optional
        Pooling temperature, default ``1 / sqrt(D)``.
    """

    def __init__(
        self,
        num_layers: int,
        group_size: int = 16,
        local_window: int = 1024,
        pool_scale: float | None = None,
    ) -> None:
        self.group_size = check_positive_int(group_size, "group_size")
        self.local_window = check_positive_int(local_window, "local_window")
        self.pool_scale = pool_scale
        super().__init__(num_layers)

    def _new_layer(self) -> _CCALayer:
        return _CCALayer(self.group_size, self.local_window, self.pool_scale)

    def _attend(self, state: _CCALayer, q, k, v, scale):
        if state.raw_k is None:
            return state.prefill(q, k, v, scale)
        outs = [
            state.step(q[..., i : i + 1, :], k[..., i : i + 1, :], v[..., i : i + 1, :], scale)
            for i in range(q.shape[-2])
        ]
        return torch.cat(outs, dim=-2)

    def num_core(self, layer: int = 0) -> tuple[int, int]:
        """(visible, pending) core tokens of ``layer``."""
        st = self.layers[layer]
        if st.raw_k is None:
            return 0, 0
        return st.core_k.shape[-2], st.pend_k.shape[-2]


def analytic_cache_entries(length: int, group_size: int, local_window: int) -> int:
    """Steady-state CCA cache entries (visible + pending cores + raw) after ``length`` tokens."""
    nv = max(0, (length - local_window) // group_size)
    complete = length // group_size
    return complete + (length - nv * group_size)
