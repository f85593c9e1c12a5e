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
