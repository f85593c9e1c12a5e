"""Parity of learngene's stage-1 distillation loss with the official TAL trainer, in float64.

The official checkout is an input, never copied: ``--official DIR`` (the repository root of
``mathieuxu/TAL-Task-Aware-Learngene-``). The official loss is not a function: it is written
inline in the training loop of ``TAL/ghn3/trainer_teacher.py``. The script parses that file,
takes the loop's own statements (``temperature = ...``, ``loss_kl = F.kl_div(...)``,
``alpha = ...``, ``loss = alpha * loss_kl + (1 - alpha) * self.criterion(y, targets)``) and
executes them unchanged on the same tensors as :func:`learngene.kd_loss`, with the trainer's
criterion (``nn.CrossEntropyLoss(label_smoothing=0)``, its default). Compared per seed: the
loss, its gradient with respect to the logits, and with respect to the student features. The
feature width differs from the class count, so a per-feature normalisation (this package's
before commit fead40b) would show.

Writes ``results/learngene/parity.json``::

    uv run python tools/parity/learngene.py --official /path/to/TAL-Task-Aware-Learngene-
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
from parity_common import Record, official_source
from record import Run

# this script's folder is first on sys.path and this file is called learngene.py: drop the
# folder so that the import below finds the package, not the script
_HERE = pathlib.Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != _HERE]
from learngene import kd_loss  # noqa: E402

TRAINER = pathlib.Path("TAL") / "ghn3" / "trainer_teacher.py"
TARGETS = ("temperature", "loss_kl", "alpha", "loss")
WHERE = {
    "stage-1 loss (alpha KD + (1 - alpha) CE)": f"{TRAINER}: Trainer.update (inline)",
    "gradient wrt the logits": f"{TRAINER}: Trainer.update (autograd)",
    "gradient wrt the student features": f"{TRAINER}: Trainer.update (autograd)",
}


def official_statements(root: pathlib.Path) -> tuple[str, ...]:
    """The training loop's assignments of ``TARGETS``, as source, in the order they run."""
    path = root / TRAINER
    if not path.is_file():
        raise SystemExit(f"--official: {path} not found (a TAL-Task-Aware-Learngene- checkout?)")
    tree = ast.parse(path.read_text())

    def assigned(node) -> str | None:
        ok = isinstance(node, ast.Assign) and len(node.targets) == 1
        return node.targets[0].id if ok and isinstance(node.targets[0], ast.Name) else None

    # the block (statement list) that computes loss_kl: its own temperature, alpha and loss
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and any(assigned(b) == "loss_kl" for b in body):
            found = {assigned(b): ast.unparse(b) for b in body if assigned(b) in TARGETS}
            break
    missing = [t for t in TARGETS if t not in found]
    if missing:
        raise SystemExit(f"--official: {path} has no assignment of {missing}")
    return tuple(found[t] for t in TARGETS)


def official_loss(stmts, y, targets, student_label, teacher_label) -> torch.Tensor:
    trainer = type("Trainer", (), {"criterion": nn.CrossEntropyLoss(label_smoothing=0)})()
    scope = {"F": F, "torch": torch, "self": trainer, "y": y, "targets": targets,
             "student_label": student_label, "teacher_label": teacher_label}  # fmt: skip
    for s in stmts:
        exec(s, scope)  # the official statements, parsed above
    return scope["loss"], float(scope["alpha"]), float(scope["temperature"])


def compare(stmts, rec: Record, seed: int, n: int = 16, C: int = 10, d: int = 48) -> None:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, C, generator=g, dtype=torch.float64) * 2
    target = torch.randint(0, C, (n,), generator=g)
    student = torch.randn(n, d, generator=g, dtype=torch.float64) * 3
    teacher = torch.randn(n, d, generator=g, dtype=torch.float64) * 3
    out = {}
    for who in ("official", "ours"):  # the official statements set alpha and T
        y, s = logits.clone().requires_grad_(), student.clone().requires_grad_()
        if who == "official":
            loss, alpha, T = official_loss(stmts, y, target, s, teacher)
        else:
            loss = kd_loss(y, target, s, teacher, alpha=alpha, T=T)
        loss.backward()
        out[who] = (loss.detach(), y.grad, s.grad)
    for name, a, b in zip(WHERE, out["ours"], out["official"], strict=True):
        rec(name, a, b)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--official", required=True, type=pathlib.Path,
                    help="checkout of github.com/mathieuxu/TAL-Task-Aware-Learngene-")  # fmt: skip
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=None, help="results folder (default results/learngene)")
    a = ap.parse_args(argv)
    stmts = official_statements(a.official.resolve())
    run = Run("learngene", out=a.out)
    rec = Record()
    for seed in range(a.seeds):
        compare(stmts, rec, seed)
    rows = rec.rows(WHERE)
    worst = max(r[3] for r in rows)
    run.table(
        "parity", ["component", "official file: function", "max |ours − official|", "max relative"],
        rows, fmt=[None, None, ".1e", ".1e"], seeds=list(range(a.seeds)),
        title="learngene kd_loss vs the official TAL trainer's inline loss, float64",
        notes=[f"{a.seeds} seeds; 16 samples, 10 classes, 48-wide features (the KL is divided by "
               "the logits' element count, not the features'); the official statements are "
               "parsed out of the trainer and run unchanged: " + "; ".join(stmts) + "."],
        per_seed=rec.per_seed(),
        extra={"official": official_source(a.official, "mathieuxu/TAL-Task-Aware-Learngene-")},
        headline=f"kd_loss vs the official TAL trainer, float64: worst relative difference "
        f"{worst:.1e}",
    )  # fmt: skip


if __name__ == "__main__":
    main()
