"""FlexAttention path: raw keys first, the block mask cached, eager CPU equal to the reference."""

import pytest
import torch

import sparse_attn as sa
from sparse_attn import flex
from sparse_attn.reference import naive_cca_attention

pytestmark = [
    pytest.mark.skipif(not flex.flex_available(), reason="FlexAttention needs torch >= 2.5"),
    pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile"),
]


@pytest.mark.parametrize(("length", "g", "s"), [(300, 16, 64), (257, 8, 32), (1000, 32, 100)])
@pytest.mark.parametrize("core_bias", [None, "log_group"])
def test_eager_flex_equals_reference_in_float64(length, g, s, core_bias):
    gen = torch.Generator().manual_seed(length)
    q, k, v = (torch.randn(2, 3, length, 16, generator=gen, dtype=torch.float64) for _ in range(3))
    kw = dict(group_size=g, local_window=s, core_bias=core_bias)
    with torch.no_grad():
        out = sa.cca_attention(q, k, v, backend="flex", **kw)
        ref = sa.cca_attention(q, k, v, backend="reference", **kw)
    assert float((out - ref).abs().max()) <= 1e-6 * float(ref.abs().max())
    if core_bias is None:
        naive = naive_cca_attention(q, k, v, group_size=g, local_window=s)
        assert float((out - naive).abs().max()) <= 1e-12


def test_block_mask_built_once_per_length_and_pattern():
    flex._MASKS.clear()
    kw = dict(group_size=16, local_window=64, num_core=12, device="cpu")
    a = flex.cca_block_mask(256, **kw)
    assert flex.cca_block_mask(256, **kw) is a
    assert flex.cca_block_mask(384, **kw) is not a
    assert len(flex._MASKS) == 2


def test_raw_keys_come_first_so_causal_blocks_align():
    # the raw keys' tiles follow the query tiles: with L a multiple of the block size, the
    # block mask's raw part is block lower-triangular, exactly like causal attention's
    length, g, s = 512, 16, 128
    m = (length - s) // g
    bm = flex.cca_block_mask(length, group_size=g, local_window=s, num_core=m, device="cpu")
    dense = bm.to_dense()[0, 0]  # (query blocks, key blocks)
    n_blocks = length // 128
    raw = dense[:, :n_blocks]
    assert torch.equal(raw.triu(1), torch.zeros_like(raw))
    assert dense.shape[1] == n_blocks + -(-m // 128)


def test_flex_on_cpu_is_forward_only():
    q, k, v = (torch.randn(1, 1, 64, 8, requires_grad=True) for _ in range(3))
    with pytest.raises(ValueError, match="forward-only"):
        sa.cca_attention(q, k, v, group_size=4, local_window=8, backend="flex")
