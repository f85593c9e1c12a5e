"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import numpy as np
import torch

from learngene import RandInit, Task, ViTSpec, evaluate_init, kd_loss

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


def entries() -> list[dict]:
    rng = np.random.default_rng(0)
    X = rng.random((6, 1, 8, 8)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2])
    logits = rng.normal(size=(6, 3)).astype(np.float32)
    fs, ft = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 4)).astype(np.float32)
    return [
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
    ]  # fmt: skip
