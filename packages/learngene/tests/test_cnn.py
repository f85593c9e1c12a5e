"""The ResNet-style CNN family: spec, model, graph, prediction through TAL and its baselines."""

import numpy as np
import pytest
import torch

from learngene import (
    GHN,
    TAL,
    RandInit,
    ResNetSpace,
    ResNetSpec,
    TinyResNet,
    ViTSpace,
    WeightSelection,
    arch_graph,
    evaluate_init,
    finetune,
    make_mini_decathlon,
    make_proxy_task,
    prepare_for_finetuning,
    task_embedding,
    train_ancestry,
)
from learngene.graph import NODE_TYPES

KW = dict(hid=16, layers=1, heads=2, lora_r=4, max_shape=64, task_dim=8, verbose=0)


def test_spec_validation():
    s = ResNetSpec([1, 2], [8, 16])
    assert s.blocks == (1, 2) and s.depth == 7 and hash(s) == hash(ResNetSpec((1, 2), (8, 16)))
    with pytest.raises(ValueError, match="differ in length"):
        ResNetSpec((1, 1), (8,))
    with pytest.raises(ValueError, match="groups"):
        ResNetSpec((1,), (10,))
    with pytest.raises(ValueError, match="img"):
        ResNetSpec((1, 1, 1), (8, 8, 8), img=6)
    with pytest.raises(TypeError, match="blocks"):
        ResNetSpec(2, (8,))
    with pytest.raises(ValueError, match="head_hidden"):
        TinyResNet(s, 3, head_hidden=4)


def test_model_shapes_and_input_checks():
    net = TinyResNet(ResNetSpec((1, 1, 1), (8, 16, 32), in_chans=3, img=16), 5, distill_dim=4)
    x = torch.randn(2, 3, 16, 16)
    logits, feat = net(x, return_features=True)
    assert logits.shape == (2, 5) and feat.shape == (2, 32)
    assert net.stages[1][0].down_conv.stride == (2, 2) and net.stages[0][0].down_conv is None
    with pytest.raises(ValueError, match="shape"):
        net(torch.randn(2, 1, 16, 16))
    with pytest.raises(ValueError, match="NaN"):
        net(torch.full((1, 3, 16, 16), float("nan")))
    with pytest.raises(TypeError, match="floating"):
        net(torch.zeros(1, 3, 16, 16, dtype=torch.int64))


@pytest.mark.parametrize("spec", [ResNetSpec((1,), (8,)), ResNetSpec((2, 1), (8, 16), 3)])
def test_graph_names_every_parameter_once(spec):
    net = TinyResNet(spec, 5, distill_dim=4)
    g = arch_graph(spec, 5, 4)
    names = [n for ns in g.param_names for n in ns]
    assert sorted(names) == sorted(n for n, _ in net.named_parameters())
    shapes = dict(net.named_parameters())
    for i, ns in enumerate(g.param_names):
        if ns:
            code = tuple(int(v) for v in g.shapes[i] if v > 0)
            assert code == tuple(shapes[ns[0]].shape)
    convs = [i for i, t in enumerate(g.node_types) if NODE_TYPES[t] == "conv"]
    assert len(convs) == sum(1 for m in net.modules() if isinstance(m, torch.nn.Conv2d))
    # the residual add of the first block is two hops from the stem's ReLU (shortcut edge)
    assert g.dist[0].max() > 0 and (g.dist[0] > 0).sum() == g.n_nodes - 1


def test_tal_trains_on_a_mixed_space_and_predicts_both_families():
    proxy = make_proxy_task(0, n_per_class=2, n_test_per_class=1)
    tasks = make_mini_decathlon(0, n_train=40, n_test=20, names=["shapes", "counting"])
    cnns = ResNetSpace(stages=(1, 2), blocks=(1, 1), base_width=(8,)).specs
    vits, _ = ViTSpace(depth=(1, 1), width=(16,), heads=(2,)).split(0, seed=0)
    pool = cnns + vits
    anc = train_ancestry(proxy, depth=1, width=16, heads=2, head_hidden=8, epochs=1, verbose=0)
    E = {k: task_embedding(anc, t) for k, t in tasks.items()}
    tal = TAL(**KW).fit_stage1(proxy, anc, pool, steps=2, meta_batch=2, kd_alpha=0.2)
    tal.fit_stage2(tasks, E, pool, steps=2, meta_batch=2)
    net = tal.predict(cnns[-1], E["shapes"], n_classes=tasks["shapes"].n_classes)
    assert isinstance(net, TinyResNet)
    acc = evaluate_init(net, tasks["shapes"])
    assert 0.0 <= acc <= 1.0
    net2, curve = finetune(net, tasks["shapes"], epochs=1)
    assert curve.shape == (1,) and isinstance(net2, TinyResNet)
    a = tal.predict_parameters(cnns[-1], E["shapes"], 6)
    b = tal.predict_parameters(cnns[-1], E["counting"], 6)
    assert any(not torch.equal(a[k], b[k]) for k in a)  # task-aware after stage 2
    assert tal.encode(cnns[0], E["shapes"]).shape[1] == 16
    ghn = GHN(**KW).fit(proxy, cnns, steps=1, meta_batch=1)
    assert isinstance(ghn.predict(cnns[0], None, 3), TinyResNet)


def test_baselines_and_conditioning_on_a_cnn():
    spec = ResNetSpec((1, 1), (8, 16))
    net = RandInit(0).predict(spec, None, 4)
    assert isinstance(net, TinyResNet)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    out = prepare_for_finetuning(net, seed=1)
    for name, p in out.named_parameters():
        if name.endswith("conv.weight") or "conv" in name:
            sv = torch.linalg.svdvals(p.detach().double().reshape(p.shape[0], -1))
            assert torch.allclose(sv, sv[0].expand_as(sv), rtol=1e-6)
        elif "norm" in name:
            assert torch.equal(p, before[name])
    assert torch.equal(out.head.bias, torch.zeros(4))
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k])
    anc = TinyResNet(spec, 3)
    with pytest.raises(TypeError, match="ancestry"):
        WeightSelection(anc)
    vit_anc = train_ancestry(make_proxy_task(0, n_per_class=2, n_test_per_class=1), depth=1,
                             width=16, heads=2, head_hidden=8, epochs=1, verbose=0)  # fmt: skip
    with pytest.raises(TypeError, match="arch"):
        WeightSelection(vit_anc).predict(spec, None, 3)
    with torch.no_grad():
        assert np.isfinite(float(out(torch.randn(1, 1, 16, 16)).sum()))


def test_a_file_saved_before_the_cnn_node_types_reloads_to_the_same_predictions(tmp_path):
    """Node types were appended for CNNs; an older file (14 types, no vocabulary) still loads,
    and its ViT predictions are unchanged."""
    from learngene import ViTSpec

    proxy = make_proxy_task(0, n_per_class=2, n_test_per_class=1)
    spec = ViTSpec(1, 16, 2)
    tal = TAL(**KW).fit_stage1(proxy, None, [spec], steps=1, meta_batch=1, kd_alpha=0.0)
    tal.save(tmp_path / "new.pt")
    blob = torch.load(tmp_path / "new.pt", weights_only=True)
    assert blob["node_types"] == list(NODE_TYPES)
    old = dict(blob, state=dict(blob["state"]))
    del old["node_types"]
    for key in ("type_embed.weight", "log_gain"):
        old["state"][key] = old["state"][key][:14].clone()
    torch.save(old, tmp_path / "old.pt")
    ref = tal.predict_parameters(spec, None, 3)
    for f in ("new.pt", "old.pt"):
        again = TAL.load(tmp_path / f).predict_parameters(spec, None, 3)
        assert all(torch.equal(ref[k], again[k]) for k in ref)
    bad = dict(blob, node_types=["conv", *NODE_TYPES[1:]])
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="node types"):
        TAL.load(tmp_path / "bad.pt")
