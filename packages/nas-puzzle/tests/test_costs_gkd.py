import numpy as np
import pytest
import torch

import nas_puzzle as npz


def test_analytic_costs_formulae_and_monotonicity():
    cfg = npz.DecoderConfig()
    space = npz.SearchSpace.paper_default(cfg)
    scen = npz.Scenario(batch_sizes=(1, 8), prefill_len=32, decode_len=32, dtype="float16")
    c = npz.estimate(space, cfg, scen)
    j = space.index("gqa2/ffn128")
    assert c.kv_bytes[0, j] == 2 * 2 * cfg.head_dim * 64 * 2  # 2 (K,V) n_kv hd s bytes
    assert c.kv_bytes[0, space.index("linear/ffn128")] == 0
    assert c.num_params[0, j] == npz.variant_num_params(cfg, space.variants()[j])
    model = npz.HeteroDecoder(cfg, [space.variants()[j]] * cfg.n_layers)
    assert c.model_totals([j] * cfg.n_layers, 1)["num_params"] == sum(
        p.numel() for p in model.parameters()
    )
    rt = c.runtime_s(8)[0]
    parent, noop = space.index("gqa8/ffn256"), space.index("noop/noop")
    assert rt[noop] < rt[j] < rt[parent]
    assert (c.runtime_s(8) >= c.runtime_s(1)).all()
    assert np.allclose(c.runtime_s(8)[0], c.runtime_s(8)[-1])  # broadcast over layers
    with pytest.raises(ValueError, match="max_seq_len"):
        npz.estimate(space, cfg, npz.Scenario(prefill_len=100, decode_len=100))
    with pytest.raises(ValueError, match="backend"):
        npz.estimate(space, cfg, scen, backend="gpu")
    with pytest.raises(ValueError, match="batch_sizes"):
        npz.Scenario(batch_sizes=(0,))
    with pytest.raises(ValueError, match="dtype"):
        npz.Scenario(dtype="int4")


def test_gkd_loss_identities():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 11)
    hidden = [torch.randn(2, 3, 4) for _ in range(2)]
    assert float(npz.gkd_loss(logits, logits, hidden, hidden)) == pytest.approx(0.0, abs=1e-6)
    scaled = [2.0 * h for h in hidden]  # cosine ignores scale
    assert float(npz.cosine_hidden_loss(scaled, hidden)) == pytest.approx(0.0, abs=1e-6)
    p, q = torch.tensor([[0.0, 0.0]]), torch.tensor([[0.0, float(np.log(3.0))]])
    kl = 0.5 * np.log(0.5 / 0.25) + 0.5 * np.log(0.5 / 0.75)
    assert float(npz.kl_to_parent(q, p)) == pytest.approx(kl, rel=1e-6)
    with pytest.raises(ValueError, match="targets"):
        npz.gkd_loss(logits, logits, hidden, hidden, w_lm=1.0)
    with pytest.raises(ValueError, match="w_kl"):
        npz.gkd_loss(logits, logits, hidden, hidden, w_kl=-1.0)


def test_realize_uptrain_evaluate(parent, library, corpus, tiny_cfg):
    child_cfg = [npz.BlockConfig.from_name("gqa1/ffn8")] * tiny_cfg.n_layers
    child = npz.realize(parent, library, child_cfg)
    torch.manual_seed(0)
    with torch.no_grad():  # move the child away from the parent so GKD has work to do
        for prm in child.blocks.parameters():
            prm.add_(0.5 * torch.randn_like(prm))
    before = npz.evaluate(child, parent, corpus[1], max_windows=16)
    state = {k: v.clone() for k, v in child.state_dict().items()}
    up = npz.uptrain(child, parent, corpus[0], steps=25, lr=3e-3, batch_size=4, seed=0)
    after = npz.evaluate(up, parent, corpus[1], max_windows=16)
    assert after["kl_to_parent"] < before["kl_to_parent"]
    assert all(torch.equal(state[k], v) for k, v in child.state_dict().items())  # not mutated
    same = npz.evaluate(parent, parent, corpus[1], max_windows=4)
    assert same["kl_to_parent"] == pytest.approx(0.0, abs=1e-6)
    assert same["acc_retained"] == pytest.approx(1.0)
    th = npz.measure_throughput(up, batch_size=2, prefill_len=4, decode_len=2, repeats=1)
    assert th["tokens_per_s"] > 0 and th["kv_cache_bytes"] > 0
    with pytest.raises(ValueError, match="choice has 1 layers"):
        npz.realize(parent, library, child_cfg[:1])
    with pytest.raises(ValueError, match="steps"):
        npz.uptrain(child, parent, corpus[0], steps=-3)


def test_data_generators():
    a, b = npz.toy_corpus(5000, seed=3), npz.toy_corpus(5000, seed=3)
    assert a == b and len(a) == 5000 and a != npz.toy_corpus(5000, seed=4)
    tok = npz.ByteTokenizer()
    assert tok.decode(tok.encode("add 1 + 2 = 3")) == "add 1 + 2 = 3"
    w = npz.eval_windows(a, 16, 4)
    assert w.shape == (4, 17)
    with pytest.raises(ValueError, match="n_bytes"):
        npz.toy_corpus(0)
    with pytest.raises(ValueError, match="mix"):
        npz.toy_corpus(10, mix=(1.0, -1.0, 0.0))
    with pytest.raises(TypeError, match="data"):
        npz.split_tokens(torch.zeros(5))
    with pytest.raises(ValueError, match="fractions"):
        npz.split_tokens(a, (0.5, 0.6))


def test_demo_runs():
    out = npz.demo(seed=0)
    assert "puzzle-mip" in out and "homogeneous" in out
    assert npz.__version__ == "0.1.0"


def test_pipeline_object(parent, space, corpus):
    small = space.restrict(attention=["gqa1", "noop"], ffn=["ffn8", "noop"])
    pz = npz.Puzzle(parent, small, data=corpus[0], val_data=corpus[1],
                    scenario=npz.Scenario(batch_sizes=(1, 4), prefill_len=8, decode_len=8))  # fmt: skip
    with pytest.raises(RuntimeError, match="build_library"):
        pz.score()
    pz.build_library(steps=3, batch_size=2, seq_len=8).score(max_windows=4, seq_len=8).measure()
    full = pz.costs.model_totals([0] * parent.cfg.n_layers, 4)
    child = pz.search(npz.Constraints(memory_max_bytes=0.7 * full["memory_bytes"])).realize()
    assert pz.solution.totals["memory_bytes"] <= 0.7 * full["memory_bytes"]
    out = child.uptrain(steps=2, batch_size=2, seq_len=8)
    assert isinstance(out, npz.HeteroDecoder) and out.block_configs == pz.solution.choices


def _fake_runner(model, scen, b):
    """Deterministic 'timing': prefill / decode seconds linear in the model's parameters."""
    n = sum(p.numel() for p in model.parameters())
    return lambda: (1e-7 * n * b + 1e-4, 2e-7 * n * b * scen.decode_len + 3e-4)


def test_in_context_costs_reconstruct_whole_model_time(tiny_cfg, monkeypatch):
    # with an additive clock, c_v = (T_v - T_noop) / L and T_noop give every child's time exactly
    import nas_puzzle.cost as cost

    monkeypatch.setattr(cost, "_model_runner", _fake_runner)
    space = npz.SearchSpace.from_names(
        tiny_cfg, ["gqa4", "gqa2", "linear", "noop"], ["ffn32", "noop"]
    )
    scen = npz.Scenario(batch_sizes=(2, 4), prefill_len=4, decode_len=3)
    c = npz.estimate(space, tiny_cfg, scen, backend="measure", repeats=2, threads=1)
    j0 = space.index("noop/noop")
    assert c.runtime_s(2)[0, j0] == 0.0
    emb = sum(
        p.numel() for p in npz.HeteroDecoder(tiny_cfg, [space.variants()[j0]] * 2).parameters()
    )
    assert c.non_block_runtime_s(4) == pytest.approx(1e-7 * emb * 4 + 1e-4 + 2e-7 * emb * 12 + 3e-4)
    v = npz.validate_costs(c, tiny_cfg, n_children=6, batch_size=4, repeats=1, seed=3)
    assert np.allclose(v["rel_err"], 0, atol=1e-9) and np.allclose(v["abs_rel_err"], 0, atol=1e-9)
    assert v["spearman"] == pytest.approx(1.0) and v["kv_monotone"]
    assert len(v["names"]) == 6 and len(v["names"][0]) == tiny_cfg.n_layers


def test_measured_costs_and_validation_real_clock(tiny_cfg):
    space = npz.SearchSpace.from_names(tiny_cfg, ["gqa4", "noop"], ["ffn32", "noop"])
    scen = npz.Scenario(batch_sizes=(2,), prefill_len=4, decode_len=2)
    for backend in ("measure", "measure_subblocks"):
        c = npz.estimate(space, tiny_cfg, scen, backend=backend, repeats=2, threads=1)
        assert (c.runtime_s(2) >= 0).all() and c.non_block_runtime_s(2) > 0
        assert c.runtime_s(2)[0, space.index("gqa4/ffn32")] > 0
        v = npz.validate_costs(c, tiny_cfg, n_children=3, repeats=1, threads=1)
        assert v["predicted_s"].shape == v["measured_s"].shape == (3,)
        assert np.isfinite(v["rel_err"]).all() and (v["measured_s"] > 0).all()
    with pytest.raises(ValueError, match="n_children"):
        npz.validate_costs(c, tiny_cfg, n_children=1)
    with pytest.raises(ValueError, match="repeats"):
        npz.validate_costs(c, tiny_cfg, repeats=0)
    with pytest.raises(ValueError, match="batch_size"):
        npz.validate_costs(c, tiny_cfg, batch_size=7)
    with pytest.raises(TypeError, match="costs"):
        npz.validate_costs({}, tiny_cfg)
    no_parent = [v for v in space.variants() if v != tiny_cfg.parent_block]
    with pytest.raises(ValueError, match="parent_block"):
        npz.validate_costs(npz.estimate(no_parent, tiny_cfg, scen), tiny_cfg)


def test_time_round_robin_stops_at_the_interval_target():
    calls = [0, 0]

    def steady(k):
        def fn():
            calls[k] += 1
            return (0.010, 0.020) if k == 0 else (0.5 + 1e-4 * (calls[k] % 3), 0.0)

        return fn

    out = npz.time_round_robin([steady(0), steady(1)], repeats=3, rel_ci=0.05, max_repeats=50)
    assert out["converged"] and out["rounds"] == 3  # 3 rounds already within 5 %
    assert calls == [4, 4]  # warm-up + rounds, interleaved
    assert out["min"].shape == (2, 2) and out["total_min"][0] == pytest.approx(0.03)
    rng = np.random.default_rng(0)
    noisy = npz.time_round_robin([lambda: float(rng.uniform(0.1, 1.0))], repeats=2, rel_ci=0.01,
                                 max_repeats=7)  # fmt: skip
    assert noisy["rounds"] == 7 and not noisy["converged"]
    fixed = npz.time_round_robin([lambda: 1.0], repeats=4)
    assert fixed["rounds"] == 4 and fixed["converged"]
    for bad in ({"rel_ci": 0.0}, {"rel_ci": 1.5}, {"repeats": 0}, {"max_repeats": True}):
        with pytest.raises((ValueError, TypeError), match=next(iter(bad))):
            npz.time_round_robin([lambda: 1.0], **bad)
    with pytest.raises(ValueError, match="fns"):
        npz.time_round_robin([])
    with pytest.raises(ValueError, match="same number"):
        npz.time_round_robin([lambda: 1.0, lambda: (1.0, 2.0)])


def test_validate_costs_repeats_until_the_interval_target(tiny_cfg):
    space = npz.SearchSpace.from_names(tiny_cfg, ["gqa4", "noop"], ["ffn32", "noop"])
    scen = npz.Scenario(batch_sizes=(2,), prefill_len=4, decode_len=2)
    c = npz.estimate(space, tiny_cfg, scen, backend="analytic")
    v = npz.validate_costs(c, tiny_cfg, n_children=3, repeats=2, rel_ci=0.5, max_repeats=6)
    assert 2 <= v["rounds"] <= 6 and v["ci_rel"].shape == (3,)
    assert v["converged"] == bool((v["ci_rel"] <= 0.5).all())
    with pytest.raises(ValueError, match="rel_ci"):
        npz.validate_costs(c, tiny_cfg, rel_ci=2.0)
    with pytest.raises(ValueError, match="max_repeats"):
        npz.validate_costs(c, tiny_cfg, max_repeats=0)
