"""Hugging Face Llama round trip: from_hf parents, to_hf children, the pipeline on a real LlamaForCausalLM."""

import pytest
import torch

import nas_puzzle as npz

transformers = pytest.importorskip("transformers")


def _llama(tie=False, kv=2):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=kv, max_position_embeddings=32, tie_word_embeddings=tie, attention_bias=False,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(cfg).eval()


@pytest.mark.parametrize("tie", [False, True])
def test_from_hf_matches_llama(tie):
    hf = _llama(tie=tie)
    parent = npz.from_hf(hf)
    assert parent.cfg.n_kv_heads == 2 and parent.cfg.tie_embeddings == tie
    toks = torch.randint(0, 256, (2, 20))
    with torch.no_grad():
        ref = hf(toks).logits
        got = parent(toks)[0]
    assert (ref - got).abs().max() < 1e-4


def test_to_hf_exports_heterogeneous_children():
    parent = npz.from_hf(_llama())
    blocks = [
        npz.BlockConfig.from_name("gqa1/ffn32"),
        npz.BlockConfig.from_name("linear/linear"),
        npz.BlockConfig.from_name("noop/ffn64"),
    ]
    torch.manual_seed(1)
    child = npz.HeteroDecoder(parent.cfg, blocks).eval()
    hf = npz.to_hf(child)
    toks = torch.randint(0, 256, (2, 20))
    with torch.no_grad():
        assert (hf(toks).logits - child(toks)[0]).abs().max() < 1e-4
    # generation with the KV cache runs on the exported model
    out = hf.generate(toks[:1, :5], max_new_tokens=4, do_sample=False)
    assert out.shape == (1, 9)
    back = npz.to_hf(parent)
    with torch.no_grad():
        assert (back(toks).logits - parent(toks)[0]).abs().max() < 1e-4


@pytest.mark.filterwarnings("ignore:BLD unit")
def test_pipeline_on_a_llama_parent():
    parent = npz.from_hf(_llama())
    tr, va, _ = npz.split_tokens(npz.toy_corpus(6_000, seed=1))
    space = npz.SearchSpace.paper_default(parent.cfg, ffn_ratios=(1.0, 0.5), round_to=8)
    lib = npz.build_library(parent, space, tr, steps=3, batch_size=2, seq_len=16)
    sc = npz.replace_one_block(parent, lib, va, metrics=("kl",), seq_len=16, max_windows=2)
    assert sc["kl"].shape == (3, len(space.variants()))
    j = space.index(parent.cfg.parent_block)
    assert abs(sc["kl"][:, j]).max() < 1e-5
    with pytest.raises(TypeError, match="Llama"):
        npz.from_hf(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="HeteroDecoder"):
        npz.to_hf(torch.nn.Linear(2, 2))
