"""Parity of vlm-pseudolabel's CAP losses with the official CAP code (``Noahwangyuchen/CAP``),
in float64.

The official checkout is an input (``--official DIR``), never copied. Its training runs through
``accelerate`` on image folders; the harness imports its modules (a stand-in ``clip`` module: only
the zero-shot pseudolabelling helper imports OpenAI's package) and calls the official methods on a
stand-in ``self`` that holds the same tensors as ours:

* ``TextualPrompt.compute_margin`` (the confusion-aware calibrated margin: the per-class ratio of
  confident pseudolabels, the max of visual and textual similarity rescaled per row), on random
  class text features, main-sample image features and counts, in the unsupervised setting and in
  TRZSL (seen classes at ratio 1), against :func:`margin_matrix`;
* ``TextualFPL.confidence_based_self_training_loss`` on margined strong-view logits, against
  :func:`self_training_loss` (``norm="confident"``; the package default ``"batch"`` is tagged);
* the main-sample and labelled losses, cross-entropy of ``logits + M[y]`` (zero diagonal), against
  :func:`margin_cross_entropy`.

The CLIP prompt learner and the debiasing adapters are not compared (the package's prompt and
adapter modules are its own design, see the README's Fidelity section).

    uv run python tools/parity/vlm-pseudolabel.py --official DIR
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import types

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from parity_common import Record, import_official, official_source, within_target
from record import Run

import vlm_pseudolabel as vp

WHERE = {
    "margin matrix, unsupervised": "methods/cacm.py: TextualPrompt.compute_margin",
    "margin matrix, TRZSL (seen classes at ratio 1)": "methods/cacm.py: TextualPrompt.compute_margin",
    "main-sample / labelled loss (CE of logits + M[y])": "methods/cacm.py: TextualPrompt._train_epoch",
    "self-training loss, norm='confident'": "methods/cap.py: TextualFPL.confidence_based_self_training_loss",
    "self-training loss, norm='batch' [package default]": "methods/cap.py: TextualFPL.confidence_based_self_training_loss",
}  # fmt: skip


def load_official(root: pathlib.Path):
    sys.modules.setdefault("clip", types.ModuleType("clip"))  # only utils/clip_pseudolabels uses it
    return import_official(root, "methods.cacm", "methods.cap")


class _Images(torch.utils.data.Dataset):
    """The official dataset class's interface: items (image, _, _, label, path); here the
    "image" is its feature vector (the stand-in ``extract_features`` returns it)."""

    def __init__(self, paths, folder, transform=None, augmentations=None, train=False,
                 labels=None, label_map=None, features=None):  # fmt: skip
        self.filepaths, self.labels, self.features = list(paths), list(labels), features

    def __len__(self):
        return len(self.filepaths)

    def __getitem__(self, i):
        return self.features[self.filepaths[i]], 0, 0, self.labels[i], self.filepaths[i]


def margin_pair(cacm, seed: int, trzsl: bool):
    """(ours, official) margin matrices on one random configuration."""
    g = torch.Generator().manual_seed(seed)
    C, d, per = 6, 16, 5
    classes = [f"class{i}" for i in range(C)]
    seen = set(classes[:2]) if trzsl else set()
    text = torch.randn(C, d, generator=g, dtype=torch.float64)
    counts = torch.randint(0, 40, (C,), generator=g).double()
    counts[3] = 0.0  # a class nothing was predicted as
    feats, board = {}, {}
    for c in range(C):
        n = 0 if c == 4 else per  # a class with no main samples: its text feature stands in
        board[c] = []
        for k in range(n):
            path = f"img_{c}_{k}.jpg"
            feats[path] = torch.randn(d, generator=g, dtype=torch.float64) + 2 * text[c]
            board[c].append((torch.tensor(0.9), path))
    label_to_idx = {name: i for i, name in enumerate(classes)}
    fake = types.SimpleNamespace(
        pl_per_class={name: float(counts[i]) for i, name in enumerate(classes)},
        model=lambda _: (text.clone(), None),
        debias_module=lambda text_out=None, inference=True: (text_out, None),
        leaderboard=board,
        dataset_obj=lambda *a, **k: _Images(*a, **k, features=feats),
        data_folder=None, transform=None, config=types.SimpleNamespace(BATCH_SIZE=4),
        extract_features=lambda x: (None, x, None), dim=d, dtype=torch.float64,
        device="cpu", classes=classes, label_to_idx=label_to_idx,
        unseen_classes=[c for c in classes if c not in seen], margin_scale=12.0,
    )  # fmt: skip
    official = cacm.TextualPrompt.compute_margin(fake)
    # ours: prototypes as the engine builds them (mean of the normalised image features of the
    # class's main samples, normalised; the text feature where a class has none)
    t = F.normalize(text, dim=-1)
    vis = t.clone()
    for c, items in board.items():
        if items:
            v = torch.stack([F.normalize(feats[p], dim=-1) for _, p in items]).mean(0)
            vis[c] = F.normalize(v, dim=-1)
    seen_mask = np.array([c in seen for c in classes]) if trzsl else None
    ours = vp.margin_matrix(counts.numpy(), vis.numpy(), t.numpy(), 12.0, "ref", seen_mask)
    # the official matrix keeps its diagonal and zeroes it where it is used (margin_mask)
    official = official.double() * (1.0 - torch.eye(C, dtype=torch.float64))
    return torch.from_numpy(ours.astype(np.float64)), official


def compare(cacm, cap, seed: int, rec: Record) -> None:
    m_ul, m_ul_off = margin_pair(cacm, seed, trzsl=False)
    rec("margin matrix, unsupervised", m_ul, m_ul_off)
    m_tr, m_tr_off = margin_pair(cacm, seed, trzsl=True)
    rec("margin matrix, TRZSL (seen classes at ratio 1)", m_tr, m_tr_off)
    g = torch.Generator().manual_seed(100 + seed)
    B, C = 32, 6
    margin = m_ul_off  # the official margin, zero diagonal applied as the official code does
    off_diag = 1.0 - torch.eye(C, dtype=torch.float64)
    logits = 5 * torch.randn(B, C, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (B,), generator=g)
    official_ce = F.cross_entropy(logits + margin[y] * off_diag[y], y)
    rec("main-sample / labelled loss (CE of logits + M[y])",
        vp.margin_cross_entropy(logits, y, margin), official_ce)  # fmt: skip
    weak = 5 * torch.randn(B, C, generator=g, dtype=torch.float64)
    strong = weak + torch.randn(B, C, generator=g, dtype=torch.float64)
    conf, pl = F.softmax(weak, 1).max(1)
    mask = conf > 0.85
    fake = types.SimpleNamespace()
    official_st = cap.TextualFPL.confidence_based_self_training_loss(
        fake, strong + margin[pl] * off_diag[pl], pl, mask.double()
    )
    rec("self-training loss, norm='confident'",
        vp.self_training_loss(strong, pl, mask, margin, "confident"), official_st)  # fmt: skip
    rec("self-training loss, norm='batch' [package default]",
        vp.self_training_loss(strong, pl, mask, margin, "batch"), official_st)  # fmt: skip


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--official", required=True, type=pathlib.Path, help="Noahwangyuchen/CAP checkout"
    )
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    root = a.official.resolve()
    if not (root / "methods" / "cacm.py").exists():
        raise SystemExit(f"--official: {root} holds no CAP checkout (methods/cacm.py)")
    cacm, cap = load_official(root)
    run = Run("vlm-pseudolabel", out=a.out)
    rec = Record()
    for seed in range(a.seeds):
        compare(cacm, cap, seed, rec)
    rows = rec.rows(WHERE)
    main_rows, ok = within_target(rows)
    run.table(
        "parity", ["component", "official file: function", "max |ours − official|", "max relative"],
        rows, fmt=[None, None, ".1e", ".1e"], seeds=list(range(a.seeds)),
        title="vlm-pseudolabel CAP losses vs the official CAP code, float64",
        notes=[f"{a.seeds} seeds; 6 classes, 16-d features, 5 main samples per class (one class "
               "with none, one with no confident prediction); the official methods run on a "
               "stand-in self holding the same tensors. Self-training: 32 rows, threshold "
               "0.85. norm='confident' divides by the confident rows as the official code (and "
               "the spec) does; the package default 'batch' divides by the batch size, so it "
               "is the official value times the confident share. The margin matrix is returned "
               "in float32 by the package (its differences are float32 rounding); the official "
               "one keeps a diagonal that its margin_mask zeroes where it is used."],
        per_seed=rec.per_seed(),
        extra={"official": official_source(root, "Noahwangyuchen/CAP")},
        headline=f"CAP losses vs the official code, float64: {ok}/{len(main_rows)} components "
        "<= 1e-5 (self-training with norm='confident')",
    )  # fmt: skip


if __name__ == "__main__":
    main()
