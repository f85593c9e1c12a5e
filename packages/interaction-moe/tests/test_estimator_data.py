import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from interaction_moe import (
    I2MoEClassifier,
    load_breast_cancer_groups,
    load_digits_halves,
    load_multimodal_npz,
    make_interaction_data,
)
from interaction_moe.metrics import routing_report


def test_generator_types_are_solvable_where_they_should_be():
    xs, y, t = make_interaction_data(6000, seed=0, cue=0.0)
    xt, yt, tt = make_interaction_data(3000, seed=1, cue=0.0)
    for typ, good in [(0, {0}), (1, {1}), (3, {0, 1})]:
        for m in range(2):
            acc = (
                LogisticRegression(max_iter=500)
                .fit(xs[m][t == typ], y[t == typ])
                .score(xt[m][tt == typ], yt[tt == typ])
            )
            assert (acc > 0.9) if m in good else (acc < 0.6), (typ, m, acc)
    # synergy: no single modality is informative
    for m in range(2):
        acc = (
            LogisticRegression(max_iter=500)
            .fit(xs[m][t == 2], y[t == 2])
            .score(xt[m][tt == 2], yt[tt == 2])
        )
        assert acc < 0.6


def test_generator_proportions_seeds_geometry():
    _, _, t = make_interaction_data(8000, proportions=(0.4, 0.2, 0.2, 0.2), seed=3)
    counts = np.bincount(t, minlength=4)
    exp = np.array([0.4, 0.2, 0.2, 0.2]) * 8000
    assert ((counts - exp) ** 2 / exp).sum() < 16.3  # chi2(3) 99.9 %
    a = make_interaction_data(50, seed=5)
    b = make_interaction_data(50, seed=5)
    assert all(np.array_equal(u, v) for u, v in zip(a[0], b[0], strict=True))
    _, y, _ = make_interaction_data(20, n_classes=4, seed=0)
    assert set(np.unique(y)) <= {0, 1, 2, 3}
    with pytest.raises(ValueError, match="proportions"):
        make_interaction_data(10, proportions=(0.5, 0.5))
    with pytest.raises(ValueError, match="n_classes"):
        make_interaction_data(10, n_classes=3)


def test_classifier_mechanics_and_routing():
    xs, y, _ = make_interaction_data(1000, seed=0)
    xt, yt, tt = make_interaction_data(600, seed=9)
    keep = [x.copy() for x in xs]
    clf = I2MoEClassifier(epochs=15, random_state=0, validation_fraction=0.2).fit(xs, y)
    assert all(np.array_equal(a, b) for a, b in zip(xs, keep, strict=True))
    assert clf.score(xt, yt) > 0.7
    w = clf.interaction_weights(xt)
    assert w.shape == (600, 4) and np.allclose(w.sum(1), 1, atol=1e-5)
    rep = routing_report(w, tt)
    assert rep["W"][0, 0] + rep["W"][1, 1] > 1.0  # uniqueness experts take their own types
    p = clf.predict_proba(xt)
    assert p.shape == (600, 2) and np.allclose(p.sum(1), 1, atol=1e-5)
    assert "val_accuracy" in clf.history_[-1]
    p2 = (
        I2MoEClassifier(epochs=15, random_state=0, validation_fraction=0.2)
        .fit(xs, y)
        .predict_proba(xt)
    )
    assert np.allclose(p, p2)


def test_vanilla_and_backbones_and_real_data():
    xs, y = load_breast_cancer_groups()
    assert len(xs) == 3 and xs[0].shape == (569, 10)
    d, yd = load_digits_halves()
    assert d[0].shape == (1797, 32) and len(np.unique(yd)) == 10
    for backbone in ("late", "transformer"):
        clf = I2MoEClassifier(backbone=backbone, epochs=2, random_state=0).fit(xs, y)
        assert clf.predict(xs).shape == (569,)
    van = I2MoEClassifier(moe=False, epochs=5).fit(xs, y)
    assert van.score(xs, y) > 0.85
    with pytest.raises(ValueError, match="moe=True"):
        van.interaction_weights(xs)


def test_npz_loader(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "d.npz",
        modality_0=rng.random((5, 3)),
        modality_1=rng.random((5, 2)),
        y=np.arange(5),
    )
    xs, y = load_multimodal_npz(str(tmp_path / "d.npz"))
    assert [x.shape for x in xs] == [(5, 3), (5, 2)] and y.tolist() == [0, 1, 2, 3, 4]
    np.savez(tmp_path / "bad.npz", modality_0=rng.random((5, 3)), y=np.arange(5))
    with pytest.raises(ValueError, match="modality_1"):
        load_multimodal_npz(str(tmp_path / "bad.npz"))


def test_classifier_bad_inputs():
    xs, y, _ = make_interaction_data(50, seed=0)
    for kw, msg in [
        (dict(backbone="mlp"), "backbone"),
        (dict(epochs=0), "epochs"),
        (dict(lr=0), "lr"),
        (dict(validation_fraction=1.0), "validation_fraction"),
        (dict(temperature=0), "temperature"),
    ]:
        with pytest.raises(ValueError, match=msg):
            I2MoEClassifier(**kw).fit(xs, y)
    with pytest.raises(ValueError, match="at least 2"):
        I2MoEClassifier().fit(xs[:1], y)
    with pytest.raises(ValueError, match="different numbers"):
        I2MoEClassifier().fit([xs[0], xs[1][:10]], y)
    bad = [xs[0].copy(), xs[1]]
    bad[0][0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or inf"):
        I2MoEClassifier().fit(bad, y)
    with pytest.raises(ValueError, match="y must"):
        I2MoEClassifier().fit(xs, y[:-1])
    with pytest.raises(TypeError, match="numeric"):
        I2MoEClassifier().fit([xs[0].astype(str), xs[1]], y)
    clf = I2MoEClassifier(epochs=1).fit(xs, y)
    with pytest.raises(ValueError, match="widths"):
        clf.predict([xs[0][:, :3], xs[1]])


@pytest.mark.parametrize("perturbation", ["gaussian", "permute", "mean", "zero"])
def test_specialize_predictions_are_deterministic_and_batch_independent(perturbation):
    # specialize=True once drew a fresh removal at predict time: 3.6-30.7 % of labels flipped
    xs, y, _ = make_interaction_data(240, seed=0)
    clf = I2MoEClassifier(epochs=3, specialize=True, perturbation=perturbation, random_state=0).fit(
        xs, y
    )
    p1, p2 = clf.predict_proba(xs), clf.predict_proba(xs)
    np.testing.assert_array_equal(p1, p2)
    order = np.random.default_rng(1).permutation(len(y))
    p_perm = clf.predict_proba([x[order] for x in xs])
    np.testing.assert_allclose(p_perm, p1[order], rtol=1e-5, atol=1e-6)
    p_head = clf.predict_proba([x[:7] for x in xs])  # other rows do not change a row's answer
    np.testing.assert_allclose(p_head, p1[:7], rtol=1e-5, atol=1e-6)
