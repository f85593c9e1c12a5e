"""Benchmark: QuerentMIL against ABMIL, dense TransMIL-style attention and mean pooling.

Data: ``sparse_attn.make_wsi_bags`` -- synthetic slides whose label is whether two distant
lesions carry the same code (long-range context needed; see its docstring). Training and test
slides have 1,000-2,000 patches (training on 20,000-patch slides is out of reach of 2 CPU
cores); time and memory are then measured on slides of 1,000-20,000 patches.

Part 1 (``--seeds`` seeds; each seed draws new data and initialisations): slide AUROC and
accuracy on held-out slides, localisation AUROC of the interpretation maps against the planted
lesion patches (attention pooling weights; for QuerentMIL also the region-importance map), the
training curve (first and last epoch mean loss) and training time. Every model gets the same
epochs, learning rate and width.

Part 2: forward time per slide (CPU time, one thread, best of 3) and peak memory (resident-set
growth of a fresh subprocess during one forward pass after a warm-up, with glibc's mmap threshold
fixed so that freed temporaries leave the resident set) as the slide grows.

    uv run python tools/bench/querent_bench.py            # ~30 min on 2 cores
    uv run python tools/bench/querent_bench.py --quick    # 1 seed, small slides (temp folder)
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import torch
from record import Run, child_json, fmt_ci
from sklearn.metrics import roc_auc_score

from sparse_attn import ABMIL, MeanPoolMIL, QuerentMIL, TransMILStyle, make_wsi_bags

MODELS = {
    "QuerentMIL": QuerentMIL,
    "ABMIL": ABMIL,
    "TransMIL-style (dense)": TransMILStyle,
    "mean pooling": MeanPoolMIL,
}


def fmt(values) -> str:
    a = np.asarray(values, dtype=float)
    return f"{a.mean():.3f} +- {a.std():.3f}"


def part1(
    rec: Run, seeds: int, n_train: int, n_test: int, patches: tuple[int, int], epochs: int
) -> None:
    print(
        f"\n## Part 1: {n_train} training / {n_test} test slides of {patches} patches, "
        f"{epochs} epochs, {seeds} seeds\n"
    )
    res: dict[str, dict[str, list]] = {m: {} for m in MODELS}
    for seed in range(seeds):
        train = make_wsi_bags(n_train, patches, seed=100 + seed)
        test = make_wsi_bags(n_test, patches, seed=200 + seed)
        y = np.array([b.label for b in test])
        for name, cls in MODELS.items():
            torch.manual_seed(seed)
            model = cls(32, 2)
            t0 = time.process_time()
            model.fit(train, epochs=epochs, lr=5e-4, seed=seed, verbose=0)
            fit_s = time.process_time() - t0
            p = model.predict_proba(test)[:, 1].numpy()
            loc_att, loc_reg = [], []
            with torch.no_grad():
                for b in test:
                    _, maps = model(b.features, b.coords, return_maps=True)
                    loc_att.append(roc_auc_score(b.lesion.numpy(), maps["attention"].numpy()))
                    if "region_importance" in maps:
                        imp = maps["region_importance"].numpy()
                        loc_reg.append(roc_auc_score(b.lesion.numpy(), imp))
            r = res[name]
            for key, val in (
                ("auc", roc_auc_score(y, p)),
                ("acc", float(np.mean((p > 0.5) == y))),
                ("loc_att", float(np.mean(loc_att))),
                ("loc_reg", float(np.mean(loc_reg)) if loc_reg else np.nan),
                ("first", model.loss_curve_[0]),
                ("last", model.loss_curve_[-1]),
                ("fit_s", fit_s),
            ):
                r.setdefault(key, []).append(val)
            print(f"  seed {seed} {name}: AUROC {r['auc'][-1]:.3f}", flush=True)
    rows = []
    for name, r in res.items():
        reg = fmt(r["loc_reg"]) if not np.isnan(r["loc_reg"][0]) else "n/a"
        rows.append([name, fmt(r["auc"]), fmt(r["acc"]), fmt(r["loc_att"]), reg,
                     f"{np.mean(r['first']):.3f} -> {np.mean(r['last']):.3f}", float(np.mean(r["fit_s"]))])  # fmt: skip
    q, a, d = (np.array(res[k]["auc"]) for k in ("QuerentMIL", "ABMIL", "TransMIL-style (dense)"))
    rec.table(
        "mil",
        ["model", "slide AUROC", "accuracy", "localisation AUROC (attention)",
         "localisation AUROC (region importance)", "loss epoch 1 -> last", "train CPU s"],
        rows, fmt=[None] * 6 + [".0f"], seeds=list(range(seeds)),
        per_seed={k: {m: [float(x) for x in v] for m, v in r.items()} for k, r in res.items()},
        title=f"Part 1: {n_train} training / {n_test} test slides of {patches} patches, {epochs} epochs",
        notes=[f"make_wsi_bags: label = whether two distant lesions carry the same code; "
               f"{n_train} training and {n_test} held-out slides of {patches[0]}-{patches[1]} "
               f"patches per seed, same width (32), epochs ({epochs}) and lr (5e-4) for every "
               "model; mean +- std over seeds. Train CPU s: one torch thread.",
               f"Paired over seeds: QuerentMIL - ABMIL {fmt_ci(q - a, 3, sign=True)} AUROC (target "
               f">= +0.05); QuerentMIL - dense {fmt_ci(q - d, 3, sign=True)} (target >= -0.02)."],
        timing=True,
        headline=f"slide AUROC QuerentMIL {q.mean():.3f} vs ABMIL {a.mean():.3f} vs dense "
                 f"{d.mean():.3f} (synthetic long-range slides)",
    )  # fmt: skip


_CHILD = r"""
import json, sys, time, torch
from sparse_attn import ABMIL, QuerentMIL, TransMILStyle, make_wsi_bags
torch.set_num_threads(1)
name, n = sys.argv[1], int(sys.argv[2])
bag = make_wsi_bags(1, (n, n), seed=0)[0]
model = {"QuerentMIL": QuerentMIL, "ABMIL": ABMIL, "TransMIL-style (dense)": TransMILStyle}[name](32, 2).eval()
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
best, peak = float("inf"), float("nan")
with torch.no_grad():
    model(bag.features, bag.coords)  # warm-up
    if sys.argv[3] == "mem":
        # under MALLOC_MMAP_THRESHOLD_ (see part2) freed blocks leave the resident set, so the
        # growth over the post-warm-up level is the forward pass's peak of live temporaries
        open("/proc/self/clear_refs", "w").write("5")
        base = status("VmRSS")
        model(bag.features, bag.coords)
        peak = status("VmHWM") - base
    else:
        for _ in range(3):
            t0 = time.process_time()
            model(bag.features, bag.coords)
            best = min(best, time.process_time() - t0)
print(json.dumps([best, peak]))
"""


def measure(name: str, n: int) -> list[float]:
    """[best CPU s, peak MB]: time and memory from two fresh subprocesses, memory with the
    mmap threshold fixed (see ``record.child_json``)."""
    return [child_json(_CHILD, name, str(n), "time")[0],
            child_json(_CHILD, name, str(n), "mem", fixed_mmap=True)[1]]  # fmt: skip


def part2(rec: Run, sizes) -> None:
    names = ["QuerentMIL", "TransMIL-style (dense)", "ABMIL"]
    rows = []
    for n in sizes:
        out = {}
        for name in names:
            out[name] = measure(name, n)
        q, d = out["QuerentMIL"], out["TransMIL-style (dense)"]
        # a peak under 1 MB is below what the resident-set measurement resolves: no ratio
        rows.append([n, *(f"{out[k][0]:.3f} / {out[k][1]:.0f}" for k in names),
                     q[0] / d[0], q[1] / d[1] if d[1] >= 1.0 else None])  # fmt: skip
        rec.sample_load()
    rec.table(
        "mil_scale",
        ["patches", *(f"{n} s / MB" for n in names), "Querent / dense time", "Querent / dense memory"],
        rows, fmt=[None, None, None, None, ".2f", ".2f"],
        title="Part 2: forward time and peak memory per slide (CPU, one thread)",
        notes="Forward pass of one slide, process CPU time of one thread, best of 3 after a "
              "warm-up; peak memory = resident-set growth of a fresh process over its post-warm-up "
              "level during one forward pass, with glibc's mmap threshold fixed at 64 KB so that "
              "freed temporaries leave the resident set (a separate process from the timing). "
              "Target at 20,000 patches: QuerentMIL <= 0.3x the dense model's time and memory. "
              "No memory ratio where the dense model's peak is under 1 MB (below what the "
              "resident-set measurement resolves).",
        timing=True,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--parts", default="1,2", help="which parts to run, e.g. 2")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rec = Run("sparse-attn", out=tempfile.mkdtemp() if args.quick else None)
    t0 = time.perf_counter()
    if args.quick:
        part1(rec, 1, 60, 40, (600, 900), 8)
        part2(rec, [1000, 5000])
    else:
        if "1" in args.parts:
            part1(rec, args.seeds, 150, 80, (1000, 2000), 12)
        if "2" in args.parts:
            part2(rec, [1000, 5000, 10000, 20000])
    print(f"\ntotal wall time {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
