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


# --- the decode state lives in the transformers Cache: every generate mode equals uncached ---

MAKERS = [tiny_llama, tiny_qwen2]


def _cca(make, seed=2):
    return swap_llama_attention(make(seed), group_size=2, local_window=4)


def _cache_kw(model, cache):
    """The keyword the installed transformers takes a cache under (renamed in 5.x)."""
    import inspect

    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return {name: cache}


def _ids(b=2, n=11, seed=3):
    return torch.randint(0, 97, (b, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("beams", [1, 3, 5])
def test_beam_search_equals_uncached(make, beams):
    # before the state moved into the cache, reorder_cache never saw the core tokens and
    # beams 3/5 gave other tokens than the uncached search
    model, ids = _cca(make), _ids()
    kw = dict(max_new_tokens=30, do_sample=False, num_beams=beams,
              num_return_sequences=min(beams, 2), attention_mask=torch.ones_like(ids))  # fmt: skip
    with torch.no_grad():
        cached = model.generate(ids, **kw)
        plain = model.generate(ids, **kw, use_cache=False)
    assert cached.shape[1] == 41
    assert torch.equal(cached, plain)


@pytest.mark.parametrize("make", MAKERS)
def test_sampling_with_return_sequences_equals_uncached(make):
    model, ids = _cca(make), _ids()
    kw = dict(max_new_tokens=25, do_sample=True, num_return_sequences=3,
              attention_mask=torch.ones_like(ids))  # fmt: skip
    with torch.no_grad():
        for seed in (0, 1):
            torch.manual_seed(seed)
            cached = model.generate(ids, **kw)
            torch.manual_seed(seed)
            plain = model.generate(ids, **kw, use_cache=False)
            assert torch.equal(cached, plain)


@pytest.mark.parametrize("make", MAKERS)
def test_two_requests_off_one_deep_copied_prefix_cache(make):
    # transformers' documented prompt-cache reuse: fill a cache on the prefix, deep-copy it
    # for each request; the second request used to see the first one's core tokens
    import copy

    model = _cca(make)
    prefix = _ids(1, 9, seed=4)
    prompt_cache = transformers.DynamicCache(config=model.config)
    with torch.no_grad():
        model(prefix, **_cache_kw(model, prompt_cache))
        for tail_seed in (5, 6):
            full = torch.cat([prefix, _ids(1, 6, seed=tail_seed)], dim=1)
            kw = dict(max_new_tokens=20, do_sample=False, attention_mask=torch.ones_like(full))
            reused = model.generate(full, **_cache_kw(model, copy.deepcopy(prompt_cache)), **kw)
            plain = model.generate(full, use_cache=False, **kw)
            assert torch.equal(reused, plain)
    assert prompt_cache.get_seq_length() == 9  # the prefix cache itself is untouched


@pytest.mark.parametrize("make", MAKERS)
def test_static_cache_on_fresh_and_used_models(make):
    # a fresh model raised a raw AttributeError; one that had generated before gave wrong tokens
    ids = _ids(1, 13)
    kw = dict(max_new_tokens=20, do_sample=False, attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        fresh = _cca(make)
        plain = fresh.generate(ids, use_cache=False, **kw)
        assert torch.equal(fresh.generate(ids, cache_implementation="static", **kw), plain)
        used = _cca(make)
        used.generate(_ids(1, 30, seed=8), max_new_tokens=5, do_sample=False)
        for _ in range(2):  # the second static call reuses (and resets) the static cache
            assert torch.equal(used.generate(ids, cache_implementation="static", **kw), plain)


def test_crop_rolls_back_core_tokens():
    # assisted decoding crops the cache; cores of groups cut by the crop must go too
    model = _cca(tiny_llama)
    ids = _ids(1, 17, seed=9)
    with torch.no_grad():
        ref = model(ids).logits
        cache = transformers.DynamicCache(config=model.config)
        model(ids[:, :12], **_cache_kw(model, cache))
        cache.crop(-3)  # back to 9 tokens: the group (8, 9) is no longer complete
        assert cache.layers[0].cca_cores[0].shape[-2] == 4
        out = model(ids[:, 9:], **_cache_kw(model, cache)).logits
    torch.testing.assert_close(out[0], ref[0, 9:], atol=1e-5, rtol=1e-5)


def test_cache_pickles_with_its_core_tokens():
    import pickle

    model = _cca(tiny_llama)
    ids = _ids(1, 15, seed=10)
    with torch.no_grad():
        ref = model(ids).logits
        cache = transformers.DynamicCache(config=model.config)
        model(ids[:, :10], **_cache_kw(model, cache))
        again = pickle.loads(pickle.dumps(cache))
        out = model(ids[:, 10:], **_cache_kw(model, again)).logits
    assert type(again.layers[0]).__name__ == "CCADynamicLayer"
    torch.testing.assert_close(out[0], ref[0, 10:], atol=1e-5, rtol=1e-5)


def test_caches_that_cannot_carry_cca_state_raise_by_name():
    from sparse_attn.hf import CCACacheError

    ids = _ids(1, 12, seed=11)
    dense = tiny_llama(2)
    cache = transformers.DynamicCache(config=dense.config)
    with torch.no_grad():
        dense(ids[:, :8], **_cache_kw(dense, cache))  # filled by dense attention: no core tokens
        model = _cca(tiny_llama)
        with pytest.raises(CCACacheError, match="no CCA core tokens"):
            model(ids[:, 8:], **_cache_kw(model, cache))
        cache = transformers.DynamicCache(config=model.config)
        model(ids[:, :8], **_cache_kw(model, cache))
        cache.layers[0].cca_cores = tuple(t[:, :, :1] for t in cache.layers[0].cca_cores)
        with pytest.raises(CCACacheError, match="groups"):  # state edited outside the API
            model(ids[:, 8:], **_cache_kw(model, cache))
    torch.manual_seed(0)
    cfg = transformers.MistralConfig(
        vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, sliding_window=6,
    )  # fmt: skip
    mistral = transformers.MistralForCausalLM(cfg).eval()
    with pytest.raises(ValueError, match="sliding"):
        swap_llama_attention(mistral, group_size=2, local_window=4)
    cfg.sliding_window = None  # the documented way out: CCA replaces the window
    swap_llama_attention(mistral, group_size=2, local_window=4)
    cache = transformers.DynamicCache(config=model.config)
    cache.layers[0] = transformers.cache_utils.DynamicSlidingWindowLayer(sliding_window=6)
    with torch.no_grad(), pytest.raises(CCACacheError, match="sliding"):
        mistral(ids, **_cache_kw(mistral, cache))
    with torch.no_grad():
        out = mistral.generate(ids, max_new_tokens=4, do_sample=False)
        assert torch.equal(out, mistral.generate(ids, max_new_tokens=4, do_sample=False,
                                                 use_cache=False))  # fmt: skip
