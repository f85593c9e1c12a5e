"""DomainBed image folders: labels shared across domains, nothing dropped silently."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qat_dg import ERM, load_domainbed

PIL = pytest.importorskip("PIL.Image")


def _write(
    root, domains=("art_painting", "photo", "sketch"), classes=("dog", "giraffe", "horse"), n=2
):
    rng = np.random.default_rng(0)
    pixels = {}
    for d in domains:
        for c in classes:
            (root / d / c).mkdir(parents=True)
            for i in range(n):
                img = rng.integers(0, 256, size=(12, 12, 3), dtype=np.uint8)
                PIL.fromarray(img).save(root / d / c / f"pic_{i}.png")
                pixels[(d, c, i)] = img
    return pixels


def test_reads_every_image_with_shared_labels(tmp_path) -> None:
    pixels = _write(tmp_path)
    (tmp_path / "photo" / ".DS_Store").write_bytes(b"\0")
    ds = load_domainbed(tmp_path, image_size=12)
    assert ds.env_names == ["art_painting", "photo", "sketch"]
    assert ds.class_names == ["dog", "giraffe", "horse"] and ds.num_classes == 3
    X, y = ds.envs[1]
    assert X.shape == (6, 3, 12, 12) and X.dtype == torch.float32
    assert y.tolist() == [0, 0, 1, 1, 2, 2]
    # lossless PNG: the pixels are the ones written, channels first, ImageNet-normalised as
    # DomainBed's transforms do (normalize=None keeps [0, 1])
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    np.testing.assert_allclose(
        (X[2].permute(1, 2, 0).numpy() * std + mean) * 255,
        pixels[("photo", "giraffe", 0)],
        atol=1e-3,
    )
    raw = load_domainbed(tmp_path, image_size=12, normalize=None).envs[1][0]
    np.testing.assert_allclose(
        raw[2].permute(1, 2, 0).numpy() * 255, pixels[("photo", "giraffe", 0)], atol=1e-4
    )
    assert load_domainbed(tmp_path, image_size=8, domains=["sketch", "photo"]).env_names == [
        "sketch",
        "photo",
    ]
    # grayscale and resized images come out RGB at image_size
    PIL.fromarray(np.zeros((20, 30), np.uint8)).save(tmp_path / "sketch" / "dog" / "gray.jpg")
    assert load_domainbed(tmp_path, image_size=12).envs[2][0].shape == (7, 3, 12, 12)


def test_trains_an_algorithm(tmp_path) -> None:
    _write(tmp_path)
    ds = load_domainbed(tmp_path, image_size=16)
    algo = ERM(ds.input_shape, ds.num_classes, len(ds) - 1)
    algo.update([ds.envs[0], ds.envs[1]])
    assert algo.predict(ds.envs[2][0]).shape == (6, 3)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda r: ([p.unlink() for p in (r / "photo" / "horse").iterdir()] and None) or (r / "photo" / "horse").rmdir(), "lacks class"),
        (lambda r: (r / "photo" / "dog" / "notes.txt").write_text("x"), "non-image"),
        (lambda r: (r / "photo" / "dog" / "pic_0.png").write_bytes(b"not a png"), "not a readable image"),
        (lambda r: (r / "photo" / "stray.png").write_bytes(b""), "outside a class folder"),
        (lambda r: (r / "README.txt").write_text("x"), "outside any domain"),
    ],
)  # fmt: skip
def test_layout_mistakes_raise(tmp_path, mutate, match) -> None:
    _write(tmp_path)
    mutate(tmp_path)
    with pytest.raises(ValueError, match=match):
        load_domainbed(tmp_path, image_size=8)


def test_bad_arguments(tmp_path) -> None:
    _write(tmp_path)
    with pytest.raises(ValueError, match="image_size"):
        load_domainbed(tmp_path, image_size=0)
    with pytest.raises(ValueError, match="domains"):
        load_domainbed(tmp_path, domains=["cartoon"])
    with pytest.raises(ValueError, match="root"):
        load_domainbed(tmp_path / "nope")


def test_sixteen_bit_png_keeps_its_grey_levels(tmp_path) -> None:
    # a 16-bit PNG once saturated: every value above 255 became white
    from PIL import Image

    grey = (np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000).astype(np.uint16)
    for dom in ("a", "b"):
        for cls in ("x", "y"):
            (tmp_path / dom / cls).mkdir(parents=True)
            Image.fromarray(grey).save(tmp_path / dom / cls / "img.png")
    assert Image.open(tmp_path / "a" / "x" / "img.png").mode.startswith("I")
    ds = load_domainbed(tmp_path, image_size=8, normalize=None)
    X = ds.envs[0][0][0]
    want = np.round(grey / 257.0) / 255.0
    np.testing.assert_allclose(X[0].numpy(), want, atol=1e-6)
    assert torch.equal(X[0], X[2])


def test_static_int8_of_a_float64_model() -> None:
    # once a RuntimeError (float input, double bias) inside torch.ao
    from qat_dg import SmallCNN, quantize_model, to_int8

    torch.manual_seed(0)
    q = quantize_model(SmallCNN(3, 4, 8), bits=8).eval().double()
    x = torch.randn(32, 3, 16, 16)
    s = to_int8(q, "static", calibration=x.double())
    with torch.no_grad():
        a, b = q(x.double()).float(), s(x)
    assert b.dtype == torch.float32 and (a - b).abs().max() < 0.1 * a.abs().max()


def test_streamed_domains_equal_the_in_memory_ones(tmp_path) -> None:
    from qat_dg import ImageFiles, TrainConfig, train_domain

    _write(tmp_path, n=4)
    mem = load_domainbed(tmp_path, image_size=12)
    lazy = load_domainbed(tmp_path, image_size=12, stream=True)
    X, y = lazy.envs[0]
    assert isinstance(X, ImageFiles) and isinstance(X, torch.utils.data.Dataset)
    assert X.shape == (12, 3, 12, 12) and len(X) == 12 and lazy.input_shape == (3, 12, 12)
    torch.testing.assert_close(X.load(), mem.envs[0][0])
    torch.testing.assert_close(X[3], mem.envs[0][0][3])  # Dataset protocol: one image
    idx = torch.tensor([5, 0, 5])
    torch.testing.assert_close(X[idx], mem.envs[0][0][idx])  # a batch, decoded
    torch.testing.assert_close(X.subset(idx).load(), mem.envs[0][0][idx])  # lazy subset
    assert torch.equal(y, mem.envs[0][1])
    # the whole DomainBed loop (SWAD's validation loss, SWA's BatchNorm pass) runs streamed and
    # gives the same numbers as in memory
    cfg = TrainConfig(n_steps=4, checkpoint_freq=2, keep_model=False)
    for algorithm in ("ERM", "SWAD", "SWA"):
        hp = {"arch": "small_cnn", "width": 4, "batch_size": 4}
        if algorithm == "SWA":
            hp.update(swa_start_step=1, swa_freq=1)
        a = train_domain(mem, algorithm, 2, hp, cfg)
        b = train_domain(lazy, algorithm, 2, hp, cfg)
        assert [r["src_val"] for r in a["records"]] == [r["src_val"] for r in b["records"]]
        assert a["iid"] == b["iid"]
    with pytest.raises(IndexError, match="idx"):
        X[torch.tensor([0.5])]


def test_streaming_checks_each_file_and_normalize_is_validated(tmp_path) -> None:
    _write(tmp_path)
    (tmp_path / "photo" / "dog" / "pic_0.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="not a readable image"):
        load_domainbed(tmp_path, image_size=8, stream=True)
    for bad in ("imagnet", ((0.5, 0.5), (0.2, 0.2)), ((0.5,) * 3, (0.0,) * 3)):
        with pytest.raises(ValueError, match="normalize"):
            load_domainbed(tmp_path, image_size=8, normalize=bad)
    with pytest.raises(TypeError, match="stream"):
        load_domainbed(tmp_path, image_size=8, stream="yes")


def test_pretrained_resnet18_warns_on_unnormalised_inputs() -> None:
    import warnings

    pytest.importorskip("torchvision")
    from qat_dg.models import ResNet18

    weights = ResNet18(3, 2).features.state_dict()
    x = torch.rand(4, 3, 32, 32)  # [0, 1] pixels
    y = torch.tensor([0, 1, 0, 1])
    algo = ERM((3, 32, 32), 2, 1, {"arch": "resnet18", "pretrained": weights, "batch_size": 4})
    with pytest.warns(UserWarning, match="ImageNet-normalised"):
        algo.update([(x, y)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        algo.update([(x, y)])  # once
        normed = ERM((3, 32, 32), 2, 1, {"arch": "resnet18", "pretrained": weights})
        normed.update([((x - 0.45) / 0.225, y)])
