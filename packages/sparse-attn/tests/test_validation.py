import pytest
import torch

import sparse_attn as sa


def qkv(length=32, hq=4, hkv=4, dtype=torch.float32):
    return (
        torch.randn(1, hq, length, 8, dtype=dtype),
        torch.randn(1, hkv, length, 8, dtype=dtype),
        torch.randn(1, hkv, length, 8, dtype=dtype),
    )


OPS = {
    "cca": lambda q, k, v, **kw: sa.cca_attention(q, k, v, group_size=4, local_window=4, **kw),
    "sliding": lambda q, k, v, **kw: sa.sliding_window_attention(q, k, v, 8, **kw),
    "sink": lambda q, k, v, **kw: sa.sink_window_attention(q, k, v, window=8, **kw),
    "dense": lambda q, k, v, **kw: sa.dense_attention(q, k, v, **kw),
    "region": lambda q, k, v, **kw: sa.region_attention(q, k, v, region_size=8, **kw),
}


@pytest.mark.parametrize("op", OPS)
def test_common_bad_inputs(op):
    f = OPS[op]
    q, k, v = qkv()
    with pytest.raises(TypeError, match="k dtype"):
        f(q, k.double(), v)
    with pytest.raises(TypeError, match="floating"):
        f(q.long(), k, v)
    with pytest.raises(ValueError, match="q must have shape"):
        f(q[0], k, v)
    with pytest.raises(ValueError, match="v"):
        f(q, k, v[..., :5, :])
    with pytest.raises(ValueError, match="heads"):
        f(q, k[:, :2], v[:, :2])
    with pytest.raises(ValueError, match="multiple"):
        f(q, k[:, :3], v[:, :3], enable_gqa=True)
    bad = q.clone()
    bad[0, 0, 3, 1] = float("nan")
    with pytest.raises(ValueError, match="q contains NaN"):
        f(bad, k, v)
    inf = v.clone()
    inf[0, 0, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="v contains NaN"):
        f(q, k, inf)
    with pytest.raises(ValueError, match="empty"):
        f(q[..., :0, :], k[..., :0, :], v[..., :0, :])
    with pytest.raises(TypeError, match=r"q must be a torch\.Tensor"):
        f(q.numpy(), k, v)


def test_cca_specific_bad_inputs():
    q, k, v = qkv()
    for name in ("group_size", "local_window", "chunk_size"):
        with pytest.raises(ValueError, match=name):
            sa.cca_attention(q, k, v, **{name: 0})
        with pytest.raises(ValueError, match=name):
            sa.cca_attention(q, k, v, **{name: -3})
        with pytest.raises(TypeError, match=name):
            sa.cca_attention(q, k, v, **{name: 2.5})
    with pytest.raises(ValueError, match="is_causal"):
        sa.cca_attention(q, k, v, is_causal=False)
    with pytest.raises(NotImplementedError, match="attn_mask"):
        sa.cca_attention(q, k, v, torch.ones(32, 32, dtype=torch.bool))
    with pytest.raises(NotImplementedError, match="dropout_p"):
        sa.cca_attention(q, k, v, dropout_p=0.1)
    with pytest.raises(ValueError, match="core_bias"):
        sa.cca_attention(q, k, v, core_bias="x")
    with pytest.raises(ValueError, match="backend"):
        sa.cca_attention(q, k, v, backend="triton")
    with pytest.raises(ValueError, match="gqa_pooling"):
        sa.cca_attention(q, k, v, gqa_pooling="x")
    with pytest.raises(ValueError, match="window"):
        sa.sliding_window_attention(q, k, v, 0)
    with pytest.raises(ValueError, match="num_sink"):
        sa.sink_window_attention(q, k, v, num_sink=-1)
    with pytest.raises(ValueError, match="length"):
        sa.cca_visibility(0, 4, 4)
