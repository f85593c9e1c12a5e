"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

import evolving_dg as edg
from evolving_dg.loaders import load_domain_pickle, load_onp


def _onp(folder):
    rng = np.random.default_rng(0)
    lines = ["url, timedelta, f1, f2, shares"]
    lines += [f"http://x/{i}, {40 - i}, {rng.normal():.4f}, {i}, {900 + 30 * i}" for i in range(40)]
    path = folder / "OnlineNewsPopularity.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _pickle(folder):
    import pickle

    rng = np.random.default_rng(0)
    obj = {"data": rng.normal(size=(40, 2)), "label": rng.integers(0, 2, 40),
           "domain": np.repeat(np.arange(4), 10)}  # fmt: skip
    path = folder / "half-circle.pkl"
    path.write_bytes(pickle.dumps(obj, protocol=2))
    return path


def _extra_key(p):
    import pickle

    rng = np.random.default_rng(1)
    p.write_bytes(pickle.dumps({"data": rng.normal(size=(8, 2)), "label": np.zeros(8, int),
                                "domain": np.repeat(np.arange(4), 2), "weights": np.ones(8)}))  # fmt: skip


def entries() -> list[dict]:
    ds = edg.make_circle(n_domains=8, n_per_domain=30, seed=0)
    src, _, tgt = ds.split(4, 1, 3)
    X = tgt[0][0]
    fast = {"epochs": 1, "iters_per_epoch": 3, "width": 16, "batch_per_domain": 8}
    out = []
    digits = edg.make_rotated_digits(angles=(0, 30, 60, 90, 120), size=8, seed=0).domains
    img_src, Ximg = [(x[:40], y[:40]) for x, y in digits[:4]], digits[4][0][:12]
    cnn = {
        "grid_value": "cnn",
        "fit": {"domains": img_src},  # (C, H, W) images for the CNN
        "methods": {"predict_proba": {"X": Ximg}, "predict": {"X": Ximg}},
        "arrays": {"predict_proba:X": {"kind": "float", "ndim": 4}},
    }
    GRIDS = {
        "SYNC": {"use_mi": [False], "use_static_causal": [False], "use_dynamic_causal": [False],
                 "sigma_param": ["consistent"], "causal_grad": ["encoder"],
                 "static_head_act": [False], "exclude_same_index": [False],
                 "transductive": [False], "transductive_state": ["source"], "arch": ["reference"],
                 "prior_state_grad": [False], "contrast_eps": [1e-6]},
        "LSSAE": {"sigma_param": ["consistent"], "static_head_act": [False],
                  "transductive": [False], "transductive_state": ["source"], "arch": ["reference"],
                  "prior_state_grad": [False]},
    }  # fmt: skip
    for cls, extra, params in (
        (edg.ERM, {}, {"lr": {"type": "float", "bad": [0.0, -1.0, float("nan")]},
                       "epochs": {"type": "int", "bad": [0]}}),
        (edg.SYNC, {"z_dim": 4}, {"z_dim": {"type": "int", "bad": [0]},
                                  "width": {"type": "int", "bad": [0]}}),
        (edg.LSSAE, {"z_dim": 4}, {}),
        (edg.IRM, {}, {"penalty_weight": {"type": "float", "bad": [-1.0]}}),
        (edg.ERMLast, {"fraction": 0.5}, {"fraction": {"type": "float", "bad": [0.0, 1.5]}}),
    ):  # fmt: skip
        out.append(
            {
                "name": cls.__name__,
                "kind": "estimator",
                "cls": cls,
                "init": {**fast, **extra},
                "fit": {"domains": src},
                "not_sklearn": (
                    "fit(domains) takes a time-ordered sequence of (X, y) domains, not one (X, y)"
                ),
                "methods": {"predict_proba": {"X": X}, "predict": {"X": X}},
                "arrays": {"predict_proba:X": {"kind": "float", "ndim": 2}},
                "rows": [["predict_proba:X"]],
                "order": "equivariant",
                "params": {**params, "device": {"type": "str", "bad": ["warp-drive"]}},
                "grid": {**GRIDS.get(cls.__name__, {}), "backbone": [cnn]},
            }
        )
    for fn, kw, params in (
        (edg.make_circle, {"n_domains": 6, "n_per_domain": 10},
         {"n_domains": {"type": "int", "bad": [0]}, "n_per_domain": {"type": "int", "bad": [0]},
          "radius": {"type": "float", "bad": [0.0, float("nan")], "good": 5.0}}),
        (edg.make_sine, {"n_domains": 6, "n_per_domain": 10},
         {"n_domains": {"type": "int", "bad": [0]}, "n_per_domain": {"type": "int", "bad": [0]}}),
        (edg.make_spurious_circle, {"n_domains": 6, "n_per_domain": 10},
         {"n_domains": {"type": "int", "bad": [0]},
          "noise": {"type": "float", "bad": [-1.0], "good": 0.5}}),
    ):  # fmt: skip
        out.append(
            {
                "name": fn.__name__,
                "call": lambda fn=fn, **k: [(x, y) for x, y in fn(**k).domains],
                "kwargs": kw,
                "params": params,
            }
        )
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(8, 3, generator=g, dtype=torch.float64)
    out.append(
        {
            "name": "irm_penalty",
            "call": edg.irm_penalty,
            "kwargs": {"logits": logits, "y": torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])},
            "arrays": {"logits": {"kind": "float", "ndim": 2}, "y": {"kind": "labels", "ndim": 1}},
            "rows": [["logits", "y"]],
            "order": "invariant",
        }
    )  # fmt: skip
    out.append(
        {
            "name": "evolving_report",
            "call": edg.evolving_report,
            "kwargs": {"accs": np.array([0.8, 0.7, 0.75])},
            "arrays": {"accs": {"kind": "float", "ndim": 1}},
            "rows": [["accs"]],
        }
    )
    out.append(
        {
            "name": "load_onp",
            "kind": "loader",
            "write": _onp,
            "read": lambda p: load_onp(p, n_domains=4),
            "check": lambda d: len(d) == 4 and d.input_shape == (2,),
            "corrupt": [
                "truncate",
                "empty",
                ("text-field", lambda p: p.write_text(p.read_text().replace(", 5,", ", five,"))),
                ("ragged", lambda p: p.write_text(p.read_text() + "http://y, 3, 0.1\n")),
            ],
        }
    )
    out.append(
        {
            "name": "load_domain_pickle",
            "kind": "loader",
            "write": _pickle,
            "read": load_domain_pickle,
            "check": lambda d: len(d) == 4 and d.input_shape == (2,),
            "corrupt": ["truncate", "empty", ("extra-key", _extra_key)],
        }
    )
    return [*out, *_more_entries()]


@functools.cache
def _syncnet() -> torch.nn.Module:
    """A small eval-mode SYNCNet for 2-d inputs, built once (outside device runs)."""
    torch.manual_seed(0)
    return edg.SYNCNet((2,), 2, "mlp", 8, 4, True, (True, True)).double().eval()


def _encode_static(X):
    with torch.no_grad():
        return _syncnet().encode_static(X)[0]


_DOMAINS = [(np.random.default_rng(t).normal(size=(6, 2)).astype(np.float32),
             np.array([0, 1, 0, 1, 0, 1])) for t in range(5)]  # fmt: skip


def _evolving(domains, n_classes=2, n_source=3, n_val=1, n_target=1, name="toy", info=None):
    """An EvolvingDataset built from user arrays, and its split sizes."""
    ds = edg.EvolvingDataset(domains, n_classes, name=name, info={} if info is None else info)
    parts = ds.split(n_source, n_val, n_target)
    return {
        "sizes": [len(p) for p in parts],
        "input_shape": ds.input_shape,
        "first_target_y": parts[2][0][1].tolist(),
    }


def _more_entries() -> list[dict]:
    """SYNCNet's static encoder, the Table-2 ablation factory and the rotated-digits maker."""
    X = torch.randn(5, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    flags = ("use_mi", "use_static_causal", "use_dynamic_causal")
    return [
        {"name": "EvolvingDataset", "call": _evolving, "kwargs": {"domains": _DOMAINS},
         "params": {"n_classes": {"type": "int", "bad": [0, 1]},
                    "n_source": {"type": "int", "bad": [2, 5]},
                    "n_val": {"type": "int", "bad": [-1]},
                    "name": {"type": "str"}},
         "fixed": {"name": "a label for the dataset (kept as given; no number depends on it)"},
         "known": [{"kwargs": {"domains": _DOMAINS},
                    "check": lambda r: r["sizes"] == [3, 1, 1] and r["input_shape"] == (2,)
                    and r["first_target_y"] == [0, 1, 0, 1, 0, 1],
                    "why": "the domains in time order, cut into source / validation / target"},
                   {"kwargs": {"domains": [*_DOMAINS[:4], (_DOMAINS[4][0][:, :1], _DOMAINS[4][1])]},
                    "raises": ["domains"], "why": "domains of different input shapes"},
                   {"kwargs": {"domains": _DOMAINS, "info": []}, "raises": ["info"],
                    "why": "info is a dict"}]},
        {"name": "SYNCNet.encode_static", "call": _encode_static, "kwargs": {"X": X},
         "modules": lambda: [_syncnet()]},
        {"name": "ablation", "grid": {"variant": ["A", "C", "D"]}, "call": lambda variant="B": [
            edg.ablation(variant).get_params()[f] for f in flags], "kwargs": {},
         "params": {"variant": {"type": "str", "bad": ["E"]}},
         "known": [{"kwargs": {"variant": "C"}, "check": lambda v: v == [True, True, False],
                    "why": "variant C adds the static causal mask to B (MI)"}]},
        {"name": "make_rotated_digits", "call": lambda size=8, seed=0: len(
            edg.make_rotated_digits(angles=(0, 30, 60), size=size, seed=seed).domains),
         "kwargs": {}, "params": {"size": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {}, "check": lambda n: n == 3, "why": "one domain per angle"}]},
    ]  # fmt: skip
