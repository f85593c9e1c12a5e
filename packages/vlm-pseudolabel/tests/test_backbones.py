import numpy as np
import pytest
import torch


def test_hf_clip_backbone_encodes_a_task():
    transformers = pytest.importorskip("transformers")
    from vlm_pseudolabel import CAP
    from vlm_pseudolabel.backbones import HFCLIPBackbone, encode_task

    cfg = transformers.CLIPConfig(
        text_config={
            "vocab_size": 99,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "max_position_embeddings": 16,
        },
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=8,
    )
    torch.manual_seed(0)
    model = transformers.CLIPModel(cfg)

    class Processor:  # a tiny tokenizer stand-in: characters -> ids
        def __call__(self, text=None, images=None, return_tensors="pt", padding=True):
            ids = [[1 + (ord(ch) % 97) for ch in t[:14]] for t in text]
            n = max(map(len, ids))
            return {
                "input_ids": torch.tensor([i + [0] * (n - len(i)) for i in ids]),
                "attention_mask": torch.tensor([[1] * len(i) + [0] * (n - len(i)) for i in ids]),
            }

    bb = HFCLIPBackbone(model, Processor())
    g = torch.Generator().manual_seed(0)
    imgs = torch.rand(30, 3, 32, 32, generator=g)
    task = encode_task(
        bb,
        imgs[:20],
        imgs[20:],
        np.arange(10) % 3,
        ["cat", "dog", "car"],
        templates=("a photo of a {}.", "a {}."),
        descriptions_text={0: ["small furry pet"]},
    )
    assert task.X_unlabeled.shape == (20, 8) and task.text_features.shape == (3, 8)
    np.testing.assert_allclose(np.linalg.norm(task.X_test, axis=1), 1, atol=1e-5)
    assert task.descriptions[0].shape == (1, 8)
    again = encode_task(bb, imgs[:20], imgs[20:], np.arange(10) % 3, ["cat", "dog", "car"])
    np.testing.assert_allclose(again.X_unlabeled, task.X_unlabeled)
    CAP(epochs=1, iters_per_epoch=2, n_main=2, kmeans_n_init=1).fit(task)
    with pytest.raises(ValueError, match="template"):
        encode_task(bb, imgs[:20], imgs[20:], np.zeros(10, int), ["a", "b"], templates=("no slot",))


def test_open_clip_backbone_matches_a_hand_projection(tiny_open_clip):
    from PIL import Image

    from vlm_pseudolabel import CAP
    from vlm_pseudolabel.backbones import OpenCLIPBackbone, encode_task

    _, model, tokenizer, preprocess = tiny_open_clip
    bb = OpenCLIPBackbone(model, tokenizer, preprocess, batch_size=4)
    rng = np.random.default_rng(0)
    pil = [Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)) for _ in range(6)]
    with torch.no_grad():  # the same images and strings through open_clip by hand
        want_img = model.encode_image(torch.stack([preprocess(im) for im in pil]))
        want_txt = model.encode_text(tokenizer(["a photo of a cat.", "a photo of a dog."]))
    np.testing.assert_allclose(
        bb.encode_images(pil), torch.nn.functional.normalize(want_img, dim=-1), atol=1e-5
    )
    np.testing.assert_allclose(
        bb.encode_texts(["a photo of a cat.", "a photo of a dog."]),
        torch.nn.functional.normalize(want_txt, dim=-1),
        atol=1e-5,
    )
    assert bb.logit_scale == pytest.approx(float(model.logit_scale.detach().exp()))
    imgs = torch.rand(30, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    task = encode_task(bb, imgs[:20], imgs[20:], np.arange(10) % 3, ["cat", "dog", "car"])
    assert task.X_unlabeled.shape == (20, 8) and task.text_features.shape == (3, 8)
    CAP(epochs=1, iters_per_epoch=2, n_main=2, kmeans_n_init=1).fit(task)


def test_encode_task_builds_every_paradigm(tiny_open_clip):
    from vlm_pseudolabel import CAP, FPL
    from vlm_pseudolabel.backbones import OpenCLIPBackbone, encode_task

    _, model, tokenizer, preprocess = tiny_open_clip
    bb = OpenCLIPBackbone(model, tokenizer, preprocess)
    imgs = torch.rand(36, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    names = ["cat", "dog", "car", "bus"]
    y_test = np.arange(10) % 4
    base = (bb, imgs[:20], imgs[20:30], y_test, names)
    ssl = encode_task(*base, paradigm="ssl", images_labeled=imgs[30:], y_labeled=[0, 1, 2, 3, 0, 1])
    assert ssl.paradigm == "ssl" and ssl.X_labeled.shape == (6, 8)
    np.testing.assert_allclose(ssl.X_labeled, bb.encode_images(imgs[30:]))
    tr = encode_task(*base, paradigm="trzsl", images_labeled=imgs[30:34], y_labeled=[0, 1, 0, 1],
                     seen=[0, 1])  # fmt: skip
    assert tr.seen.tolist() == [0, 1] and tr.unseen.tolist() == [2, 3]
    for task in (ssl, tr):
        FPL(epochs=1, iters_per_epoch=2, n_main=2).fit(task)
        CAP(epochs=1, iters_per_epoch=2, n_main=2, kmeans_n_init=1).fit(task)
    bad = [
        ({"paradigm": "fewshot"}, "paradigm"),
        ({"paradigm": "ssl"}, "images_labeled"),
        ({"images_labeled": imgs[30:], "y_labeled": [0] * 6}, "ul"),
        ({"paradigm": "trzsl", "images_labeled": imgs[30:32], "y_labeled": [0, 1]}, "seen"),
        ({"paradigm": "ssl", "images_labeled": imgs[30:], "y_labeled": [0, 1]}, "length"),
        ({"paradigm": "trzsl", "images_labeled": imgs[30:32], "y_labeled": [0, 2],
          "seen": [0, 1]}, "y_labeled"),
        ({"paradigm": "trzsl", "images_labeled": imgs[30:32], "y_labeled": [0, 1],
          "seen": [0, 1, 2, 3]}, "unseen"),
        ({"paradigm": "ssl", "images_labeled": imgs[30:32], "y_labeled": [0, 9]}, "y_labeled"),
    ]  # fmt: skip
    for kw, word in bad:
        with pytest.raises(ValueError, match=word):
            encode_task(*base, **kw)
