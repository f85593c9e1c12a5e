"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

import kd_losses as K


def _module_call(cls, fn):
    """``cls(...)(student_logits, teacher_logits)`` with the constructor options as keywords."""

    def call(student_logits, teacher_logits, temperature=1.0, reduction="mean", chunk_size=None):
        mod = cls(temperature=temperature, reduction=reduction, chunk_size=chunk_size)
        return mod(student_logits, teacher_logits)

    call.__name__ = f"{cls.__name__}.forward"
    return call


_LM: dict = {}


def _tiny_lm(ids):
    if "m" not in _LM:
        torch.manual_seed(0)
        _LM["m"] = K.TinyLM(13, d_model=8, n_layers=1, n_heads=2, max_len=16).eval()
    with torch.no_grad():
        return _LM["m"](torch.as_tensor(ids))


def _fused_module(student_hidden, student_weight, teacher_hidden, teacher_weight, loss="bdl"):
    return K.FusedKDLoss(loss=loss)(
        student_hidden, student_weight, teacher_hidden=teacher_hidden, teacher_weight=teacher_weight
    )


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
                    # off: the same value without the NaN/inf scan (no device sync)
                    "check_finite": [False],
                    **({"detach_weights": [False]} if fn is K.adaptive_kl else {}),
                },
            }
        )
    for cls, fn in (
        (K.ForwardKL, K.forward_kl),
        (K.ReverseKL, K.reverse_kl),
        (K.JSDivergence, K.js_divergence),
        (K.TotalVariation, K.total_variation),
        (K.SkewKL, K.skew_kl),
        (K.SkewReverseKL, K.skew_reverse_kl),
        (K.AdaptiveKL, K.adaptive_kl),
        (K.BidirectionalDiscrepancyLoss, K.bidirectional_discrepancy_loss),
    ):
        out.append(
            {
                "name": f"{cls.__name__}.forward",
                "call": _module_call(cls, fn),
                "kwargs": {"student_logits": zs, "teacher_logits": zt, "temperature": 2.0},
                "arrays": logits_arrays,
                "rows": [["student_logits", "teacher_logits"]],
                "order": "invariant",
                "params": {
                    "temperature": {"type": "float", "bad": [0.0, -1.0, float("inf")]},
                    "reduction": {"type": "str", "bad": ["batchmean"]},
                    "chunk_size": {"type": "int", "bad": [0, -2], "good": 4},
                },
                "grid": {
                    "reduction": [{"grid_value": "none", "order": "equivariant"}, "sum"],
                    "chunk_size": [2],
                },
                "known": [
                    {
                        "kwargs": {"student_logits": zs, "teacher_logits": zt, "temperature": 2.0},
                        "check": lambda out, fn=fn: torch.allclose(
                            out, fn(zs, zt, temperature=2.0), atol=1e-6
                        ),
                        "why": "the module equals its functional form",
                    }
                ],
            }
        )
    by_name = {  # the two ways to get a loss from its short name, held to the same contract
        "distill_loss": lambda name, s, t, temperature: K.distill_loss(
            name, s, t, temperature=temperature),
        "make_loss": lambda name, s, t, temperature: K.make_loss(
            name, temperature=temperature)(s, t),
    }  # fmt: skip
    for short, fn in (("fkl", K.forward_kl), ("bdl", K.bidirectional_discrepancy_loss)):
        for entry, via in by_name.items():
            out.append(
                {
                    "name": f"{entry}({short})",
                    "call": lambda student_logits, teacher_logits, name=short, temperature=1.0,
                    via=via: via(name, student_logits, teacher_logits, temperature),
                    "kwargs": {"student_logits": zs, "teacher_logits": zt},
                    "arrays": logits_arrays,
                    "rows": [["student_logits", "teacher_logits"]],
                    "order": "invariant",
                    "params": {"name": {"type": "str", "bad": ["kl"]},
                               "temperature": {"type": "float", "bad": [0.0, float("nan")]}},
                    "fixed": {"name": "selects the loss this entry covers (fkl and bdl each have "
                                      "one; every loss has its own functional entry)"},
                    "known": [{"kwargs": {"student_logits": zs, "teacher_logits": zt},
                               "check": lambda v, fn=fn: torch.allclose(v, fn(zs, zt)),
                               "why": "the short name gives the named loss"}],
                }
            )  # fmt: skip

    def gkd(student_logits, teacher_logits, loss="bdl", beta=0.5, temperature=1.0):
        lead = (None,) if student_logits.ndim == 2 else ()  # (T, V) -> one sequence
        labels = None
        if student_logits.ndim >= 2:
            labels = torch.ones(student_logits.shape[:-1], dtype=torch.long,
                                device=student_logits.device)  # fmt: skip
            labels[..., 2::3] = -100  # every third token ignored
            labels = labels[lead]
        return K.gkd_loss(loss)(student_logits[lead], teacher_logits[lead], labels,
                                beta=beta, temperature=temperature)  # fmt: skip

    keep = torch.tensor([0, 1, 3, 4])
    out.append(
        {
            "name": "gkd_loss",
            "call": gkd,
            "kwargs": {"student_logits": zs, "teacher_logits": zt},
            "arrays": logits_arrays,
            "rows": [["student_logits", "teacher_logits"]],
            "order": None,  # the ignored positions are fixed, not the rows'
            "params": {"loss": {"type": "str", "bad": ["kl"]},
                       "beta": {"type": "float", "bad": [1.5, -0.1]},
                       "temperature": {"type": "float", "bad": [0.0, float("nan")]}},
            "grid": {"loss": ["jsd", "fkl"], "beta": [0.0, 1.0]},
            "known": [{"kwargs": {"student_logits": zs, "teacher_logits": zt},
                       "check": lambda v: torch.allclose(v, K.distill_loss(
                           "bdl", zs, zt, reduction="none")[keep].sum() / 4),
                       "why": "TRL's batchmean: the token sum over the kept tokens"}],
        }
    )  # fmt: skip
    out.append(
        {
            "name": "make_corpus",
            "call": lambda n_seqs=4, seq_len=12, vocab_size=16: K.make_corpus(
                n_seqs, seq_len, vocab_size, seed=0)[0],
            "kwargs": {},
            "params": {"n_seqs": {"type": "int", "bad": [0]}, "seq_len": {"type": "int", "bad": [0]},
                       "vocab_size": {"type": "int", "bad": [0, 1]}},
        }
    )  # fmt: skip
    ids = np.arange(24).reshape(3, 8) % 13
    out.append(
        {
            "name": "TinyLM.forward",
            "call": _tiny_lm,
            "kwargs": {"ids": ids},
            "arrays": {"ids": {"kind": "labels", "ndim": 2}},
            "rows": [["ids"]],
            "order": "equivariant",
            "known": [
                {"kwargs": {"ids": np.array([[1, 20]])}, "raises": ["ids"],
                 "why": "a token id outside the vocabulary"},
                {"kwargs": {"ids": np.zeros((1, 17), int)}, "raises": ["ids"],
                 "why": "longer than max_len"},
            ],
        }
    )  # fmt: skip
    out.append(
        {
            "name": "FusedKDLoss.forward",
            "call": _fused_module,
            "kwargs": {"student_hidden": hs, "student_weight": ws, "teacher_hidden": ht,
                       "teacher_weight": wt},
            "arrays": {"student_hidden": {"kind": "float", "ndim": (2, 3)},
                       "teacher_hidden": {"kind": "float", "ndim": (2, 3)}},
            "rows": [["student_hidden", "teacher_hidden"]],
            "order": "invariant",
            "params": {"loss": {"type": "str", "bad": ["kl"]}},
            "grid": {"loss": ["fkl", "rkl", "jsd", "tvd", "skl", "srkl", "akl"]},
            "known": [
                {"kwargs": {"student_hidden": hs, "student_weight": ws, "teacher_hidden": ht,
                            "teacher_weight": wt},
                 "check": lambda out: torch.allclose(
                     out, K.bidirectional_discrepancy_loss(hs @ ws.T, ht @ wt.T), atol=1e-5),
                 "why": "the fused head equals BDL on the materialised logits"},
            ],
        }
    )  # fmt: skip
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
    return [*out, *_data_entries(), *_training_entries()]


@functools.cache
def _lm() -> torch.nn.Module:
    """A tiny token model (embedding + linear head), built once (outside device runs)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10)).double().eval()


def _sampled(scores, prune_ratio=0.3, strategy="stratified"):
    n = int(scores.shape[0]) if getattr(scores, "ndim", 1) else 20
    s = K.DifficultyAwareSampler(n, prune_ratio=prune_ratio, strategy=strategy, seed=0)
    s.update(scores)
    return np.sort(np.fromiter(iter(s), dtype=np.int64))


def _data_entries() -> list[dict]:
    """DA-KD's sampler after one difficulty update, and per-sequence NLL of a token model."""
    g = torch.Generator().manual_seed(3)
    scores = torch.rand(20, generator=g, dtype=torch.float64)
    tokens = torch.randint(0, 10, (3, 5), generator=g)
    return [
        {"name": "DifficultyAwareSampler.update", "call": _sampled, "kwargs": {"scores": scores},
         # the scores are checked by test_dakd.py::test_sampler_bad_input (length, NaN)
         "params": {"prune_ratio": {"type": "float", "bad": [-0.1, 1.0]},
                    "strategy": {"type": "str", "bad": ["hardest"]}},
         "grid": {"strategy": ["random", "resample"]},
         "known": [{"kwargs": {"scores": scores}, "check": lambda idx: len(idx) == 14 and len(
             set(idx.tolist())) == 14, "why": "30% pruned: 14 distinct samples of 20 kept"}]},
        {"name": "dataset_nll", "call": lambda tokens, batch_size=2: K.dataset_nll(
            _lm(), tokens, batch_size=batch_size), "kwargs": {"tokens": tokens},
         "modules": lambda: [_lm()], "rows": [["tokens"]], "order": "equivariant",
         "params": {"batch_size": {"type": "int", "bad": [0]}}},
    ]  # fmt: skip


def _fresh_lm(seed=1):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10)).double()


_STUDENTS: dict = {}


def _student(seed):
    """One persistent model per seed (the device runs move it), reset to its initial weights."""
    if seed not in _STUDENTS:
        m = _fresh_lm(seed)
        _STUDENTS[seed] = (m, {k: v.clone() for k, v in m.state_dict().items()})
    m, init = _STUDENTS[seed]
    m.load_state_dict(init)
    return m


def _eval(tokens, batch_size=2, pad_id=None, model=None):
    return K.evaluate_lm(_lm() if model is None else model, tokens, batch_size=batch_size,
                         pad_id=pad_id)  # fmt: skip


def _nll_by_hand(tokens, pad_id=None):
    with torch.no_grad():
        logits = _lm()(tokens[:, :-1])
    y = tokens[:, 1:]
    keep = y != pad_id if pad_id is not None else torch.ones_like(y, dtype=torch.bool)
    lp = torch.log_softmax(logits, -1).gather(-1, y[..., None])[..., 0]
    acc = (logits.argmax(-1) == y)[keep].double().mean()
    return float(-lp[keep].mean()), float(acc)


def _train(tokens, epochs=2, batch_size=2, lr=3e-3, pad_id=None, seed=0, verbose=False):
    m = _student(1)
    losses = K.train_lm(m, tokens, epochs=epochs, batch_size=batch_size, lr=lr, pad_id=pad_id,
                        seed=seed, verbose=verbose)  # fmt: skip
    return {"losses": losses, "weight": m[1].weight.detach()}


_TRAINED: dict = {}


def _distill(tokens, loss="bdl", epochs=2, batch_size=2, lr=2e-3, ce_weight=0.0,
             difficulty_aware=False, warmup_epochs=1, update_every=1, pad_id=None, seed=0,
             verbose=False, **kw):  # fmt: skip
    student = _student(2)
    r = K.distill(student, _lm(), tokens, loss=loss, epochs=epochs, batch_size=batch_size, lr=lr,
                  ce_weight=ce_weight, difficulty_aware=difficulty_aware,
                  warmup_epochs=warmup_epochs, update_every=update_every, pad_id=pad_id,
                  seed=seed, verbose=verbose, **kw)  # fmt: skip
    _TRAINED["student"] = student
    return {"history": r.history, "active": r.active_indices, "weight": student[1].weight.detach()}


def _teacher_forwards_counted(r, n):
    return r["history"][-1]["teacher_forwards"] == 2 * n and r["history"][0]["fraction"] == 1.0


def _training_entries() -> list[dict]:
    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, 10, (6, 5), generator=g)
    padded = tokens.clone()
    padded[:, -2:] = 0
    ints = {"type": "int", "bad": [0, -1, 1.5]}
    return [
        {"name": "evaluate_lm", "call": _eval, "kwargs": {"tokens": tokens},
         "modules": lambda: [_lm()], "rows": [["tokens"]], "order": "invariant",
         "params": {"batch_size": {**ints, "good": 2}, "pad_id": {"bad": ["0", 0.5]}},
         "known": [{"kwargs": {"tokens": tokens},
                    "check": lambda r: np.allclose(r, _nll_by_hand(tokens), rtol=1e-6),
                    "why": "token-mean NLL and top-1 accuracy by hand"},
                   {"kwargs": {"tokens": padded, "pad_id": 0},
                    "check": lambda r: np.allclose(r, _nll_by_hand(padded, 0), rtol=1e-6),
                    "why": "pad targets are left out of both means"},
                   {"kwargs": {"tokens": torch.zeros(2, 3, dtype=torch.long), "pad_id": 0},
                    "raises": ["tokens"], "check": None,
                    "why": "every target is padding (returned 0.0, 0.0 before)"},
                   {"kwargs": {"tokens": tokens + 10}, "raises": ["tokens"], "check": None,
                    "why": "ids beyond the model's 10 logits"}]},
        {"name": "train_lm", "call": _train, "kwargs": {"tokens": tokens},
         "modules": lambda: [_student(1)], "rows": [["tokens"]],
         "params": {"epochs": {"type": "int", "bad": [-1, 2.0]},
                    "batch_size": {**ints, "good": 2},
                    "lr": {"type": "float", "bad": [0.0, -1e-3, float("nan"), "3e-3"], "good": 3e-3},
                    "seed": {"type": "int", "bad": [-1], "good": 0},
                    "pad_id": {"bad": ["0"]}, "verbose": {"bad": ["yes"]}},
         "known": [{"kwargs": {"tokens": tokens, "epochs": 0},
                    "check": lambda r: r["losses"] == []
                    and torch.equal(r["weight"], _fresh_lm()[1].weight.detach()),
                    "why": "no epochs: nothing trained"},
                   {"kwargs": {"tokens": tokens, "epochs": 30, "lr": 3e-2},
                    "check": lambda r: r["losses"][-1] < r["losses"][0],
                    "why": "the training loss falls"}]},
        {"name": "distill", "call": _distill, "kwargs": {"tokens": tokens},
         "modules": lambda: [_lm(), _student(2)], "rows": [["tokens"]],
         "params": {"loss": {"bad": ["kl", 3]}, "epochs": {**ints, "good": 2},
                    "batch_size": {**ints, "good": 2},
                    "update_every": {**ints, "good": 1},
                    "warmup_epochs": {"type": "int", "bad": [-1, 0.5], "good": 1},
                    "lr": {"type": "float", "bad": [0.0, float("inf"), "2e-3"], "good": 2e-3},
                    "ce_weight": {"type": "float", "bad": [-0.1, float("nan"), "0.1"],
                                  "good": 0.0},
                    "seed": {"type": "int", "bad": [-1], "good": 0},
                    "pad_id": {"bad": ["0", 1.5]},
                    "difficulty_aware": {"bad": ["yes", 1]}, "verbose": {"bad": [None]},
                    "optimizer": {"bad": ["adam", torch.optim.SGD(_fresh_lm(3).parameters(), 0.1)]},
                    "sampler": {"bad": [[1, 2], K.DifficultyAwareSampler(5)]}},
         "grid": {"loss": ["fkl", "jsd"], "difficulty_aware": [True], "ce_weight": [0.5]},
         "known": [{"kwargs": {"tokens": tokens},
                    "check": lambda r: _teacher_forwards_counted(r, 6),
                    "why": "two full epochs pass every sequence through the teacher once each"},
                   {"kwargs": {"tokens": tokens, "loss": "fkl", "loss_kwargs": {"temperature": 0.0}},
                    "raises": ["temperature"], "check": None, "why": "a named loss's own check"},
                   {"kwargs": {"tokens": tokens + 10}, "raises": ["tokens"], "check": None,
                    "why": "ids beyond the student's 10 logits"}]},
    ]  # fmt: skip
