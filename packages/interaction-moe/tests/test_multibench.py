"""MultiBench-format pickles, the sequence encoder and the low-rank tensor fusion backbone."""

import pickle

import numpy as np
import pytest
import torch

from interaction_moe import I2MoEClassifier, LowRankTensorFusion, load_multibench_pickle


def _write(path, n=60, T=5, seed=0):
    rng = np.random.default_rng(seed)
    parts = {}
    for split, m in (("train", n), ("valid", n // 3), ("test", n // 3)):
        score = rng.normal(size=(m, 1, 1))
        score[:3] = 0.0  # neutral samples: dropped by the binary task
        parts[split] = {
            "vision": rng.normal(size=(m, T, 6)) + score,
            "audio": rng.normal(size=(m, T, 4)),
            "text": rng.normal(size=(m, T, 8)) - score,
            "labels": score,
        }
    path.write_bytes(pickle.dumps(parts))
    return parts


def test_multibench_pickle_round_trip_and_sequence_training(tmp_path):
    parts = _write(tmp_path / "mosi_raw.pkl")
    xs, y = load_multibench_pickle(tmp_path / "mosi_raw.pkl", "train")
    assert [x.shape for x in xs] == [(57, 5, 6), (57, 5, 4), (57, 5, 8)]
    np.testing.assert_array_equal(y, (parts["train"]["labels"][3:, 0, 0] > 0).astype(int))
    np.testing.assert_allclose(xs[0], parts["train"]["vision"][3:], rtol=1e-6)
    mean, _ = load_multibench_pickle(tmp_path / "mosi_raw.pkl", "test", pool="mean")
    assert mean[2].shape == (17, 8)
    clf = I2MoEClassifier(encoder="gru", backbone="lrtf", epochs=3, hidden=8).fit(xs, y)
    xt, yt = load_multibench_pickle(tmp_path / "mosi_raw.pkl", "test")
    assert clf.predict(xt).shape == yt.shape


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d["train"].pop("audio"), "audio"),
        (lambda d: d["train"]["vision"].__setitem__((0, 0, 0), np.inf), "inf"),
        (lambda d: d.pop("test"), "test"),
    ],
)
def test_multibench_pickle_rejects_what_it_cannot_read(tmp_path, mutate, match):
    parts = _write(tmp_path / "x.pkl")
    mutate(parts)
    (tmp_path / "x.pkl").write_bytes(pickle.dumps(parts))
    split = "test" if match == "test" else "train"
    with pytest.raises(ValueError, match=match):
        load_multibench_pickle(tmp_path / "x.pkl", split)


def test_low_rank_tensor_fusion_shapes_and_gradients():
    f = LowRankTensorFusion(3, 4, 2, rank=3)
    embs = [torch.randn(5, 4, requires_grad=True) for _ in range(3)]
    out = f(embs)
    assert out.shape == (5, 2)
    out.sum().backward()
    assert all(e.grad is not None for e in embs)


def test_named_errors_for_bad_training_settings():
    rng = np.random.default_rng(0)
    xs, y = [rng.normal(size=(40, 3)), rng.normal(size=(40, 2))], rng.integers(0, 2, 40)
    with pytest.raises(ValueError, match="validation_fraction"):
        I2MoEClassifier(validation_fraction=0.999, epochs=1).fit(xs, y)
    with pytest.raises(ValueError, match="lr"):
        I2MoEClassifier(lr=float("inf"), epochs=1).fit(xs, y)
    big = [x * 1e30 for x in xs]  # standardised in float64: not all zeros
    clf = I2MoEClassifier(epochs=2).fit(big, y)
    assert np.isfinite(clf.predict_proba(big)).all()
    assert np.std(clf._prep(big)[0].numpy()) > 0.5
