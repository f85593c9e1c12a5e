import numpy as np
import pytest
import torch

from learngene import (
    GHN,
    TAL,
    GHNMultiTask,
    RandInit,
    TALNoAncestry,
    ViTSpace,
    ViTSpec,
    WeightSelection,
    evaluate_init,
    finetune,
    make_mini_decathlon,
    make_proxy_task,
    task_embedding,
    train_ancestry,
)

KW = dict(hid=16, layers=2, heads=2, lora_r=4, max_shape=64, task_dim=8, c_max=64, verbose=0)
FIT = dict(steps=6, meta_batch=2, batch_size=16)


@pytest.fixture(scope="module")
def setup():
    torch.set_num_threads(1)
    proxy = make_proxy_task(0, n_per_class=2, n_test_per_class=1)
    tasks = make_mini_decathlon(0, n_train=40, n_test=20)
    tasks = {k: tasks[k] for k in ("shapes", "counting")}
    space = ViTSpace(depth=(1, 2), width=(32,), heads=(2,))
    anc = train_ancestry(proxy, depth=2, width=48, heads=2, head_hidden=8, epochs=1, verbose=0)
    E = {k: task_embedding(anc, t) for k, t in tasks.items()}
    return proxy, tasks, space, anc, E


def test_end_to_end_stages(setup):
    proxy, tasks, space, anc, E = setup
    tal = TAL(**KW).fit_stage1(proxy, anc, space, **FIT)
    assert len(tal.history_["stage1_loss"]) == 6 and np.all(
        np.isfinite(tal.history_["stage1_loss"])
    )
    before = {n: p.detach().clone() for n, p in tal.ghn_.named_parameters()}
    tal.fit_stage2(tasks, E, space, **FIT)
    after = dict(tal.ghn_.named_parameters())
    for n, p in before.items():
        if n.startswith("layers.") and ".tsl." not in n:
            assert torch.equal(p, after[n]), n  # frozen encoder
    assert any(not torch.equal(before[n], after[n]) for n in before if ".tsl." in n)
    assert not torch.equal(before["lora_out.weight"], after["lora_out.weight"])
    assert all(p.requires_grad for p in tal.ghn_.parameters())  # unfrozen afterwards
    net = tal.predict(ViTSpec(3, 32, 2), E["shapes"], 6)  # unseen depth
    out = net(torch.from_numpy(tasks["shapes"].X_test))
    assert out.shape == (20, 6) and torch.isfinite(out).all()
    assert 0.0 <= evaluate_init(net, tasks["shapes"]) <= 1.0
    assert tal.encode(ViTSpec(1, 32, 2), E["shapes"]).shape == (4 + 10 + 3, 16)


def test_unfrozen_stage2_moves_encoder(setup):
    _, tasks, space, _, E = setup
    tal = TAL(**KW)
    w = tal.ghn_.layers[0].qkv.weight.detach().clone()
    tal.fit_stage2(tasks, E, space, freeze_encoder=False, **FIT)
    assert not torch.equal(w, tal.ghn_.layers[0].qkv.weight)


def test_deterministic_training(setup):
    proxy, tasks, space, anc, E = setup
    a = TAL(**KW).fit_stage1(proxy, anc, space, **FIT).fit_stage2(tasks, E, space, **FIT)
    b = TAL(**KW).fit_stage1(proxy, anc, space, **FIT).fit_stage2(tasks, E, space, **FIT)
    assert a.history_["stage2_loss"] == b.history_["stage2_loss"]
    pa, pb = (
        a.predict_parameters(ViTSpec(1, 32, 2), E["counting"], 5),
        b.predict_parameters(ViTSpec(1, 32, 2), E["counting"], 5),
    )
    assert all(torch.equal(pa[k], pb[k]) for k in pa)


def test_head_crop_and_bad_input(setup):
    proxy, tasks, space, anc, E = setup
    tal = TAL(**KW)
    spec = ViTSpec(1, 32, 2)
    p = tal.predict_parameters(spec, E["shapes"], 6)
    assert p["head.weight"].shape == (6, 32) and "distill_head.weight" not in p
    p10 = tal.predict_parameters(spec, E["shapes"], 10)
    assert torch.equal(p10["head.weight"][:6], p["head.weight"])  # heads are row crops
    with pytest.raises(ValueError, match="c_max"):
        tal.predict(spec, E["shapes"], 65)
    with pytest.raises(ValueError, match="task_emb"):
        tal.predict(spec, np.zeros(7), 6)
    with pytest.raises(ValueError, match="task_emb"):
        tal.predict(spec, np.full(8, np.nan), 6)
    with pytest.raises(TypeError, match="arch"):
        tal.predict((1, 32, 2), E["shapes"], 6)
    with pytest.raises(ValueError, match="kd_alpha"):
        TAL(**KW).fit_stage1(proxy, None, space, kd_alpha=0.2, **FIT)
    with pytest.raises(ValueError, match="kd_alpha"):
        TAL(**KW).fit_stage1(proxy, anc, space, kd_alpha=2.0, **FIT)
    with pytest.raises(ValueError, match="task_dim"):
        TAL(**{**KW, "task_dim": 9}).fit_stage1(proxy, anc, space, **FIT)
    with pytest.raises(ValueError, match="embeddings"):
        TAL(**KW).fit_stage2(tasks, {"shapes": E["shapes"]}, space, **FIT)
    with pytest.raises(ValueError, match="steps"):
        TAL(**KW).fit_stage2(tasks, E, space, steps=0)
    with pytest.raises(ValueError, match="temperature"):
        TAL(**KW).fit_stage2(tasks, E, space, temperature=-1.0, **FIT)
    with pytest.raises(TypeError, match="space"):
        TAL(**KW).fit_stage2(tasks, E, "vits", **FIT)
    with pytest.raises(ValueError, match="does not fit"):
        TAL(**KW).fit_stage2(tasks, E, [ViTSpec(1, 32, 2, img=32)], **FIT)
    with pytest.raises(ValueError, match="divisible"):
        TAL(hid=10, heads=4)
    with pytest.raises(TypeError, match="use_tsl"):
        TAL(use_tsl=1)
    # a rejected request leaves the model unchanged
    state = {k: v.clone() for k, v in tal.ghn_.state_dict().items()}
    with pytest.raises(ValueError):
        tal.fit_stage2(tasks, E, space, lr=-1.0, steps=3)
    assert all(torch.equal(state[k], v) for k, v in tal.ghn_.state_dict().items())


def test_save_load_roundtrip(setup, tmp_path):
    _, tasks, space, _, E = setup
    tal = TAL(**KW).fit_stage2(tasks, E, space, **FIT)
    tal.save(tmp_path / "tal.pt")
    back = TAL.load(tmp_path / "tal.pt")
    assert back.get_params() == tal.get_params() and back.stage2_done_
    a = tal.predict_parameters(ViTSpec(2, 32, 2), E["shapes"], 6)
    b = back.predict_parameters(ViTSpec(2, 32, 2), E["shapes"], 6)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_baselines(setup):
    proxy, tasks, space, anc, E = setup
    spec = ViTSpec(1, 32, 2)
    ghn = GHN(**KW).fit(proxy, space, **FIT)
    assert torch.equal(
        ghn.predict_parameters(spec, E["shapes"], 6)["head.weight"],
        ghn.predict_parameters(spec, None, 6)["head.weight"],
    )  # architecture only: the task is ignored
    mt = GHNMultiTask.from_stage1(ghn).fit_stage2(tasks, None, space, **FIT)
    assert not mt.use_tsl and mt.stage2_done_
    na = TALNoAncestry(**KW).fit_stage1(proxy, anc, space, **FIT)
    assert len(na.history_["stage1_loss"]) == 6
    r1, r2 = RandInit(0).predict(spec, None, 6), RandInit(0).predict(spec, None, 6)
    assert all(torch.equal(a, b) for a, b in zip(r1.parameters(), r2.parameters(), strict=True))
    ws = WeightSelection(anc).predict(ViTSpec(1, 32, 2), None, 6)
    sa, sd = anc.state_dict(), ws.state_dict()
    # block 0 of the descendant inherits block 0 of the 2-block ancestry, leading slices
    assert torch.equal(sd["blocks.0.fc1.weight"], sa["blocks.0.fc1.weight"][:64, :32])
    q_anc = sa["blocks.0.qkv.weight"].view(3, 48, 48)
    assert torch.equal(sd["blocks.0.qkv.weight"].view(3, 32, 32), q_anc[:, :32, :32])
    assert torch.equal(sd["pos_embed"], sa["pos_embed"][:, :, :32])
    ws2 = WeightSelection(anc).predict(ViTSpec(2, 32, 2), None, 6)
    assert torch.equal(ws2.state_dict()["blocks.1.ln1.weight"], sa["blocks.1.ln1.weight"][:32])
    with pytest.raises(ValueError, match="larger"):
        WeightSelection(anc).predict(ViTSpec(3, 32, 2), None, 6)
    with pytest.raises(TypeError, match="ancestry"):
        WeightSelection("anc")


def test_finetune_copy_and_curve(setup):
    _, tasks, _, anc, _ = setup
    net = RandInit(0).predict(ViTSpec(1, 32, 2), None, 6)
    w = net.head.weight.detach().clone()
    tuned, curve = finetune(net, tasks["shapes"], epochs=2, batch_size=16)
    assert curve.shape == (2,) and np.all((curve >= 0) & (curve <= 1))
    assert torch.equal(net.head.weight, w)  # the caller's net is untouched
    assert not torch.equal(tuned.head.weight, w)
    with pytest.raises(ValueError, match="outputs"):
        finetune(net, tasks["counting"], epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        finetune(net, tasks["shapes"], epochs=0)
    with pytest.raises(TypeError, match="task"):
        evaluate_init(net, "shapes")
    with pytest.raises(ValueError, match="head_hidden"):
        task_embedding(net, tasks["shapes"])
    e = task_embedding(anc, tasks["shapes"])
    assert e.shape == (8,) and np.isfinite(e).all()


def test_demo_runs():
    from learngene import demo

    out = demo(0)
    assert "TAL" in out and "GHN" in out


def test_embedding_standardisation(setup, tmp_path):
    _, tasks, space, _, E = setup
    tal = TAL(**KW).fit_stage2(tasks, E, space, **FIT)
    R = np.stack([E[k] for k in tasks])
    np.testing.assert_allclose(tal.emb_mean_, R.mean(0), rtol=1e-5, atol=1e-6)
    Z = np.stack([tal._task_tensor(E[k]).numpy() for k in tasks])
    assert np.sqrt((Z**2).mean()) == pytest.approx(1.0, rel=1e-4)  # centred, unit RMS
    np.testing.assert_allclose(Z.mean(0), 0.0, atol=1e-5)
    tal.save(tmp_path / "t.pt")
    back = TAL.load(tmp_path / "t.pt")
    assert torch.equal(back._task_tensor(E["shapes"]), tal._task_tensor(E["shapes"]))
    raw = TAL(**{**KW, "standardize_embeddings": False}).fit_stage2(tasks, E, space, **FIT)
    assert raw.emb_mean_ is None and torch.equal(
        raw._task_tensor(E["shapes"]), torch.from_numpy(E["shapes"])
    )
