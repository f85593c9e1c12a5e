"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from learngene import (
    RandInit,
    Task,
    ViTSpec,
    evaluate_init,
    kd_loss,
    spec_from_timm,
    task_probabilities,
)

SPEC = ViTSpec(depth=1, width=8, heads=2, mlp_ratio=2, patch=4, img=8, in_chans=1)


def _net():
    return RandInit(0).predict(SPEC, n_classes=3)


def _logits(x):
    with torch.no_grad():
        return _net()(torch.as_tensor(x)).numpy()


def _kd(logits, target, student_feat, teacher_feat, alpha=0.2, T=3.0):
    t = torch.as_tensor
    return kd_loss(t(logits), t(target), t(student_feat), t(teacher_feat), alpha=alpha, T=T).item()


def _task(X_train, y_train):
    rng = np.random.default_rng(1)
    return Task(X_train, y_train, rng.random((4, 1, 8, 8)), np.array([0, 1, 2, 0]), 3).X_train


def _eval(X_test, y_test):
    rng = np.random.default_rng(1)
    task = Task(rng.random((4, 1, 8, 8)), np.array([0, 1, 2, 0]), X_test, y_test, 3)
    return evaluate_init(_net(), task)


def _folder(folder):
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in ("cat", "dog"):
        (folder / c).mkdir()
        for i in range(4):
            Image.fromarray(rng.integers(0, 256, (12, 12), dtype=np.uint8)).save(
                folder / c / f"{i}.png"
            )
    return folder


def _hf_write(folder):
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    cfg = ViTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32, image_size=8, patch_size=4, num_channels=3, num_labels=3)  # fmt: skip
    ViTForImageClassification(cfg).save_pretrained(folder / "vit")
    return folder / "vit"


def _hf_read(path):
    from learngene import from_hf

    return from_hf(path)


def _hf_export(net, folder):
    from learngene import to_hf

    to_hf(net).save_pretrained(folder)
    return folder


def _same_net(a, b):
    x = torch.randn(
        2, a.spec.in_chans, a.spec.img, a.spec.img, generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        return a.spec == b.spec and bool((a(x) - b(x)).abs().max() < 1e-5)


def _set_config(path, **kv):
    import json

    cfg = json.loads((path / "config.json").read_text())
    cfg.update(kv)
    (path / "config.json").write_text(json.dumps(cfg))


def _drop_classifier(path):
    """A ViTModel-style checkpoint: no classifier tensors."""
    from safetensors.torch import load_file, save_file

    sd = load_file(path / "model.safetensors")
    save_file({k: v for k, v in sd.items() if not k.startswith("classifier")},
              path / "model.safetensors")  # fmt: skip


_TAL: dict = {}
TAL_KW = dict(hid=8, layers=1, heads=2, lora_r=2, max_shape=16, task_dim=4, c_max=64, verbose=0)
TAL_SPEC = ViTSpec(depth=1, width=8, heads=2, mlp_ratio=2, patch=4, img=8, in_chans=3)


def _tal(use_tsl=True, scale="timm", standardize_embeddings=True):
    """A TAL after one step of each stage on tiny generated tasks (cached per setting)."""
    from learngene import TAL, ViTSpace, make_mini_decathlon, make_proxy_task

    key = (use_tsl, scale, standardize_embeddings)
    if key not in _TAL:
        torch.set_num_threads(1)
        proxy = make_proxy_task(0, n_per_class=1, n_test_per_class=1)
        tasks = make_mini_decathlon(0, n_train=8, n_test=4)
        tasks = {k: tasks[k] for k in ("shapes", "counting")}
        space = ViTSpace(depth=(1, 1), width=(8,), heads=(2,))
        emb = {k: np.random.default_rng(i).normal(size=4) for i, k in enumerate(tasks)}
        tal = TAL(**TAL_KW, use_tsl=use_tsl, scale=scale,
                  standardize_embeddings=standardize_embeddings)  # fmt: skip
        tal.fit_stage1(proxy, None, space, steps=1, meta_batch=1, batch_size=4, kd_alpha=0.0)
        tal.fit_stage2(tasks, emb, space, steps=1, meta_batch=1, batch_size=4)
        _TAL[key] = tal
    return _TAL[key]


_X3 = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))


def _tal_predict(task_emb, n_classes=3, use_tsl=True, scale="timm", standardize_embeddings=True):
    """Logits of the network TAL.predict initialises for ``task_emb`` on fixed images."""
    tal = _tal(use_tsl, scale, standardize_embeddings)
    net = tal.predict(TAL_SPEC, task_emb, n_classes)
    with torch.no_grad():
        return net(_X3).numpy()


def _tal_write(folder):
    path = folder / "tal.pt"
    _tal().save(path)
    return path


def _tal_read(path):
    from learngene import TAL

    return TAL.load(path)


def _tal_same(a, b) -> bool:
    e = np.linspace(-1, 1, 4)
    pa, pb = a.predict_parameters(TAL_SPEC, e, 3), b.predict_parameters(TAL_SPEC, e, 3)
    return pa.keys() == pb.keys() and all(torch.equal(pa[k], pb[k]) for k in pa)


def _tal_export(tal, folder):
    folder.mkdir(exist_ok=True)
    tal.save(folder / "again.pt")
    return folder / "again.pt"


def _timm_vit(**overrides):
    from timm.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    kw = dict(img_size=8, patch_size=4, in_chans=3, num_classes=3, global_pool="token",
              embed_dim=8, depth=1, num_heads=2, mlp_ratio=2.0)  # fmt: skip
    return VisionTransformer(**{**kw, **overrides}).eval()


def _from_timm(x):
    from learngene import from_timm

    with torch.no_grad():
        return from_timm(_timm_vit())(torch.as_tensor(x)).numpy()


def _timm_logits(x):
    with torch.no_grad():
        return _timm_vit()(torch.as_tensor(x)).numpy()


def _net3():
    return RandInit(0).predict(TAL_SPEC, n_classes=3)


def _to_timm(x, net=None):
    """The exported timm model's logits (the exporter takes a net, not arrays: ``x`` is fixed)."""
    from learngene import to_timm

    with torch.no_grad():
        return to_timm(_net3() if net is None else net)(torch.as_tensor(x)).numpy()


def _to_hf(x, net=None):
    from learngene import to_hf

    with torch.no_grad():
        model = to_hf(_net3() if net is None else net)
        return model(pixel_values=torch.as_tensor(x)).logits.numpy()


def _net3_logits(x):
    with torch.no_grad():
        return _net3()(torch.as_tensor(x)).numpy()


def _avg_pool_vit():
    from learngene import from_timm

    return from_timm(_timm_vit(global_pool="avg"))


def _arch_nodes(n_classes=8):
    from learngene import arch_graph

    return arch_graph(TAL_SPEC, n_classes, 4).node_types


def entries() -> list[dict]:
    rng = np.random.default_rng(0)
    X = rng.random((6, 1, 8, 8)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2])
    logits = rng.normal(size=(6, 3)).astype(np.float32)
    fs, ft = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 4)).astype(np.float32)
    X3 = rng.random((5, 3, 8, 8)).astype(np.float32)
    out = [
        {"name": "TinyViT.forward", "call": _logits, "kwargs": {"x": X},
         "arrays": {"x": {"kind": "float", "ndim": 4}}, "rows": [["x"]], "order": "equivariant"},
        {"name": "kd_loss", "call": _kd,
         "kwargs": {"logits": logits, "target": y, "student_feat": fs, "teacher_feat": ft},
         "arrays": {"logits": {"kind": "float", "ndim": 2}, "target": "labels",
                    "student_feat": {"kind": "float", "ndim": 2}, "teacher_feat": {"kind": "float", "ndim": 2}},
         "rows": [["logits", "target", "student_feat", "teacher_feat"]], "order": "invariant",
         "params": {"alpha": {"type": "float", "bad": [-0.1, 1.5, float("nan")]},
                    "T": {"type": "float", "bad": [0.0, -1.0, float("nan")]}},
         "known": [{"kwargs": {"logits": logits, "target": y, "student_feat": ft, "teacher_feat": ft},
                    "check": lambda v: abs(v - 0.8 * torch.nn.functional.cross_entropy(
                        torch.as_tensor(logits), torch.as_tensor(y)).item()) < 1e-5,
                    "why": "identical features: the KL term is zero, (1 - alpha) CE remains"}]},
        {"name": "Task", "call": _task, "kwargs": {"X_train": X, "y_train": y},
         "arrays": {"X_train": {"kind": "float", "ndim": 4}, "y_train": "labels"},
         "rows": [["X_train", "y_train"]], "order": "equivariant"},
        {"name": "evaluate_init", "call": _eval, "kwargs": {"X_test": X, "y_test": y},
         "arrays": {"X_test": {"kind": "float", "ndim": 4}, "y_test": "labels"},
         "rows": [["X_test", "y_test"]], "order": "invariant"},
        {"name": "Task.from_folder", "kind": "loader", "write": _folder,
         "read": lambda p: Task.from_folder(p, image_size=8, test_fraction=0.25),
         "check": lambda t: t.meta["classes"] == ["cat", "dog"] and t.X_train.shape == (6, 1, 8, 8),
         "corrupt": [("text-file", lambda p: (p / "cat" / "notes.txt").write_text("x")),
                     ("broken-image", lambda p: (p / "dog" / "0.png").write_bytes(b"x")),
                     ("one-class", lambda p: [f.unlink() for f in (p / "dog").iterdir()] and (p / "dog").rmdir())]},
        {"name": "from_hf", "kind": "loader", "write": _hf_write, "read": _hf_read,
         "check": lambda net: net.spec == ViTSpec(1, 16, 2, 2, 4, 8, 3, ln_eps=1e-12),
         "export": _hf_export, "same": _same_net,
         "corrupt": [("tanh-gelu", lambda p: _set_config(p, hidden_act="gelu_new")),
                     ("odd-mlp", lambda p: _set_config(p, intermediate_size=24)),
                     ("backbone-only", _drop_classifier)]},
        {"name": "task_probabilities", "call": lambda sizes, temperature=2.0: task_probabilities(sizes, temperature),
         "kwargs": {"sizes": np.array([100, 400, 25])},
         "arrays": {"sizes": {"kind": "float", "ndim": 1}}, "rows": [["sizes"]],
         "order": "equivariant",
         "params": {"temperature": {"type": "float", "bad": [0.0, float("nan")]}},
         "known": [{"kwargs": {"sizes": np.array([100, 400]), "temperature": 1.0},
                    "check": lambda p: np.allclose(p, [0.2, 0.8]), "why": "T = 1: proportional"},
                   {"kwargs": {"sizes": np.array([3, 0])}, "raises": ["sizes"],
                    "why": "an empty dataset"}]},
        {"name": "spec_from_timm", "call": lambda embed_dim=8: spec_from_timm(
            _timm_vit(embed_dim=embed_dim)),
         "kwargs": {},
         "known": [{"kwargs": {}, "check": lambda spec: spec == ViTSpec(1, 8, 2, 2, 4, 8, 3, ln_eps=1e-6),
                    "why": "the timm model's geometry"}]},
        {"name": "arch_graph", "call": _arch_nodes, "kwargs": {},
         "params": {"n_classes": {"type": "int", "bad": [0]}}},
        {"name": "TAL.predict", "call": _tal_predict, "kwargs": {"task_emb": np.linspace(-1, 1, 4)},
         "arrays": {"task_emb": {"kind": "float", "ndim": 1}},
         "params": {"n_classes": {"type": "int", "bad": [0, 65]}},
         "grid": {"use_tsl": [False], "scale": ["fan_in"], "standardize_embeddings": [False]},
         "known": [{"kwargs": {"task_emb": np.zeros(5)}, "raises": ["task_emb"],
                    "why": "an embedding of the wrong size"}]},
        {"name": "TAL.save", "kind": "loader", "write": _tal_write, "read": _tal_read,
         "check": lambda t: _tal_same(t, _tal()) and t.get_params() == _tal().get_params(),
         "export": _tal_export, "same": _tal_same,
         "corrupt": ["truncate", "empty", "header"]},
        {"name": "from_timm", "call": _from_timm, "kwargs": {"x": X3},
         "arrays": {"x": {"kind": "float", "ndim": 4}}, "rows": [["x"]], "order": "equivariant",
         "known": [{"kwargs": {"x": X3}, "check": lambda out: np.abs(out - _timm_logits(X3)).max() < 1e-5,
                    "why": "the TinyViT gives the timm model's logits"}]},
        {"name": "to_timm", "call": _to_timm, "kwargs": {"x": X3},
         "known": [{"kwargs": {"x": X3}, "check": lambda out: np.abs(out - _net3_logits(X3)).max() < 1e-5,
                    "why": "the timm model gives the TinyViT's logits"},
                   {"kwargs": {"net": torch.nn.Linear(2, 2)}, "raises": ["net"],
                    "why": "only a TinyViT is exported"}]},
        {"name": "to_hf", "call": _to_hf, "kwargs": {"x": X3},
         "known": [{"kwargs": {"x": X3}, "check": lambda out: np.abs(out - _net3_logits(X3)).max() < 1e-5,
                    "why": "the ViTForImageClassification gives the TinyViT's logits"},
                   {"kwargs": {"net": torch.nn.Linear(2, 2)}, "raises": ["net"],
                    "why": "only a TinyViT is exported"}]},
    ]  # fmt: skip
    return [*out, *_more_entries(), *_embedding_entries(X, y), *_spec_entries(),
            *_family_entries(), *_training_entries()]  # fmt: skip


@functools.cache
def _blocks(kind: str) -> torch.nn.Module:
    """Small eval-mode TinyResNet / TaskFiLM, built once (outside device runs)."""
    from learngene import ResNetSpec, TaskFiLM, TinyResNet

    torch.manual_seed(0)
    if kind == "TinyResNet":
        return TinyResNet(ResNetSpec(blocks=(1, 1), widths=(8, 16)), 3).double().eval()
    return TaskFiLM(4, 8).double().eval()


def _block_forward(kind, *args):
    with torch.no_grad():
        return _blocks(kind)(*args)


def _more_entries() -> list[dict]:
    """TinyResNet and TaskFiLM forwards, the task generators, the task sampler, RandInit."""
    from learngene import (
        RandInit,
        TaskSampler,
        make_mini_decathlon,
        make_proxy_task,
        make_unseen_tasks,
    )

    g = torch.Generator().manual_seed(0)
    x = torch.rand(2, 1, 16, 16, generator=g, dtype=torch.float64)
    h, e = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((5, 8), (4,)))

    def tasks(fn):
        def summary(seed=0):
            return sorted((k, t.X_train.shape, t.n_classes)
                          for k, t in fn(seed, n_train=8, n_test=4).items())  # fmt: skip

        return summary

    return [
        {"name": "TinyResNet.forward", "call": lambda x: _block_forward("TinyResNet", x),
         "kwargs": {"x": x}, "modules": lambda: [_blocks("TinyResNet")]},
        {"name": "TaskFiLM.forward", "call": lambda h, e: _block_forward("TaskFiLM", h, e),
         "kwargs": {"h": h, "e": e}, "modules": lambda: [_blocks("TaskFiLM")]},
        {"name": "make_proxy_task", "call": lambda seed=0: make_proxy_task(
            seed, n_per_class=1, n_test_per_class=1).X_train, "kwargs": {},
         "known": [{"kwargs": {}, "check": lambda X: X.shape == (62, 1, 16, 16),
                    "why": "one image per class of the 62-class proxy task"}]},
        {"name": "make_mini_decathlon", "call": tasks(make_mini_decathlon), "kwargs": {},
         "known": [{"kwargs": {}, "check": lambda ts: len(ts) == 7, "why": "seven tasks"}]},
        {"name": "make_unseen_tasks", "call": tasks(make_unseen_tasks), "kwargs": {}},
        {"name": "TaskSampler.sample", "call": lambda n=6, temperature=2.0: TaskSampler(
            {"a": 10, "b": 30}, temperature, 0).sample(n), "kwargs": {},
         "params": {"temperature": {"type": "float", "bad": [0.0, float("nan")]}}},
        {"name": "RandInit.predict", "call": lambda random_state=0: sum(
            float(p.abs().sum()) for p in RandInit(random_state).predict(TAL_SPEC, n_classes=3)
            .parameters()), "kwargs": {}},
    ]  # fmt: skip


def _ancestry():
    from learngene import TinyViT

    torch.manual_seed(0)
    return TinyViT(SPEC, n_classes=3, head_hidden=8).double().eval()


_ANC: dict = {}


def _anc():
    _ANC.setdefault("a", _ancestry())
    return _ANC["a"]


def _embedding(X_train, y_train, batch_size=1024):
    from learngene import task_embedding

    rng = np.random.default_rng(1)
    X_test = rng.random((4, *np.shape(X_train)[1:]))
    task = Task(X_train, y_train, X_test, np.array([0, 1, 2, 0]), 3)
    return task_embedding(_anc(), task, batch_size)


def _embedding_by_hand(X):
    """The head feature of each image alone, then their mean."""
    a = _anc()
    with torch.no_grad():
        feats = [a.head_features(a.forward_features(torch.as_tensor(x[None]).double()))
                 for x in X.astype(np.float32)]  # fmt: skip
    return torch.cat(feats).mean(0).numpy()


def _embedding_entries(X, y) -> list[dict]:
    return [
        {"name": "task_embedding", "call": _embedding, "kwargs": {"X_train": X, "y_train": y},
         "modules": lambda: [_anc()],
         "arrays": {"X_train": {"kind": "float", "ndim": 4}, "y_train": "labels"},
         "rows": [["X_train", "y_train"]], "order": "invariant",
         "params": {"batch_size": {"type": "int", "bad": [0, -2]}},
         "known": [{"kwargs": {"X_train": X, "y_train": y, "batch_size": 4},
                    "check": lambda e: np.allclose(e, _embedding_by_hand(X), atol=1e-6),
                    "why": "the mean of each image's head feature, one image at a time"},
                   {"kwargs": {"X_train": X[:, :, :4, :4], "y_train": y}, "raises": ["spec"],
                    "check": None, "why": "4x4 images for an 8x8 ancestry"}]},
    ]  # fmt: skip


def _vit_config(**overrides):
    from transformers import ViTConfig

    kw = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
              image_size=8, patch_size=4, num_channels=1, layer_norm_eps=1e-6)  # fmt: skip
    return ViTConfig(**{**kw, **overrides})


def _spec_fields(config=None, **overrides):
    import dataclasses

    from learngene import spec_from_hf

    return dataclasses.astuple(spec_from_hf(_vit_config(**overrides) if config is None else config))


def _hf_round_trip_spec():
    import dataclasses

    from learngene import spec_from_hf, to_hf

    net = _net()
    return dataclasses.astuple(spec_from_hf(to_hf(net))) == dataclasses.astuple(net.spec)


def _spec_entries() -> list[dict]:
    from transformers import BertConfig

    return [
        {"name": "spec_from_hf", "call": _spec_fields, "kwargs": {},
         "known": [{"kwargs": {},
                    "check": lambda f: f == (2, 16, 2, 2, 4, 8, 1, True, 1e-6),
                    "why": "depth, width, heads, mlp_ratio, patch, img, channels, qkv bias, eps"},
                   {"kwargs": {}, "check": lambda f: _hf_round_trip_spec(),
                    "why": "to_hf's config gives back the TinyViT's own spec"},
                   {"kwargs": {"hidden_act": "gelu_new"}, "raises": ["hidden_act"],
                    "check": None, "why": "tanh GELU is not a TinyViT's exact GELU"},
                   {"kwargs": {"intermediate_size": 40}, "raises": ["intermediate_size"],
                    "check": None, "why": "an MLP width that is not a multiple of the width"},
                   {"kwargs": {"image_size": (8, 16)}, "raises": ["image_size"], "check": None,
                    "why": "a non-square image"},
                   {"kwargs": {"config": BertConfig()}, "raises": ["config"], "check": None,
                    "why": "not a ViT config"}]},
    ]  # fmt: skip


def _vit_spec(**kw):
    s = ViTSpec(**({"depth": 2, "width": 8, "heads": 2} | kw))
    return {"n_tokens": s.n_tokens, "fields": s.as_dict()}


def _resnet_spec(**kw):
    from learngene import ResNetSpec

    s = ResNetSpec(**({"blocks": (1, 2), "widths": (8, 16)} | kw))
    return {"depth": s.depth, "fields": s.as_dict()}


def _vit_space(depth=(1, 2), width=(8, 16), heads=(2, 4), n=3, seed=0, n_eval=1):
    from learngene import ViTSpace

    sp = ViTSpace(depth=depth, width=width, heads=heads, img=8)
    tr, ev = sp.split(n_eval, seed=seed)
    return {"specs": [s.as_dict() for s in sp.specs], "sample": [s.as_dict() for s in sp.sample(n, seed)],
            "held_out": [s.as_dict() for s in ev], "n_train": len(tr)}  # fmt: skip


def _resnet_space(stages=(2, 3), blocks=(1, 2), base_width=(8, 16)):
    from learngene import ResNetSpace

    return [s.as_dict() for s in ResNetSpace(stages, blocks, base_width).specs]


def _baseline(name):
    """GHN, GHNMultiTask or TALNoAncestry after one step of each stage it runs (cached)."""
    import learngene as L

    if name not in _TAL:
        torch.set_num_threads(1)
        proxy = L.make_proxy_task(0, n_per_class=1, n_test_per_class=1)
        tasks = L.make_mini_decathlon(0, n_train=8, n_test=4)
        tasks = {k: tasks[k] for k in ("shapes", "counting")}
        space = L.ViTSpace(depth=(1, 1), width=(8,), heads=(2,))
        emb = {k: np.random.default_rng(i).normal(size=4) for i, k in enumerate(tasks)}
        m = getattr(L, name)(**TAL_KW)
        if name == "GHN":
            m.fit(proxy, space, steps=1, meta_batch=1, batch_size=4)
        else:
            m.fit_stage1(proxy, None, space, steps=1, meta_batch=1, batch_size=4)
            m.fit_stage2(tasks, emb, space, steps=1, meta_batch=1, batch_size=4)
        _TAL[name] = m
    return _TAL[name]


def _baseline_predict(name, task_emb, n_classes=3):
    net = _baseline(name).predict(TAL_SPEC, task_emb, n_classes)
    with torch.no_grad():
        return net(_X3).numpy()


def _task_agnostic(name):
    a = _baseline_predict(name, np.linspace(-1, 1, 4))
    b = _baseline_predict(name, np.linspace(1, -1, 4))
    return np.array_equal(a, b)


def _weight_selection(depth=1, width=8, heads=2, n_classes=3, random_state=0, ancestry=None):
    from learngene import WeightSelection

    anc = _anc() if ancestry is None else ancestry
    arch = ViTSpec(depth=depth, width=width, heads=heads, mlp_ratio=SPEC.mlp_ratio,
                   patch=SPEC.patch, img=SPEC.img, in_chans=SPEC.in_chans)  # fmt: skip
    net = WeightSelection(anc, random_state).predict(arch, None, n_classes)
    return {k: v for k, v in net.state_dict().items() if not k.startswith("head.")}


def _inherits_leading_block(r):
    w = r["blocks.0.fc1.weight"]
    src = _anc().state_dict()["blocks.0.fc1.weight"]
    return torch.equal(w, src[: w.shape[0], : w.shape[1]].to(w.dtype))


def _ghn_params(n_classes=3, task_emb=None, hid=8, layers=1, heads=2, lora_r=2, max_shape=16,
                task_dim=4, scale="timm", g=None):  # fmt: skip
    from learngene import GraphHyperNetwork, arch_graph

    torch.manual_seed(0)
    ghn = GraphHyperNetwork(hid, layers, heads, lora_r, max_shape, task_dim, scale).double()
    graph = arch_graph(TAL_SPEC, n_classes=8) if g is None else g
    with torch.no_grad():
        out = ghn(graph, task_emb, n_classes)
    return {k: tuple(v.shape) for k, v in out.items()}


def _net_shapes(n_classes=3):
    from learngene import TinyViT, arch_graph  # noqa: F401

    return {k: tuple(v.shape) for k, v in TinyViT(TAL_SPEC, n_classes, distill_dim=64)
            .state_dict().items()}  # fmt: skip


def _family_entries() -> list[dict]:
    ints = {"type": "int", "bad": [0, 1.5, True]}
    emb = np.linspace(-1, 1, 4)
    out = [
        {
            "name": "ViTSpec",
            "call": _vit_spec,
            "kwargs": {},
            "params": {
                "depth": {**ints, "good": 2},
                "width": {"type": "int", "bad": [0, 9], "good": 8},
                "heads": {"type": "int", "bad": [0, 3], "good": 2},
                "patch": {"type": "int", "bad": [0, 5], "good": 4},
                "qkv_bias": {"bad": ["yes"]},
                "ln_eps": {"type": "float", "bad": [0.0, float("nan")], "good": 1e-5},
            },
            "known": [
                {
                    "kwargs": {"img": 16, "patch": 4},
                    "check": lambda r: r["n_tokens"] == 17,
                    "why": "(16 / 4)^2 patches + the class token",
                }
            ],
        },
        {
            "name": "ResNetSpec",
            "call": _resnet_spec,
            "kwargs": {},
            "params": {
                "blocks": {"bad": [(), (0, 1), "12", (1, 2, 3)]},
                "widths": {"bad": [(8, 6), (8.0, 16)]},
                "img": {"type": "int", "bad": [0, 5], "good": 16},
                "groups": {"type": "int", "bad": [0, 3], "good": 4},
            },
            "known": [
                {
                    "kwargs": {},
                    "check": lambda r: r["depth"] == 1 + 2 * 3,
                    "why": "the stem plus two convolutions per residual block",
                }
            ],
        },
        {
            "name": "ViTSpace",
            "call": _vit_space,
            "kwargs": {},
            "params": {
                "depth": {"bad": [(2, 1), (0, 2), (1.5, 2), "12", (1, 2, 3)]},
                "width": {"bad": [(), (8, 8), (8.0,), "8"]},
                "heads": {"bad": [(0,), (3,)]},
                "n": ints,
                "seed": {"type": "int", "bad": [-1, 0.5], "good": 0},
                "n_eval": {"type": "int", "bad": [-1, 8], "good": 1},
            },
            "known": [
                {
                    "kwargs": {},
                    "check": lambda r: len(r["specs"]) == 8 and r["n_train"] == 7,
                    "why": "2 depths x 2 widths x 2 heads; one spec held out",
                },
                {
                    "kwargs": {"width": (6, 8), "heads": (4,)},
                    "check": lambda r: len(r["specs"]) == 2,
                    "why": "width 6 is not divisible by 4 heads: skipped",
                },
            ],
        },
        {
            "name": "ResNetSpace",
            "call": _resnet_space,
            "kwargs": {},
            "params": {
                "stages": {"bad": [(3, 2), (0, 1), (2.5, 3)]},
                "blocks": {"bad": ["12"]},
                "base_width": {"bad": [(), (8, 8), (0,)]},
            },
            "known": [
                {
                    "kwargs": {},
                    "check": lambda r: len(r) == 8 and r[-1]["widths"] == (16, 32, 64),
                    "why": "2 stage counts x 2 block counts x 2 widths, doubling per stage",
                }
            ],
        },
        {
            "name": "WeightSelection",
            "call": _weight_selection,
            "kwargs": {},
            "params": {
                "random_state": {"type": "int", "bad": [-1], "good": 0},
                "n_classes": {"type": "int", "bad": [0], "good": 3},
                "width": {"type": "int", "bad": [64], "good": 8},
                "ancestry": {"bad": ["vit", torch.nn.Linear(2, 2)]},
            },
            "known": [
                {
                    "kwargs": {},
                    "check": _inherits_leading_block,
                    "why": "a block's tensors are the leading rows and columns of the ancestry's",
                }
            ],
        },
        {
            "name": "GraphHyperNetwork",
            "call": _ghn_params,
            "kwargs": {},
            "grid": {"scale": ["fan_in"]},
            "params": {
                "hid": {"type": "int", "bad": [0, 3], "good": 8},
                "heads": {"type": "int", "bad": [0], "good": 2},
                "layers": {"type": "int", "bad": [0], "good": 1},
                "lora_r": {"type": "int", "bad": [0, 1.5], "good": 2},
                "max_shape": {"type": "int", "bad": [0], "good": 16},
                "task_dim": {"type": "int", "bad": [0], "good": 4},
                "scale": {"type": "str", "bad": ["xavier"]},
                "n_classes": {"type": "int", "bad": [0, 2.5], "good": 3},
                "task_emb": {
                    "bad": [
                        torch.zeros(5, dtype=torch.float64),
                        torch.full((4,), float("nan"), dtype=torch.float64),
                        np.zeros(4),
                    ]
                },
                "g": {"bad": [TAL_SPEC]},
            },
            "known": [
                {
                    "kwargs": {},
                    "check": lambda r: r == _net_shapes(),
                    "why": "one tensor per TinyViT parameter, of its shape",
                },
                {
                    "kwargs": {"task_dim": None, "task_emb": torch.zeros(4, dtype=torch.float64)},
                    "raises": ["task_emb"],
                    "check": None,
                    "why": "a task embedding for a hypernetwork without task layers",
                },
            ],
        },
    ]
    for name in ("GHN", "GHNMultiTask", "TALNoAncestry"):
        out.append({
            "name": f"{name}.predict", "call": functools.partial(_baseline_predict, name),
            "kwargs": {"task_emb": emb},
            "params": {"n_classes": {"type": "int", "bad": [0], "good": 3}},
            "known": [{"kwargs": {"task_emb": emb}, "check": lambda y: y.shape == (2, 3),
                       "why": "a 3-class network's logits on two images"}]
            + ([{"kwargs": {"task_emb": emb}, "check": lambda y, n=name: _task_agnostic(n),
                 "why": "no task-specific layer: the prediction ignores the task"}]
               if name != "TALNoAncestry" else []),
        })  # fmt: skip
    return out


def _tiny_task(n=12, seed=1):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = (rng.random((n, 1, 8, 8)) * 0.3 + y[:, None, None, None] * 0.3).astype(np.float32)
    return Task(X, y, X[:6].copy(), y[:6].copy(), 3)


def _ancestry_fit(epochs=1, lr=1e-3, batch_size=4, weight_decay=0.05, seed=0, verbose=0,
                  depth=1, width=8, heads=2, head_hidden=4, proxy=None):  # fmt: skip
    from learngene import train_ancestry

    net = train_ancestry(_tiny_task() if proxy is None else proxy, depth, width, heads,
                         head_hidden, epochs, lr, batch_size, weight_decay, seed,
                         verbose)  # fmt: skip
    return {"state": net.state_dict(), "acc": net.test_accuracy_}


def _finetuned(epochs=2, lr=1e-3, batch_size=4, weight_decay=0.05, seed=0, verbose=0, net=None,
               task=None):  # fmt: skip
    from learngene import finetune

    src = _net() if net is None else net
    before = {k: v.clone() for k, v in src.state_dict().items()}
    out, curve = finetune(src, _tiny_task() if task is None else task, epochs, lr, batch_size,
                          weight_decay, seed, verbose)  # fmt: skip
    untouched = all(torch.equal(v, src.state_dict()[k]) for k, v in before.items())
    return {"curve": curve, "untouched": untouched, "state": out.state_dict()}


def _prepared(spectrum="polar", reset_head=True, reset_tokens=True, seed=0, net=None):
    from learngene import prepare_for_finetuning

    out = prepare_for_finetuning(_net() if net is None else net, spectrum=spectrum,
                                 reset_head=reset_head, reset_tokens=reset_tokens, seed=seed)  # fmt: skip
    return out.state_dict()


def _orthogonal_rows(state):
    w = state["blocks.0.fc1.weight"].double()  # (16, 8): orthonormal columns times its RMS
    g = w.T @ w
    return torch.allclose(g / g[0, 0], torch.eye(g.shape[0], dtype=g.dtype), atol=1e-5)


def _training_entries() -> list[dict]:
    ints = {"type": "int", "bad": [0, 1.5, "2"]}
    opt = {"epochs": {**ints, "good": 1}, "batch_size": {**ints, "good": 4},
           "lr": {"type": "float", "bad": [0.0, float("inf"), "1e-3"], "good": 1e-3},
           "weight_decay": {"type": "float", "bad": [-0.1, float("nan")], "good": 0.05},
           "seed": {"type": "int", "bad": [-1, 0.5], "good": 0}, "verbose": {"bad": ["yes"]}}  # fmt: skip
    return [
        {"name": "train_ancestry", "call": _ancestry_fit, "kwargs": {},
         "params": {**opt, "head_hidden": {"type": "int", "bad": [0], "good": 4},
                    "heads": {"type": "int", "bad": [3], "good": 2},
                    "proxy": {"bad": [(np.zeros((4, 1, 8, 8)), np.zeros(4))]}},
         "known": [{"kwargs": {}, "check": lambda r: 0 <= r["acc"] <= 1
                    and r["state"]["pre_logits.weight"].shape == (4, 8),
                    "why": "a head_hidden feature layer (the ancestry feature); accuracy in [0, 1]"}]},
        {"name": "finetune", "call": _finetuned, "kwargs": {},
         "params": {**opt, "epochs": {**ints, "good": 2},
                    "net": {"bad": [torch.nn.Linear(2, 2), RandInit(0).predict(SPEC, n_classes=4)]},
                    "task": {"bad": ["task"]}},
         "known": [{"kwargs": {}, "check": lambda r: r["untouched"] and len(r["curve"]) == 2,
                    "why": "a fine-tuned copy (the input net is untouched); one accuracy per epoch"}]},
        {"name": "prepare_for_finetuning", "call": _prepared, "kwargs": {},
         "grid": {"spectrum": ["keep"], "reset_head": [False], "reset_tokens": [False]},
         "params": {"spectrum": {"type": "str", "bad": ["svd"]}, "reset_head": {"bad": ["no", 1]},
                    "reset_tokens": {"bad": [None]}, "seed": {"type": "int", "bad": [-1], "good": 0},
                    "net": {"bad": ["net"]}},
         "known": [{"kwargs": {}, "check": _orthogonal_rows,
                    "why": "a hidden matrix becomes its polar factor: W^T W proportional to I"},
                   {"kwargs": {"spectrum": "keep", "reset_head": False, "reset_tokens": False},
                    "check": lambda r: all(torch.equal(v, _net().state_dict()[k]) for k, v in r.items()),
                    "why": "keep everything: an exact copy"}]},
    ]  # fmt: skip
