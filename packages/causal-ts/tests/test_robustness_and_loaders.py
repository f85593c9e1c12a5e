import math
import warnings

import numpy as np
import pytest

from causal_ts import CAROTS, VARGrangerDiscoverer, VARResidual, load_mtsad, make_var
from causal_ts.discovery import (
    granger_pvalues_lstsq,
    granger_pvalues_wald,
    reduce_windows,
    step_errors,
)
from causal_ts.metrics import evaluate, window_labels


def _std(X):
    return (X - X.mean(0)) / X.std(0)


def _statsmodels_granger(X, lag):
    from statsmodels.tsa.api import VAR

    res = VAR(X).fit(maxlags=lag, trend="c")
    N = X.shape[1]
    p = np.ones((N, N))
    for c in range(N):
        for e in range(N):
            if c != e:
                p[c, e] = res.test_causality(caused=e, causing=[c], kind="f").pvalue
    return p


@pytest.mark.parametrize(("n_vars", "T", "lag"), [(5, 2000, 3), (4, 60, 2), (7, 300, 1)])
def test_vectorised_granger_equals_statsmodels_test_causality(n_vars, T, lag):
    d = make_var(n_vars=n_vars, n_train=T, seed=n_vars)
    X = _std(d.X_train)
    sm = _statsmodels_granger(X, lag)
    np.testing.assert_allclose(granger_pvalues_wald(X, lag), sm, rtol=1e-8, atol=1e-12)
    disc = VARGrangerDiscoverer(lag=lag).fit(X)
    np.testing.assert_allclose(disc.pvalues_, sm, rtol=1e-8, atol=1e-12)


def test_lstsq_granger_matches_statsmodels():
    d = make_var(n_vars=5, n_train=2000, seed=1)
    X = _std(d.X_train)
    sm = _statsmodels_granger(X, 3)
    ls = granger_pvalues_lstsq(X, 3)
    np.testing.assert_allclose(ls, sm, atol=1e-3)


def test_duplicated_and_collinear_channels_fit_with_a_warning():
    d = make_var(n_vars=5, n_train=2000, seed=2)
    X = _std(d.X_train)
    X = np.column_stack([X, X[:, 0], X[:, 1] - 2 * X[:, 2]])  # a copy and a linear combination
    with pytest.warns(UserWarning, match="collinear"):
        disc = VARGrangerDiscoverer().fit(X)
    assert disc.graph_.shape == (7, 7) and np.isfinite(disc.pvalues_).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        det = CAROTS(window=6, epochs=1, encoder="mlp", batch_size=32).fit(X)
    assert np.isfinite(det.decision_function(X[:300])).all()


def test_window_consistent_forecast_score_sees_anomalies_anywhere_in_the_window():
    d = make_var(n_vars=4, n_train=1500, seed=3)
    disc = VARGrangerDiscoverer().fit(_std(d.X_train))
    X = _std(d.X_train)[:200].copy()
    X[100, 1] += 8.0  # one spike
    err = step_errors(disc, X)
    assert np.argmax(err) == 100
    mx = reduce_windows(err, 10, "max")
    last = reduce_windows(err, 10, "last")
    # every window containing step 100 sees it with "max"; with "last" only the one ending there
    assert (mx[91:101] >= err[100] - 1e-12).all()
    assert last[91] == err[100]  # the window ending at the spike
    assert (last[95:101] < err[100] / 4).all()  # windows holding it early: "last" misses it
    np.testing.assert_allclose(
        reduce_windows(err, 10, "mean"), np.convolve(err, np.ones(10) / 10, "valid")
    )


def test_var_residual_window_max_is_at_least_as_good_as_last_step():
    d = make_var(n_vars=6, n_train=2000, n_test=2000, kind="collective_global", seed=4)
    yw = window_labels(d.y_test, 10)
    a = evaluate(VARResidual(reduce="max").fit(d.X_train).decision_function(d.X_test), yw)
    b = evaluate(VARResidual(reduce="last").fit(d.X_train).decision_function(d.X_test), yw)
    assert a["AUROC"] >= b["AUROC"]
    with pytest.raises(ValueError, match="reduce"):
        VARResidual(reduce="median").fit(d.X_train)


def test_collapse_is_reported(monkeypatch):
    """A training whose SOC loss sits at log(1 + 2B) (identical embeddings) warns."""
    import causal_ts.detector as det_mod
    from causal_ts.losses import soc_loss

    def stuck(z, alpha, tau):
        loss, stats = soc_loss(z, alpha, tau)
        b = z.shape[0] // 4
        return loss * 0 + math.log(1 + 2 * b), stats

    monkeypatch.setattr(det_mod, "soc_loss", stuck)
    d = make_var(n_vars=5, n_train=1200, seed=5)
    with pytest.warns(UserWarning, match="collapsed"):
        det = CAROTS(window=8, epochs=1, encoder="mlp", batch_size=32).fit(d.X_train)
    assert det.collapse_ratio_ == pytest.approx(1.0)


def test_interventions_default_to_three_innovation_stds():
    d = make_var(n_vars=5, n_train=500, n_test=1000, n_interventions=4, seed=6)
    assert d.intervention.sum() == 80


def _write_csv(path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n")


def test_loaders_read_every_benchmark_layout(tmp_path):
    rng = np.random.default_rng(0)
    tr, te = rng.random((30, 3)), rng.random((20, 3))
    y = (rng.random(20) < 0.2).astype(int)
    # PSM
    psm = tmp_path / "psm"
    psm.mkdir()
    _write_csv(
        psm / "train.csv", ["timestamp_(min)", "a", "b", "c"], [[i, *r] for i, r in enumerate(tr)]
    )
    te_rows = [[i, *r] for i, r in enumerate(te)]
    te_rows[3][2] = ""  # a missing value: forward-filled
    _write_csv(psm / "test.csv", ["timestamp_(min)", "a", "b", "c"], te_rows)
    _write_csv(
        psm / "test_label.csv", ["timestamp_(min)", "label"], [[i, v] for i, v in enumerate(y)]
    )
    b = load_mtsad("psm", psm)
    np.testing.assert_allclose(b.X_train, tr)
    assert b.X_test[3, 1] == te[2, 1] and b.columns == ["a", "b", "c"]
    np.testing.assert_array_equal(b.y_test, y)
    # PSM labels in another row order are matched by timestamp (they once shifted silently)
    order = np.random.default_rng(3).permutation(20)
    _write_csv(psm / "test_label.csv", ["timestamp_(min)", "label"], [[i, y[i]] for i in order])
    np.testing.assert_array_equal(load_mtsad("psm", psm).y_test, y)
    _write_csv(psm / "test_label.csv", ["timestamp_(min)", "label"], [[i, y[i]] for i in order[1:]])
    with pytest.raises(ValueError, match="no label for 1 test timestamps"):
        load_mtsad("psm", psm)
    _write_csv(
        psm / "test_label.csv", ["timestamp_(min)", "label"], [[i, v] for i, v in enumerate(y)]
    )
    # SMD
    smd = tmp_path / "smd"
    for sub, arr in (("train", tr), ("test", te), ("test_label", y[:, None])):
        (smd / sub).mkdir(parents=True)
        np.savetxt(smd / sub / "machine-1-1.txt", arr, delimiter=",")
    b = load_mtsad("smd", smd, machine="machine-1-1")
    np.testing.assert_allclose(b.X_test, te)
    with pytest.raises(ValueError, match="machine"):
        load_mtsad("smd", smd)
    # MSL
    msl = tmp_path / "msl"
    msl.mkdir()
    np.save(msl / "MSL_train.npy", tr)
    np.save(msl / "MSL_test.npy", te)
    np.save(msl / "MSL_test_label.npy", y)
    np.testing.assert_array_equal(load_mtsad("msl", msl).y_test, y)
    # SWaT: a title line before the header, label column "Normal/Attack"
    swat = tmp_path / "swat"
    swat.mkdir()
    head = ["Timestamp", "FIT101", "LIT101", "MV101", "Normal/Attack"]
    (swat / "SWaT_Dataset_Normal_v1.csv").write_text(
        ",,,,\n"
        + ",".join(head)
        + "\n"
        + "\n".join(f"t{i},{r[0]},{r[1]},{r[2]},Normal" for i, r in enumerate(tr))
        + "\n"
    )
    _write_csv(
        swat / "SWaT_Dataset_Attack_v0.csv",
        head,
        [
            [f"t{i}", *r, "Attack" if v else "Normal"]
            for i, (r, v) in enumerate(zip(te, y, strict=True))
        ],
    )
    b = load_mtsad("swat", swat)
    np.testing.assert_allclose(b.X_train, tr)
    np.testing.assert_array_equal(b.y_test, y)
    # the real attack file's "A ttack" spelling is an attack; an unknown label or a stray word
    # in a numeric column stops the load instead of turning into 0 / a forward-filled value
    attack = swat / "SWaT_Dataset_Attack_v0.csv"
    text = attack.read_text()
    attack.write_text(text.replace(",Attack\n", ",A ttack\n"))
    np.testing.assert_array_equal(load_mtsad("swat", swat).y_test, y)
    attack.write_text(text.replace(",Attack\n", ",Unknown\n", 1))
    with pytest.raises(ValueError, match="Normal/Attack"):
        load_mtsad("swat", swat)
    lines = text.splitlines()
    lines[3] = lines[3].replace(lines[3].split(",")[1], "err", 1)
    attack.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="row 4 column 2"):
        load_mtsad("swat", swat)
    attack.write_text(text)
    # WADI
    wadi = tmp_path / "wadi"
    wadi.mkdir()
    head = ["Row", "Date", "Time", "1_AIT_001_PV", "1_AIT_002_PV", "1_AIT_003_PV"]
    _write_csv(wadi / "WADI_14days.csv", head, [[i, "d", "t", *r] for i, r in enumerate(tr)])
    _write_csv(wadi / "WADI_attackdata.csv", head, [[i, "d", "t", *r] for i, r in enumerate(te)])
    np.savetxt(wadi / "WADI_attack_labels.csv", y, fmt="%d")
    b = load_mtsad("wadi", wadi)
    assert b.X_train.shape == (30, 3) and b.columns[0] == "1_AIT_001_PV"
    # errors
    with pytest.raises(ValueError, match="name"):
        load_mtsad("nope", tmp_path)
    with pytest.raises(FileNotFoundError, match="root"):
        load_mtsad("psm", tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match=r"train\.csv"):
        load_mtsad("psm", tmp_path)


@pytest.mark.parametrize("level", [1e6, -3e7])
def test_granger_at_a_large_level_equals_statsmodels(level):
    # the uncentred design once flipped 5 of 20 edges at level 1e6 (p-values off by up to 1.0)
    d = make_var(n_vars=5, n_train=2000, seed=3)
    X = _std(d.X_train)
    sm = _statsmodels_granger(X, 3)  # the affine map leaves the statistics unchanged
    shifted = X + level
    np.testing.assert_allclose(granger_pvalues_wald(shifted, 3), sm, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(granger_pvalues_lstsq(shifted, 3), sm, atol=1e-3)
    disc = VARGrangerDiscoverer(lag=3).fit(shifted)
    np.testing.assert_allclose(disc.pvalues_, sm, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(disc.graph_, VARGrangerDiscoverer(lag=3).fit(X).graph_)


def test_forecaster_and_near_constant_columns_at_a_large_level():
    d = make_var(n_vars=5, n_train=2000, seed=3)
    X = _std(d.X_train)
    a = VARGrangerDiscoverer(lag=3).fit(X)
    b = VARGrangerDiscoverer(lag=3).fit(X + 1e6)  # once off by 6e-3 in the forecasts
    np.testing.assert_allclose(
        b.predict_next(X[None, :50] + 1e6) - 1e6, a.predict_next(X[None, :50]), atol=1e-8
    )
    near = np.column_stack([X, 1e6 + 1e-5 * X[:, 0]])  # 11 significant digits of level, 0 of signal
    with pytest.warns(UserWarning, match="near-constant"):
        disc = VARGrangerDiscoverer(lag=3).fit(near)
    assert not disc.graph_[5].any() and not disc.graph_[:, 5].any()


def test_load_daphnet_reads_the_original_uci_layout(tmp_path):
    from causal_ts import load_daphnet

    rng = np.random.default_rng(0)
    t = np.arange(0, 15 * 50, 15)  # 64 Hz: 15.625 ms, stored as whole ms
    acc = rng.integers(-2000, 2000, (50, 9))
    ann = np.r_[np.zeros(5, int), np.ones(30, int), np.full(10, 2), np.ones(5, int)]
    lines = [" ".join(map(str, [ti, *a, c])) for ti, a, c in zip(t, acc, ann, strict=True)]
    f = tmp_path / "S01R01.txt"
    f.write_text("\n".join(lines) + "\n")
    b = load_daphnet(f)
    np.testing.assert_array_equal(b.X, acc)
    np.testing.assert_array_equal(b.y, ann == 2)
    np.testing.assert_array_equal(b.in_experiment, ann != 0)
    assert b.name == "S01R01" and len(b.columns) == 9 and b.time_ms[-1] == t[-1]
    (tmp_path / "short.txt").write_text("0 1 2 3\n")
    with pytest.raises(ValueError, match="11"):
        load_daphnet(tmp_path / "short.txt")
    (tmp_path / "ann.txt").write_text(lines[0][:-1] + "7\n")
    with pytest.raises(ValueError, match="annotation 7"):
        load_daphnet(tmp_path / "ann.txt")
    (tmp_path / "twice.txt").write_text("\n".join(lines + lines) + "\n")
    with pytest.raises(ValueError, match="row 51: the time does not increase"):
        load_daphnet(tmp_path / "twice.txt")
