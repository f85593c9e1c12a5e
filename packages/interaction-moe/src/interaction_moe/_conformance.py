"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools
import pickle

import numpy as np
import torch

from interaction_moe import (
    I2MoEClassifier,
    interaction_loss,
    load_breast_cancer_groups,
    load_digits_halves,
    load_multibench_pickle,
    load_multimodal_npz,
    make_interaction_data,
    perturb,
    redundancy_loss,
    regression_losses,
    synergy_loss,
    uniqueness_loss,
)


def _scalar_outputs() -> torch.Tensor:
    """(B, 1) expert outputs of a regression I2MoE."""
    return torch.randn(5, 1, generator=torch.Generator().manual_seed(2), dtype=torch.float64)


def _npz(folder):
    rng = np.random.default_rng(0)
    path = folder / "features.npz"
    np.savez(path, modality_0=rng.normal(size=(20, 3)), modality_1=rng.normal(size=(20, 2)),
             y=rng.integers(0, 2, 20))  # fmt: skip
    return path


def _mosi(folder):
    rng = np.random.default_rng(0)
    parts = {s: {"vision": rng.normal(size=(12, 4, 3)), "text": rng.normal(size=(12, 4, 5)),
                 "labels": rng.normal(size=(12, 1, 1))} for s in ("train", "valid", "test")}  # fmt: skip
    path = folder / "mosi_raw.pkl"
    path.write_bytes(pickle.dumps(parts))
    return path


def _outputs(seed: int = 0, M: int = 3):
    import torch

    g = torch.Generator().manual_seed(seed)
    clean = torch.randn(6, 4, generator=g, dtype=torch.float64)
    return clean, [torch.randn(6, 4, generator=g, dtype=torch.float64) for _ in range(M)]


_PERTURBED = _outputs()[1]


def entries() -> list[dict]:
    xs, y, _ = make_interaction_data(60, seed=0)
    xt, _, _ = make_interaction_data(30, seed=1)
    fast = {"epochs": 1, "hidden": 4, "batch_size": 64}
    out = [
        {
            "name": "I2MoEClassifier",
            "kind": "estimator",
            "cls": I2MoEClassifier,
            "init": fast,
            "fit": {"X": xs, "y": y},
            "not_sklearn": "X is a list of per-modality arrays, not one 2-D feature matrix",
            "grid": {
                "backbone": ["late", "lrtf", "transformer"],
                "encoder": [
                    {
                        "grid_value": "gru",  # over (n, T, d) token sequences
                        "fit": {"X": [np.repeat(x[:, None], 3, 1) for x in xs], "y": y},
                        "methods": {
                            "predict_proba": {"X": [np.repeat(x[:, None], 3, 1) for x in xt]},
                            "predict": {"X": [np.repeat(x[:, None], 3, 1) for x in xt]},
                        },
                        "known": [],
                    }
                ],
                "moe": [False],
                "perturbation": ["zero", "mean", "permute"],
                "reweighting": ["global"],
                "interaction_loss": [False],
                "specialize": [True],
                "independent_init": [True],
                "standardize": [False],
            },
            "methods": {"predict_proba": {"X": xt}, "predict": {"X": xt}},
            "arrays": {"y": {"kind": "labels", "ndim": 1}},
            "params": {
                "lr": {"type": "float", "bad": [0.0, float("inf"), float("nan")]},
                "device": {"type": "str", "bad": ["warp-drive"]},
                "validation_fraction": {"type": "float", "bad": [0.999, 1.0, -0.1]},
                "epochs": {"type": "int", "bad": [0]},
                "hidden": {"type": "int", "bad": [0]},
                "backbone": {"type": "str", "bad": ["mlp"]},
                "encoder": {"type": "str", "bad": ["lstm"]},
                "perturbation": {"type": "str", "bad": ["drop"]},
                "gate_target_weight": {"type": "float", "bad": [-1.0]},
            },
            "known": [
                {
                    "kwargs": {"X": [x.astype(np.int64) for x in xs]},
                    "check": lambda out: np.isfinite(out["predict_proba"]).all(),
                    "why": "integer modality arrays are cast, not a raw dtype error",
                },
                {
                    "kwargs": {"X": [xs[0], xs[1][:-1]]},
                    "raises": ["X"],
                    "why": "modalities of different lengths",
                },
                {"kwargs": {"X": [xs[0]]}, "raises": ["X"], "why": "one modality only"},
            ],
        },
        {
            "name": "load_breast_cancer_groups",
            "call": load_breast_cancer_groups,
            "kwargs": {},
            "known": [
                {
                    "kwargs": {},
                    "check": lambda out: (
                        [x.shape for x in out[0]] == [(569, 10)] * 3
                        and set(out[1].tolist()) == {0, 1}
                    ),
                    "why": "mean / error / worst feature groups of the 569 tumours",
                }
            ],
        },
        {
            "name": "load_digits_halves",
            "call": load_digits_halves,
            "kwargs": {},
            "known": [
                {
                    "kwargs": {},
                    "check": lambda out: (
                        [x.shape for x in out[0]] == [(1797, 32)] * 2
                        and float(max(x.max() for x in out[0])) <= 1.0
                    ),
                    "why": "top and bottom halves of the 8x8 digits, scaled to [0, 1]",
                }
            ],
        },
        {
            "name": "interaction_loss",
            "call": lambda clean, perturbed=_PERTURBED, margin=1.0: interaction_loss(
                [clean] * 4, [list(perturbed[:2])] * 4, margin
            )["total"],
            "kwargs": {"clean": _outputs()[0], "perturbed": _PERTURBED},
            "arrays": {"clean": {"kind": "float", "ndim": 2}},
            "params": {"margin": {"type": "float", "bad": [-1.0]}},
        },
        {
            "name": "regression_losses",
            "call": lambda clean, margin=1.0, mode="paper": torch.stack(
                regression_losses([clean] * 4, [[clean * 0.5, clean * 2.0]] * 4, mode, margin)
            ),
            "kwargs": {"clean": _scalar_outputs()},
            "arrays": {"clean": {"kind": "float", "ndim": 2}},
            "params": {
                "margin": {"type": "float", "bad": [-1.0, float("nan")]},
                "mode": {"type": "str", "bad": ["triplet"]},
            },
            "grid": {"mode": ["reference"]},
            "known": [
                {
                    "kwargs": {"clean": torch.ones(3, 1, dtype=torch.float64), "mode": "reference"},
                    # U = MSE(a, 2a) - MSE(a, a/2) = 1 - 1/4; S = MSE(a, n) over both removals
                    "check": lambda v: torch.allclose(
                        v, torch.tensor([0.75, -0.75, 0.625, 0.625], dtype=torch.float64)
                    ),
                    "why": "the released code's MSE losses at a = 1, removals a/2 and 2a",
                },
                {
                    "kwargs": {"clean": torch.ones(3, 1, dtype=torch.float64)},
                    "check": lambda v: torch.allclose(
                        v,
                        torch.tensor(
                            [
                                1.75,
                                0.25,
                                (
                                    torch.exp(torch.tensor(-0.25)) + torch.exp(torch.tensor(-1.0))
                                ).item()
                                / 2,
                                0.625,
                            ],
                            dtype=torch.float64,
                        ),
                    ),
                    "why": "the paper's hinge (margin 1), bounded synergy exp(-d^2), MSE redundancy",
                },
            ],
        },
        {
            "name": "perturb",
            "call": lambda embs, mode="zero": perturb([embs, embs], 0, mode)[0],
            "kwargs": {"embs": _outputs()[0]},
            # it replaces values, it does not read them: I2MoE validates its inputs upstream
            "arrays": {"embs": {"kind": "float", "ndim": (2, 3), "nan_ok": True, "inf_ok": True}},
            "params": {"mode": {"type": "str", "bad": ["drop"]}},
            "grid": {"mode": ["mean"]},
            "known": [
                {
                    "kwargs": {"embs": _outputs()[0]},
                    "check": lambda v: bool((v == 0).all()),
                    "why": "zero removal",
                },
                {
                    "kwargs": {"embs": _outputs()[0], "mode": "mean"},
                    "check": lambda v: bool(torch.allclose(v, _outputs()[0].mean(0).expand_as(v))),
                    "why": "mean removal: every row is the batch mean",
                },
            ],
        },
        {
            "name": "uniqueness_loss",
            "call": lambda clean, perturbed=_PERTURBED, m=1, margin=1.0: uniqueness_loss(
                clean, perturbed, m, margin
            ),
            "kwargs": {"clean": _outputs()[0], "perturbed": _PERTURBED},
            "arrays": {"clean": {"kind": "float", "ndim": 2}},
            "params": {
                "m": {"type": "int", "bad": [3, -1]},
                "margin": {"type": "float", "bad": [-1.0]},
            },
            "known": [
                {
                    "kwargs": {"clean": _outputs()[0], "perturbed": [_outputs()[0]] * 3},
                    "check": lambda v: abs(float(v) - 1.0) < 1e-6,
                    "why": "all outputs equal: every triplet costs the margin",
                }
            ],
        },
        {
            "name": "synergy_loss",
            "call": lambda clean, perturbed=_PERTURBED: synergy_loss(clean, perturbed),
            "kwargs": {"clean": _outputs()[0], "perturbed": _PERTURBED},
            "arrays": {"clean": {"kind": "float", "ndim": 2}},
            "known": [
                {
                    "kwargs": {"clean": _outputs()[0], "perturbed": [_outputs()[0]] * 2},
                    "check": lambda v: abs(float(v) - 1.0) < 1e-9,
                    "why": "removals that change nothing: cosine 1",
                }
            ],
        },
        {
            "name": "redundancy_loss",
            "call": lambda clean, perturbed=_PERTURBED: redundancy_loss(clean, perturbed),
            "kwargs": {"clean": _outputs()[0], "perturbed": _PERTURBED},
            "arrays": {"clean": {"kind": "float", "ndim": 2}},
            "known": [
                {
                    "kwargs": {"clean": _outputs()[0], "perturbed": [-_outputs()[0]]},
                    "check": lambda v: abs(float(v) - 2.0) < 1e-9,
                    "why": "a removal that flips the output: 1 - cos = 2",
                }
            ],
        },
        {
            "name": "make_interaction_data",
            "call": make_interaction_data,
            "kwargs": {"n": 20, "seed": 0},
            "params": {
                "n_classes": {"type": "int", "bad": [3]},
                "n_modalities": {"type": "int", "bad": [1]},
            },
        },
        {
            "name": "load_multimodal_npz",
            "kind": "loader",
            "write": _npz,
            "read": load_multimodal_npz,
            "check": lambda r: len(r[0]) == 2 and len(r[1]) == 20,
            "corrupt": ["truncate", "empty", "header"],
        },
        {
            "name": "load_multibench_pickle",
            "kind": "loader",
            "write": _mosi,
            "read": lambda p: load_multibench_pickle(p, modalities=("vision", "text")),
            "check": lambda r: r[0][0].shape[1:] == (4, 3),
            "corrupt": ["truncate", "empty", "header"],
        },
    ]
    return [*out, *_module_entries()]


_FUSIONS = ("ConcatMLPFusion", "LateFusion", "LowRankTensorFusion", "TransformerFusion")


@functools.cache
def _module(kind: str) -> torch.nn.Module:
    """One small eval-mode module per public class, built once (outside any device run)."""
    import interaction_moe as im

    torch.manual_seed(0)
    if kind in _FUSIONS:
        return getattr(im, kind)(2, 4, 3).double().eval()
    encoders = [torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)]
    fusion = im.ConcatMLPFusion(2, 4, 3, hidden=8)
    return im.I2MoE(encoders, fusion, reweight_dropout=0.0).double().eval()


def _fused(kind, embs):
    with torch.no_grad():
        out = _module(kind)(list(embs))
    return out.logits if kind == "I2MoE" else out


def _module_entries() -> list[dict]:
    """Forward passes of the fusion backbones and the I2MoE layer (eval mode): determinism,
    pickling, devices and bf16. Like torch.nn layers they propagate NaN (I2MoEClassifier
    validates its data upstream)."""
    embs = [torch.randn(5, 4, generator=torch.Generator().manual_seed(i), dtype=torch.float64)
            for i in range(2)]  # fmt: skip
    return [
        {"name": f"{kind}.forward", "call": lambda embs, kind=kind: _fused(kind, embs),
         "kwargs": {"embs": embs}, "modules": lambda kind=kind: [_module(kind)],
         "fixed": {"kind": "selects the fusion model this entry covers (one entry per model)"}}
        for kind in (*_FUSIONS, "I2MoE")
    ]  # fmt: skip
