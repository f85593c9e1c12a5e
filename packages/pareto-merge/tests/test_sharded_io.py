"""Sharded Hugging Face checkpoints in and out (model.safetensors.index.json)."""

from __future__ import annotations

import json

import pytest
import torch

from pareto_merge import load_state_dict, save_state_dict


def _sd() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {f"layer{i}.weight": torch.randn(16, 16, generator=g) for i in range(5)}


def test_sharded_round_trip(tmp_path) -> None:
    sd = _sd()
    save_state_dict(sd, tmp_path / "m", max_shard_bytes=2 * 16 * 16 * 4)
    index = json.loads((tmp_path / "m" / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) == 3
    back = load_state_dict(tmp_path / "m")
    assert list(back) == list(sd)
    assert all(torch.equal(back[k], sd[k]) for k in sd)
    assert list(load_state_dict(tmp_path / "m" / "model.safetensors.index.json")) == list(sd)


def test_missing_shard_and_unindexed_tensor_raise(tmp_path) -> None:
    save_state_dict(_sd(), tmp_path / "m", max_shard_bytes=2 * 16 * 16 * 4)
    index_path = tmp_path / "m" / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    del index["weight_map"]["layer0.weight"]
    index_path.write_text(json.dumps(index))
    with pytest.raises(ValueError, match="not indexed"):
        load_state_dict(tmp_path / "m")
    (tmp_path / "m" / "model-00003-of-00003.safetensors").unlink()
    with pytest.raises(ValueError, match="missing"):
        load_state_dict(tmp_path / "m")


def test_bad_shard_size_and_garbled_file(tmp_path) -> None:
    with pytest.raises(ValueError, match="max_shard_bytes"):
        save_state_dict(_sd(), tmp_path / "m", max_shard_bytes=0)
    bad = tmp_path / "x.safetensors"
    bad.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00garbage!")
    with pytest.raises(ValueError, match="path"):
        load_state_dict(bad)


def test_transformers_sharded_checkpoint_loads_complete(tmp_path) -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    model.save_pretrained(tmp_path / "hf", max_shard_size="20KB", safe_serialization=True)
    assert (tmp_path / "hf" / "model.safetensors.index.json").is_file()
    sd = load_state_dict(tmp_path / "hf")
    ref = model.state_dict()
    assert set(sd) == set(ref)
    assert all(torch.equal(sd[k], ref[k]) for k in ref)
    # our sharded export is read back by transformers to the same model
    save_state_dict(sd, tmp_path / "out", max_shard_bytes=20_000)
    cfg.save_pretrained(tmp_path / "out")
    again = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "out")
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        assert torch.equal(again(ids).logits, model(ids).logits)


def test_bad_objectives_raise_and_leave_the_merger_unchanged() -> None:
    from pareto_merge import ParetoMerger, adamerging

    g = torch.Generator().manual_seed(0)
    theta0 = {"w": torch.randn(4, 3, generator=g)}
    ft = [{"w": theta0["w"] + 0.1 * torch.randn(4, 3, generator=g)} for _ in range(2)]
    good = [lambda p: (p["w"] ** 2).sum(), lambda p: (p["w"] - 1).pow(2).sum()]
    merger = ParetoMerger(theta0, ft, rank=1, base="task_arithmetic", n_steps=5).fit(good)
    before = merger.merge([0.3, 0.7])
    calls = {"n": 0}

    def nan_later(p):  # finite for two steps, then NaN: the fit must roll back
        calls["n"] += 1
        return (p["w"] ** 2).sum() * (float("nan") if calls["n"] > 2 else 1.0)

    cases = [
        ([nan_later, good[1]], "non-finite"),
        ([lambda p: p["w"], good[1]], "scalar"),
        ([lambda p: (p["w"] * 1e30).exp().sum(), good[1]], "non-finite"),
    ]
    for objs, match in cases:
        with pytest.raises(ValueError, match=match):
            merger.fit(objs)
        after = merger.merge([0.3, 0.7])
        assert all(torch.equal(before[k], after[k]) for k in before)
        with pytest.raises(ValueError, match=r"objectives\[0\]"):
            adamerging(theta0, ft, objs, n_steps=3)
        calls["n"] = 0
