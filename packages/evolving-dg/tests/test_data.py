import numpy as np
import pytest

import evolving_dg as edg
from evolving_dg.loaders import load_image_domains, load_onp, load_powersupply


def test_circle_generator_matches_its_definition():
    ds = edg.make_circle(seed=3)
    c, th = ds.info["centres"], ds.info["theta"]
    assert len(ds) == 30 and ds.default_split()[0].__len__() == 15
    assert np.all(np.diff(th) > 0) and th[0] == 0 and np.isclose(th[-1], np.pi)
    balance = []
    for t, (X, y) in enumerate(ds.domains):
        assert X.shape == (100, 2) and X.dtype == np.float32
        assert np.all(np.linalg.norm(X - c[t], axis=1) <= 1.0 + 1e-5)
        assert np.array_equal(y, (np.linalg.norm(X.astype(np.float64), axis=1) > 5.0))
        balance.append(y.mean())
    assert 0.3 <= np.mean(balance) <= 0.7


def test_sine_generator_labels_and_bands():
    ds = edg.make_sine(seed=1)
    assert len(ds) == 24 and [len(s) for s in ds.default_split()] == [12, 4, 8]
    for t, raw in enumerate(ds.info["raw"]):
        x0, x1 = raw[:, 0], raw[:, 1]
        assert np.all((x0 >= t * np.pi / 9) & (x0 < (t + 1) * np.pi / 9))
        assert np.array_equal(ds.domains[t][1], (x1 > np.sin(3 * x0)).astype(int))
        assert np.all(np.abs(x1) <= 2) and np.all(np.abs(x1 - np.sin(3 * x0)) <= 1)
    pooled = np.vstack([X for X, _ in ds.domains])
    assert np.allclose(pooled.mean(0), 0, atol=1e-5) and np.allclose(pooled.std(0), 1, atol=1e-4)


def test_rotated_digits_domains():
    from scipy import ndimage
    from sklearn.datasets import load_digits

    ds = edg.make_rotated_digits(seed=0)
    assert len(ds) == 19 and ds.input_shape == (1, 16, 16) and ds.n_classes == 10
    assert [len(s) for s in ds.default_split()] == [10, 3, 6]
    assert sum(len(y) for _, y in ds.domains) == 1797
    d = load_digits()
    perm = np.random.default_rng(0).permutation(1797)
    ref = np.clip(ndimage.zoom(d.images[perm][0::19] / 16.0, (1, 2, 2), order=1), 0, 1)
    assert np.allclose(ds.domains[0][0][:, 0], ref, atol=1e-6)  # angle 0 = the zoomed originals
    assert np.array_equal(ds.domains[0][1], d.target[perm][0::19])
    x = ds.domains[0][0][:, 0]
    back = ndimage.rotate(ndimage.rotate(x, 180, axes=(2, 1), reshape=False, order=1), 180,
                          axes=(2, 1), reshape=False, order=1)  # fmt: skip
    assert np.abs(back - x).max() < 1e-4  # 180° twice is the identity (exact grid flip)


def test_spurious_circle_shortcut_reverses():
    ds = edg.make_spurious_circle(seed=0)
    ns, nv, _ = ds.info["split"]
    agree = [np.mean(np.sign(X[:, 2]) == 2 * y - 1) for X, y in ds.domains]
    assert ds.info["spurious_dims"] == [2] and ds.input_shape == (3,)
    assert min(agree[:ns]) > 0.6 and max(agree[ns + nv :]) < 0.3
    base = edg.make_circle(seed=0)
    assert np.array_equal(ds.domains[4][0][:, :2], base.domains[4][0])


def test_generator_and_dataset_bad_inputs():
    with pytest.raises(ValueError, match="n_domains"):
        edg.make_circle(n_domains=2)
    with pytest.raises(ValueError, match="spread"):
        edg.make_circle(spread=-1.0)
    with pytest.raises(ValueError, match="rho_target"):
        edg.make_spurious_circle(rho_target=2.0)
    with pytest.raises(ValueError, match="angles"):
        edg.make_rotated_digits(angles=[0, np.nan, 1])
    ds = edg.make_circle(n_domains=6, n_per_domain=10)
    with pytest.raises(ValueError, match="n_source"):
        ds.split(3, 1, 1)
    with pytest.raises(ValueError, match="labels"):
        edg.EvolvingDataset([(np.zeros((3, 2)), np.array([0, 1, 2]))], n_classes=2)
    with pytest.raises(ValueError, match="NaN"):
        edg.EvolvingDataset([(np.full((3, 2), np.nan), np.array([0, 1, 0]))], n_classes=2)
    with pytest.raises(TypeError, match="integer"):
        edg.EvolvingDataset([(np.zeros((3, 2)), np.array([0.5, 1, 0]))], n_classes=2)


def test_image_folder_loader(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for year in ("1905", "1910", "1930", "2000"):
        for c in ("F", "M"):
            (tmp_path / year / c).mkdir(parents=True)
            for k in range(2):
                a = (rng.random((10, 12)) * 255).astype(np.uint8)
                Image.fromarray(a).save(tmp_path / year / c / f"{k}.png")
    ds = edg.loaders.load_portraits(tmp_path, size=8)
    assert ds.info["domains"] == ["1905", "1910", "1930", "2000"] and ds.info["classes"] == [
        "F",
        "M",
    ]
    X, y = ds.domains[0]
    assert X.shape == (4, 1, 8, 8) and list(y) == [0, 0, 1, 1] and 0 <= X.min() <= X.max() <= 1
    rgb = load_image_domains(tmp_path, size=6, grayscale=False)
    assert rgb.domains[0][0].shape == (4, 3, 6, 6)
    with pytest.raises(ValueError, match="root"):
        load_image_domains(tmp_path / "missing")


def test_csv_and_arff_loaders(tmp_path):
    rng = np.random.default_rng(0)
    n = 60
    lines = ["url, timedelta, f1, f2, shares"]
    for i in range(n):
        lines.append(f"http://x/{i}, {n - i}, {rng.normal():.4f}, {i}, {700 + 20 * i}")
    (tmp_path / "onp.csv").write_text("\n".join(lines) + "\n")
    ds = load_onp(tmp_path / "onp.csv", n_domains=4)
    assert len(ds) == 4 and ds.input_shape == (2,) and ds.info["features"] == ["f1", "f2"]
    y = np.concatenate([y for _, y in ds.domains])
    assert np.array_equal(y, (700 + 20 * np.arange(n) >= 1400).astype(int))  # oldest first
    with pytest.raises(ValueError, match="n_domains"):
        load_onp(tmp_path / "onp.csv", n_domains=100)
    arff = ["@relation ps", "@attribute a numeric", "@attribute b numeric",
            "@attribute class {h0,h1,h2}", "@data"]  # fmt: skip
    arff += [f"{i},{i % 5},h{i % 3}" for i in range(30)]
    (tmp_path / "ps.arff").write_text("\n".join(arff) + "\n")
    ps = load_powersupply(tmp_path / "ps.arff", n_domains=5)
    assert len(ps) == 5 and ps.n_classes == 3 and list(ps.domains[0][1]) == [0, 1, 2, 0, 1, 2]


def test_official_portraits_layout(tmp_path):
    # root/F and root/M with year-prefixed names (what the SYNC repository reads) once raised
    from PIL import Image

    rng = np.random.default_rng(1)
    years = list(range(1905, 1916))  # 11 common years: drop the first, 3 full domains + 1 left
    for g in ("F", "M"):
        (tmp_path / g).mkdir()
        for yr in years + ([1950] if g == "F" else []):
            for k in range(2):
                a = (rng.random((10, 12)) * 255).astype(np.uint8)
                Image.fromarray(a).save(tmp_path / g / f"{yr}_school_{k}.png")
    with pytest.warns(UserWarning, match=r"3 years are not used \(\[1905, 1915, 1950\]"):
        ds = edg.loaders.load_portraits(tmp_path, size=8)
    assert ds.info["domains"] == ["1906-1908", "1909-1911", "1912-1914"]
    X, y = ds.domains[0]
    assert X.shape == (12, 1, 8, 8) and list(y) == [1] * 6 + [0] * 6  # F = 1, as officially
    with pytest.warns(UserWarning, match=r"\[1950\]"):
        full = edg.loaders.load_portraits(tmp_path, size=8, years="all")
    assert full.info["domains"] == ["1905-1907", "1908-1910", "1911-1915"]
    assert sum(len(y) for _, y in full.domains) == 44


def test_onp_official_file_bom_and_no_target_leak(tmp_path):
    rng = np.random.default_rng(2)
    # SYNC's processed_ONP.csv: time_stamp, features, 0/1 label last; a domain per month
    lines = ["time_stamp,f1,f2,label"]
    for mo in range(1, 5):
        for d in range(3):
            lines.append(f"2013-{mo:02d}-{d + 10},{rng.normal():.5f},{mo},{(d + mo) % 2}")
    (tmp_path / "processed_ONP.csv").write_text("\ufeff" + "\n".join(lines) + "\n")
    ds = load_onp(tmp_path / "processed_ONP.csv")
    assert ds.info["months"] == ["2013-01", "2013-02", "2013-03", "2013-04"]
    X, y = ds.domains[1]
    assert X.shape == (3, 2) and np.all(X[:, 1] == 2) and list(y) == [0, 1, 0]  # as stored
    # the UCI file with a BOM (once a misleading 'url is not a number' error)
    n = 60
    uci = ["url, timedelta, f1, f2, shares"]
    uci += [f"http://x/{i}, {n - i}, {rng.normal():.4f}, {i}, {700 + 20 * i}" for i in range(n)]
    (tmp_path / "onp.csv").write_text("\ufeff" + "\n".join(uci) + "\n")
    ds = load_onp(tmp_path / "onp.csv", n_domains=6)
    src = np.concatenate([X for X, _ in ds.domains[: ds.info["split"][0]]])
    np.testing.assert_allclose(src.mean(0), 0, atol=1e-5)  # source statistics, not pooled ones
    tgt = np.concatenate([X for X, _ in ds.domains[ds.info["split"][0] :]])
    assert tgt[:, 1].mean() > 1.0  # f2 grows with time: the target is not centred


def test_single_class_sources_warn_or_raise():
    d = edg.make_circle(n_domains=10, n_per_domain=40, seed=0)
    src = [(X, y) for X, y in d.domains[:4]]
    one = [(src[0][0], np.zeros(len(src[0][1]), dtype=np.int64)), *src[1:]]
    with pytest.warns(UserWarning, match=r"domains \[0\] hold a single class"):
        edg.ERM(epochs=1).fit(one)
    with pytest.raises(ValueError, match="every source label is 0"):
        edg.ERM(epochs=1).fit([(X, np.zeros(len(X), dtype=np.int64)) for X, _ in src])


def _write_pickle(path, obj, protocol=2):
    import pickle

    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    return path


def test_domain_pickle_loader_reads_the_cida_layout(tmp_path):
    from evolving_dg.loaders import load_domain_pickle

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(np.int64)
    d = np.repeat(np.arange(6), 10)
    ds = load_domain_pickle(
        _write_pickle(tmp_path / "half-circle.pkl", {"data": X, "label": y, "domain": d})
    )
    assert len(ds) == 6 and ds.input_shape == (2,) and ds.info["split"] == (3, 1, 2)
    src, _val, tgt = ds.default_split()
    np.testing.assert_array_equal(src[1][0], X[10:20].astype(np.float32))
    np.testing.assert_array_equal(tgt[-1][1], y[50:])
    # every protocol the file may have been written with
    for proto in (0, 4, 5):
        again = load_domain_pickle(_write_pickle(tmp_path / f"p{proto}.pkl",
                                                 {"data": X, "label": y, "domain": d}, proto))  # fmt: skip
        np.testing.assert_array_equal(again.domains[2][0], ds.domains[2][0])


def test_domain_pickle_loader_refuses_code_and_bad_layouts(tmp_path):
    import os

    from evolving_dg.loaders import load_domain_pickle

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    X, y, d = np.zeros((20, 2)), np.zeros(20, np.int64), np.repeat(np.arange(4), 5)
    with pytest.raises(ValueError, match="only numpy arrays"):
        load_domain_pickle(
            _write_pickle(tmp_path / "evil.pkl", {"data": Evil(), "label": y, "domain": d})
        )
    with pytest.raises(ValueError, match="would drop"):
        load_domain_pickle(
            _write_pickle(tmp_path / "x.pkl", {"data": X, "label": y, "domain": d, "w": y})
        )
    with pytest.raises(ValueError, match="keys"):
        load_domain_pickle(_write_pickle(tmp_path / "k.pkl", {"data": X, "label": y}))
    with pytest.raises(ValueError, match="align"):
        load_domain_pickle(
            _write_pickle(tmp_path / "a.pkl", {"data": X, "label": y[:-1], "domain": d})
        )
    with pytest.raises(ValueError, match="without gaps"):
        load_domain_pickle(
            _write_pickle(tmp_path / "g.pkl", {"data": X, "label": y, "domain": d * 2})
        )
    with pytest.raises(ValueError, match="finite"):
        load_domain_pickle(
            _write_pickle(tmp_path / "n.pkl", {"data": X + np.nan, "label": y, "domain": d})
        )
    (tmp_path / "t.pkl").write_bytes(
        _write_pickle(tmp_path / "t0.pkl", {"data": X}).read_bytes()[:10]
    )
    with pytest.raises(ValueError, match="readable"):
        load_domain_pickle(tmp_path / "t.pkl")
    (tmp_path / "e.pkl").write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        load_domain_pickle(tmp_path / "e.pkl")
