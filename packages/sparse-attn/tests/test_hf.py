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
