"""NVIDIA's DeciLM layout (Nemotron-51B / Super-49B ``block_configs``): export and import."""

import json

import pytest
import torch

import nas_puzzle as npz
from nas_puzzle.config import AttentionConfig, BlockConfig, DecoderConfig, FFNConfig
from nas_puzzle.decilm import DecilmLayoutError, _ffn_width

pytest.importorskip("safetensors")

CFG = DecoderConfig(vocab_size=97, d_model=64, n_layers=4, n_heads=4, n_kv_heads=4,
                    ffn_intermediate=512, max_seq_len=64)  # fmt: skip
BLOCKS = [
    BlockConfig(AttentionConfig("gqa", 4), FFNConfig("swiglu", 512)),
    BlockConfig(AttentionConfig("gqa", 2), FFNConfig("swiglu", 256)),
    BlockConfig(AttentionConfig("linear"), FFNConfig("noop")),
    BlockConfig(AttentionConfig("noop"), FFNConfig("linear")),
]


def _child(blocks=BLOCKS, cfg=CFG, seed=0):
    torch.manual_seed(seed)
    return npz.HeteroDecoder(cfg, blocks).eval()


def test_ffn_mult_rule_is_nvidias():
    # Nemotron-51B's hidden size 8192: ffn_mult 5.25 is Llama-70B's 28672-wide SwiGLU
    assert _ffn_width(5.25, 8192) == 28672
    assert _ffn_width(1.0, 8192) == 5632  # int(5461.33) rounded up to a multiple of 256


def test_round_trip_keeps_the_logits_and_writes_nvidias_schema(tmp_path):
    child = _child()
    npz.to_decilm(child, tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["model_type"] == "nemotron-nas" and cfg["architectures"] == ["DeciLMForCausalLM"]
    b = cfg["block_configs"]
    assert b[0]["attention"]["n_heads_in_group"] == 1 and b[1]["attention"]["n_heads_in_group"] == 2
    assert b[2]["attention"]["replace_with_linear"] and b[2]["ffn"]["no_op"]
    assert b[3]["attention"]["no_op"] and b[3]["ffn"]["replace_with_linear"]
    assert (
        _ffn_width(b[0]["ffn"]["ffn_mult"], 64) == 512
        and _ffn_width(b[1]["ffn"]["ffn_mult"], 64) == 256
    )
    assert set(b[0]["attention"]) == {"no_op", "replace_with_linear", "n_heads_in_group", "sparsify",
                                      "window_length", "num_sink_tokens", "unshifted_sink",
                                      "use_prefill_window_in_sink_attention"}  # fmt: skip
    from safetensors import safe_open

    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        keys = set(f.keys())
    # no-op subblocks have neither weights nor norms; linear replacements sit at .linear
    assert "model.layers.3.input_layernorm.weight" not in keys
    assert "model.layers.2.post_attention_layernorm.weight" not in keys
    assert {"model.layers.2.self_attn.linear.weight", "model.layers.3.mlp.linear.weight"} <= keys
    back = npz.from_decilm(tmp_path)
    assert back.block_configs == BLOCKS
    ids = torch.randint(0, 97, (2, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(back(ids)[0], child(ids)[0])


def test_a_released_style_config_is_read(tmp_path):
    # block_configs written the way NVIDIA's config.json writes them (keys it always has)
    child = _child()
    npz.to_decilm(child, tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["block_configs"][1]["ffn"]["ffn_mult"] = 6.0  # int(2 * 6 * 64 / 3) = 256
    cfg["transformers_version"] = "4.44.2"
    cfg["auto_map"] = {"AutoConfig": "configuration_decilm.DeciLMConfig"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert npz.from_decilm(tmp_path).block_configs[1].ffn.intermediate == 256


def test_what_the_layout_cannot_hold_raises_by_name(tmp_path):
    narrow = [BlockConfig(AttentionConfig("gqa", 4), FFNConfig("swiglu", 96))] * 4
    with pytest.raises(DecilmLayoutError, match="multiples of 256"):
        npz.to_decilm(_child(narrow), tmp_path / "a")
    wide_heads = DecoderConfig(vocab_size=97, d_model=64, n_layers=1, n_heads=4, n_kv_heads=4,
                               head_dim=32, ffn_intermediate=256)  # fmt: skip
    with pytest.raises(DecilmLayoutError, match="head_dim"):
        npz.to_decilm(_child([wide_heads.parent_block], wide_heads), tmp_path / "b")
    npz.to_decilm(_child(), tmp_path / "c")
    cfg = json.loads((tmp_path / "c" / "config.json").read_text())
    cfg["block_configs"][0]["attention"]["window_length"] = 4096
    (tmp_path / "c" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(DecilmLayoutError, match="window_length"):
        npz.from_decilm(tmp_path / "c")
    cfg["block_configs"][0]["attention"]["window_length"] = None
    cfg["model_type"] = "llama"
    (tmp_path / "c" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(DecilmLayoutError, match="nemotron-nas"):
        npz.from_decilm(tmp_path / "c")
