"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import numpy as np
import torch

import kd_losses as K


def entries() -> list[dict]:
    g = torch.Generator().manual_seed(0)
    zs = torch.randn(6, 11, generator=g, requires_grad=True)
    zt = torch.randn(6, 11, generator=g)
    hs = torch.randn(6, 5, generator=g, requires_grad=True)
    ws = torch.randn(11, 5, generator=g, requires_grad=True)
    ht = torch.randn(6, 4, generator=g)
    wt = torch.randn(11, 4, generator=g)
    logits_arrays = {"student_logits": {"kind": "float", "ndim": (2, 3)},
                     "teacher_logits": {"kind": "float", "ndim": (2, 3)}}  # fmt: skip
    out = []
    for fn, params in (
        (K.forward_kl, {}),
        (K.reverse_kl, {}),
        (K.js_divergence, {"beta": {"type": "float", "bad": [0.0, 1.0, float("nan")]}}),
        (K.total_variation, {}),
        (K.skew_kl, {"alpha": {"type": "float", "bad": [-0.1, 1.0]}}),
        (K.skew_reverse_kl, {"alpha": {"type": "float", "bad": [1.5]}}),
        (K.adaptive_kl, {"mu": {"type": "float", "bad": [0.0, 2.0]}}),
        (K.bidirectional_discrepancy_loss, {"lam": {"type": "float", "bad": [1.0, -0.1]}}),
    ):
        out.append(
            {
                "name": fn.__name__,
                "call": fn,
                "kwargs": {"student_logits": zs, "teacher_logits": zt},
                "arrays": logits_arrays,
                "rows": [["student_logits", "teacher_logits"]],
                "order": "invariant",  # the mean over tokens
                "params": {
                    **params,
                    "temperature": {"type": "float", "bad": [0.0, -1.0, float("inf")]},
                    "reduction": {"type": "str", "bad": ["batchmean"], "good": "mean"},
                },
                "grid": {
                    # per-token losses follow the tokens' order
                    "reduction": [{"grid_value": "none", "order": "equivariant"}, "sum"],
                    **({"detach_weights": [False]} if fn is K.adaptive_kl else {}),
                },
            }
        )
    out.append(
        {
            "name": "fused_kd_loss",
            "call": K.fused_kd_loss,
            "kwargs": {
                "student_hidden": hs,
                "student_weight": ws,
                "teacher_hidden": ht,
                "teacher_weight": wt,
                "loss": "bdl",
            },
            "arrays": {
                "student_hidden": {"kind": "float", "ndim": (2, 3)},
                "teacher_hidden": {"kind": "float", "ndim": (2, 3)},
                "student_weight": {"kind": "float", "ndim": 2},
                "teacher_weight": {"kind": "float", "ndim": 2},
            },
            "rows": [["student_hidden", "teacher_hidden"]],
            "order": "invariant",
            "params": {
                "chunk_size": {"type": "int", "bad": [0, -2], "good": 4},
                "loss": {"type": "str", "bad": ["kl"]},
                "temperature": {"type": "float", "bad": [0.0]},
            },
            "grid": {
                "loss": ["fkl", "rkl", "jsd", "tvd", "skl", "srkl", "akl"],
                "reduction": ["sum"],
                "chunk_size": [2],
            },
            "known": [
                {
                    "kwargs": {
                        "teacher_hidden": None,
                        "teacher_weight": None,
                        "teacher_logits": torch.full((6, 11), float("nan")),
                    },
                    "raises": ["teacher_logits"],
                    "why": "NaN teacher logits, as the logits path",
                },
            ],
        }
    )
    out.append(
        {
            "name": "difficulty_score",
            "call": K.difficulty_score,
            "kwargs": {
                "student_nll": torch.tensor([2.0, 3.0, 1.5, 4.0]),
                "teacher_nll": torch.tensor([1.0, 2.5, 1.0, 1.0]),
            },
            "arrays": {
                "student_nll": {"kind": "float", "ndim": 1},
                "teacher_nll": {"kind": "float", "ndim": 1},
            },
            "rows": [["student_nll", "teacher_nll"]],
            "order": "equivariant",
            "params": {"eps": {"type": "float", "bad": [-1.0, float("nan")], "good": 1e-6}},
        }
    )
    out.append(
        {
            "name": "stratified_select",
            "call": lambda scores, n_keep, n_strata: K.stratified_select(
                scores, n_keep, n_strata=n_strata, rng=np.random.default_rng(0)
            ),
            "kwargs": {"scores": np.linspace(0.5, 3.0, 40), "n_keep": 10, "n_strata": 4},
            "arrays": {"scores": {"kind": "float", "ndim": 1}},
            "rows": [["scores"]],
            "min_rows": 10,  # at least n_keep positions
            "params": {
                "n_keep": {"type": "int", "bad": [0, 41]},
                "n_strata": {"type": "int", "bad": [0]},
            },
        }
    )
    out.append(
        {
            "name": "sequence_nll",
            "call": K.sequence_nll,
            "kwargs": {
                "logits": zs.detach().reshape(2, 3, 11),
                "labels": torch.randint(0, 11, (2, 3), generator=g),
            },
            "arrays": {"logits": {"kind": "float", "ndim": 3}},
            "rows": [["logits", "labels"]],
            "order": "equivariant",
            "min_rows": 0,  # per-sequence values: no sequences, no values
        }
    )
    return out
