"""Run the official SYNC code (``BIT-DA/SYNC``) on CPU at its own settings, for the comparison
with this package's SYNC under the same protocol.

The official checkout and the data file are inputs, never copied: ``--official DIR`` (the
repository root) and ``--data PATH`` (CIDA's ``half-circle.pkl``, the file the official
Circle script reads). The script patches the official code's ``.cuda()`` calls to stay on the
CPU, builds its ``Trainer`` with the arguments of ``scripts/train_circle_sync.sh`` (30 epochs
x 200 iterations, batch 64 per domain, ``zc_dim`` 20, lambdas 0.01 / 1 / 0.02, lr 5e-6 from its
hyper-parameter registry) and records, per seed, the validation (intermediate domains) and
target accuracy after every epoch. The reported model is the official rule's: the first epoch
with the best mean validation accuracy.

Writes ``results/evolving-dg/official_code_circle.json``::

    uv run --with einops python tools/parity/evolving-dg.py --official /path/to/SYNC \\
        --data /path/to/half-circle.pkl --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import pathlib
import sys
import tempfile
import time
import types
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
from record import Run, fmt_sd

CIRCLE = dict(  # scripts/train_circle_sync.sh
    data_name="ToyCircle", num_classes=2, data_size="[1, 2]", source_domains=15,
    intermediate_domains=5, target_domains=10, mode="train", model_func="Toy_Linear_FE",
    feature_dim=128, cla_func="Linear_Cla", algorithm="SYNC", train_batch_size=64,
    eval_batch_size=50, test_epoch=-1, zc_dim=20, zw_dim=20, zd_dim=20, lambda_evolve=0.01,
    lambda_mi=1.0, lambda_causal=0.02, weight_decay=0.0, num_workers=0, print_freq=100,
    record=False, gpu_ids="",
)  # fmt: skip


def run_official(root: pathlib.Path, data: pathlib.Path, seed: int, epochs: int, iters: int):
    """Per-epoch (val accuracies, target accuracies) of one official run."""
    torch.Tensor.cuda = lambda self, *a, **k: self  # the code calls .cuda() unconditionally
    torch.nn.Module.cuda = lambda self, *a, **k: self
    sys.path.insert(0, str(root))
    os.chdir(root)  # the official code resolves its registries relative to the checkout
    from engine import trainer as official_trainer

    cfg = types.SimpleNamespace(**CIRCLE, data_path=str(data), epochs=epochs, iterations=iters,
                                seed=seed, save_path=tempfile.mkdtemp())  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()):
        tr = official_trainer.Trainer(cfg)
    curves: list[tuple[list[float], list[float]]] = []
    pending: list = []
    orig = tr._val_net

    def val_net(epoch, loader):  # the trainer scores validation, then target, every epoch
        out = orig(epoch, loader)
        pending.append([float(a) for a in out[1]])
        if len(pending) == 2:
            curves.append((pending[0], pending[1]))
            pending.clear()
        return out

    tr._val_net = val_net
    with contextlib.redirect_stdout(io.StringIO()):
        tr.train()
    return curves


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--official", required=True, type=pathlib.Path, help="BIT-DA/SYNC checkout")
    ap.add_argument("--data", type=pathlib.Path, help="CIDA half-circle.pkl (run level)")
    ap.add_argument("--components", action="store_true",
                    help="component parity in float64 (results/evolving-dg/parity.json); no data")  # fmt: skip
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--out", default=None)
    ap.add_argument("--jobs", type=int, default=1, help="seeds run in parallel processes")
    a = ap.parse_args(argv)
    root = a.official.resolve()
    if not (root / "network" / "SYNC_algo.py").exists():
        raise SystemExit(f"--official: {root} holds no SYNC checkout (network/SYNC_algo.py)")
    if a.components:
        return components(root, a)
    if a.data is None:
        raise SystemExit("--data: the run-level comparison needs CIDA's half-circle.pkl")
    data = a.data.resolve()
    if not data.is_file():
        raise SystemExit(f"--data: {data} is not a file")
    torch.set_num_threads(1)
    run = Run("evolving-dg", out=a.out, uv_with=("einops",))
    per_seed, rows_sel = {}, []
    # each seed is cached under its settings (tools/bench/.cache): a stopped run resumes
    keys = {seed: repr(("official-sync", data.name, seed, a.epochs, a.iters)) for seed in a.seeds}
    todo = [s for s in a.seeds if not run.is_cached(keys[s])]
    pool = ProcessPoolExecutor(a.jobs) if a.jobs > 1 and todo else contextlib.nullcontext()
    with pool as ex:
        futs = {s: ex.submit(_timed, root, data, s, a.epochs, a.iters) for s in todo} if ex else {}
        for seed in a.seeds:
            fn = (
                futs[seed].result
                if seed in futs
                else (lambda s=seed: _timed(root, data, s, a.epochs, a.iters))
            )
            curves, cpu = run.cached(keys[seed], fn)
            val = np.array([np.mean(v) for v, _ in curves])
            tgt = [t for _, t in curves]
            sel = int(np.argmax(val))  # the official rule: first epoch with the best mean val
            per_seed[seed] = {"val": [v for v, _ in curves], "target": tgt, "cpu_s": cpu}
            rows_sel.append((np.mean(tgt[sel]), np.min(tgt[sel]), np.mean(tgt[-1]),
                             max(np.mean(t) for t in tgt), sel, cpu))  # fmt: skip
            record(run, a, data, a.seeds[: len(rows_sel)], rows_sel, per_seed)
            print(f"seed {seed}: target Avg {np.mean(tgt[sel]):.1f} at epoch {sel} (last "
                  f"{np.mean(tgt[-1]):.1f}), {cpu:.0f} CPU s", flush=True)  # fmt: skip


def components(root: pathlib.Path, a) -> None:
    """Every SYNC component against the official modules (see ``sync_components``)."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import sync_components as sc
    from parity_common import Record, official_source, within_target

    torch.set_default_dtype(torch.float64)  # the official modules are built in float64
    inits = sc.load_official(root)
    run = Run("evolving-dg", out=a.out, uv_with=("einops",))
    rec = Record()
    for seed in a.seeds:
        sc.compare(inits, seed, rec)  # the package with the official switches set
        sc.compare(inits, seed, rec, official=False)  # the training step at its defaults
    where = {**sc.WHERE, **{f"{k} [package defaults]": v for k, v in sc.WHERE.items()}}
    rows = rec.rows(where)
    main_rows, ok = within_target(rows)
    switches = ", ".join(f"{k}={v!r}" for k, v in sc.OFFICIAL.items())
    run.table(
        "parity", ["component", "official file: function", "max |ours − official|", "max relative"],
        rows, fmt=[None, None, ".1e", ".1e"], seeds=list(a.seeds),
        title="evolving-dg SYNC (arch='reference') vs the official SYNC modules, float64",
        notes=[f"{len(a.seeds)} seeds; Circle's settings (d_z 20, width 512, 15 domains), one "
               f"batch of {sc.B} per domain; the official weights are copied into SYNCNet module "
               "by module (every tensor of both sides mapped). Loss terms and gradients: one "
               "step with the sampling noise off on both sides, the official terms read at its "
               "optimiser step. Prediction: one source-end LSTM state, "
               "transductive_state='source', masks at 1 (the masks deviate on purpose: ours is "
               "the expected mask, the official one Gumbel draw).",
               f"Rows without a tag: SYNC(arch='reference', {switches}), the switches that "
               "restore the official code; rows tagged [package defaults]: the same step with "
               "contrast_eps=0 (no 1e-6 inside the contrastive log) and prior_state_grad=True "
               "(gradients through the prior LSTM states across domains)."],
        per_seed=rec.per_seed(),
        extra={"official": official_source(root, "BIT-DA/SYNC")},
        headline=f"SYNC vs the official modules, float64: {ok}/{len(main_rows)} components "
        f"<= 1e-5 with {switches}",
    )  # fmt: skip


def _timed(root, data, seed, epochs, iters):
    torch.set_num_threads(1)
    t0 = time.process_time()
    curves = run_official(root, data, seed, epochs, iters)
    return curves, time.process_time() - t0


def record(
    run: Run, a, data: pathlib.Path, seeds: list[int], rows_sel: list, per_seed: dict
) -> None:
    """Write the table for the seeds finished so far (rewritten after every seed)."""
    r = np.array(rows_sel)
    run.table(
        "official_code_circle",
        ["run", "target Avg % (selected)", "target Wst %", "target Avg % (last epoch)",
         "best target Avg % (oracle)", "selected epoch", "CPU s / run"],
        [["official SYNC code, CPU", fmt_sd(r[:, 0], 1), fmt_sd(r[:, 1], 1), fmt_sd(r[:, 2], 1),
          fmt_sd(r[:, 3], 1), ", ".join(str(int(e)) for e in r[:, 4]), float(r[:, 5].mean())]],
        fmt=[None] * 6 + [".0f"], seeds=seeds, per_seed=per_seed,
        title=f"Official SYNC on {data.name}: {a.epochs} x {a.iters} iterations, batch 64",
        notes=["Mean ± std over seeds; selection: the first epoch with the best mean accuracy "
               "on the 5 intermediate domains (the official trainer's 'best' checkpoint)."],
        headline=f"official SYNC code on CIDA's Circle file, CPU, {len(seeds)} seeds: target "
                 f"Avg {fmt_sd(r[:, 0], 1)} %",
    )  # fmt: skip


if __name__ == "__main__":
    main()
