"""KV caches for decoding: CCA (core tokens + local window), dense, and sink + window.

All caches take already position-encoded keys and give outputs equal to a full forward over
the concatenated sequence (tested). Positions for RoPE must come from ``cache.seen`` (absolute
token count), never from the number of cached entries.

Storage. Raw keys and values are stored per *key/value head* (``Hkv``), as a GQA model holds
them; attention runs with ``enable_gqa=True`` and never expands them. Every tensor lives in a
buffer that grows geometrically and is trimmed from the front by moving an offset, so a decode
step appends in O(1) amortized instead of re-concatenating the whole cache.

CCA decode (our formulation of paper Sec. 3.4 / the authors' cache): per layer keep the visible
core tokens, *pending* core tokens (groups complete but still covered by the local window), the
raw window and the absolute token count. A group is pooled when its last token arrives, with
that token's query (the group's last query, as in the forward pass). With
``gqa_pooling="shared"`` the pooling logits of a KV head's query heads are averaged, so core
tokens are per KV head too; ``"per_query_head"`` (the authors' code) keeps them per query head.
"""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F

from sparse_attn.baselines import sink_window_attention
from sparse_attn.cca import cca_attention, cca_core_tokens
from sparse_attn.validation import check_positive_int, check_qkv, softmax_hp

__all__ = [
    "CCAKVCache",
    "DenseKVCache",
    "KVCache",
    "SinkWindowKVCache",
    "analytic_cache_entries",
]


class _Buffer:
    """A (B, H, n, D) sequence with geometric growth at the end and O(1) trimming at the front."""

    def __init__(self) -> None:
        self.data: torch.Tensor | None = None
        self.start = 0
        self.stop = 0

    def __len__(self) -> int:
        return self.stop - self.start

    def view(self) -> torch.Tensor:
        return self.data[..., self.start : self.stop, :]

    def append(self, x: torch.Tensor) -> None:
        n = x.shape[-2]
        if self.data is None:
            self.data = x.new_empty(*x.shape[:-2], max(2 * n, 16), x.shape[-1])
        elif self.stop + n > self.data.shape[-2]:
            live = len(self)
            # compact (drop the trimmed front) and grow geometrically
            cap = max(2 * (live + n), 16)
            new = x.new_empty(*x.shape[:-2], cap, x.shape[-1])
            new[..., :live, :] = self.view()
            self.data, self.start, self.stop = new, 0, live
        self.data[..., self.stop : self.stop + n, :] = x
        self.stop += n

    def drop_front(self, n: int) -> None:
        self.start += n

    def take_front(self, n: int) -> torch.Tensor:
        out = self.data[..., self.start : self.start + n, :]
        self.start += n
        return out

    def nbytes(self) -> int:
        """Bytes of the live entries (what the cache holds logically)."""
        if self.data is None:
            return 0
        per = self.data[..., :1, :].numel() * self.data.element_size()
        return per * len(self)


def pool_group(
    q: torch.Tensor, kg: torch.Tensor, vg: torch.Tensor, pool_scale: float | None, shared: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Core token of one group from its last query.

    Parameters
    ----------
    q : torch.Tensor
        The group's last query (B, Hq, 1, D).
    kg, vg : torch.Tensor
        The group's keys and values (B, Hkv, g, D).
    pool_scale : float, optional
        Pooling temperature (default ``1 / sqrt(D)``).
    shared : bool
        Average the pooling logits over each KV head's query heads (cores per KV head).

    Returns
    -------
    core_k, core_v : torch.Tensor
        (B, Hkv, 1, D) if ``shared`` else (B, Hq, 1, D).
    """
    hq, hkv = q.shape[1], kg.shape[1]
    tau = 1.0 / math.sqrt(q.shape[-1]) if pool_scale is None else pool_scale
    r = hq // hkv
    if shared:  # average the logits over the query heads of each KV head
        logits = (q.unflatten(1, (hkv, r)) @ kg.unsqueeze(2).transpose(-1, -2)).mean(2) * tau
        w = softmax_hp(logits).to(kg.dtype)  # (B, Hkv, 1, g)
        return w @ kg, w @ vg
    kx, vx = kg.repeat_interleave(r, dim=1), vg.repeat_interleave(r, dim=1)
    w = softmax_hp(q @ kx.transpose(-1, -2) * tau).to(kg.dtype)  # (B, Hq, 1, g)
    return w @ kx, w @ vx


class _CCALayer:
    """Decode state of one layer."""

    def __init__(self, g: int, s: int, pool_scale: float | None, shared: bool) -> None:
        self.g, self.s, self.pool_scale, self.shared = g, s, pool_scale, shared
        self.seen = 0
        self.raw_start = 0  # absolute position of the first raw token held
        self.core_k, self.core_v = _Buffer(), _Buffer()  # visible core tokens
        self.pend_k, self.pend_v = _Buffer(), _Buffer()  # complete, not yet visible
        self.raw_k, self.raw_v = _Buffer(), _Buffer()

    def _target_visible(self) -> int:
        return max(0, (self.seen - self.s) // self.g)

    def prefill(self, q, k, v, scale):
        length = q.shape[-2]
        pooling = "shared" if self.shared else "per_query_head"
        gqa = q.shape[1] != k.shape[1]
        out = cca_attention(
            q, k, v, scale=scale, enable_gqa=gqa, group_size=self.g, local_window=self.s,
            pool_scale=self.pool_scale, gqa_pooling=pooling,
        )  # fmt: skip
        r = q.shape[1] // k.shape[1]
        if self.shared:
            ck, cv = cca_core_tokens(
                q, k, v, group_size=self.g, pool_scale=self.pool_scale, shared_heads=r
            )
        else:
            kx, vx = k.repeat_interleave(r, dim=1), v.repeat_interleave(r, dim=1)
            ck, cv = cca_core_tokens(q, kx, vx, group_size=self.g, pool_scale=self.pool_scale)
        self.seen = length
        nv = self._target_visible()
        self.core_k.append(ck[..., :nv, :])
        self.core_v.append(cv[..., :nv, :])
        self.pend_k.append(ck[..., nv:, :])
        self.pend_v.append(cv[..., nv:, :])
        self.raw_start = nv * self.g
        self.raw_k.append(k[..., self.raw_start :, :])
        self.raw_v.append(v[..., self.raw_start :, :])
        return out

    def step(self, q, k, v, scale):
        """One new token: q (B, Hq, 1, D), k/v (B, Hkv, 1, D)."""
        self.raw_k.append(k)
        self.raw_v.append(v)
        self.seen += 1
        if self.seen % self.g == 0:  # group j just completed: pool it with its last query
            start = len(self.raw_k) - self.g
            kg = self.raw_k.view()[..., start:, :]
            vg = self.raw_v.view()[..., start:, :]
            ck, cv = pool_group(q, kg, vg, self.pool_scale, self.shared)
            self.pend_k.append(ck)
            self.pend_v.append(cv)
        move = self._target_visible() - len(self.core_k)
        if move > 0:  # groups that left the window become visible core tokens
            self.core_k.append(self.pend_k.take_front(move))
            self.core_v.append(self.pend_v.take_front(move))
            self.raw_k.drop_front(move * self.g)
            self.raw_v.drop_front(move * self.g)
            self.raw_start += move * self.g
        hq = q.shape[1]
        core_k, core_v = self.core_k.view(), self.core_v.view()
        raw_k, raw_v = self.raw_k.view(), self.raw_v.view()
        if core_k.shape[1] != raw_k.shape[1]:  # per-query-head cores: expand raw for this call
            r = hq // raw_k.shape[1]
            raw_k, raw_v = raw_k.repeat_interleave(r, 1), raw_v.repeat_interleave(r, 1)
        keys = torch.cat([core_k, raw_k], dim=-2)
        values = torch.cat([core_v, raw_v], dim=-2)
        return F.scaled_dot_product_attention(
            q, keys, values, scale=scale, enable_gqa=keys.shape[1] != hq
        )

    def buffers(self) -> list[_Buffer]:
        return [self.core_k, self.core_v, self.pend_k, self.pend_v, self.raw_k, self.raw_v]

    def num_entries(self) -> int:
        return len(self.core_k) + len(self.pend_k) + len(self.raw_k)


class _WindowLayer:
    """Dense (``window=None``) or sink + window state of one layer, with absolute positions."""

    def __init__(self, num_sink: int, window: int | None) -> None:
        self.num_sink, self.window = num_sink, window
        self.seen = 0
        self.k, self.v = _Buffer(), _Buffer()  # everything (dense) or the recent window
        self.sink_k, self.sink_v = _Buffer(), _Buffer()

    def attend(self, q, k, v, scale):
        length = q.shape[-2]
        start = self.seen
        self.k.append(k)
        self.v.append(v)
        self.seen += length
        keys, values = self.k.view(), self.v.view()
        n_sink = len(self.sink_k)
        if n_sink:
            keys = torch.cat([self.sink_k.view(), keys], dim=-2)
            values = torch.cat([self.sink_v.view(), values], dim=-2)
        gqa = keys.shape[1] != q.shape[1]
        if length == 1 and self.window is None:
            out = F.scaled_dot_product_attention(q, keys, values, scale=scale, enable_gqa=gqa)
        elif start == 0 and self.window is None:  # prefill: fused causal kernel, no L x L mask
            out = F.scaled_dot_product_attention(
                q, keys, values, is_causal=True, scale=scale, enable_gqa=gqa
            )
        elif start == 0:  # prefill with a window: the chunked local kernel
            out = sink_window_attention(
                q, keys, values, num_sink=self.num_sink, window=self.window, scale=scale,
                enable_gqa=gqa,
            )  # fmt: skip
        else:
            first = self.seen - len(self.k)  # absolute position of the first windowed key
            dev = q.device  # built where the queries are: no host-to-device copy per step
            pos = torch.cat(
                [torch.arange(n_sink, device=dev), torch.arange(first, self.seen, device=dev)]
            )
            t = torch.arange(start, self.seen, device=q.device)[:, None]
            mask = pos[None, :] <= t
            if self.window is not None:
                mask &= (pos[None, :] > t - self.window) | (pos[None, :] < self.num_sink)
            out = F.scaled_dot_product_attention(
                q, keys, values, attn_mask=mask, scale=scale, enable_gqa=gqa
            )
        if self.window is not None:
            self._trim()
        return out

    def _trim(self) -> None:
        # sinks move to their own buffer; future queries t >= seen need u > seen - 1 - window
        first = self.seen - len(self.k)
        if first < self.num_sink:
            n = min(self.num_sink, self.seen) - first
            self.sink_k.append(self.k.take_front(n))
            self.sink_v.append(self.v.take_front(n))
            first += n
        drop = max(0, (self.seen - self.window) - first)
        self.k.drop_front(min(drop, len(self.k)))
        self.v.drop_front(min(drop, len(self.v)))

    def buffers(self) -> list[_Buffer]:
        return [self.k, self.v, self.sink_k, self.sink_v]

    def num_entries(self) -> int:
        return len(self.k) + len(self.sink_k)


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
        self._signatures: dict[int, tuple] = {}  # per layer: what its stored entries look like

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
        """Bytes of the cached entries of all layers (keys, values, core tokens).

        For :class:`DenseKVCache` this is exactly ``layers * L * Hkv * D * 2 * itemsize``.
        """
        return sum(b.nbytes() for lay in self.layers for b in lay.buffers())

    def allocated_bytes(self) -> int:
        """Bytes allocated, including the spare capacity of the growable buffers."""
        return sum(
            b.data.numel() * b.data.element_size()
            for lay in self.layers
            for b in lay.buffers()
            if b.data is not None
        )

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
            Keys / values of the new tokens (B, Hkv, Lnew, D), stored per KV head.
        scale : float, optional
            Softmax scale.
        enable_gqa : bool, default=True
            Allow Hq to be a multiple of Hkv.

        Returns
        -------
        torch.Tensor
            (B, Hq, Lnew, Dv), equal to the new rows of a full forward.
        """
        if isinstance(layer, bool) or not isinstance(layer, numbers.Integral):
            raise TypeError(f"layer must be an int, got {layer!r}")  # True would read as layer 1
        if not 0 <= layer < len(self.layers):
            raise ValueError(f"layer must be in [0, {len(self.layers)}), got {layer}")
        layer = int(layer)
        check_qkv(q, k, v, enable_gqa=enable_gqa)
        # what the layer already stores fixes the batch, KV heads, head sizes, dtype and device
        sig = (k.shape[0], k.shape[1], k.shape[-1], v.shape[-1], k.dtype, k.device)
        held = self._signatures.get(layer)
        if held is not None and held != sig:
            names = ("batch", "KV heads", "key head size", "value head size", "dtype", "device")
            diff = [f"{n} {a} -> {b}" for n, a, b in zip(names, held, sig, strict=True) if a != b]
            raise ValueError(
                f"k, v: layer {layer} caches entries of another shape ({', '.join(diff)}); "
                "use a new cache for another model or batch"
            )
        out = self._attend(self.layers[layer], q, k, v, scale)
        self._signatures[layer] = sig
        return out

    def _attend(self, state, q, k, v, scale):
        return state.attend(q, k, v, scale)


class DenseKVCache(KVCache):
    """Full KV cache (exact dense causal attention), raw K/V per KV head."""

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
    gqa_pooling : {"per_query_head", "shared"}, default="per_query_head"
        ``"shared"`` keeps core tokens per KV head (pooling logits averaged over each KV
        head's query heads): the cache is then ``(L/g + s) / L`` of a dense GQA cache.
        ``"per_query_head"`` follows the authors' code (cores per query head).
    """

    def __init__(
        self,
        num_layers: int,
        group_size: int = 16,
        local_window: int = 1024,
        pool_scale: float | None = None,
        gqa_pooling: str = "per_query_head",
    ) -> None:
        self.group_size = check_positive_int(group_size, "group_size")
        self.local_window = check_positive_int(local_window, "local_window")
        if gqa_pooling not in ("per_query_head", "shared"):
            raise ValueError(
                f"gqa_pooling must be 'per_query_head' or 'shared', got {gqa_pooling!r}"
            )
        self.pool_scale = pool_scale
        self.gqa_pooling = gqa_pooling
        super().__init__(num_layers)

    def _new_layer(self) -> _CCALayer:
        return _CCALayer(
            self.group_size, self.local_window, self.pool_scale, self.gqa_pooling == "shared"
        )

    def _attend(self, state: _CCALayer, q, k, v, scale):
        if state.seen == 0:
            return state.prefill(q, k, v, scale)
        outs = [
            state.step(q[..., i : i + 1, :], k[..., i : i + 1, :], v[..., i : i + 1, :], scale)
            for i in range(q.shape[-2])
        ]
        return torch.cat(outs, dim=-2)

    def num_core(self, layer: int = 0) -> tuple[int, int]:
        """(visible, pending) core tokens of ``layer``."""
        st = self.layers[layer]
        return len(st.core_k), len(st.pend_k)


def analytic_cache_entries(length: int, group_size: int, local_window: int) -> int:
    """Steady-state CCA cache entries (visible + pending cores + raw) after ``length`` tokens."""
    if isinstance(length, bool) or not isinstance(length, numbers.Integral) or length < 0:
        raise ValueError(f"length must be an int >= 0, got {length!r}")
    group_size = check_positive_int(group_size, "group_size")
    local_window = check_positive_int(local_window, "local_window")
    length = int(length)
    nv = max(0, (length - local_window) // group_size)
    complete = length // group_size
    return complete + (length - nv * group_size)
