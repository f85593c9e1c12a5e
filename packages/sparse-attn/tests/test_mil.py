import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sparse_attn.mil import (
    ABMIL,
    MeanPoolMIL,
    QuerentLayer,
    QuerentMIL,
    TransMILStyle,
    fit_mil,
    predict_proba,
)
from sparse_attn.region import grid_regions
from sparse_attn.wsi import Bag, load_feature_bag, make_wsi_bags

MODELS = [QuerentMIL, ABMIL, TransMILStyle, MeanPoolMIL]


def test_generator_is_documented_and_balanced():
    bags = make_wsi_bags(40, (200, 400), seed=3)
    labels = [b.label for b in bags]
    assert 10 <= sum(labels) <= 30
    for b in bags:
        assert 200 <= len(b) <= 400 and b.features.shape[1] == 32
        assert b.coords.dtype == torch.long and b.lesion.sum() == 48
        # the two lesions sit at opposite ends of the tissue: far apart
        pts = b.coords[b.lesion].float()
        assert torch.cdist(pts, pts).max() > 10
    again = make_wsi_bags(40, (200, 400), seed=3)
    assert all(torch.equal(a.features, b.features) for a, b in zip(bags, again, strict=True))


@pytest.mark.parametrize("cls", MODELS)
def test_forward_shapes_and_maps(cls):
    bag = make_wsi_bags(1, (300, 300), seed=0)[0]
    model = cls(32, 3).eval()
    logits, maps = model(bag.features, bag.coords, return_maps=True)
    assert logits.shape == (3,)
    assert maps["attention"].shape == (300,)
    torch.testing.assert_close(maps["attention"].sum(), torch.tensor(1.0))
    if cls is QuerentMIL:
        imp = maps["region_importance"]
        assert imp.shape == (300,) and float(imp.max()) == 1.0


def test_querent_layer_equals_dense_attention_when_every_region_is_selected():
    torch.manual_seed(0)
    layer = QuerentLayer(16, 4, top_k=1000, dropout=0.0).eval()
    x = torch.randn(70, 16)
    coords = torch.stack([torch.arange(70) // 10, torch.arange(70) % 10], 1)
    ids = grid_regions(coords, tile=3)
    out, sel = layer(x, ids)
    h = layer.norm1(x)
    qkv = layer.qkv(h).view(70, 3, 4, 4).permute(1, 2, 0, 3)
    att = F.scaled_dot_product_attention(qkv[0][None], qkv[1][None], qkv[2][None])[0]
    ref = x + layer.proj(att.transpose(0, 1).reshape(70, 16))
    ref = ref + layer.mlp(layer.norm2(ref))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert sel.shape[1] == int(ids.max()) + 1


def test_learned_importance_estimator_gets_gradients():
    torch.manual_seed(1)
    model = QuerentMIL(32, 2, top_k=2)
    bag = make_wsi_bags(1, (200, 200), seed=1)[0]
    loss = F.cross_entropy(model(bag.features, bag.coords)[None], torch.tensor([1]))
    loss.backward()
    for layer in model.layers:
        for p in (layer.est_q.weight, layer.est_min.weight, layer.est_max.weight):
            assert p.grad is not None and p.grad.abs().sum() > 0


def test_training_lowers_the_loss_and_predicts_probabilities():
    bags = make_wsi_bags(12, (150, 200), seed=2)
    torch.manual_seed(0)
    model = ABMIL(32, 2)
    curve = fit_mil(model, bags, epochs=6, lr=1e-3, verbose=0)
    assert curve[-1] < curve[0]
    proba = predict_proba(model, bags)
    assert proba.shape == (12, 2)
    torch.testing.assert_close(proba.sum(1), torch.ones(12))


@pytest.mark.parametrize("cls", MODELS)
def test_bad_bags_raise_clear_errors(cls):
    model = cls(32, 2)
    bag = make_wsi_bags(1, (200, 200), seed=0)[0]
    with pytest.raises(ValueError, match="empty"):
        model(torch.zeros(0, 32), torch.zeros(0, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="coords"):
        model(bag.features, bag.coords[:-1])
    bad = bag.features.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        model(bad, bag.coords)
    with pytest.raises(ValueError, match="features"):
        model(bag.features[:, :5], bag.coords)
    with pytest.raises(TypeError, match="features"):
        model(bag.features.long(), bag.coords)
    with pytest.raises(TypeError, match="coords"):
        model(bag.features, bag.coords.float())


def test_bag_smaller_than_a_region_is_rejected():
    model = QuerentMIL(32, 2, region_size=16)
    bag = make_wsi_bags(1, (200, 200), seed=0)[0]
    with pytest.raises(ValueError, match="region"):
        model(bag.features[:10], bag.coords[:10])


def test_bad_hyperparameters():
    with pytest.raises(ValueError, match="n_classes"):
        QuerentMIL(32, 1)
    with pytest.raises(ValueError, match="divisible"):
        QuerentMIL(32, 2, dim=30, num_heads=4)
    with pytest.raises(ValueError, match="bags"):
        fit_mil(ABMIL(32, 2), [])
    with pytest.raises(ValueError, match="label"):
        fit_mil(ABMIL(32, 2), [Bag(torch.randn(5, 32), torch.zeros(5, 2, dtype=torch.long))])
    with pytest.raises(ValueError, match="n_patches"):
        make_wsi_bags(2, (10, 20))


def test_clam_h5_and_pt_loaders(tmp_path):
    h5py = pytest.importorskip("h5py")
    feats = np.random.default_rng(0).standard_normal((20, 8)).astype(np.float32)
    coords = np.stack(np.meshgrid(np.arange(5), np.arange(4), indexing="ij"), -1).reshape(20, 2)
    with h5py.File(tmp_path / "slide.h5", "w") as f:
        f["features"] = feats
        f["coords"] = coords[:, ::-1] * 256 + 1024  # (x, y) pixel coordinates, as CLAM stores them
    bag = load_feature_bag(tmp_path / "slide.h5", label=1)
    np.testing.assert_allclose(bag.features.numpy(), feats)
    np.testing.assert_array_equal(bag.coords.numpy(), coords)
    assert bag.label == 1
    torch.save(torch.from_numpy(feats), tmp_path / "slide.pt")
    assert load_feature_bag(tmp_path / "slide.pt").features.shape == (20, 8)
    torch.save(
        {"features": torch.from_numpy(feats), "coords": torch.from_numpy(coords)},
        tmp_path / "dict.pt",
    )
    np.testing.assert_array_equal(load_feature_bag(tmp_path / "dict.pt").coords.numpy(), coords)
    with h5py.File(tmp_path / "bad.h5", "w") as f:
        f["features"] = feats
    with pytest.raises(ValueError, match="coords"):
        load_feature_bag(tmp_path / "bad.h5")
    with pytest.raises(FileNotFoundError):
        load_feature_bag(tmp_path / "missing.h5")
    (tmp_path / "x.txt").write_text("no")
    with pytest.raises(ValueError, match=r"\.h5"):
        load_feature_bag(tmp_path / "x.txt")


def test_clam_two_contours_with_offset_and_attributes(tmp_path):
    """CLAM tiles each tissue contour from its own origin: a 37-pixel offset between two contours
    must not make every patch its own region (the raw minimum gap is 37, the step is 256)."""
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(1)
    a = np.stack(np.meshgrid(np.arange(6), np.arange(5), indexing="ij"), -1).reshape(-1, 2)
    b = a + np.array(
        [0, 7]
    )  # a second contour to the right (grid units), offset by 37 pixels in x and y
    grid = np.concatenate([a, b])  # (row, col)
    xy = grid[:, ::-1] * 256 + np.concatenate([np.zeros((30, 2)), np.full((30, 2), 37)])
    feats = rng.standard_normal((60, 4)).astype(np.float32)
    for name, attrs in (("attrs", {"patch_size": 128, "patch_level": 1, "downsample": (2.0, 2.0)}),
                        ("plain", {})):  # fmt: skip
        with h5py.File(tmp_path / f"{name}.h5", "w") as f:
            f["features"] = feats
            f["coords"] = xy.astype(np.int64)
            f["coords"].attrs.update(attrs)
        bag = load_feature_bag(tmp_path / f"{name}.h5")
        np.testing.assert_array_equal(bag.coords.numpy(), grid)
    bag = load_feature_bag(tmp_path / "plain.h5", patch_size=256)
    np.testing.assert_array_equal(bag.coords.numpy(), grid)
    regions = {tuple(c) for c in (bag.coords.numpy() // 4).tolist()}
    assert len(regions) <= 8  # a handful of 4x4 regions, not 60 one-patch regions
    with pytest.raises(ValueError, match="patch_size"):
        load_feature_bag(tmp_path / "plain.h5", patch_size=0)


def test_querent_accepts_a_leading_batch_of_one():
    torch.manual_seed(0)
    bag = make_wsi_bags(1, (200, 240), feat_dim=8, lesion_patches=8, seed=3)[0]
    model = QuerentMIL(8, 2, dim=16, region_size=4).eval()
    with torch.no_grad():
        ref = model(bag.features, bag.coords)
        torch.testing.assert_close(model(bag.features[None], bag.coords[None]), ref)
        torch.testing.assert_close(model(bag.features, bag.coords[None]), ref)
    with pytest.raises(ValueError, match="coords"):
        model(bag.features, torch.cat([bag.coords[None]] * 2))


def test_trident_and_overlapping_clam_files(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(2)
    grid = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1).reshape(-1, 2)
    feats = rng.standard_normal((64, 4)).astype(np.float32)
    # TRIDENT: 256-px patches at 20x on a 40x slide are 512 px at level 0, every other one
    # present, so the common gap (1024) is not the step; patch_size_level0 was ignored
    sparse = grid[(grid[:, 0] % 2 == 0) & (grid[:, 1] % 2 == 0)]
    with h5py.File(tmp_path / "trident.h5", "w") as f:
        f["features"] = feats[: len(sparse)]
        f["coords"] = sparse[:, ::-1] * 512
        f["coords"].attrs.update(
            {"patch_size": 256, "patch_size_level0": 512, "target_magnification": 20}
        )
    np.testing.assert_array_equal(load_feature_bag(tmp_path / "trident.h5").coords.numpy(), sparse)
    # CLAM with step_size 128 < patch_size 256: 64 patches once collapsed onto 25 cells
    with h5py.File(tmp_path / "overlap.h5", "w") as f:
        f["features"] = feats
        f["coords"] = grid[:, ::-1] * 128
        f["coords"].attrs.update({"patch_size": 256, "patch_level": 0, "downsample": (1.0, 1.0)})
    bag = load_feature_bag(tmp_path / "overlap.h5")
    np.testing.assert_array_equal(bag.coords.numpy(), grid)
    with pytest.raises(ValueError, match="share a grid cell"):
        load_feature_bag(tmp_path / "overlap.h5", patch_size=1024)


def test_querent_refuses_pixel_coordinates():
    # pixel coordinates made every patch its own region, with no warning
    bag = make_wsi_bags(1, (200, 240), feat_dim=8, lesion_patches=8, seed=3)[0]
    model = QuerentMIL(8, 2, dim=16, region_size=4).eval()
    with pytest.raises(ValueError, match="pixel coordinates"):
        model(bag.features, bag.coords * 256)
    with torch.no_grad():
        model(bag.features, bag.coords)
