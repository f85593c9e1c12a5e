import numpy as np
import pytest

from vlm_pseudolabel import (
    CAP,
    CPL,
    FPL,
    GRIP,
    IFPL,
    FixMatchST,
    Oracle,
    ZeroShot,
    detect_mismatch,
    evaluate,
    harmonic_mean,
    make_glyph_digits_task,
    make_synthetic_vlm_task,
    pseudolabel_report,
    render_glyph,
    select_descriptions,
    zero_shot_proba,
)
from vlm_pseudolabel.data import DESCRIPTION_FONTS, PROMPT_FONTS

FAST = {"epochs": 2, "iters_per_epoch": 5}


@pytest.fixture(scope="module")
def synth():
    return make_synthetic_vlm_task(seed=0)


def test_detection_recovers_planted_mismatch(synth):
    mm, _order, centres = detect_mismatch(
        synth.X_unlabeled, synth.text_features, logit_scale=synth.logit_scale, n_init=3
    )
    hits = len(set(mm) & set(synth.planted_mismatch))
    assert hits / len(synth.planted_mismatch) >= 0.75
    assert len(mm) <= 4 and len(centres) == 4
    chosen = select_descriptions(mm, synth.descriptions, centres)
    # the good description (lowest noise) is the one closest to the class's images
    for c, j in chosen.items():
        d = synth.descriptions[c]
        mean = synth.X_unlabeled[synth.y_unlabeled == c].mean(0)
        assert j == int(np.argmax(d @ mean))


def test_alignment_gate_keeps_true_mismatches_and_rejects_a_cluster_that_is_taken(synth):
    e = np.eye(4)
    text = np.stack([e[0], e[1], e[2]])  # class 2 is flagged; class 0 owns the e0 cluster
    taken = {2: np.stack([e[3], 0.8 * e[0] + 0.6 * e[3]])}
    assert select_descriptions([2], taken, e[:1]) == {2: 1}  # the paper's rule swaps it
    assert select_descriptions([2], taken, e[:1], text_features=text) == {}  # gated: class 0's
    free = {2: np.stack([e[3], e[1]])}  # a leftover cluster no prompt points at: kept
    assert select_descriptions([2], free, e[3:], text_features=text) == {2: 0}
    off = np.array([False, True, True])  # class 0 does not compete (e.g. not allowed): kept
    assert select_descriptions([2], taken, e[:1], text_features=text, allowed=off) == {2: 1}
    # on the synthetic task the gate keeps the same choice for the detections it lets through,
    # and drops only one whose matched cluster is another class's (the Hungarian match missed)
    mm, _, centres = detect_mismatch(
        synth.X_unlabeled, synth.text_features, logit_scale=synth.logit_scale, n_init=3
    )
    plain = select_descriptions(mm, synth.descriptions, centres)
    gated = select_descriptions(mm, synth.descriptions, centres, synth.text_features)
    assert all(gated[c] == plain[c] for c in gated)
    assert len(set(gated) & set(synth.planted_mismatch)) >= len(set(plain)) - 1
    with pytest.raises(TypeError, match="alignment_gate"):
        CAP(alignment_gate="yes", **FAST).fit(synth)


def test_no_planted_mismatch_detects_at_most_one():
    task = make_synthetic_vlm_task(n_mismatch=0, n_confused_groups=0, seed=1)
    mm, _, _ = detect_mismatch(task.X_unlabeled, task.text_features, logit_scale=30, n_init=3)
    assert len(mm) <= 1


def test_untrained_cap_is_zero_shot_and_inference_ignores_adapters(synth):
    cap = CAP(epochs=1, iters_per_epoch=1, lr=1e-12, warmup_lr=1e-12, use_alignment=False).fit(
        synth
    )
    zs = zero_shot_proba(synth.X_test, synth.text_features, synth.logit_scale)
    np.testing.assert_allclose(cap.predict_proba(synth.X_test), zs, atol=1e-4)
    np.testing.assert_allclose(ZeroShot().fit(synth).predict_proba(synth.X_test), zs, atol=1e-5)


def test_cap_fits_every_paradigm_deterministically():
    for paradigm in ("ul", "ssl", "trzsl"):
        task = make_glyph_digits_task(paradigm=paradigm, seed=0)
        a = CAP(**FAST, kmeans_n_init=2).fit(task)
        b = CAP(**FAST, kmeans_n_init=2).fit(task)
        np.testing.assert_array_equal(a.predict_proba(task.X_test), b.predict_proba(task.X_test))
        assert a.margin_.shape == (10, 10) and len(a.history_) == 2
        if paradigm == "trzsl":
            assert set(a.main_samples_) == set(task.unseen.tolist())
            r = evaluate(task.y_test, a.predict(task.X_test), seen=task.seen, n_classes=10)
            assert r["H"] == pytest.approx(harmonic_mean(r["acc_seen"], r["acc_unseen"]))


def test_baselines_run(synth):
    for est in (
        FPL(**FAST),
        IFPL(n_rounds=2, **FAST),
        GRIP(n_rounds=2, **FAST),
        CPL(n_rounds=2, **FAST),
        FixMatchST(**FAST),
        Oracle(**FAST),
    ):
        p = est.fit(synth).predict_proba(synth.X_test)
        assert p.shape == (len(synth.X_test), 40) and np.allclose(p.sum(1), 1, atol=1e-5)
    assert IFPL().get_params()["n_rounds"] == 10 and "epochs" in IFPL().get_params()


def test_bad_inputs(synth):
    with pytest.raises(ValueError, match="tau"):
        CAP(tau=1.5).fit(synth)
    with pytest.raises(ValueError, match="n_main"):
        CAP(n_main=0).fit(synth)
    with pytest.raises(TypeError, match="task"):
        CAP().fit(synth.X_unlabeled)
    with pytest.raises(RuntimeError, match="fit"):
        CAP().predict(synth.X_test)
    bad = make_synthetic_vlm_task(seed=2)
    bad.X_unlabeled = bad.X_unlabeled.copy()
    bad.X_unlabeled[0, 0] = np.nan
    with pytest.raises(ValueError, match="X_unlabeled"):
        CAP(**FAST).fit(bad)
    cap = CAP(**FAST, use_alignment=False).fit(synth)
    with pytest.raises(ValueError, match="features"):
        cap.predict(synth.X_test[:, :10])
    with pytest.raises(ValueError, match="unknown"):
        CAP().set_params(colour=1)


def test_inputs_are_not_mutated(synth):
    before = synth.text_features.copy(), synth.X_unlabeled.copy()
    CAP(**FAST, kmeans_n_init=2).fit(synth)
    np.testing.assert_array_equal(synth.text_features, before[0])
    np.testing.assert_array_equal(synth.X_unlabeled, before[1])


def test_glyph_renderer_and_reports():
    for font in PROMPT_FONTS + DESCRIPTION_FONTS:
        for ch in "0123456789":
            g = render_glyph(ch, font)
            assert g.shape == (8, 8) and g.min() >= 0 and g.max() <= 16
            assert np.all(g == np.round(g)) and g.sum() > 0
    rep = pseudolabel_report(np.array([0, 0, 0, 1]), np.array([0, 1, 0, 1]), 2)
    assert rep["max_min_ratio"] == 3 and rep["accuracy"] == 0.75 and rep["min_recall"] == 0.5
    assert harmonic_mean(0.5, 1.0) == pytest.approx(2 / 3) and harmonic_mean(0, 0) == 0


def test_expected_calibration_error_against_brute_force():
    from vlm_pseudolabel import evaluate, expected_calibration_error

    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=200)
    y = rng.integers(0, 4, 200)
    conf, pred = p.max(1), p.argmax(1)
    want = 0.0
    for lo in np.arange(15) / 15:
        sel = (conf > lo) & (conf <= lo + 1 / 15)
        if sel.any():
            want += sel.mean() * abs((pred[sel] == y[sel]).mean() - conf[sel].mean())
    assert expected_calibration_error(y, p) == pytest.approx(want, abs=1e-12)
    # perfectly calibrated: confidence 1 and always right / 0.5 and right half the time
    q = np.array([[1.0, 0.0], [1.0, 0.0], [0.5, 0.5], [0.5, 0.5]])
    assert expected_calibration_error(np.array([0, 0, 0, 1]), q) == pytest.approx(0.0)
    assert evaluate(y, pred, proba=p)["ece"] == pytest.approx(want)
    with pytest.raises(ValueError, match="proba"):
        expected_calibration_error(y, p[:5])
    with pytest.raises(ValueError, match="n_bins"):
        expected_calibration_error(y, p, n_bins=0)
    with pytest.raises(TypeError, match="y_true"):
        expected_calibration_error(y.astype(float), p)
    with pytest.raises(ValueError, match="finite"):
        expected_calibration_error(y, np.full_like(p, np.nan))
