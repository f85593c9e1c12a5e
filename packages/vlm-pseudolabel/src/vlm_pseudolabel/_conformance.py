"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect

import numpy as np
import torch

from vlm_pseudolabel import (
    CAP,
    CPL,
    FPL,
    GRIP,
    IFPL,
    FixMatchST,
    Oracle,
    TextContextPrompts,
    VLMTask,
    ZeroShot,
    detect_mismatch,
    evaluate,
    expected_calibration_error,
    grow_main_samples,
    growth_k,
    harmonic_mean,
    make_glyph_digits_task,
    make_synthetic_vlm_task,
    margin_cross_entropy,
    margin_matrix,
    pseudolabel_report,
    render_glyph,
    select_descriptions,
    self_training_loss,
    topk_pseudolabels,
    zero_shot_proba,
)

FAST = {"epochs": 1, "iters_per_epoch": 2, "n_main": 2, "kmeans_n_init": 1}


def _task():
    return make_synthetic_vlm_task(n_classes=6, dim=16, n_groups=2, n_unlabeled=10, n_test=5,
                                   n_mismatch=1, n_confused_groups=1, seed=0)  # fmt: skip


def _trzsl(seen, unseen):
    t = _task()
    y = t.y_unlabeled
    return dataclasses.replace(
        t, paradigm="trzsl", seen=np.asarray(seen), unseen=np.asarray(unseen),
        X_labeled=t.X_unlabeled[np.isin(y, seen)], y_labeled=y[np.isin(y, seen)],
    )  # fmt: skip


def _fit_trzsl(seen, unseen):
    return ZeroShot().fit(_trzsl(seen, unseen)).predict_proba(_task().X_test)


def _topk(proba, k=2):
    sel = topk_pseudolabels(proba, k)
    return np.concatenate([np.sort(np.asarray(v)) for _, v in sorted(sel.items())])


def _mce(logits, target, margin):
    return margin_cross_entropy(torch.as_tensor(logits), torch.as_tensor(target),
                                torch.as_tensor(margin)).item()  # fmt: skip


def _stl(logits, target, mask, margin, norm="batch"):
    return self_training_loss(torch.as_tensor(logits), torch.as_tensor(target),
                              torch.as_tensor(mask), torch.as_tensor(margin), norm).item()  # fmt: skip


def _mismatch(X, text_features):
    return np.asarray(detect_mismatch(X, text_features, t=1, n_init=1)[0])


def _coop_point() -> dict:
    """prompt='coop' learns context tokens through a CLIP text tower: a tiny random one."""
    import tempfile

    from vlm_pseudolabel.backbones import HFCLIPBackbone, encode_task
    from vlm_pseudolabel.testing import tiny_hf_clip

    bb = HFCLIPBackbone(*tiny_hf_clip(tempfile.mkdtemp(prefix="aware-ml-clip-")))
    imgs = torch.rand(30, 3, 32, 32, generator=torch.Generator().manual_seed(3))
    task = encode_task(bb, imgs[:20], imgs[20:], np.arange(10) % 3, ["cat", "dog", "car"],
                       templates=("a photo of a {}.",))  # fmt: skip
    X = task.X_test
    return {"grid_value": "coop", "fit": {"task": task}, "known": [],
            "methods": {"predict_proba": {"X": X}, "predict": {"X": X}}}  # fmt: skip


def _init_keys(cls) -> set[str]:
    import inspect

    keys = set()
    for klass in cls.__mro__:  # **kwargs pass on to the parent's keywords
        if "__init__" in vars(klass):
            keys |= set(inspect.signature(klass.__init__).parameters) - {"self", "kwargs"}
    return keys


MASK = np.array([True, False, True, True, False])


def entries() -> list[dict]:
    task = _task()
    rng = np.random.default_rng(0)
    X, T = task.X_test, task.text_features
    proba = zero_shot_proba(task.X_unlabeled, T, 30.0)
    logits = rng.normal(size=(5, 3))
    target = np.array([0, 1, 2, 1, 0])
    out = [
        {
            "name": "zero_shot_proba",
            "call": lambda X, text, scale=30.0: zero_shot_proba(X, text, scale),
            "kwargs": {"X": X, "text": T},
            "arrays": {"X": {"kind": "float", "ndim": 2}, "text": {"kind": "float", "ndim": 2}},
            "rows": [["X"]],
            "order": "equivariant",
            "params": {"scale": {"type": "float", "bad": [float("nan"), 0.0, -1.0]}},
        },
        {
            "name": "topk_pseudolabels",
            "call": _topk,
            "kwargs": {"proba": proba},
            "arrays": {"proba": {"kind": "float", "ndim": 2}},
            "params": {"k": {"type": "int", "bad": [0, -1]}},
        },
        {
            "name": "margin_cross_entropy",
            "call": _mce,
            "kwargs": {"logits": logits, "target": target, "margin": np.zeros((3, 3))},
            "arrays": {
                "logits": {"kind": "float", "ndim": 2},
                "target": "labels",
                "margin": {"kind": "float", "ndim": 2},
            },
            "rows": [["logits", "target"]],
            "order": "invariant",
            "min_rows": 0,  # an empty batch (no confident pseudolabel) is a zero loss by design
            "known": [
                {
                    "kwargs": {"logits": logits, "target": target, "margin": np.zeros((3, 3))},
                    "check": lambda v: (
                        abs(
                            v
                            - torch.nn.functional.cross_entropy(
                                torch.as_tensor(logits), torch.as_tensor(target)
                            ).item()
                        )
                        < 1e-9
                    ),
                    "why": "zero margins give plain cross-entropy",
                }
            ],
        },
        {
            "name": "self_training_loss",
            "call": _stl,
            "kwargs": {
                "logits": logits,
                "target": target,
                "mask": MASK,
                "margin": np.zeros((3, 3)),
            },
            "arrays": {
                "logits": {"kind": "float", "ndim": 2},
                "margin": {"kind": "float", "ndim": 2},
            },
            "params": {"norm": {"type": "str", "bad": ["mean"]}},
            "grid": {"norm": ["confident"]},
            "known": [
                {
                    "kwargs": {
                        "logits": logits,
                        "target": target,
                        "mask": MASK,
                        "margin": np.zeros((3, 3)),
                        "norm": "confident",
                    },
                    "check": lambda v: (
                        abs(
                            v
                            - torch.nn.functional.cross_entropy(
                                torch.as_tensor(logits[MASK]), torch.as_tensor(target[MASK])
                            ).item()
                        )
                        < 1e-9
                    ),
                    "why": "the spec's and the official code's mean over the confident rows",
                },
                {
                    "kwargs": {
                        "logits": logits,
                        "target": target,
                        "mask": MASK,
                        "margin": np.zeros((3, 3)),
                    },
                    "check": lambda v: (
                        abs(
                            v
                            - 0.6
                            * torch.nn.functional.cross_entropy(
                                torch.as_tensor(logits[MASK]), torch.as_tensor(target[MASK])
                            ).item()
                        )
                        < 1e-9
                    ),
                    "why": "'batch': the same sum over the batch size (3 of 5 rows confident)",
                },
            ],
        },
        {
            "name": "evaluate",
            "call": lambda y_true, y_pred: evaluate(y_true, y_pred)["accuracy"],
            "kwargs": {"y_true": target, "y_pred": np.array([0, 1, 1, 1, 0])},
            "arrays": {"y_true": "labels", "y_pred": "labels"},
            "rows": [["y_true", "y_pred"]],
            "order": "invariant",
            "known": [
                {
                    "kwargs": {"y_true": target, "y_pred": np.array([0, 1, 1, 1, 0])},
                    "check": lambda a: abs(a - 0.8) < 1e-12,
                    "why": "4 of 5 right",
                }
            ],
        },
        {
            "name": "detect_mismatch",
            "call": _mismatch,
            "kwargs": {"X": task.X_unlabeled, "text_features": T},
            "arrays": {
                "X": {"kind": "float", "ndim": 2},
                "text_features": {"kind": "float", "ndim": 2},
            },
            "min_rows": 2,
        },
        {
            "name": "ZeroShot(trzsl)",
            "call": _fit_trzsl,
            "kwargs": {"seen": [0, 1, 2], "unseen": [3, 4, 5]},
            "known": [
                {
                    "kwargs": {"seen": [0, 1, 2], "unseen": [2, 3, 4, 5]},
                    "raises": ["seen"],
                    "check": None,
                    "why": "a class both seen and unseen",
                },
                {
                    "kwargs": {"seen": [0, 1, 2], "unseen": [3, 4, 9]},
                    "raises": ["unseen"],
                    "check": None,
                    "why": "an unseen id outside [0, C)",
                },
            ],
        },
    ]
    out.append(
        {
            "name": "CAP",
            "kind": "estimator",
            "cls": CAP,
            "init": FAST,
            "fit": {"task": task},
            "not_sklearn": "fit(task) takes a zero-shot task (class text embeddings, unlabeled images)",
            "grid": {
                "delta": ["linear"],
                "unlabeled_norm": ["confident"],
                "prompt": ["class_offset", "linear_probe", _coop_point()],
                "removal": ["reference"],
                "fill": ["reference"],
                "use_alignment": [False],
                "use_margin": [False],
                "independent_adapters": [False],
                "alignment_gate": [True],
            },
            "methods": {"predict_proba": {"X": X}, "predict": {"X": X}},
            "arrays": {"predict_proba:X": {"kind": "float", "ndim": 2}},
            "rows": [["predict_proba:X"]],
            "order": "equivariant",
            "params": {
                "tau": {"type": "float", "bad": [1.5, float("nan")]},
                "epochs": {"type": "int", "bad": [0]},
                "n_main": {"type": "int", "bad": [0]},
                "device": {"type": "str", "bad": ["warp-drive"]},
            },
            "known": [
                {
                    "kwargs": {"task": dataclasses.replace(task, y_unlabeled=task.y_unlabeled[:3])},
                    "raises": ["y_unlabeled"],
                    "check": None,
                    "why": "pool ground truth shorter than the pool",
                }
            ],
        }
    )
    yt = task.y_unlabeled
    pr = zero_shot_proba(task.X_unlabeled, T, 30.0)
    counts = np.bincount(yt, minlength=T.shape[0]).astype(float)
    protos = np.stack([task.X_unlabeled[yt == c].mean(0) if (yt == c).any() else T[c]
                       for c in range(T.shape[0])])  # fmt: skip
    out += [
        {"name": "expected_calibration_error", "call": expected_calibration_error,
         "kwargs": {"y_true": yt, "proba": pr, "n_bins": 5},
         "arrays": {"y_true": {"kind": "labels", "ndim": 1}, "proba": {"kind": "float", "ndim": 2}},
         "rows": [["y_true", "proba"]], "order": "invariant",
         "params": {"n_bins": {"type": "int", "bad": [0]}},
         "known": [{"kwargs": {"y_true": np.array([0, 1]), "proba": np.array([[1.0, 0.0], [0.0, 1.0]])},
                    "check": lambda v: v == 0.0, "why": "confident and right: no gap"}]},
        {"name": "harmonic_mean", "call": harmonic_mean, "kwargs": {"acc_seen": 0.6, "acc_unseen": 0.3},
         "params": {"acc_seen": {"type": "float", "bad": [float("nan"), -0.1, 1.5]},
                    "acc_unseen": {"type": "float", "bad": [float("nan"), -0.1, 1.5]}},
         "known": [{"kwargs": {"acc_seen": 0.6, "acc_unseen": 0.3},
                    "check": lambda h: abs(h - 0.4) < 1e-12, "why": "2 * 0.18 / 0.9"}]},
        {"name": "pseudolabel_report", "call": pseudolabel_report,
         "kwargs": {"pseudo": yt[::-1].copy(), "truth": yt},
         "arrays": {"pseudo": {"kind": "labels", "ndim": 1}, "truth": {"kind": "labels", "ndim": 1}},
         "rows": [["pseudo", "truth"]], "order": "invariant",
         "known": [{"kwargs": {"pseudo": yt, "truth": yt},
                    "check": lambda r: r["accuracy"] == 1.0, "why": "pseudolabels equal to the truth"}]},
        {"name": "growth_k", "call": growth_k,
         "kwargs": {"epoch": 3, "n_epochs": 10, "k0": 2, "n_pool": 100, "n_classes": 5},
         "params": {"epoch": {"type": "int", "bad": [-1]}, "n_epochs": {"type": "int", "bad": [0]},
                    "k0": {"type": "int", "bad": [0]}, "n_classes": {"type": "int", "bad": [0]},
                    "max_ratio": {"type": "float", "bad": [0.0, 1.5]}}},
        {"name": "margin_matrix", "call": margin_matrix,
         "kwargs": {"counts": counts, "visual_prototypes": protos, "text_features": T},
         "arrays": {"counts": {"kind": "float", "ndim": 1},
                    "visual_prototypes": {"kind": "float", "ndim": 2},
                    "text_features": {"kind": "float", "ndim": 2}},
         "params": {"scale": {"type": "float", "bad": [float("nan")]},
                    "delta": {"type": "str", "bad": ["cosine"]}},
         "grid": {"delta": ["linear"]}},
    ]  # fmt: skip
    base = {"epochs": 2, "iters_per_epoch": 2, "n_main": 2}
    for cls, extra, params in (
        (FPL, {}, {}),
        (IFPL, {"n_rounds": 2}, {"n_rounds": {"type": "int", "bad": [0]}}),
        (GRIP, {"n_rounds": 2}, {"n_rounds": {"type": "int", "bad": [0]}}),
        (FixMatchST, {}, {"tau": {"type": "float", "bad": [1.5, float("nan")]}}),
        (Oracle, {}, {}),
        (CPL, {}, {}),
    ):
        init = {k: v for k, v in {**base, **extra}.items() if k in _init_keys(cls)}
        out.append(
            {
                "name": cls.__name__,
                "kind": "estimator",
                "cls": cls,
                "init": init,
                "fit": {"task": task},
                "not_sklearn": "fit(task) takes a zero-shot task, as CAP",
                "methods": {"predict_proba": {"X": X}, "predict": {"X": X}},
                "arrays": {"predict_proba:X": {"kind": "float", "ndim": 2}},
                "rows": [["predict_proba:X"]],
                "order": "equivariant",
                "params": {**params, "epochs": {"type": "int", "bad": [0]}}
                if "epochs" in _init_keys(cls)
                else params,
                # CAP's entry runs every prompt (coop included); the baselines share its model
                "grid": {"prompt": ["class_offset", "linear_probe"]}
                if "prompt" in inspect.signature(cls).parameters
                else {},
            }
        )
    return [*out, *_module_entries(), *_data_entries(task), *_task_entries()]


def _task_arrays(t) -> tuple:
    """A task's arrays, in one tuple (the contract compares arrays, not dataclasses)."""
    return (t.X_unlabeled, t.X_test, t.y_test, t.text_features,
            *(t.descriptions[c] for c in sorted(t.descriptions)))  # fmt: skip


@functools.wraps(make_synthetic_vlm_task)  # the contract reads the generator's signature
def _synthetic(**kw):
    return _task_arrays(make_synthetic_vlm_task(**kw))


@functools.wraps(make_glyph_digits_task)
def _glyph(**kw):
    t = make_glyph_digits_task(**kw)
    return (*_task_arrays(t), t.augment([0, 1, 2], "strong", np.random.default_rng(0)))


def _grow(main, confident_pred, confident_conf, confident_idx, k=3):
    new = grow_main_samples(main, confident_pred, confident_conf, confident_idx, k)
    return np.concatenate([new[c] for c in sorted(new)])


def _select(centres, text_features, descriptions):
    chosen = select_descriptions([0, 1], descriptions, centres, text_features=text_features)
    return np.array([chosen.get(c, -1) for c in (0, 1)])


def _data_entries(task) -> list[dict]:
    small = {"n_classes": 4, "dim": 8, "n_groups": 2, "n_unlabeled": 3, "n_test": 2,
             "n_mismatch": 1, "n_confused_groups": 1, "n_descriptions": 2}  # fmt: skip
    main = {0: np.array([1, 2]), 1: np.array([3])}
    pred, conf = np.array([0, 0, 1, 1, 0]), np.array([0.9, 0.95, 0.99, 0.8, 0.7])
    idx = np.array([10, 11, 12, 13, 2])
    d = task.text_features.shape[1]
    centres = np.stack([task.descriptions[0][0], task.descriptions[1][0], task.text_features[2]])
    return [
        {"name": "render_glyph", "call": lambda char, font, stroke=0: render_glyph(char, font, stroke),
         "kwargs": {"char": "3", "font": "DejaVuSans"},
         "params": {"stroke": {"type": "int", "bad": [-1]}},
         "known": [{"kwargs": {"char": "1", "font": "DejaVuSans"},
                    "check": lambda g: g.shape == (8, 8) and g.min() >= 0 and g.max() <= 16
                    and (g == np.round(g)).all() and g.sum() > 0,
                    "why": "an 8x8 block-count image of a drawn glyph (UCI optdigits counts 0..16)"},
                   {"kwargs": {"char": "1", "font": "NoSuchFont"}, "raises": ["font"], "check": None,
                    "why": "a font matplotlib does not bundle"}]},
        {"name": "make_synthetic_vlm_task", "call": _synthetic, "kwargs": small,
         "params": {"n_classes": {"type": "int", "bad": [1]}, "dim": {"type": "int", "bad": [1]},
                    "n_unlabeled": {"type": "int", "bad": [0]},
                    "n_mismatch": {"type": "int", "bad": [-1, 3]},
                    "n_confused_groups": {"type": "int", "bad": [-1, 3]},
                    "n_descriptions": {"type": "int", "bad": [0]},
                    "logit_scale": {"type": "float", "bad": [0.0, float("nan")]},
                    "confusion_strength": {"type": "float", "bad": [-0.1, 1.5, float("nan")]}},
         "known": [{"kwargs": {**small, "n_groups": 3}, "raises": ["n_groups"], "check": None,
                    "why": "4 classes do not split into 3 groups"}]},
        {"name": "make_glyph_digits_task", "call": _glyph,
         "kwargs": {"paradigm": "ssl", "n_descriptions": 2},
         "params": {"paradigm": {"type": "str", "bad": ["zsl"]},
                    "encoder": {"type": "str", "bad": ["clip"]},
                    "test_size": {"type": "float", "bad": [0.0, 1.0, float("nan")]},
                    "n_labeled": {"type": "int", "bad": [0]},
                    "n_seen": {"type": "int", "bad": [0, 10]},
                    "n_descriptions": {"type": "int", "bad": [0, 8]},
                    "pca_dim": {"type": "int", "bad": [0]},
                    "logit_scale": {"type": "float", "bad": [0.0, float("inf")]}},
         "grid": {"paradigm": ["trzsl"], "encoder": ["pca"]}},
        {"name": "grow_main_samples", "call": _grow,
         "kwargs": {"main": main, "confident_pred": pred, "confident_conf": conf, "confident_idx": idx},
         "arrays": {"confident_pred": "labels", "confident_conf": {"kind": "float", "ndim": 1},
                    "confident_idx": "labels"},
         "rows": [["confident_pred", "confident_conf", "confident_idx"]],
         "min_rows": 0,  # an epoch without confident predictions keeps the old main samples
         "params": {"k": {"type": "int", "bad": [0, -1]}},
         "known": [{"kwargs": {"main": main, "confident_pred": pred, "confident_conf": conf,
                               "confident_idx": idx},
                    "check": lambda v: v.tolist() == [11, 10, 1, 12, 13, 3],
                    "why": "most confident new images first, old main samples top up, at most k"}]},
        {"name": "select_descriptions", "call": _select,
         "kwargs": {"centres": centres, "text_features": task.text_features,
                    "descriptions": {c: task.descriptions[c] for c in (0, 1)}},
         "arrays": {"centres": {"kind": "float", "ndim": 2},
                    "text_features": {"kind": "float", "ndim": 2}},
         "known": [{"kwargs": {"centres": centres[:, : d - 1], "text_features": task.text_features,
                               "descriptions": {c: task.descriptions[c] for c in (0, 1)}},
                    "raises": ["centres"], "check": None,
                    "why": "descriptions of another width than the centres"}]},
    ]  # fmt: skip


@functools.cache
def _module(kind: str) -> torch.nn.Module:
    """A small eval-mode Adapter / PromptModel, built once (outside any device run)."""
    from vlm_pseudolabel import Adapter, PromptModel

    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    if kind == "Adapter":
        return Adapter(6, hidden=8).double().eval()
    text = torch.randn(3, 6, generator=g, dtype=torch.float64)
    return PromptModel(text, "shared_lowrank", rank=2, generator=g).double().eval()


def _forward(kind, x):
    with torch.no_grad():
        return _module(kind)(x)


def _module_entries() -> list[dict]:
    """Forward passes of the adapter and the prompt model (logits of image embeddings)."""
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return [
        {"name": f"{k}.forward", "call": lambda x, k=k: _forward(k, x), "kwargs": {"x": x},
         "modules": lambda k=k: [_module(k)],
         "fixed": {"k": "selects the module this entry covers (one entry per module)"}}
        for k in ("Adapter", "PromptModel")
    ]  # fmt: skip


def _checked_task(**kw):
    """A VLMTask built from fields and validated as every estimator's fit validates it."""
    from vlm_pseudolabel.base import check_task

    fields = {f.name: getattr(_task(), f.name) for f in dataclasses.fields(_task())}
    t = check_task(VLMTask(**(fields | kw)))
    return {"n_classes": t.n_classes, "X": t.X_unlabeled}


_BB: list = []


def _backbone():
    import tempfile

    from vlm_pseudolabel.backbones import HFCLIPBackbone
    from vlm_pseudolabel.testing import tiny_hf_clip

    if not _BB:
        _BB.append(HFCLIPBackbone(*tiny_hf_clip(tempfile.mkdtemp(prefix="aware-ml-clip-"))))
    return _BB[0]


def _prompts(class_texts=("cat.", "dog.", "car."), context="a photo of a", backbone=None):
    p = TextContextPrompts(_backbone() if backbone is None else backbone, class_texts, context)
    with torch.no_grad():
        return {"features": p(), "n_ctx": p.n_ctx}


def _template_features(names):
    return _backbone().encode_texts([f"a photo of a {n}" for n in names])


def _task_entries() -> list[dict]:
    t = _task()
    return [
        {"name": "VLMTask", "call": _checked_task, "kwargs": {},
         "params": {"class_names": {"bad": ["abcdef", t.class_names[:3], [1] * 6]},
                    "logit_scale": {"bad": [0.0, -1.0, float("inf"), "100", True]},
                    "descriptions": {"bad": [[np.eye(2, 16)], {7: t.descriptions[0]},
                                             {0.5: t.descriptions[0]}]},
                    "augment": {"bad": ["weak"]},
                    "X_unlabeled": {"bad": [2 * t.X_unlabeled, t.X_unlabeled[:, :8]]},
                    "text_features": {"bad": [t.text_features * 3.0]},
                    "paradigm": {"bad": ["zsl"]}},
         "known": [{"kwargs": {}, "check": lambda r: r["n_classes"] == 6,
                    "why": "one class per text embedding"},
                   {"kwargs": {"X_test": t.X_test / 2}, "raises": ["X_test"], "check": None,
                    "why": "unnormalised embeddings rescale every logit s * v @ t"}]},
        {"name": "TextContextPrompts", "call": _prompts, "kwargs": {},
         "params": {"class_texts": {"bad": ["cat", [], ["cat.", 3], ["cat.", "cat."], ["cat.", ""]]},
                    "context": {"bad": ["", 3]},
                    "backbone": {"bad": ["clip", torch.nn.Linear(2, 2)]}},
         "grid": {"context": ["an image of a"]},
         "known": [{"kwargs": {"class_texts": ["cat", "dog"]},
                    "check": lambda r: r["n_ctx"] == 4 and np.allclose(
                        r["features"].numpy(), _template_features(["cat", "dog"]), atol=1e-5),
                    "why": "untrained context vectors reproduce the template's text features"}]},
    ]  # fmt: skip
