"""Prompt learning through the CLIP text encoder (``prompt="coop"``) on tiny random CLIPs."""

import copy

import numpy as np
import pytest
import torch

from vlm_pseudolabel import CAP, FPL, PromptModel, TextContextPrompts, make_synthetic_vlm_task
from vlm_pseudolabel.backbones import HFCLIPBackbone, OpenCLIPBackbone, encode_task

NAMES = ["cat", "dog", "car"]


def _task(bb, **kw):
    imgs = torch.rand(30, 3, 32, 32, generator=torch.Generator().manual_seed(3))
    return encode_task(bb, imgs[:20], imgs[20:], np.arange(10) % 3, NAMES, **kw)


@pytest.fixture(params=["hf", "open_clip"])
def backbone(request):
    if request.param == "hf":
        model, processor = request.getfixturevalue("tiny_hf_clip")
        return HFCLIPBackbone(model, processor)
    _, model, tokenizer, preprocess = request.getfixturevalue("tiny_open_clip")
    return OpenCLIPBackbone(model, tokenizer, preprocess)


def test_untrained_context_equals_the_template(backbone):
    prompts = TextContextPrompts(backbone, [f"{n}." for n in NAMES], "a photo of a")
    assert prompts.n_ctx == 4 and [p.shape for p in prompts.parameters()] == [prompts.ctx.shape]
    with torch.no_grad():
        got = prompts()
    want = backbone.encode_texts([f"a photo of a {n}." for n in NAMES])
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    # and the PromptModel's logits equal zero-shot CLIP's
    model = PromptModel(want, "coop", logit_scale=backbone.logit_scale, text_prompts=prompts)
    x = _task(backbone).X_test
    with torch.no_grad():
        np.testing.assert_allclose(
            model(torch.as_tensor(x)).numpy(), backbone.logit_scale * x @ want.T, atol=1e-4
        )


def test_gradients_reach_only_the_context(backbone):
    prompts = TextContextPrompts(backbone, [f"{n}." for n in NAMES])
    before = {k: v.clone() for k, v in backbone.model.state_dict().items()}
    flags = [p.requires_grad for p in backbone.model.parameters()]
    model = PromptModel(np.eye(3, 8), "coop", logit_scale=10.0, text_prompts=prompts)
    assert [n for n, _ in model.named_parameters()] == ["text_prompts.ctx"]
    x = torch.as_tensor(_task(backbone).X_test)
    torch.nn.functional.cross_entropy(model(x), torch.arange(10) % 3).backward()
    assert prompts.ctx.grad is not None and prompts.ctx.grad.abs().sum() > 0
    assert all(p.grad is None for p in backbone.model.parameters())
    assert [p.requires_grad for p in backbone.model.parameters()] == flags  # restored
    torch.optim.SGD(model.parameters(), lr=1.0).step()
    for k, v in backbone.model.state_dict().items():
        assert torch.equal(v, before[k]), k


@pytest.mark.filterwarnings("ignore:no descriptions for mismatched")
def test_cap_and_a_baseline_learn_prompts_through_the_model(backbone):
    task = _task(backbone, templates=("a photo of a {}.",), descriptions_text={0: ["small pet"]})
    assert task.backbone is backbone and task.description_texts == {0: ["small pet"]}
    kw = dict(epochs=2, iters_per_epoch=3, n_main=2, prompt="coop")
    cap = CAP(kmeans_n_init=1, **kw).fit(task)
    ctx = cap.model_.text_prompts.ctx
    init = TextContextPrompts(backbone, [f"{n}." for n in NAMES]).ctx
    assert not torch.equal(ctx, init)  # trained
    p1, p2 = cap.predict_proba(task.X_test), cap.predict_proba(task.X_test)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_allclose(p1.sum(1), 1, atol=1e-5)
    again = CAP(kmeans_n_init=1, **kw).fit(task)
    np.testing.assert_allclose(again.predict_proba(task.X_test), p1, atol=1e-6)
    fpl = FPL(**kw).fit(task)
    assert fpl.model_.prompt == "coop"


def test_alignment_swaps_the_class_text_for_its_description(tiny_hf_clip):
    bb = HFCLIPBackbone(*tiny_hf_clip)
    task = _task(bb, descriptions_text={1: ["a pet", "big loud pet"]})
    model = CAP(prompt="coop")._prompt_model(task, task.text_features, torch.Generator(), {1: 1})
    assert model.text_prompts.class_texts == ["cat.", "big loud pet", "car."]
    with torch.no_grad():
        got = model.text_embeddings().numpy()
    want = bb.encode_texts(["a photo of a cat.", "a photo of a big loud pet", "a photo of a car."])
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_coop_needs_a_model_and_a_usable_template(tiny_hf_clip):
    synthetic = make_synthetic_vlm_task(
        n_classes=8, n_groups=2, dim=8, n_unlabeled=5, n_test=2, n_mismatch=1, n_confused_groups=1
    )
    for est in (CAP(prompt="coop", epochs=1), FPL(prompt="coop", epochs=1)):
        with pytest.raises(ValueError, match="backbone"):
            est.fit(synthetic)
        assert not hasattr(est, "model_")
    bb = HFCLIPBackbone(*tiny_hf_clip)
    with pytest.raises(ValueError, match="no words before"):
        CAP(prompt="coop", epochs=1).fit(_task(bb, templates=("{} photo",)))
    with pytest.raises(ValueError, match="context"):
        TextContextPrompts(bb, ["cat."], context="  ")
    with pytest.raises(TypeError, match="backbone"):
        TextContextPrompts(object(), ["cat."])
    with pytest.raises(ValueError, match="text_prompts"):
        PromptModel(np.eye(3, 8), "coop")
    with pytest.raises(ValueError, match="text_prompts"):
        PromptModel(np.eye(2, 8), "coop", text_prompts=TextContextPrompts(bb, NAMES))


@pytest.mark.filterwarnings("ignore:no descriptions for mismatched")
def test_one_text_pass_per_iteration_changes_nothing(tiny_hf_clip, monkeypatch):
    import contextlib

    task = _task(HFCLIPBackbone(*tiny_hf_clip))
    kw = dict(epochs=2, iters_per_epoch=3, n_main=2, prompt="coop", kmeans_n_init=1)
    cached = CAP(**kw).fit(task).predict_proba(task.X_test)
    monkeypatch.setattr(PromptModel, "text_cache", lambda self: contextlib.nullcontext())
    np.testing.assert_allclose(CAP(**kw).fit(task).predict_proba(task.X_test), cached, atol=1e-6)


def test_coop_refuses_what_it_would_train_differently(tiny_hf_clip):
    bb = HFCLIPBackbone(*tiny_hf_clip)
    # a template glued to the class ("a photo of a{}") once trained "a photo of a cat"
    with pytest.raises(ValueError, match="no space before"):
        CAP(prompt="coop", epochs=1).fit(_task(bb, templates=("a photo of a{}.",)))
    # two templates: pseudolabels from their average, the context from the first only
    with pytest.raises(ValueError, match="average 2 templates"):
        CAP(prompt="coop", epochs=1).fit(_task(bb, templates=("a photo of a {}.", "a {}.")))


def test_backbone_keeps_the_users_mode_and_encodes_half_precision(tiny_hf_clip):
    model, proc = tiny_hf_clip
    model.train()
    bb = HFCLIPBackbone(model, proc)
    imgs = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    ref = bb.encode_images(imgs)
    txt = bb.encode_texts(["a photo of a cat."])
    assert model.training  # the caller's mode is restored (it was switched to eval for good)
    model.eval()
    np.testing.assert_allclose(bb.encode_images(imgs), ref, atol=1e-6)  # eval inside
    half = HFCLIPBackbone(copy.deepcopy(model).to(torch.bfloat16), proc)  # once a crash
    got, got_txt = half.encode_images(imgs), half.encode_texts(["a photo of a cat."])
    assert got.dtype == np.float32 and np.abs(got - ref).max() < 0.05
    assert np.abs(got_txt - txt).max() < 0.05
