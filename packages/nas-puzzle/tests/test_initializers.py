import pytest
import torch

import nas_puzzle as npz
from nas_puzzle.config import AttentionConfig, FFNConfig
from nas_puzzle.model import rope_tables


@pytest.fixture
def blk(parent):
    return parent.blocks[0]


def _attn_out(mod, x, cfg):
    cos, sin = rope_tables(cfg)
    t = x.shape[1]
    return mod(x, cos[:t], sin[:t])[0]


def test_gqa_group_size_one_equals_parent(blk, tiny_cfg):
    x = torch.randn(2, 7, tiny_cfg.d_model)
    child = npz.init_attention(blk.attn, AttentionConfig("gqa", tiny_cfg.n_kv_heads))
    torch.testing.assert_close(_attn_out(child, x, tiny_cfg), _attn_out(blk.attn, x, tiny_cfg))


def test_gqa_mean_pools_heads(blk, tiny_cfg):
    hd, d = tiny_cfg.head_dim, tiny_cfg.d_model
    child = npz.init_attention(blk.attn, AttentionConfig("gqa", 2))
    wk = blk.attn.k_proj.weight.view(4, hd, d)
    expected = torch.cat([(wk[0] + wk[1]) / 2, (wk[2] + wk[3]) / 2])
    torch.testing.assert_close(child.k_proj.weight, expected)


def test_linear_attention_equals_single_token_attention(blk, tiny_cfg):
    x = torch.randn(5, 1, tiny_cfg.d_model)  # one token: it can only attend to itself
    child = npz.init_attention(blk.attn, AttentionConfig("linear"))
    torch.testing.assert_close(
        _attn_out(child, x, tiny_cfg), _attn_out(blk.attn, x, tiny_cfg), atol=1e-6, rtol=1e-5
    )
    # also for a parent that already uses GQA (V heads repeated per query group)
    gqa = npz.init_attention(blk.attn, AttentionConfig("gqa", 2))
    lin = npz.init_attention(gqa, AttentionConfig("linear"))
    torch.testing.assert_close(
        _attn_out(lin, x, tiny_cfg), _attn_out(gqa, x, tiny_cfg), atol=1e-6, rtol=1e-5
    )


def test_linear_ffn_is_down_times_up(blk, tiny_cfg):
    x = torch.randn(3, 4, tiny_cfg.d_model)
    child = npz.init_ffn(blk.ffn, FFNConfig("linear"))
    h = blk.ffn.norm(x)
    expected = blk.ffn.down_proj(blk.ffn.up_proj(h))
    torch.testing.assert_close(child(x), expected, atol=1e-6, rtol=1e-5)


def test_channel_contribution_full_width_exact_and_brute_force(blk, tiny_cfg):
    x = torch.randn(64, tiny_cfg.d_model)
    same = npz.init_ffn(blk.ffn, FFNConfig("swiglu", tiny_cfg.ffn_intermediate), x)
    torch.testing.assert_close(same(x), blk.ffn(x))
    # C_k equals the mean norm of the output change when channel k is removed
    score = npz.channel_contribution(blk.ffn, x)
    X = blk.ffn.intermediate(x)
    W = blk.ffn.down_proj.weight
    brute = torch.stack(
        [(X[:, k : k + 1] * W[:, k]).norm(dim=-1).mean() for k in range(X.shape[1])]
    )
    torch.testing.assert_close(score, brute.detach(), atol=1e-6, rtol=1e-5)
    half = npz.init_ffn(blk.ffn, FFNConfig("swiglu", 16), x)
    keep = torch.topk(score, 16).indices.sort().values
    torch.testing.assert_close(half.up_proj.weight, blk.ffn.up_proj.weight[keep])
    with pytest.raises(ValueError, match="calib"):
        npz.init_ffn(blk.ffn, FFNConfig("swiglu", 16))
    with pytest.raises(ValueError, match="x must"):
        npz.channel_contribution(blk.ffn, torch.randn(3, 5))


def test_identity_initialized_child_equals_parent(parent, tiny_cfg, corpus):
    """A child assembled from the parent-variant (identity) inits reproduces the parent."""
    sp = npz.SearchSpace.paper_default(tiny_cfg, ffn_ratios=(1.0, 0.5))
    lib = npz.build_library(parent, sp, corpus[0], mode="init_only", seq_len=16)
    child = npz.realize(parent, lib, [tiny_cfg.parent_block] * tiny_cfg.n_layers)
    x = torch.randint(0, 256, (2, 16))
    torch.testing.assert_close(child(x)[0], parent(x)[0])
    assert child is not parent
