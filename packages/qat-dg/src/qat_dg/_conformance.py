"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

import qat_dg
from qat_dg import (
    ERM,
    CorruptedDigits,
    EoQ,
    ImageFiles,
    PretrainDigits,
    RotatedDigits,
    SmallCNN,
    StyledDigits,
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
    split_domains,
)
from qat_dg.quant import quantize_model


def _flat_domains(ds):
    """Every domain's images and labels as one float64 vector (for the contract's checks)."""
    return torch.cat([torch.cat([x.flatten().double(), y.double()]) for x, y in ds.envs])


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


@functools.cache
def _module(kind: str) -> torch.nn.Module:
    """One small eval-mode module of each public class, built once (outside any device run)."""
    torch.manual_seed(0)
    if kind == "MLP":
        m = qat_dg.MLP(64, 3, hidden=8)
    elif kind == "SmallCNN":
        m = qat_dg.SmallCNN(1, 3, 4)
    elif kind == "ResNet18":
        m = qat_dg.ResNet18(1, 3)
    elif kind == "FakeQuantConv2d":
        m = quantize_model(torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3)), bits=4)[0]
    elif kind == "FakeQuantLinear":
        m = quantize_model(torch.nn.Sequential(torch.nn.Linear(64, 3)), bits=4,
                           targets=("linear",))[0]  # fmt: skip
    elif kind == "Int8Conv2d":
        m = qat_dg.Int8Conv2d(_module("FakeQuantConv2d"))
    elif kind == "Int8Linear":
        m = qat_dg.Int8Linear(_module("FakeQuantLinear"))
    elif kind == "Ensemble":
        m = qat_dg.Ensemble([qat_dg.SmallCNN(1, 3, 4), qat_dg.SmallCNN(1, 3, 4)])
    else:
        raise KeyError(kind)
    return m.double().eval() if not kind.startswith("Int8") else m.eval()


_ONE_PER_CLASS = "selects the class this entry covers (one entry per class)"


def _forward(kind: str, x):
    """The module's output on ``x`` (flattened first for the linear layers)."""
    m = _module(kind)
    x = torch.as_tensor(x).to(next(m.parameters()).dtype)
    if kind in ("MLP", "FakeQuantLinear", "Int8Linear"):
        x = x.flatten(1)
    with torch.no_grad():
        return m(x)


def _module_entries(X: np.ndarray, W: np.ndarray) -> list[dict]:
    out = []
    for kind in ("MLP", "SmallCNN", "ResNet18", "FakeQuantConv2d", "FakeQuantLinear",
                 "Int8Conv2d", "Int8Linear", "Ensemble"):  # fmt: skip
        out.append({
            "name": f"{kind}.forward",
            "call": lambda x, kind=kind: _forward(kind, x),
            "kwargs": {"x": X},
            "modules": lambda kind=kind: [_module(kind)],
            "fixed": {"kind": _ONE_PER_CLASS},
            # building blocks follow torch.nn (NaN propagates, an empty batch gives an empty
            # output; a check per forward would cost a device sync): the algorithms validate
            # their batches upstream. Determinism, pickling, devices and bf16 are checked here.
        })  # fmt: skip
    out.append({
        "name": "LSQQuantizer.forward",
        "call": lambda weight, bits=4, per_channel=True: _lsq(weight, bits, per_channel),
        "modules": lambda: [_quantizer(4, True), _quantizer(4, False)],
        "kwargs": {"weight": torch.as_tensor(W)},
        "params": {"bits": {"type": "int", "bad": [1, 17]}},
        "grid": {"per_channel": [False]},
    })  # fmt: skip
    model = lambda: quantize_model(qat_dg.SmallCNN(1, 3, 4), bits=5)  # noqa: E731
    out += [
        {"name": "quantize_model", "call": lambda bits=5: sum(
            1 for _ in qat_dg.quantized_modules(quantize_model(qat_dg.SmallCNN(1, 3, 4), bits=bits))),
         "kwargs": {}, "params": {"bits": {"type": "int", "bad": [1, 17]}},
         "known": [{"kwargs": {"bits": 8}, "check": lambda n: n == 3,
                    "why": "the three convolutions of SmallCNN are quantized"}]},
        {"name": "is_quantized", "call": lambda quantized=True: qat_dg.is_quantized(
            model() if quantized else qat_dg.SmallCNN(1, 3, 4)), "kwargs": {},
         "grid": {"quantized": [False]},
         "known": [{"kwargs": {"quantized": False}, "check": lambda b: b is False,
                    "why": "a float model is not quantized"}]},
        {"name": "quantized_modules", "call": lambda: [n for n, _ in qat_dg.quantized_modules(model())],
         "kwargs": {}, "known": [{"kwargs": {}, "check": lambda names: names == [
             "features.0", "features.3", "features.6"], "why": "the convolutions, in order"}]},
        {"name": "quant_parameters", "call": lambda: len(list(qat_dg.quant_parameters(model()))),
         "kwargs": {}, "known": [{"kwargs": {}, "check": lambda n: n == 3,
                                  "why": "one step size per quantized layer"}]},
        {"name": "model_size_bytes", "call": lambda bits=5: qat_dg.model_size_bytes(
            quantize_model(qat_dg.SmallCNN(1, 3, 4), bits=bits)), "kwargs": {},
         "known": [{"kwargs": {"bits": 8}, "check": lambda b: b < 4 * sum(
             p.numel() for p in qat_dg.SmallCNN(1, 3, 4).parameters()),
             "why": "quantized weights take fewer bytes than float32"}]},
        {"name": "saved_size_bytes", "call": lambda: qat_dg.saved_size_bytes(
            qat_dg.to_int8(model())), "kwargs": {}},
        {"name": "rounding_noise_stats", "call": lambda: sorted(
            qat_dg.rounding_noise_stats(model())), "kwargs": {},
         "known": [{"kwargs": {}, "check": lambda k: k == ["features.0", "features.3", "features.6"],
                    "why": "one record per quantized layer"}]},
        {"name": "to_int8", "call": lambda mode="weight_only": _int8(X, mode), "kwargs": {},
         "params": {"mode": {"type": "str", "bad": ["int4"]}}, "grid": {"mode": ["static"]},
         "known": [{"kwargs": {"mode": "static"},
                    "check": lambda y: np.allclose(y, _int8(X, "weight_only"), atol=0.5),
                    "why": "calibrated int8 activations stay near the weight-only model's outputs"}]},
        {"name": "dequantize_export", "call": _export_exact, "kwargs": {"_": 0},
         "known": [{"kwargs": {"_": 0}, "check": bool,
                    "why": "dequantize_export(export_quantized(m)) equals the fake-quantized weights"}]},
    ]  # fmt: skip
    return out


@functools.cache
def _quantizer(bits: int, per_channel: bool) -> torch.nn.Module:
    """An LSQ quantizer for the 6-row example weight, built once (outside any device run)."""
    return qat_dg.LSQQuantizer(6, bits=bits, per_channel=per_channel)


def _lsq(weight, bits, per_channel):
    return _quantizer(bits, per_channel)(weight).detach()


def _int8(x, mode):
    torch.manual_seed(0)
    calib = torch.as_tensor(x).float() if mode == "static" else None
    m = qat_dg.to_int8(quantize_model(qat_dg.SmallCNN(1, 3, 4), bits=7).eval(), mode, calib)
    with torch.no_grad():
        return m(torch.as_tensor(x).float()).numpy()


def entries() -> list[dict]:
    global _SMALL_DS
    _SMALL_DS = RotatedDigits((0, 45), size=8, seed=0)
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
        {
            "name": "RotatedDigits",
            "call": lambda size=8, seed=0: _flat_domains(
                RotatedDigits((0, 30, 60), size=size, seed=seed)
            ),
            "kwargs": {},
            "params": {"size": {"type": "int", "bad": [0, -1]}},
        },
        {
            "name": "CorruptedDigits",
            "call": lambda size=8, noise_std=0.25, blur_sigma=1.0: _flat_domains(
                CorruptedDigits(size=size, noise_std=noise_std, blur_sigma=blur_sigma)
            ),
            "kwargs": {},
            "params": {
                "size": {"type": "int", "bad": [0]},
                "noise_std": {"type": "float", "bad": [-0.1, float("nan")]},
                "blur_sigma": {"type": "float", "bad": [-1.0, float("inf")]},
            },
        },
        {
            "name": "StyledDigits",
            "call": lambda size=8, n_per_domain=20, max_rotation=15.0: _flat_domains(
                StyledDigits(size=size, n_per_domain=n_per_domain, max_rotation=max_rotation)
            ),
            "kwargs": {},
            "params": {
                "size": {"type": "int", "bad": [0]},
                "n_per_domain": {"type": "int", "bad": [0]},
                "max_rotation": {"type": "float", "bad": [float("nan"), -5.0]},
            },
        },
        {
            "name": "PretrainDigits",
            "call": lambda size=8, n=40: torch.cat(
                [t.flatten().double() for t in PretrainDigits(size=size, n=n)]
            ),
            "kwargs": {},
            "params": {"size": {"type": "int", "bad": [0]}, "n": {"type": "int", "bad": [0]}},
        },
        {
            "name": "split_domains",
            "call": lambda holdout_fraction=0.2, seed=0: torch.cat(
                [torch.cat(p).double() for p in split_domains(_SMALL_DS, holdout_fraction, seed)]
            ),
            "kwargs": {},
            "params": {"holdout_fraction": {"type": "float", "bad": [0.0, 1.0, float("nan")]}},
            "known": [
                {
                    "kwargs": {},
                    "check": lambda idx: len(idx) == sum(len(e[1]) for e in _SMALL_DS.envs),
                    "why": "every image in exactly one of its domain's two splits",
                }
            ],
        },
        {
            "name": "ImageFiles",
            "kind": "loader",
            "write": _folders,
            "read": lambda p: load_domainbed(p, image_size=8, stream=True).envs[0][0],
            "check": lambda files: (
                isinstance(files, ImageFiles)
                and files.shape == (4, 3, 8, 8)
                and torch.equal(files.load(), files[torch.arange(4)])
                and torch.equal(files[1], files.subset(torch.tensor([1])).load()[0])
            ),
            "corrupt": [
                ("broken-image", lambda p: (p / "photo" / "dog" / "0.png").write_bytes(b"x")),
                ("text-file", lambda p: (p / "photo" / "dog" / "labels.txt").write_text("x")),
            ],
        },
    ]
    return out + _module_entries(X, W) + _flatness_entries() + _training_entries()  # fmt: skip


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)
    ).double()


_MLP = _mlp()


def _flatness(x, y, n_directions=3, seed=0, normalize="sphere", radii=("rel", (0.0, 0.05))):
    out = qat_dg.local_flatness(_MLP, torch.nn.functional.cross_entropy, (x, y), radii,
                                n_directions, seed=seed, normalize=normalize)  # fmt: skip
    return np.array([out["radius"], out["mean"], out["std"]])


def _flatness_entries() -> list[dict]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(20, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (20,), generator=g)
    with torch.no_grad():
        base = float(torch.nn.functional.cross_entropy(_MLP(x), y))
    norm = float(torch.sqrt(sum((p.detach() ** 2).sum() for p in _MLP.parameters())))
    return [
        {"name": "local_flatness", "call": _flatness, "kwargs": {"x": x, "y": y},
         "modules": lambda: [_MLP],
         "arrays": {"x": {"kind": "float", "ndim": 2}, "y": {"kind": "labels", "ndim": 1}},
         "rows": [["x", "y"]], "order": "invariant",
         "params": {"n_directions": {"type": "int", "bad": [0, -1]},
                    "normalize": {"type": "str", "bad": ["layer"]}},
         "grid": {"normalize": ["filter"], "n_directions": [1]},
         "known": [{"kwargs": {"x": x, "y": y},
                    "check": lambda r: r[1, 0] == 0 and r[2, 0] == 0
                    and abs(r[0, 1] - 0.05 * norm) < 1e-12,
                    "why": "radius 0 adds nothing; a relative radius is gamma ||w||"},
                   {"kwargs": {"x": x, "y": y, "radii": ("rel", (0.0, 1e-4)), "n_directions": 8},
                    "check": lambda r: abs(r[1, 1]) < 1e-3 * base,
                    "why": "a tiny sphere barely moves the loss (second order in gamma)"},
                   {"kwargs": {"x": x, "y": y, "radii": ("ratio", (0.1,))}, "raises": ["radii"],
                    "check": None, "why": "an unknown radius mode"},
                   {"kwargs": {"x": x, "y": y, "radii": (0.1, -0.2)}, "raises": ["radii"],
                    "check": None, "why": "a negative radius"}]},
    ]  # fmt: skip


def _tiny_domains(n=12, k=3, seed=0, **kw):
    """Three hand-made domains of n 1x8x8 images over k classes (a shifted brightness each)."""
    g = torch.Generator().manual_seed(seed)
    envs = [(torch.rand(n, 1, 8, 8, generator=g) * 0.5 + 0.2 * e, torch.arange(n) % k)
            for e in range(3)]  # fmt: skip
    return qat_dg.DomainDataset(**{"envs": envs, "env_names": ["a", "b", "c"],
                                   "num_classes": k} | kw)  # fmt: skip


def _dataset(**kw):
    ds = _tiny_domains(**{k: kw.pop(k) for k in ("seed",) if k in kw}, **kw)
    return {"names": ds.env_names, "shape": ds.input_shape, "n": len(ds), "k": ds.num_classes}


def _bad_envs(change):
    envs = list(_tiny_domains().envs)
    envs[1] = change(*envs[1])
    return envs


def _algo(input_shape=(1, 8, 8), num_classes=3, num_domains=2, hparams=None):
    torch.manual_seed(0)
    a = qat_dg.ERM(input_shape, num_classes, num_domains, hparams)
    with torch.no_grad():
        return {"hp": a.hparams["batch_size"], "logits": a.predict(torch.zeros(1, *a.input_shape))}


def _quant_cfg(**kw):
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(),
                              torch.nn.Linear(72, 3))  # fmt: skip
    q = quantize_model(net, qat_dg.QuantConfig(**kw))
    return {n: tuple(m.quantizer.step.shape) for n, m in qat_dg.quantized_modules(q)}


def _train_cfg(**kw):
    import dataclasses

    return dataclasses.asdict(qat_dg.TrainConfig(**kw))


_FAST = {"n_steps": 2, "checkpoint_freq": 1, "keep_model": False}


def _domain(test_env=0, algorithm="ERM", hparams=None, cfg=None, dataset=None):
    before = torch.get_num_threads()
    r = qat_dg.train_domain(_tiny_domains() if dataset is None else dataset, algorithm, test_env,
                            {"batch_size": 4} if hparams is None else hparams,
                            qat_dg.TrainConfig(**_FAST) if cfg is None else cfg)  # fmt: skip
    return {k: r[k] for k in ("test_env", "iid", "oracle", "last")} | {
        "steps": [rec["step"] for rec in r["records"]],
        "threads_kept": torch.get_num_threads() == before,
    }


def _loo(algorithm="ERM", cfg=None, dataset=None):
    r = qat_dg.train_loo(
        _tiny_domains() if dataset is None else dataset,
        algorithm,
        {"batch_size": 4},
        qat_dg.TrainConfig(**_FAST) if cfg is None else cfg,
    )
    return {e: v["iid"] for e, v in r.items()}


def _pretrain(x, y, n_steps=3, batch_size=8, lr=2e-3, seed=0, verbose=False):
    state, info = qat_dg.pretrain_backbone(x, y, n_steps=n_steps, batch_size=batch_size, lr=lr,
                                           seed=seed, verbose=verbose)  # fmt: skip
    return {"state": state, "loss_first": info["loss_first"]}


def _training_entries() -> list[dict]:
    g = torch.Generator().manual_seed(11)
    xp, yp = torch.rand(24, 1, 8, 8, generator=g), torch.arange(24) % 4
    ints = {"type": "int", "bad": [0, -1, 1.5]}
    return [
        {"name": "DomainDataset", "call": _dataset, "kwargs": {},
         "params": {"num_classes": {"type": "int", "bad": [1, 2, 2.5], "good": 3},
                    "env_names": {"bad": ["abc", ["a", "b"], ["a", "a", "b"], ["a", 2, "c"]]},
                    "class_names": {"bad": ["xyz", ["x", "y"], [1, 2, 3]]},
                    "envs": {"bad": [[], "envs",
                                     _bad_envs(lambda x, y: (x, y.float())),
                                     _bad_envs(lambda x, y: (x[:, :, :4], y)),
                                     _bad_envs(lambda x, y: (x[:5], y)),
                                     _bad_envs(lambda x, y: (x * float("nan"), y)),
                                     _bad_envs(lambda x, y: (x, y - 1))]}},
         "known": [{"kwargs": {}, "check": lambda r: r["shape"] == (1, 8, 8) and r["n"] == 3,
                    "why": "input_shape is (C, H, W) of one image; one entry per domain"},
                   {"kwargs": {"class_names": ["x", "y", "z"]},
                    "check": lambda r: r["k"] == 3, "why": "one name per class"}]},
        {"name": "Algorithm[ERM]", "call": _algo, "kwargs": {},
         "params": {"num_classes": {"type": "int", "bad": [1, 2.7, "3"]},
                    "num_domains": {"type": "int", "bad": [0, 1.5]},
                    "input_shape": {"bad": ["1x8x8", (1.5, 8, 8), (), (0, 8, 8)]},
                    "hparams": {"bad": [{"lr": "1e-3"}, {"batch_size": 0}, {"nonsense": 1},
                                        {"lr": float("inf")}]}},
         "known": [{"kwargs": {"hparams": {"batch_size": np.int64(16), "lr": np.float32(1e-3)}},
                    "check": lambda r: r["hp"] == 16 and type(r["hp"]) is int,
                    "why": "numpy hyper-parameters from a sweep are accepted (were refused)"},
                   {"kwargs": {"num_classes": 5}, "check": lambda r: r["logits"].shape == (1, 5),
                    "why": "one logit per class"}]},
        {"name": "QuantConfig", "call": _quant_cfg, "kwargs": {},
         "params": {"bits": {"type": "int", "bad": [1, 17], "good": 7},
                    "per_channel": {"bad": ["no", 0]}, "symmetric": {"bad": ["yes"]},
                    "quantize_activations": {"bad": [True]},
                    "targets": {"bad": [(), ("attention",), (3,)]},
                    "exclude": {"bad": [(None,), 5]},
                    "grad_scale": {"type": "str", "bad": ["layer"]}},
         "known": [{"kwargs": {}, "check": lambda r: r == {"0": (2,)},
                    "why": "default: the convolution only, one step per output channel"},
                   {"kwargs": {"targets": ("conv", "linear"), "per_channel": False, "exclude": ()},
                    "check": lambda r: r == {"0": (), "2": ()},
                    "why": "both layer types, one step per tensor"},
                   {"kwargs": {"targets": "linear", "exclude": "2"}, "raises": ["targets"],
                    "check": None, "why": "nothing left to quantize"}]},
        {"name": "TrainConfig", "call": _train_cfg, "kwargs": {},
         "params": {"n_steps": {"type": "int", "bad": [0, 1.5], "good": 10},
                    "checkpoint_freq": {"type": "int", "bad": [0], "good": 5},
                    "holdout_fraction": {"type": "float", "bad": [0.0, 1.0, float("nan"), "0.2"],
                                         "good": 0.2},
                    "test_envs": {"bad": ["0", [], [0, 0], [-1], [0.5]]},
                    "seed": {"type": "int", "bad": [-1], "good": 0}, "threads": {**ints, "good": 1},
                    "keep_model": {"bad": ["yes"]}, "verbose": {"bad": [1]}},
         "known": [{"kwargs": {"n_steps": np.int64(10), "test_envs": (np.int64(1), 2)},
                    "check": lambda r: r["n_steps"] == 10 and r["test_envs"] == [1, 2],
                    "why": "numpy ints are stored as ints; test_envs as a list"}]},
        {"name": "train_domain", "call": _domain, "kwargs": {},
         "grid": {"algorithm": ["QTDoG", "SAM", "SWAD"]},
         "params": {"test_env": {"type": "int", "bad": [3, -1, 1.7, True]},
                    "algorithm": {"type": "str", "bad": ["FedAvg"]},
                    "hparams": {"bad": [[("lr", 1e-3)], {"lr": -1.0}]},
                    "cfg": {"bad": [{"n_steps": 2}]}},
         "known": [{"kwargs": {}, "check": lambda r: r["steps"] == [1, 2]
                    and 0 <= r["iid"] <= 1 and r["test_env"] == 0,
                    "why": "a checkpoint every step; accuracies in [0, 1]"},
                   {"kwargs": {"dataset": _tiny_domains().envs}, "raises": ["dataset"],
                    "check": None, "why": "a list, not a DomainDataset"},
                   {"kwargs": {"cfg": qat_dg.TrainConfig(**_FAST, threads=1)},
                    "check": lambda r: r["threads_kept"],
                    "why": "the caller's thread count is restored (was left at cfg.threads)"}]},
        {"name": "train_loo", "call": _loo, "kwargs": {},
         "fixed": {"algorithm": "train_loo runs train_domain once per domain; train_domain's "
                                "grid covers the algorithms"},
         "params": {"algorithm": {"type": "str", "bad": ["FedAvg"]},
                    "cfg": {"bad": [qat_dg.TrainConfig(**_FAST, test_envs=[0, 5]), "cfg"]}},
         "known": [{"kwargs": {"cfg": qat_dg.TrainConfig(**_FAST, test_envs=[2, 0])},
                    "check": lambda r: list(r) == [2, 0],
                    "why": "one run per listed target, in order"},
                   {"kwargs": {}, "check": lambda r: list(r) == [0, 1, 2],
                    "why": "default: every domain once"}]},
        {"name": "pretrain_backbone", "call": _pretrain, "kwargs": {"x": xp, "y": yp},
         "arrays": {"x": {"kind": "float", "ndim": 4}, "y": {"kind": "labels", "ndim": 1}},
         "rows": [["x", "y"]], "min_rows": 20,
         "params": {"n_steps": {**ints, "good": 3}, "batch_size": {**ints, "good": 8},
                    "lr": {"type": "float", "bad": [0.0, float("inf"), "2e-3"], "good": 2e-3},
                    "seed": {"type": "int", "bad": [-1], "good": 0},
                    "verbose": {"bad": ["no"]}},
         "known": [{"kwargs": {"x": xp, "y": yp},
                    "check": lambda r: all(k.startswith(("0.", "1.", "2.", "3.", "4.", "5.",
                                                         "6.", "7.", "8.", "9.")) or "." in k
                                           for k in r["state"]) and len(r["state"]) > 0,
                    "why": "the features module's weights, for hparams['pretrained']"},
                   {"kwargs": {"x": xp, "y": yp - 1}, "raises": ["y"], "check": None,
                    "why": "a negative class id"}]},
    ]  # fmt: skip
