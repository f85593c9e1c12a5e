"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import numpy as np
import torch

from qat_dg import (
    ERM,
    EoQ,
    SmallCNN,
    accuracy,
    build_model,
    default_hparams,
    dequantize_export,
    export_quantized,
    get_algorithm_class,
    init_step_size,
    load_domainbed,
    lsq_fake_quant,
    model_size_bits,
    quant_range,
)
from qat_dg.quant import quantize_model


def _fq(weight, bits=4):
    w = torch.as_tensor(weight)
    return lsq_fake_quant(w, torch.tensor(0.25, dtype=w.dtype), bits).numpy()


def _step(weight, bits=7):
    return init_step_size(torch.as_tensor(weight), bits).numpy()


def _erm():
    torch.manual_seed(0)
    algo = ERM((1, 8, 8), 3, 2)
    g = torch.Generator().manual_seed(0)
    batch = [(torch.rand(6, 1, 8, 8, generator=g), torch.tensor([0, 1, 2] * 2)) for _ in range(2)]
    algo.update(batch)
    return algo.eval()


_ALGO = None


def _predict(x):
    global _ALGO
    _ALGO = _ALGO or _erm()
    with torch.no_grad():
        return _ALGO.predict(torch.as_tensor(x)).numpy()


def _acc(x, y):
    global _ALGO
    _ALGO = _ALGO or _erm()
    return accuracy(_ALGO, torch.as_tensor(x), torch.as_tensor(y))


def _eoq(x):
    torch.manual_seed(0)
    members = [quantize_model(SmallCNN(1, 3, 8)) for _ in range(2)]
    with torch.no_grad():
        return EoQ(members).eval().predict(torch.as_tensor(x)).numpy()


def _export_exact(_):
    torch.manual_seed(0)
    q = quantize_model(SmallCNN(1, 3, 8), bits=5)
    back = dequantize_export(export_quantized(q))
    return all(
        torch.allclose(back[f"{name}.weight"], m.quantizer(m.weight))
        for name, m in q.named_modules() if hasattr(m, "quantizer")
    )  # fmt: skip


_SWITCH = {"quant_start_step": 1, "sma_start_step": 1, "swa_start_step": 1, "swa_freq": 1}


def _trained(algorithm, x, y, **hparams):
    """``algorithm`` after three DomainBed updates on (x, y) halves as two source domains, its
    regime switch (QAT, SMA, SWA) at step 1; the predictions on fixed images."""
    from qat_dg import default_hparams, get_algorithm_class

    torch.manual_seed(0)
    hp = {**default_hparams(algorithm), **hparams}
    hp.update({k: v for k, v in _SWITCH.items() if k in hp})
    algo = get_algorithm_class(algorithm)((1, 8, 8), 3, 2, hp)
    x, y = torch.as_tensor(x), torch.as_tensor(y)
    half = len(x) // 2
    batches = [(x[:half], y[:half]), (x[half:], y[half:])] if x.ndim and y.ndim else [(x, y)]
    for _ in range(3):
        algo.update(batches)
        algo.on_checkpoint(x, y)  # SWAD's loss-valley segments
    if hasattr(algo, "finalize"):
        algo.finalize(x, y)
    with torch.no_grad():
        return algo.eval().predict(torch.as_tensor(_X_FIXED)).numpy()


_X_FIXED = np.random.default_rng(7).random((4, 1, 8, 8)).astype(np.float32)


def _qtdog(x, y, bits=7, per_channel=True, symmetric=False, freeze_quantized_after_switch=False):
    return _trained("QTDoG", x, y, bits=bits, per_channel=per_channel, symmetric=symmetric,
                    freeze_quantized_after_switch=freeze_quantized_after_switch)  # fmt: skip


def _algorithm(name):
    def call(x, y):
        return _trained(name, x, y)

    call.__name__ = f"_{name}"
    return call


def _folders(folder):
    from PIL import Image

    rng = np.random.default_rng(0)
    for d in ("photo", "sketch"):
        for c in ("dog", "horse"):
            (folder / d / c).mkdir(parents=True)
            for i in range(2):
                Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(
                    folder / d / c / f"{i}.png"
                )
    return folder


def entries() -> list[dict]:
    rng = np.random.default_rng(0)
    W = rng.normal(size=(6, 5)).astype(np.float32)
    X = rng.random((5, 1, 8, 8)).astype(np.float32)
    Xtr = rng.random((8, 1, 8, 8)).astype(np.float32)
    ytr = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    train = {
        "kwargs": {"x": Xtr, "y": ytr},
        "arrays": {"x": {"kind": "float", "ndim": 4}, "y": {"kind": "labels", "ndim": 1}},
        "rows": [["x", "y"]],
        "min_rows": 2,
    }
    out = [
        {
            "name": "QTDoG.update",
            "call": _qtdog,
            **train,
            "params": {"bits": {"type": "int", "bad": [1, 17]}},
            "grid": {
                "bits": [4, 8],
                "per_channel": [False],
                "symmetric": [True],
                "freeze_quantized_after_switch": [True],
            },
        },
        *[
            {"name": f"{name}.update", "call": _algorithm(name), **train}
            for name in (
                "SAM",
                "ERM_SMA",
                "NoiseInjection",
                "PTQ",
                "FrozenFP",
                "TorchQAT",
                "SWA",
                "SWAD",
            )
        ],
        {
            "name": "quant_range",
            "call": quant_range,
            "kwargs": {"bits": 7},
            "params": {"bits": {"type": "int", "bad": [1, 17]}},
            "grid": {"symmetric": [True], "all_positive": [True]},
            "known": [
                {"kwargs": {"bits": 4}, "check": lambda r: r == (8, 7), "why": "signed 4-bit"},
                {
                    "kwargs": {"bits": 4, "symmetric": True},
                    "check": lambda r: r == (7, 7),
                    "why": "symmetric 4-bit",
                },
            ],
        },
        {
            "name": "default_hparams",
            "call": default_hparams,
            "kwargs": {"algorithm": "QTDoG"},
            "params": {"algorithm": {"type": "str", "bad": ["FedAvg"]}},
            "known": [
                {
                    "kwargs": {"algorithm": "QTDoG"},
                    "check": lambda hp: hp["bits"] == 7,
                    "why": "QT-DoG's 7-bit default",
                }
            ],
        },
        {
            "name": "get_algorithm_class",
            "call": lambda name: get_algorithm_class(name).__name__,
            "kwargs": {"name": "SWAD"},
            "params": {"name": {"type": "str", "bad": ["FedAvg"]}},
        },
        {
            "name": "build_model",
            "call": lambda arch="small_cnn", num_classes=3, width=None: sum(
                p.numel() for p in build_model(arch, (1, 8, 8), num_classes, width).parameters()
            ),
            "kwargs": {},
            "params": {
                "arch": {"type": "str", "bad": ["vgg"]},
                "num_classes": {"type": "int", "bad": [1, 0]},
            },
            "grid": {"arch": ["mlp"]},
        },
        {
            "name": "model_size_bits",
            "call": lambda bits=5: model_size_bits(quantize_model(SmallCNN(1, 3, 8), bits=bits)),
            "kwargs": {},
            "params": {"bits": {"type": "int", "bad": [1, 17]}},
            "known": [
                {
                    "kwargs": {"bits": 8},
                    "check": lambda b: (
                        b < 32 * sum(p.numel() for p in SmallCNN(1, 3, 8).parameters())
                    ),
                    "why": "quantized convs store fewer bits than float32",
                }
            ],
        },
        {
            "name": "lsq_fake_quant",
            "call": _fq,
            "kwargs": {"weight": W},
            "arrays": {"weight": {"kind": "float", "ndim": (1, 2, 3, 4, 5)}},
            "rows": [["weight"]],
            "order": "equivariant",
            "params": {"bits": {"type": "int", "bad": [1, 17]}},
            "known": [
                {
                    "kwargs": {"weight": np.array([[0.3, -0.1, 9.0]], np.float32), "bits": 4},
                    "check": lambda q: np.allclose(q, [[0.25, 0.0, 1.75]]),
                    "why": "round to the 0.25 grid, clip at Q_P = 7 steps",
                }
            ],
        },
        {
            "name": "init_step_size",
            "call": _step,
            "kwargs": {"weight": W},
            "arrays": {"weight": {"kind": "float", "ndim": (1, 2, 3, 4, 5)}},
            "rows": [["weight"]],
            "order": "equivariant",
            "params": {"bits": {"type": "int", "bad": [1, 17]}},
        },
        {
            "name": "ERM.predict",
            "call": _predict,
            "kwargs": {"x": X},
            "arrays": {"x": {"kind": "float", "ndim": 4}},
            "rows": [["x"]],
            "order": "equivariant",
        },
        {
            "name": "accuracy",
            "call": _acc,
            "kwargs": {"x": X, "y": np.array([0, 1, 2, 0, 1])},
            "arrays": {"x": {"kind": "float", "ndim": 4}, "y": "labels"},
            "rows": [["x", "y"]],
            "order": "invariant",
        },
        {
            "name": "EoQ.predict",
            "call": _eoq,
            "kwargs": {"x": X},
            "arrays": {"x": {"kind": "float", "ndim": 4}},
            "rows": [["x"]],
            "order": "equivariant",
        },
        {
            "name": "export_quantized",
            "call": _export_exact,
            "kwargs": {"_": 0},
            "known": [
                {
                    "kwargs": {"_": 0},
                    "check": bool,
                    "why": "codes * step reproduce the fake-quantized weights",
                }
            ],
        },
        {
            "name": "load_domainbed",
            "kind": "loader",
            "write": _folders,
            "read": lambda p: load_domainbed(p, image_size=8),
            "check": lambda ds: (
                ds.env_names == ["photo", "sketch"]
                and ds.class_names == ["dog", "horse"]
                and [y.tolist() for _, y in ds.envs] == [[0, 0, 1, 1]] * 2
            ),
            "corrupt": [
                (
                    "missing-class",
                    lambda p: [f.unlink() for f in (p / "sketch" / "horse").iterdir()],
                ),
                ("broken-image", lambda p: (p / "photo" / "dog" / "0.png").write_bytes(b"x")),
                ("text-file", lambda p: (p / "photo" / "dog" / "labels.txt").write_text("x")),
            ],
        },
    ]
    return out  # fmt: skip
