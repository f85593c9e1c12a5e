import numpy as np
import pytest

from spectral_reservoir import demo, load_bundled, make_lag_sign, make_periodic_motifs


def test_lag_sign_has_the_planted_lag_correlation():
    X, y = make_lag_sign(200, L=300, period=25, seed=0)
    assert X.shape == (200, 1, 300) and set(np.unique(y)) == {0, 1}
    x = X[:, 0]
    c = np.array([np.corrcoef(s[25:], s[:-25])[0, 1] for s in x])
    assert c[y == 1].mean() > 0.2 and c[y == 0].mean() < -0.2
    c1 = np.array([np.corrcoef(s[1:], s[:-1])[0, 1] for s in x])
    assert abs(c1[y == 1].mean() - c1[y == 0].mean()) < 0.05  # same short-lag statistics
    assert np.array_equal(
        make_lag_sign(10, L=50, period=5, seed=3)[0], make_lag_sign(10, L=50, period=5, seed=3)[0]
    )
    with pytest.raises(ValueError, match="period"):
        make_lag_sign(10, L=50, period=50)
    with pytest.raises(ValueError, match="rho"):
        make_lag_sign(10, rho=1.0)


def test_periodic_motifs_and_bundled_validation():
    X, y = make_periodic_motifs(30, L=120, periods=(12, 30), seed=1)
    assert X.shape == (30, 1, 120) and np.bincount(y).tolist() == [15, 15]
    with pytest.raises(ValueError, match="periods"):
        make_periodic_motifs(10, periods=(12,))
    with pytest.raises(ValueError, match="name"):
        load_bundled("NotADataset")
    with pytest.raises(ValueError, match="split"):
        load_bundled("GunPoint", split="valid")


def test_demo_runs():
    out = demo(0)
    assert "SARC" in out and "BiESN" in out


def test_plot_periods(tmp_path):
    pytest.importorskip("matplotlib")
    from spectral_reservoir.plotting import plot_periods

    u = np.sin(2 * np.pi * np.arange(200) / 20)
    plot_periods(u, [20, 40], path=str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").stat().st_size > 0
    with pytest.raises(ValueError, match="finite"):
        plot_periods(np.array([1.0, np.nan]), [2])


def _write_ts(path, X, y, univariate=True):
    path.parent.mkdir(parents=True, exist_ok=True)
    labels = " ".join(sorted(set(y)))
    lines = [
        f"@problemName {path.stem}",
        "@timeStamps false",
        "@missing false",
        f"@univariate {'true' if univariate else 'false'}",
        f"@dimensions {X.shape[1]}",
        "@equalLength true",
        f"@seriesLength {X.shape[2]}",
        f"@classLabel true {labels}",
        "@data",
    ]
    for x, lab in zip(X, y, strict=True):
        dims = ":".join(",".join(f"{v:.6f}" for v in ch) for ch in x)
        lines.append(f"{dims}:{lab}")
    path.write_text("\n".join(lines) + "\n")


def test_local_archive_in_both_layouts(tmp_path):
    pytest.importorskip("aeon")
    from spectral_reservoir import archive_names, load_archive

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2, 12))
    y = np.array(["a", "b"] * 3)
    for split in ("TRAIN", "TEST"):
        _write_ts(tmp_path / "Multi" / f"Multi_{split}.ts", X, y, univariate=False)
        rows = [
            f"{lab}\t" + "\t".join(f"{v:.6f}" for v in x[0]) for x, lab in zip(X, y, strict=True)
        ]
        (tmp_path / "Uni").mkdir(exist_ok=True)
        (tmp_path / "Uni" / f"Uni_{split}.tsv").write_text("\n".join(rows) + "\n")
    (tmp_path / "Half").mkdir()  # a problem without its test split is not listed
    _write_ts(tmp_path / "Half" / "Half_TRAIN.ts", X, y, univariate=False)
    with pytest.warns(UserWarning, match="Half"):
        assert archive_names(tmp_path) == ["Multi", "Uni"]
    Xm, ym = load_archive(tmp_path, "Multi", "test")
    np.testing.assert_allclose(Xm, X, atol=1e-6)
    assert list(ym) == list(y)
    Xu, yu = load_archive(tmp_path, "Uni")
    np.testing.assert_allclose(Xu[:, 0], X[:, 0], atol=1e-6)
    assert Xu.shape == (6, 1, 12) and len(yu) == 6
    with pytest.raises(ValueError, match="name 'Half'"):
        load_archive(tmp_path, "Half", "test")
    with pytest.raises(ValueError, match="split"):
        load_archive(tmp_path, "Multi", "valid")
    reg = tmp_path / "Reg" / "Reg_TRAIN.ts"
    _write_ts(reg, X, ["a"] * 6, univariate=False)
    reg.write_text(reg.read_text().replace("@classLabel true a", "@targetLabel true"))
    reg.write_text(reg.read_text().replace(":a\n", ":1.5\n"))
    with pytest.raises(ValueError, match="regression"):
        load_archive(tmp_path, "Reg")
    with pytest.raises(ValueError, match="root"):
        archive_names(tmp_path / "missing")
    with pytest.raises(ValueError, match="no <Name>"):
        archive_names(tmp_path / "Multi")  # one problem's folder, not the archive
    with pytest.raises(TypeError, match="root"):
        archive_names(3)


def test_tsv_with_float_labels_and_nan_padding(tmp_path):
    # labels written "1.0" were refused as a regression problem
    pytest.importorskip("aeon")
    from spectral_reservoir import SARCClassifier, load_archive

    rng = np.random.default_rng(1)
    rows = []
    for i in range(8):
        n = 20 if i % 2 else 16  # unequal lengths: NaN padding at the end
        vals = [f"{v:.5f}" for v in rng.normal(size=n)] + ["NaN"] * (20 - n)
        rows.append(f"{1.0 + i % 2:.1f}\t" + "\t".join(vals))
    (tmp_path / "F").mkdir()
    (tmp_path / "F" / "F_TRAIN.tsv").write_text("\n".join(rows) + "\n")
    X, y = load_archive(tmp_path, "F")
    assert y.dtype == np.int64 and sorted(set(y)) == [1, 2]
    clf = SARCClassifier(n_reservoir=4, periods=[2]).fit(X, y)
    assert clf.predict(X).shape == (8,)
    (tmp_path / "F" / "F_TRAIN.tsv").write_text(
        "\n".join(r.replace("1.0\t", "1.5\t", 1) for r in rows) + "\n"
    )
    with pytest.raises(ValueError, match="regression"):
        load_archive(tmp_path, "F")
