"""Round trips with transformers' ViTForImageClassification and timm's VisionTransformer."""

import pytest
import torch

from learngene import (
    TAL,
    TinyViT,
    ViTSpace,
    ViTSpec,
    from_hf,
    from_timm,
    make_proxy_task,
    spec_from_hf,
    spec_from_timm,
    to_hf,
    to_timm,
)

transformers = pytest.importorskip("transformers")

SPECS = [
    ViTSpec(2, 32, 4, mlp_ratio=4, patch=8, img=32, in_chans=3, ln_eps=1e-12),
    ViTSpec(1, 24, 2, mlp_ratio=2, patch=4, img=16, in_chans=1, qkv_bias=False),
]


def _random_net(spec, n_classes=5, seed=0):
    torch.manual_seed(seed)
    net = TinyViT(spec, n_classes)
    with torch.no_grad():  # non-trivial LayerNorms, biases and tokens
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return net.eval()


def _x(spec, n=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, spec.in_chans, spec.img, spec.img, generator=g)


@pytest.mark.parametrize("spec", SPECS, ids=["rgb32", "nobias"])
def test_hf_round_trip_through_save_pretrained(spec, tmp_path):
    net = _random_net(spec)
    model = to_hf(net, id2label={i: f"c{i}" for i in range(5)})
    x = _x(spec)
    with torch.no_grad():
        ref = net(x)
        assert torch.allclose(model(pixel_values=x).logits, ref, atol=1e-5)
    assert spec_from_hf(model.config) == spec
    model.save_pretrained(tmp_path)
    again = transformers.ViTForImageClassification.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        assert torch.allclose(again(pixel_values=x).logits, ref, atol=1e-5)
    back = from_hf(again)
    assert back.spec == spec and back.n_classes == 5
    with torch.no_grad():
        assert torch.allclose(back(x), ref, atol=1e-5)


def test_from_hf_of_a_library_model():
    cfg = transformers.ViTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        image_size=24,
        patch_size=6,
        num_channels=3,
        num_labels=7,
    )
    torch.manual_seed(0)
    model = transformers.ViTForImageClassification(cfg).eval()
    net = from_hf(model)
    assert net.spec == ViTSpec(2, 32, 4, mlp_ratio=3, patch=6, img=24, in_chans=3, ln_eps=1e-12)
    x = _x(net.spec)
    with torch.no_grad():
        d = (net(x) - model(pixel_values=x).logits).abs().max()
    assert d < 1e-5


def test_hf_rejects_what_a_tinyvit_cannot_express():
    base = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, image_size=8,
                patch_size=4, num_channels=1, intermediate_size=32)  # fmt: skip
    with pytest.raises(ValueError, match="hidden_act"):
        spec_from_hf(transformers.ViTConfig(**base, **{"hidden_act": "gelu_new"}))
    with pytest.raises(ValueError, match="intermediate_size"):
        spec_from_hf(transformers.ViTConfig(**{**base, "intermediate_size": 20}))
    with pytest.raises(ValueError, match="square"):
        spec_from_hf(transformers.ViTConfig(**{**base, "image_size": (8, 12)}))
    with pytest.raises(ValueError, match="model_type"):
        spec_from_hf(transformers.BertConfig())
    with pytest.raises(TypeError, match="ViTForImageClassification"):
        from_hf(transformers.ViTModel(transformers.ViTConfig(**base)))
    masked = transformers.ViTForImageClassification(transformers.ViTConfig(**base))
    masked.vit.embeddings.mask_token = torch.nn.Parameter(torch.zeros(1, 1, 16))
    with pytest.raises(ValueError, match="mask_token"):
        from_hf(masked)
    net = TinyViT(ViTSpec(1, 16, 2, img=8), 3, distill_dim=4)
    with pytest.raises(ValueError, match="distill_head"):
        to_hf(net)
    with pytest.raises(ValueError, match="num_labels"):
        to_hf(TinyViT(ViTSpec(1, 16, 2, img=8), 3), num_labels=4)
    with pytest.raises(TypeError, match="TinyViT"):
        to_hf(torch.nn.Linear(2, 2))


def test_a_tal_prediction_ships_as_an_hf_model(tmp_path):
    """Describe a user's HF config, predict its parameters, load them into the HF model."""
    proxy = make_proxy_task(0, n_per_class=2, n_test_per_class=1)
    train, _ = ViTSpace(depth=(1, 1), width=(16,), heads=(2,)).split(0, seed=0)
    kw = dict(hid=16, layers=1, heads=2, lora_r=4, max_shape=64, task_dim=8, verbose=0)
    tal = TAL(**kw).fit_stage1(proxy, None, train, steps=1, meta_batch=1, kd_alpha=0.0)
    cfg = transformers.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, image_size=16, patch_size=4,
                                 num_channels=3, num_labels=4)  # fmt: skip
    net = tal.predict(spec_from_hf(cfg), None, n_classes=4)
    model = to_hf(net)
    x = _x(net.spec)
    with torch.no_grad():
        ref = net(x)
        assert (model(pixel_values=x).logits - ref).abs().max() < 1e-4
    model.save_pretrained(tmp_path)
    again = transformers.ViTForImageClassification.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        assert (again(pixel_values=x).logits - ref).abs().max() < 1e-4


def test_timm_round_trip():
    timm = pytest.importorskip("timm")
    for spec in SPECS:
        net = _random_net(spec)
        model = to_timm(net)
        x = _x(spec)
        with torch.no_grad():
            ref = net(x)
            assert torch.allclose(model(x), ref, atol=1e-5)
        assert spec_from_timm(model) == spec
        back = from_timm(model)
        with torch.no_grad():
            assert torch.allclose(back(x), ref, atol=1e-5)
    lib = timm.models.vision_transformer.VisionTransformer(
        img_size=16, patch_size=4, in_chans=3, num_classes=6, embed_dim=24, depth=2, num_heads=3
    ).eval()
    net = from_timm(lib)
    assert net.spec == ViTSpec(2, 24, 3, mlp_ratio=4, patch=4, img=16, in_chans=3, ln_eps=1e-6)
    x = _x(net.spec)
    with torch.no_grad():
        assert (net(x) - lib(x)).abs().max() < 1e-5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(global_pool="avg"), "global_pool"),
        (dict(init_values=1e-5), "layer scale"),
        (dict(reg_tokens=2), "register"),
        (dict(no_embed_class=True), "no_embed_class"),
        (dict(qk_norm=True), "q/k norm"),
    ],
)
def test_timm_rejects_variants(kwargs, match):
    timm = pytest.importorskip("timm")
    lib = timm.models.vision_transformer.VisionTransformer(
        img_size=8, patch_size=4, in_chans=1, num_classes=2, embed_dim=16, depth=1, num_heads=2,
        **kwargs,
    )  # fmt: skip
    with pytest.raises(ValueError, match=match):
        from_timm(lib)


def test_timm_rejects_tanh_gelu_and_a_missing_head():
    timm = pytest.importorskip("timm")
    from timm.layers import get_act_layer

    lib = timm.models.vision_transformer.VisionTransformer(
        img_size=8, patch_size=4, in_chans=1, num_classes=2, embed_dim=16, depth=1, num_heads=2,
        act_layer=get_act_layer("gelu_tanh"),
    )  # fmt: skip
    with pytest.raises(ValueError, match="GELU"):
        from_timm(lib)
    headless = timm.models.vision_transformer.VisionTransformer(
        img_size=8, patch_size=4, in_chans=1, num_classes=0, embed_dim=16, depth=1, num_heads=2
    )
    with pytest.raises(ValueError, match="head"):
        from_timm(headless)


def test_self_check_catches_an_unmapped_difference():
    """A model the map does not describe raises instead of converting to a different one."""
    timm = pytest.importorskip("timm")
    lib = timm.models.vision_transformer.VisionTransformer(
        img_size=8, patch_size=4, in_chans=1, num_classes=2, embed_dim=16, depth=1, num_heads=2
    ).eval()
    net = from_timm(lib)
    lib.blocks[0].mlp.act = torch.nn.GELU()  # still exact GELU: converts
    from_timm(lib)
    with torch.no_grad():
        lib.blocks[0].mlp.fc1.weight.mul_(3.0)
    from_timm(lib)  # weights are read, not assumed

    class Double(torch.nn.Module):
        def forward(self, x):
            return 2 * x

    lib.blocks[0].drop_path1 = Double()  # a change of the computation the map cannot see
    with pytest.raises(ValueError, match="differ"):
        from_timm(lib)
    assert isinstance(net, TinyViT)


def test_spec_validates_new_fields():
    with pytest.raises(TypeError, match="qkv_bias"):
        ViTSpec(1, 16, 2, qkv_bias=1)
    with pytest.raises(ValueError, match="ln_eps"):
        ViTSpec(1, 16, 2, ln_eps=0.0)
    net = TinyViT(ViTSpec(1, 16, 2, qkv_bias=False), 3)
    assert net.blocks[0].qkv.bias is None


def test_prepare_for_finetuning():
    from learngene import prepare_for_finetuning
    from learngene.finetune_init import HIDDEN_MATRICES

    net = _random_net(SPECS[0])
    before = {k: v.clone() for k, v in net.state_dict().items()}
    out = prepare_for_finetuning(net, seed=3)
    for k, v in net.state_dict().items():  # the input is untouched
        assert torch.equal(v, before[k])
    for name, p in out.named_parameters():
        if name.endswith(HIDDEN_MATRICES):
            sv = torch.linalg.svdvals(p.double())
            assert torch.allclose(sv, sv[0].expand_as(sv), rtol=1e-6)  # flat spectrum
            rms = before[name].double().pow(2).mean().sqrt()
            assert torch.isclose(p.double().pow(2).mean().sqrt(), rms, rtol=1e-5)  # scale kept
        elif name.startswith(("blocks", "patch", "norm")):
            assert torch.equal(p, before[name])  # LayerNorms and biases kept
    assert torch.equal(out.head.bias, torch.zeros(5))
    assert abs(float(out.head.weight.std()) - 0.02) < 0.01
    again = prepare_for_finetuning(net, seed=3)
    for a, b in zip(out.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)  # deterministic
    keep = prepare_for_finetuning(net, spectrum="keep", reset_head=False, reset_tokens=False)
    for k, v in keep.state_dict().items():
        assert torch.equal(v, before[k])
    with pytest.raises(ValueError, match="spectrum"):
        prepare_for_finetuning(net, spectrum="flat")
    with pytest.raises(TypeError, match="reset_head"):
        prepare_for_finetuning(net, reset_head=1)
    with pytest.raises(TypeError, match="TinyViT"):
        prepare_for_finetuning(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="seed"):
        prepare_for_finetuning(net, seed=-1)


def test_from_hf_directory_refuses_a_checkpoint_that_does_not_load_as_itself(tmp_path):
    cfg = transformers.ViTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32, image_size=8, patch_size=4)  # fmt: skip
    transformers.ViTModel(cfg).save_pretrained(tmp_path / "backbone")  # pooler, no classifier
    with pytest.raises(ValueError, match=r"classifier\.weight.*pooler|pooler.*classifier"):
        from_hf(tmp_path / "backbone")
    torch.manual_seed(0)
    model = transformers.ViTForImageClassification(cfg).eval()
    model.save_pretrained(tmp_path / "clf")
    net = from_hf(str(tmp_path / "clf"))
    x = _x(net.spec)
    with torch.no_grad():
        assert (net(x) - model(pixel_values=x).logits).abs().max() < 1e-5


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_checkpoints_load(dtype, tmp_path):
    # fp16 / bf16 checkpoints were refused as "the architectures differ" (rounding > atol)
    net = _random_net(SPECS[0])
    half = to_hf(net).to(dtype)
    half.save_pretrained(tmp_path)
    back = from_hf(tmp_path)
    want = from_hf(to_hf(net).to(dtype).float())
    for a, b in zip(back.state_dict().values(), want.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)
    timm = pytest.importorskip("timm")  # noqa: F841
    t16 = to_timm(net).to(dtype)
    assert from_timm(t16).spec == net.spec


def test_a_missing_shard_is_named(tmp_path):
    net = _random_net(SPECS[0])
    to_hf(net).save_pretrained(tmp_path, max_shard_size="20KB")
    shards = sorted(tmp_path.glob("model-*.safetensors"))
    assert len(shards) >= 2
    shards[1].unlink()
    with pytest.raises(FileNotFoundError, match=rf"1 are missing: \['{shards[1].name}'\]"):
        from_hf(tmp_path)
