import numpy as np
import pytest
import torch

import nas_puzzle as npz
from nas_puzzle.config import AttentionConfig, BlockConfig, FFNConfig


def _mixed(cfg):
    return [
        BlockConfig(AttentionConfig("gqa", 2), FFNConfig("swiglu", 8)),
        BlockConfig(AttentionConfig("linear"), FFNConfig("noop")),
    ]


def test_kv_cache_decode_matches_full_forward(tiny_cfg):
    torch.manual_seed(0)
    for blocks in (None, _mixed(tiny_cfg)):
        m = npz.HeteroDecoder(tiny_cfg, blocks).eval()
        x = torch.randint(0, 256, (3, 12))
        full, _ = m(x)
        logits, cache = m.prefill(x[:, :5])
        steps = [logits]
        for t in range(5, 12):
            logits, cache = m.decode_step(x[:, t], cache)
            steps.append(logits)
        torch.testing.assert_close(torch.stack(steps, 1), full[:, 4:], atol=1e-5, rtol=1e-5)


def test_state_dict_roundtrip_and_inference(tiny_cfg):
    m = npz.HeteroDecoder(tiny_cfg, _mixed(tiny_cfg)).eval()
    sd = m.state_dict()
    before = {k: v.clone() for k, v in sd.items()}
    m2 = npz.HeteroDecoder.from_state_dict(tiny_cfg, sd)
    assert m2.block_configs == m.block_configs
    x = torch.randint(0, 256, (2, 8))
    torch.testing.assert_close(m2(x)[0], m(x)[0])
    assert all(torch.equal(before[k], sd[k]) for k in sd)  # caller's dict untouched


def test_state_dict_mismatch_errors(tiny_cfg):
    parent_sd = npz.HeteroDecoder(tiny_cfg).state_dict()
    with pytest.raises(ValueError, match=r"state_dict.*shape mismatch.*k_proj"):
        npz.HeteroDecoder.from_state_dict(tiny_cfg, parent_sd, _mixed(tiny_cfg))
    sd = dict(parent_sd)
    sd.pop("norm.weight")
    with pytest.raises(ValueError, match=r"missing keys \['norm.weight'\]"):
        npz.HeteroDecoder.from_state_dict(tiny_cfg, sd, [tiny_cfg.parent_block] * 2)
    sd = dict(parent_sd, extra=torch.zeros(1))
    with pytest.raises(ValueError, match="unexpected keys"):
        npz.HeteroDecoder.from_state_dict(tiny_cfg, sd, [tiny_cfg.parent_block] * 2)
    bigger = npz.DecoderConfig(d_model=16, n_layers=1, n_heads=4, n_kv_heads=4,
                               ffn_intermediate=32, max_seq_len=16)  # fmt: skip
    with pytest.raises(ValueError, match="n_layers"):
        npz.infer_block_configs(bigger, parent_sd)
    sd = dict(parent_sd)
    sd["norm.weight"] = torch.full_like(sd["norm.weight"], float("nan"))
    with pytest.raises(ValueError, match=r"norm\.weight.*NaN"):
        npz.HeteroDecoder.from_state_dict(tiny_cfg, sd)
    with pytest.raises(TypeError, match="state_dict"):
        npz.HeteroDecoder(tiny_cfg).check_state_dict([1, 2])


def test_token_validation(tiny_cfg):
    m = npz.HeteroDecoder(tiny_cfg)
    with pytest.raises(TypeError, match="tokens"):
        m(torch.zeros(2, 4))
    with pytest.raises(ValueError, match="tokens"):
        m(torch.full((2, 4), 300))
    with pytest.raises(ValueError, match="max_seq_len"):
        m(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="tokens"):
        m(torch.zeros(4, dtype=torch.long))


def test_batch_iter_checks_its_arguments_when_called():
    # a generator function raised only at the first next(): a bad batch_size passed silently
    toks = torch.arange(50)
    with pytest.raises(ValueError, match="batch_size"):
        npz.batch_iter(toks, 0, 8)
    with pytest.raises(TypeError, match="seq_len"):
        npz.batch_iter(toks, 2, 8.0)
    with pytest.raises(TypeError, match="seed"):
        npz.batch_iter(toks, 2, 8, seed=True)
    with pytest.raises(TypeError, match="n_bytes"):
        npz.toy_corpus(10.0)
    assert len(npz.toy_corpus(np.int64(64))) == 64  # a numpy int was refused as "not an int"


def test_config_validation():
    with pytest.raises(ValueError, match="attention kind"):
        AttentionConfig("mamba")
    with pytest.raises(ValueError, match="n_kv_heads"):
        AttentionConfig("gqa")
    with pytest.raises(ValueError, match="intermediate"):
        FFNConfig("linear", 8)
    with pytest.raises(ValueError, match="n_heads"):
        npz.DecoderConfig(d_model=16, n_heads=4, n_kv_heads=3)
    with pytest.raises(ValueError, match="d_model"):
        npz.DecoderConfig(d_model=0)
    with pytest.raises(TypeError, match="n_layers"):
        npz.DecoderConfig(n_layers=2.0)
    with pytest.raises(ValueError, match="block_configs"):
        npz.HeteroDecoder(npz.DecoderConfig(n_layers=2), [npz.DecoderConfig().parent_block])
    assert BlockConfig.from_name("gqa2/ffn64") == BlockConfig(
        AttentionConfig("gqa", 2), FFNConfig("swiglu", 64)
    )
    for bad in ("gqa/ffn64", "gqa2-ffn64", "gqa2/mlp", "gqa0/noop"):
        with pytest.raises(ValueError, match="variant name"):
            BlockConfig.from_name(bad)


def test_search_space(tiny_cfg):
    cfg = npz.DecoderConfig()  # paper mapping: 8 KV heads, I = 256
    sp = npz.SearchSpace.paper_default(cfg)
    assert [a.name for a in sp.attention] == ["gqa8", "gqa4", "gqa2", "gqa1", "linear", "noop"]
    assert [f.name for f in sp.ffn] == ["ffn256", "ffn224", "ffn192", "ffn128", "ffn64",
                                        "ffn48", "ffn24", "linear", "noop"]  # fmt: skip
    assert len(sp.variants()) == 54
    assert sp.index("gqa8/ffn256") == 0
    with pytest.raises(ValueError, match="unknown attention variant"):
        npz.SearchSpace.from_names(cfg, ["gqa8", "gqa3x"], ["ffn256"])
    with pytest.raises(ValueError, match="unknown ffn variant"):
        sp.restrict(ffn=["ffn999"])
    with pytest.raises(ValueError, match="not in the search space"):
        sp.index("gqa8/ffn100")
    with pytest.raises(ValueError, match="parent variant"):
        npz.SearchSpace.from_names(cfg, ["gqa4"], ["ffn256"])
    with pytest.raises(ValueError, match="gqa3"):
        npz.SearchSpace.from_names(cfg, ["gqa8", "gqa3"], ["ffn256"])
    small = sp.restrict(attention=["noop"], ffn=["ffn128"])
    assert [a.name for a in small.attention] == ["gqa8", "noop"]
    assert [f.name for f in small.ffn] == ["ffn256", "ffn128"]


def test_unit_counts_match_paper_formula():
    """A5: decoupled (m-2 + n-2) L vs coupled m n L - 2L units."""
    cfg = npz.DecoderConfig()
    sp = npz.SearchSpace.paper_default(cfg)
    assert npz.count_units(sp, "decoupled") == (6 - 2 + 9 - 2) * 6 == 66
    assert npz.count_units(sp, "coupled") == 6 * 9 * 6 - 2 * 6 == 312
    assert npz.count_units(sp, "init_only") == 0
    with pytest.raises(ValueError, match="mode"):
        sp.trained_units("hybrid")
