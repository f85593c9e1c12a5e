import pytest
import torch

transformers = pytest.importorskip("transformers")

from sparse_attn.hf import swap_llama_attention  # noqa: E402


def tiny_llama(seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        attn_implementation="eager",
    )
    return transformers.LlamaForCausalLM(cfg).eval()


def test_cca_equals_dense_when_the_window_covers_the_sequence():
    dense = tiny_llama()
    ids = torch.randint(0, 97, (2, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = dense(ids).logits
        swap_llama_attention(dense, group_size=4, local_window=64)
        out = dense(ids).logits
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("pooling", ["per_query_head", "shared"])
def test_generate_with_cache_equals_full_forward(pooling):
    model = swap_llama_attention(tiny_llama(2), group_size=4, local_window=8, gqa_pooling=pooling)
    ids = torch.randint(0, 97, (1, 13), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        gen = model.generate(
            ids,
            max_new_tokens=15,
            do_sample=False,
            return_dict_in_generate=True,
            output_logits=True,
        )
        seq = gen.sequences
        full = model(seq).logits  # one CCA forward over the whole generated sequence
    # the cached decode's logits at each step equal the full forward's rows
    steps = torch.stack(gen.logits, dim=1)[0]
    torch.testing.assert_close(steps, full[0, 12:-1], atol=1e-4, rtol=1e-4)
    assert seq.shape[1] == 28


def test_swap_rejects_bad_arguments():
    model = tiny_llama()
    with pytest.raises(ValueError, match="gqa_pooling"):
        swap_llama_attention(model, gqa_pooling="nope")
    with pytest.raises(ValueError, match="group_size"):
        swap_llama_attention(model, group_size=0)
    with pytest.raises(TypeError, match="model"):
        swap_llama_attention(torch.nn.Linear(2, 2))


def tiny_qwen2(seed=0):
    torch.manual_seed(seed)
    cfg = transformers.Qwen2Config(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    return transformers.Qwen2ForCausalLM(cfg).eval()


@pytest.mark.parametrize("make", [tiny_llama, tiny_qwen2])
def test_save_pretrained_reloads_the_same_cca_model(make, tmp_path):
    from sparse_attn.hf import from_pretrained

    model = swap_llama_attention(make(4), group_size=4, local_window=8)
    ids = torch.randint(0, 97, (2, 37), generator=torch.Generator().manual_seed(5))
    model.save_pretrained(tmp_path, max_shard_size="20KB")  # sharded safetensors
    assert len(list(tmp_path.glob("*.safetensors"))) > 1
    with torch.no_grad():
        ref = model(ids).logits
        a = from_pretrained(tmp_path).eval()
        b = type(model).from_pretrained(tmp_path, attn_implementation="cca").eval()
        dense = type(model).from_pretrained(tmp_path).eval()  # what a plain reload gives
        assert a.config.cca_config == {"group_size": 4, "local_window": 8,
                                       "gqa_pooling": "per_query_head"}  # fmt: skip
        torch.testing.assert_close(a(ids).logits, ref)
        torch.testing.assert_close(b(ids).logits, ref)
        assert not torch.allclose(dense(ids).logits, ref, atol=1e-4)
        gen_cached = a.generate(ids[:1], max_new_tokens=12, do_sample=False)
        gen_plain = a.generate(ids[:1], max_new_tokens=12, do_sample=False, use_cache=False)
    assert torch.equal(gen_cached, gen_plain)
    with pytest.raises(ValueError, match="cca_config"):
        from_pretrained_dense = tmp_path / "dense"
        dense.config.cca_config = None
        dense.save_pretrained(from_pretrained_dense)
        from_pretrained(from_pretrained_dense)


@pytest.mark.parametrize("make", [tiny_llama, tiny_qwen2])
def test_padding_left_raises_right_is_exact(make):
    model = swap_llama_attention(make(6), group_size=4, local_window=8)
    g = torch.Generator().manual_seed(7)
    a, b = torch.randint(0, 97, (1, 30), generator=g), torch.randint(0, 97, (1, 22), generator=g)
    with torch.no_grad():
        ref_a, ref_b = model(a).logits, model(b).logits
        right = torch.cat([b, torch.zeros(1, 8, dtype=torch.long)], dim=1)
        mask = torch.ones(2, 30, dtype=torch.long)
        mask[1, 22:] = 0
        out = model(torch.cat([a, right]), attention_mask=mask).logits
        torch.testing.assert_close(out[0], ref_a[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out[1, :22], ref_b[0], atol=1e-5, rtol=1e-5)
        left = torch.cat([torch.zeros(1, 8, dtype=torch.long), b], dim=1)
        mask = torch.ones(2, 30, dtype=torch.long)
        mask[1, :8] = 0
        with pytest.raises(ValueError, match="attention_mask"):
            model.generate(torch.cat([a, left]), attention_mask=mask, max_new_tokens=2)
