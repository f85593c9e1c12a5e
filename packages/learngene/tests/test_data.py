import numpy as np
import pytest

from learngene.data import (
    DECATHLON_TASKS,
    HELDOUT_FONTS,
    TRAIN_FONTS,
    Task,
    make_mini_decathlon,
    make_proxy_task,
    make_unseen_tasks,
    render_glyphs,
)


@pytest.fixture(scope="module")
def deca():
    return make_mini_decathlon(seed=0, n_train=240, n_test=60)


def _balanced(y, n_classes, tol=0.05):
    counts = np.bincount(y, minlength=n_classes)
    return np.all(np.abs(counts / len(y) - 1 / n_classes) <= tol)


def test_fonts_disjoint():
    assert len(TRAIN_FONTS) == 14 and len(HELDOUT_FONTS) == 6
    assert not set(TRAIN_FONTS) & set(HELDOUT_FONTS)


def test_decathlon_shapes_ranges_balance(deca):
    assert list(deca) == list(DECATHLON_TASKS)
    for name, t in deca.items():
        assert t.n_classes == DECATHLON_TASKS[name]
        assert t.X_train.shape == (240, 1, 16, 16) and t.X_test.shape == (60, 1, 16, 16)
        assert t.X_train.dtype == np.float32
        assert 0.0 <= t.X_train.min() and t.X_train.max() <= 1.0
        assert set(np.unique(t.y_train)) <= set(range(t.n_classes))
        if name not in ("digits", "digits-parity", "inverted-glyphs"):
            # balanced by construction within each split
            assert _balanced(t.y_train, t.n_classes, tol=0.005)
            assert _balanced(t.y_test, t.n_classes, tol=0.02)
    np.testing.assert_array_equal(deca["digits"].X_train, deca["digits-parity"].X_train)
    np.testing.assert_array_equal(deca["digits"].y_train % 2, deca["digits-parity"].y_train)
    assert _balanced(deca["inverted-glyphs"].y_train, 26)
    # inverted glyphs are bright backgrounds
    assert deca["inverted-glyphs"].X_train.mean() > 0.6


def test_subset_equals_full_build(deca):
    sub = make_mini_decathlon(seed=0, n_train=240, n_test=60, names=["counting", "digits-parity"])
    assert list(sub) == ["digits-parity", "counting"]
    for k in sub:
        np.testing.assert_array_equal(sub[k].X_train, deca[k].X_train)
        np.testing.assert_array_equal(sub[k].y_test, deca[k].y_test)
    with pytest.raises(ValueError, match="names"):
        make_mini_decathlon(names=["cifar"])
    with pytest.raises(ValueError, match="names"):
        make_mini_decathlon(names="shapes")


def test_generators_deterministic():
    a = make_mini_decathlon(seed=3, n_train=30, n_test=10)
    b = make_mini_decathlon(seed=3, n_train=30, n_test=10)
    for k in a:
        np.testing.assert_array_equal(a[k].X_train, b[k].X_train)
        np.testing.assert_array_equal(a[k].y_test, b[k].y_test)
    c = make_mini_decathlon(seed=4, n_train=30, n_test=10)
    assert not np.array_equal(a["shapes"].X_train, c["shapes"].X_train)


def test_proxy_and_unseen():
    p = make_proxy_task(seed=0, n_per_class=3, n_test_per_class=1)
    assert p.n_classes == 62 and p.X_train.shape == (186, 1, 16, 16) and len(p.y_test) == 62
    assert np.all(np.bincount(p.y_train, minlength=62) == 3)
    u = make_unseen_tasks(seed=0, n_train=50, n_test=20)
    assert set(u) == {"digits-rot", "shapes-outline"}
    assert u["digits-rot"].n_classes == 10 and u["shapes-outline"].n_classes == 6
    # outlines hold fewer lit pixels than filled shapes
    filled = make_mini_decathlon(seed=0, n_train=50, n_test=20)["shapes"]
    assert (u["shapes-outline"].X_train > 0.5).mean() < (filled.X_train > 0.5).mean()


def test_render_glyphs_and_bad_input():
    X = render_glyphs(["A", "b", "7"], ["DejaVuSans", "cmr10", "DejaVuSansMono"], seed=0)
    assert X.shape == (3, 1, 16, 16) and X.max() > 0.5
    X0 = render_glyphs(
        ["A"], ["DejaVuSans"], seed=0, noise=0.0, rot_deg=0.0, shift=0.0, thicken=0.0
    )
    assert X0.sum() > 5  # the glyph is drawn
    with pytest.raises(ValueError, match="font"):
        render_glyphs(["A"], ["Comic"])
    with pytest.raises(ValueError, match="length"):
        render_glyphs(["A", "B"], ["DejaVuSans"])
    with pytest.raises(ValueError, match="chars"):
        render_glyphs(["AB"], ["DejaVuSans"])
    with pytest.raises(ValueError, match="non-empty"):
        render_glyphs([], [])


def test_generator_bad_args():
    with pytest.raises(ValueError, match="1797"):
        make_mini_decathlon(n_train=1700, n_test=200)
    with pytest.raises(TypeError, match="n_train"):
        make_mini_decathlon(n_train=1.5)
    with pytest.raises(ValueError, match="n_per_class"):
        make_proxy_task(n_per_class=0)


def test_task_validation_and_no_mutation():
    rng = np.random.default_rng(0)
    X = rng.random((6, 1, 4, 4))
    y = np.array([0, 1, 0, 1, 0, 1])
    t = Task(X, y, X[:2], y[:2], 2, "t")
    t.X_train[0, 0, 0, 0] = -5
    assert X[0, 0, 0, 0] != -5  # stored copies
    bad = X.copy()
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X_train"):
        Task(bad, y, X[:2], y[:2], 2)
    with pytest.raises(ValueError, match="y_train"):
        Task(X, y[:5], X[:2], y[:2], 2)
    with pytest.raises(ValueError, match="y_test"):
        Task(X, y, X[:2], np.array([0, 2]), 2)
    with pytest.raises(ValueError, match="X_train"):
        Task(X[:, 0], y, X[:2], y[:2], 2)
    with pytest.raises(ValueError, match="X_train"):
        Task(X[:0], y[:0], X[:2], y[:2], 2)
    with pytest.raises(ValueError, match="shapes differ"):
        Task(X, y, X[:2, :, :2], y[:2], 2)
    with pytest.raises(TypeError, match="y_train"):
        Task(X, y + 0.5, X[:2], y[:2], 2)
    with pytest.raises(ValueError, match="n_classes"):
        Task(X, y, X[:2], y[:2], 1)


def test_from_folder(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in ("cat", "dog"):
        (tmp_path / c).mkdir()
        for i in range(4):
            arr = (rng.random((20, 20)) * 255).astype(np.uint8)
            Image.fromarray(arr).convert("RGB").save(tmp_path / c / f"{i}.png")
    # nothing is dropped silently: a stray file, a nested folder or a broken image raises
    (tmp_path / "cat" / ".DS_Store").write_bytes(b"\0")  # hidden litter is ignored
    (tmp_path / "cat" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="non-image files"):
        Task.from_folder(tmp_path)
    (tmp_path / "cat" / "notes.txt").unlink()
    (tmp_path / "cat" / "more").mkdir()
    with pytest.raises(ValueError, match="sub-folders"):
        Task.from_folder(tmp_path)
    (tmp_path / "cat" / "more").rmdir()
    (tmp_path / "cat" / "9.png").write_bytes(b"broken")
    with pytest.raises(ValueError, match="not a readable image"):
        Task.from_folder(tmp_path)
    (tmp_path / "cat" / "9.png").unlink()
    t = Task.from_folder(tmp_path, image_size=16, test_fraction=0.25, seed=0)
    assert t.n_classes == 2 and t.meta["classes"] == ["cat", "dog"]
    assert t.X_train.shape == (6, 1, 16, 16) and t.X_test.shape == (2, 1, 16, 16)
    assert np.all(np.bincount(t.y_test) == 1)
    with pytest.raises(ValueError, match="folder"):
        Task.from_folder(tmp_path / "missing")
    with pytest.raises(ValueError, match="test_fraction"):
        Task.from_folder(tmp_path, test_fraction=0.0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty"):
        Task.from_folder(tmp_path)
