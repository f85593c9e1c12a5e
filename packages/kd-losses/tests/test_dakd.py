"""DA-KD data selection: difficulty score, sampler, and the distill loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kd_losses as K


def test_sequence_nll_matches_cross_entropy() -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 7, generator=g)
    labels = torch.randint(0, 7, (3, 4), generator=g)
    labels[1, 2:] = -100
    got = K.sequence_nll(logits, labels)
    for i in range(3):
        v = labels[i] != -100
        ref = torch.nn.functional.cross_entropy(logits[i][v], labels[i][v])
        torch.testing.assert_close(got[i], ref)


def test_difficulty_score_ratio() -> None:
    s = torch.tensor([2.0, 1.0, 0.5])
    t = torch.tensor([1.0, 1.0, 0.25])
    torch.testing.assert_close(K.difficulty_score(s, t, eps=1e-12), torch.tensor([2.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="length mismatch"):
        K.difficulty_score(s, t[:2])
    with pytest.raises(ValueError, match="student_nll"):
        K.difficulty_score(torch.tensor([float("nan")]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="teacher_nll"):
        K.difficulty_score(torch.tensor([1.0]), torch.tensor([-1.0]))
    with pytest.raises(ValueError, match="student_nll"):
        K.difficulty_score(torch.zeros(0), torch.zeros(0))


def test_stratified_select_brute_force_quotas() -> None:
    rng = np.random.default_rng(0)
    scores = np.arange(1, 13, dtype=float)  # strata {1-3},{4-6},{7-9},{10-12}; means 2,5,8,11
    keep = K.stratified_select(scores, 13 - 1 - 6, n_strata=4, rng=rng)
    assert len(keep) == 6 and len(set(keep.tolist())) == 6
    counts = np.bincount(keep // 3, minlength=4)
    # shares proportional to 2:5:8:11 of 6 -> floor (0,1,1,2) then remainder to the largest
    assert counts.sum() == 6 and counts[3] >= counts[2] >= counts[1] >= counts[0]
    # keep everything -> identity; caps are respected
    assert np.array_equal(K.stratified_select(scores, 12, rng=rng), np.arange(12))
    with pytest.raises(ValueError, match="n_keep"):
        K.stratified_select(scores, 0, rng=rng)


def test_sampler_prunes_easy_samples_and_is_deterministic() -> None:
    n = 200
    sampler = K.DifficultyAwareSampler(n, prune_ratio=0.5, min_fraction=0.2, seed=1)
    assert len(sampler) == n and sorted(sampler) == list(range(n))
    scores = torch.linspace(0.1, 10, n)
    sampler.update(scores)
    assert len(sampler) == 100
    kept = sampler.active_indices
    assert scores[kept].mean() > scores.mean()  # harder on average
    assert scores[kept].min() < 1.0  # but easy samples remain represented (stratified)
    again = K.DifficultyAwareSampler(n, prune_ratio=0.5, min_fraction=0.2, seed=1)
    again.update(scores)
    assert torch.equal(again.active_indices, kept)
    for _ in range(5):
        sampler.update(scores)  # full-length scores are accepted too
    assert len(sampler) == 40  # floor at min_fraction
    sampler.set_epoch(3)
    assert sorted(sampler) == sorted(sampler.active_indices.tolist())


def test_sampler_bad_input() -> None:
    with pytest.raises(ValueError, match="prune_ratio"):
        K.DifficultyAwareSampler(10, prune_ratio=1.0)
    with pytest.raises(ValueError, match="min_fraction"):
        K.DifficultyAwareSampler(10, min_fraction=0.0)
    with pytest.raises(ValueError, match="data_source"):
        K.DifficultyAwareSampler(0)
    s = K.DifficultyAwareSampler(10)
    with pytest.raises(ValueError, match="scores"):
        s.update(torch.ones(3))
    with pytest.raises(ValueError, match="scores"):
        s.update(torch.full((10,), float("nan")))


def test_corpus_deterministic() -> None:
    a, ta = K.make_corpus(50, seq_len=16, vocab_size=32, seed=3)
    b, tb = K.make_corpus(50, seq_len=16, vocab_size=32, seed=3)
    assert torch.equal(a, b) and torch.equal(ta, tb)
    assert a.min() >= 0 and a.max() < 32 and a.shape == (50, 16)
    cp = ta == 5  # copy sequences repeat their first half
    half = 15 // 2
    assert torch.equal(a[cp, 1 : 1 + half], a[cp, 1 + half : 1 + 2 * half])
    with pytest.raises(ValueError, match="vocab_size"):
        K.make_corpus(5, vocab_size=4)


@pytest.mark.parametrize("aware", [False, True])
def test_distill_runs_and_counts_cost(aware: bool) -> None:
    torch.manual_seed(0)
    tokens, _ = K.make_corpus(64, seq_len=12, vocab_size=24, seed=0)
    teacher = K.TinyLM(24, d_model=16, n_layers=1, n_heads=2, max_len=16)
    student = K.TinyLM(24, d_model=8, n_layers=1, n_heads=2, max_len=16)

    def gap() -> float:
        with torch.no_grad():
            x = tokens[:, :-1]
            return K.forward_kl(student(x), teacher(x)).item()

    before = gap()
    sampler = K.DifficultyAwareSampler(64, prune_ratio=0.5, seed=0) if aware else None
    res = K.distill(
        student,
        teacher,
        tokens,
        loss="bdl",
        epochs=3,
        batch_size=16,
        sampler=sampler,
        val_tokens=tokens[:8],
        lr=1e-2,
    )
    assert len(res.history) == 3
    if aware:
        assert [r["fraction"] for r in res.history] == [1.0, 0.5, 20 / 64]  # floor: ceil(0.3 n)
        # teacher NLL came for free from epoch 0, so no extra teacher passes for DDS
        assert res.teacher_forwards == 64 + 32 + 20
    else:
        assert res.teacher_forwards == 3 * 64
    assert gap() < before  # the student moved towards the teacher
    assert "val_acc" in res.history[-1]


def test_distill_bad_input() -> None:
    tokens, _ = K.make_corpus(8, seq_len=10, vocab_size=24, seed=0)
    m = K.TinyLM(24, d_model=8, n_layers=1, n_heads=2, max_len=16)
    with pytest.raises(ValueError, match="loss"):
        K.distill(m, m, tokens, loss="kl")
    with pytest.raises(TypeError, match="tokens"):
        K.distill(m, m, tokens.float())
    with pytest.raises(ValueError, match="epochs"):
        K.distill(m, m, tokens, epochs=0)
    with pytest.raises(TypeError, match="student"):
        K.distill(lambda x: x, m, tokens)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sampler"):
        K.distill(m, m, tokens, sampler=K.DifficultyAwareSampler(9))


def test_demo_returns_table() -> None:
    out = K.demo(seed=0)
    assert "bdl" in out and "DA-KD" in out


def test_sampler_works_with_dataloader() -> None:
    data = torch.arange(20).float()
    s = K.DifficultyAwareSampler(data, prune_ratio=0.5, seed=0)
    s.update(torch.arange(20).float())
    loader = torch.utils.data.DataLoader(data, batch_size=4, sampler=s)
    seen = torch.cat(list(loader)).long().sort().values
    assert torch.equal(seen, s.active_indices)


def test_distill_pad_id_and_ce_weight() -> None:
    torch.manual_seed(0)
    tokens, _ = K.make_corpus(16, seq_len=10, vocab_size=24, seed=0)
    tokens[:, -3:] = 0  # padding id 0 at the end of every sequence
    teacher = K.TinyLM(24, d_model=8, n_layers=1, n_heads=2, max_len=16)
    student = K.TinyLM(24, d_model=8, n_layers=1, n_heads=2, max_len=16)
    res = K.distill(
        student,
        teacher,
        tokens,
        loss="skl",
        epochs=1,
        batch_size=8,
        pad_id=0,
        ce_weight=0.5,
        loss_kwargs={"alpha": 0.2, "temperature": 2.0},
    )
    assert np.isfinite(res.history[0]["train_loss"])
    nll, acc = K.evaluate_lm(student, tokens, pad_id=0)
    assert np.isfinite(nll) and 0.0 <= acc <= 1.0
    with pytest.raises(ValueError, match="loss_kwargs"):
        K.distill(student, teacher, tokens, loss=K.forward_kl, loss_kwargs={"x": 1})


def test_sampler_control_strategies_share_the_schedule():
    scores = torch.from_numpy(np.random.default_rng(0).random(100))
    sizes = {}
    for strategy in ("stratified", "random", "resample"):
        s = K.DifficultyAwareSampler(100, prune_ratio=0.3, min_fraction=0.3, strategy=strategy)
        seen = []
        for _ in range(5):
            prev = set(s.active_indices.tolist())
            s.update(scores[s.active_indices])
            seen.append(len(s))
            if strategy != "resample":  # pruning is nested
                assert set(s.active_indices.tolist()) <= prev
        sizes[strategy] = seen
    assert sizes["stratified"] == sizes["random"] == sizes["resample"] == [70, 49, 34, 30, 30]
    with pytest.raises(ValueError, match="strategy"):
        K.DifficultyAwareSampler(10, strategy="nope")
