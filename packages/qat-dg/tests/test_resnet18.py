"""torchvision ResNet-18 path (skipped where torchvision is not installed)."""

import pytest
import torch

tv = pytest.importorskip("torchvision")

from qat_dg import (  # noqa: E402
    ResNet18,
    StyledDigits,
    TrainConfig,
    build_model,
    quantize_model,
    to_int8,
    train_domain,
)


def test_resnet18_holds_torchvisions_module_names():
    torch.manual_seed(0)
    ref = tv.models.resnet18(weights=None, num_classes=5).eval()
    m = build_model("resnet18", (3, 32, 32), 5).eval()
    assert isinstance(m, ResNet18)
    backbone = {k: v for k, v in ref.state_dict().items() if not k.startswith("fc.")}
    m.features.load_state_dict(backbone, strict=True)
    m.classifier.load_state_dict({"weight": ref.fc.weight, "bias": ref.fc.bias})
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(m(x), ref(x), atol=1e-6)


def test_resnet18_pretrained_with_fc_is_refused_by_name():
    sd = tv.models.resnet18(weights=None).state_dict()
    ds = StyledDigits(size=16, n_per_domain=20, seed=0)
    with pytest.raises(ValueError, match=r"(?s)pretrained.*fc\.weight"):
        train_domain(ds, "ERM", 0, {"arch": "resnet18", "pretrained": sd}, TrainConfig(n_steps=1))
    with pytest.raises(ValueError, match="width"):
        build_model("resnet18", (3, 16, 16), 5, width=16)


def test_resnet18_grey_inputs_and_qtdog_to_int8():
    m = build_model("resnet18", (1, 16, 16), 4)
    assert m.features.conv1.in_channels == 1
    ds = StyledDigits(size=16, n_per_domain=20, seed=0)
    hp = {"arch": "resnet18", "quant_start_step": 1, "batch_size": 4, "freeze_bn": True}
    r = train_domain(ds, "QTDoG", 3, hp, TrainConfig(n_steps=3, checkpoint_freq=3, seed=0))
    q = r["model"].eval()
    assert 0.0 <= r["iid"] <= 1.0
    i8 = to_int8(q)
    x = torch.rand(4, 3, 16, 16)
    with torch.no_grad():
        assert torch.equal(i8(x), q(x))  # weight-only int8 dequantizes to the same codes
    n_conv = sum(isinstance(mod, torch.nn.Conv2d) for mod in q.modules())
    n_quant = sum(
        isinstance(mod, torch.nn.Conv2d)
        for mod in quantize_model(build_model("resnet18", (3, 16, 16), 4), bits=7).modules()
    )
    assert n_conv == n_quant == 20  # every convolution quantized, downsampling ones included
