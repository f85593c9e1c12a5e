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


def _child():
    parent = npz.from_hf(_llama())
    blocks = [npz.BlockConfig.from_name(n) for n in ("noop/ffn32", "gqa1/linear", "linear/ffn64")]
    torch.manual_seed(1)
    return npz.HeteroDecoder(parent.cfg, blocks).eval()


def test_saved_child_reloads_exactly(tmp_path):
    child = _child()
    hf = npz.to_hf(child)
    hf.save_pretrained(tmp_path / "child")
    assert (tmp_path / "child" / "model.safetensors").is_file()
    assert (tmp_path / "child" / "hf_modeling.py").is_file()  # the remote-code path
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "child").eval()
    assert type(again).__name__ == "PuzzleLlamaForCausalLM"
    assert [b["attention"]["kind"] for b in again.config.block_configs] == ["noop", "gqa", "linear"]
    toks = torch.randint(0, 256, (2, 20))
    with torch.no_grad():
        ref = child(toks)[0]
        assert (again(toks).logits - ref).abs().max() < 1e-5
        assert (hf(toks).logits - ref).abs().max() < 1e-4
    kw = {"max_new_tokens": 6, "do_sample": False}
    assert torch.equal(again.generate(toks[:1, :5], **kw), hf.generate(toks[:1, :5], **kw))


def test_saved_child_reloads_from_the_directory_alone(tmp_path):
    """A fresh interpreter that never imports nas_puzzle: trust_remote_code uses the saved file."""
    import subprocess
    import sys

    child = _child()
    npz.to_hf(child).save_pretrained(tmp_path / "child")
    toks = torch.randint(0, 256, (1, 12))
    with torch.no_grad():
        torch.save({"toks": toks, "ref": child(toks)[0]}, tmp_path / "ref.pt")
    code = (
        "import sys, torch, transformers\n"
        f"d = {str(tmp_path)!r}\n"
        "m = transformers.AutoModelForCausalLM.from_pretrained(d + '/child', trust_remote_code=True).eval()\n"
        "assert 'nas_puzzle' not in sys.modules\n"
        "r = torch.load(d + '/ref.pt')\n"
        "with torch.no_grad():\n"
        "    err = (m(r['toks']).logits - r['ref']).abs().max().item()\n"
        "assert err < 1e-5, err\n"
    )
    env_home = {"HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1"}
    import os

    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **env_home}, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]


def test_from_hf_never_drops_parameters():
    torch.manual_seed(0)
    small = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)  # fmt: skip
    qwen = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**small)).eval()
    with pytest.raises(ValueError, match=r"q_proj\.bias"):
        npz.from_hf(qwen)
    gemma = transformers.GemmaForCausalLM(transformers.GemmaConfig(**small, head_dim=8)).eval()
    with pytest.raises(ValueError):
        npz.from_hf(gemma)
    mistral = transformers.MistralForCausalLM(
        transformers.MistralConfig(**small, sliding_window=None)
    ).eval()
    parent = npz.from_hf(mistral)
    toks = torch.randint(0, 64, (2, 16))
    with torch.no_grad():
        assert (mistral(toks).logits - parent(toks)[0]).abs().max() < 1e-4
    windowed = transformers.MistralForCausalLM(
        transformers.MistralConfig(**small, sliding_window=8)
    )
    with pytest.raises(npz.UnsupportedModelError, match="sliding_window=8"):  # was a warning
        npz.from_hf(windowed)


@pytest.mark.parametrize(
    ("family", "extra", "match"),
    [
        ("Granite", {"logits_scaling": 4.0, "residual_multiplier": 0.5}, "logits_scaling=4.0"),
        ("Olmo2", {}, "'olmo2'"),
        ("Qwen3", {"head_dim": 8}, "QK-norm"),
        ("Qwen2", {}, "biases"),
    ],
)
def test_from_hf_refuses_families_it_does_not_reproduce(family, extra, match):
    # Granite's parent once differed from the HF logits by 0.60 with no error; OLMo2 raised a
    # raw AttributeError
    torch.manual_seed(0)
    small = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)  # fmt: skip
    cfg = getattr(transformers, f"{family}Config")(**small, **extra)
    model = getattr(transformers, f"{family}ForCausalLM")(cfg).eval()
    with pytest.raises(npz.UnsupportedModelError, match=match):
        npz.from_hf(model)
    assert npz.SUPPORTED_FAMILIES == ("llama", "mistral")
