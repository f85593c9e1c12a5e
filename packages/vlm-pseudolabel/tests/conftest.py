import json

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def tiny_open_clip(tmp_path):
    """(open_clip, model, tokenizer, preprocess): a tiny random open_clip CLIP, no download."""
    open_clip = pytest.importorskip("open_clip")
    cfg = {
        "embed_dim": 8,
        "vision_cfg": {"image_size": 32, "layers": 1, "width": 16, "patch_size": 8, "head_width": 8},
        "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 16, "heads": 2,
                     "layers": 1},
    }  # fmt: skip
    (tmp_path / "aware-tiny.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(tmp_path / "aware-tiny.json")
    torch.manual_seed(0)
    model, _, preprocess = open_clip.create_model_and_transforms("aware-tiny", pretrained=None)
    return open_clip, model, open_clip.get_tokenizer("aware-tiny"), preprocess


@pytest.fixture
def tiny_hf_clip(tmp_path):
    """(model, processor): a tiny random ``CLIPModel`` with a real ``CLIPTokenizer`` and
    ``CLIPProcessor`` (:func:`vlm_pseudolabel.testing.tiny_hf_clip`); no download."""
    pytest.importorskip("transformers")
    from vlm_pseudolabel.testing import tiny_hf_clip

    return tiny_hf_clip(tmp_path)
