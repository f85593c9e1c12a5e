"""QT-DoG benchmark in the paper's regime at CPU scale: a pre-trained backbone, PACS-like domains.

1. Pre-train a SmallCNN on a 20-class task (digit x upright/turned, photo-like renderings of one
   half of scikit-learn's digits) -- the stand-in for ImageNet pre-training.
2. Leave-one-domain-out on ``StyledDigits`` (photo / art / cartoon / sketch renderings of the
   other half): the backbone's features are loaded, a fresh classifier is added, BatchNorm is
   frozen (DomainBed), Adam, batch 32 per source domain, training-domain validation selection.
3. Methods in one run, same budget and seeds: ERM; QT-DoG with learned steps (the paper);
   QT-DoG frozen (the released code's effective behaviour: quantized layers stop training);
   FrozenFP (the same layers frozen in full precision, no quantization); torch.ao fake-quant
   QAT; SWA; SWAD; ERM_SMA (EoA's members). Ensembles of 5: ERM-ensemble, EoA, EoQ.
4. Paired differences to ERM with 95 % t-intervals over seeds (each seed's mean over targets),
   and over the (seed, target) pairs.
5. ``--swad-flatness``: flatness in SWAD's protocol (the same absolute radii for every model,
   >= 20 random directions, source and target data, QT-DoG with and without its step sizes
   perturbed; 95 % CIs over the models; a PNG). Off by default: absolute radii reward models
   with larger weights (qatdg_int8_flatness_bench.py measures filter-normalised flatness with
   its sanity gate).

6. ``--wide``: the regime of issue #50 item 3, where full-precision ERM reaches >= 50 % on every
   target: SmallCNN(width=64) pre-trained 3000 steps on all four styles of the pre-training
   content (ImageNet's own variety; the DG content and labels stay disjoint), ERM / QT-DoG /
   SWAD, tables ``accuracy_wide`` and ``wide_probe`` (the same ERM run at the narrow and wide
   settings); runs in ``--jobs`` processes, each (seed, target, method) cached, so a stopped run
   resumes. No ensembles or flatness in this mode.

    uv run python tools/bench/qatdg_bench.py --seeds 3    # ~50 CPU min
    uv run python tools/bench/qatdg_bench.py --wide --seeds 5 --jobs 2   # ~100 CPU min
    uv run python tools/bench/qatdg_bench.py --quick      # ~4 min: 2 seeds, 2 targets (temp folder)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F
from record import Run
from scipy import stats

from qat_dg import (
    Ensemble,
    EoQ,
    PretrainDigits,
    StyledDigits,
    TrainConfig,
    accuracy,
    local_flatness,
    model_size_bits,
    pretrain_backbone,
    train_domain,
)

METHODS = {
    "ERM": ("ERM", {}),
    "QT-DoG (learned steps)": ("QTDoG", {}),
    "QT-DoG frozen (released code)": ("QTDoG", {"freeze_quantized_after_switch": True}),
    "FrozenFP (control)": ("FrozenFP", {}),
    "torch.ao QAT": ("TorchQAT", {}),
    "SWA": ("SWA", {}),
    "SWAD": ("SWAD", {}),
    "ERM_SMA (EoA member)": ("ERM_SMA", {}),
}
ENSEMBLES = {
    "ERM ensemble": ("ERM", Ensemble),
    "EoA (SMA members)": ("ERM_SMA (EoA member)", Ensemble),
    "EoQ (QT-DoG members)": ("QT-DoG (learned steps)", EoQ),
}
FLAT = ["ERM", "QT-DoG (learned steps)", "QT-DoG frozen (released code)", "SWA", "SWAD"]


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ci95(d: np.ndarray) -> tuple[float, float]:
    """Mean and 95 % t-interval half-width of a 1-D sample."""
    d = np.asarray(d, dtype=float)
    if len(d) < 2:
        return float(d.mean()), float("nan")
    return float(d.mean()), float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))


def fmt(m: float, h: float, scale: float = 100.0, digits: int = 1) -> str:
    return f"{m * scale:+.{digits}f} [{(m - h) * scale:+.{digits}f}, {(m + h) * scale:+.{digits}f}]"


WIDE_METHODS = ("ERM", "QT-DoG (learned steps)", "SWAD")


def method_row(name: str, acc: dict, cpu_per_run: float, per_target: bool = False) -> list:
    """One accuracy-table row: per-target mean ± std, the average, paired differences to ERM.

    ``acc[m]`` is (seeds, targets); differences are paired per seed (averaged over targets)
    and per run, and with ``per_target`` per target as well.
    """
    a, erm = acc[name], name == "ERM"
    d = a - acc["ERM"]
    row = [name, *(f"{100 * a[:, j].mean():.1f} ± {100 * a[:, j].std():.1f}" for j in range(a.shape[1])),
           f"{100 * a.mean():.1f}", "—" if erm else fmt(*ci95(d.mean(axis=1))),
           "—" if erm else fmt(*ci95(d.ravel()))]  # fmt: skip
    if per_target:
        row.append("—" if erm else "; ".join(fmt(*ci95(d[:, j])) for j in range(a.shape[1])))
    return [*row, cpu_per_run]


def _train_one(job: tuple) -> dict:
    """One (seed, target, method) run in a worker process: accuracy, curve, CPU seconds."""
    torch.set_num_threads(1)
    ds_kw, name, te, hp, cfg_kw, s = job
    alg, extra = METHODS[name]
    ds = StyledDigits(**ds_kw)
    t0 = time.process_time()
    r = train_domain(ds, alg, te, {**hp, **extra}, TrainConfig(seed=s, **cfg_kw))
    return {"acc": r["iid"], "curve": [x["src_val"] for x in r["records"]],
            "cpu": time.process_time() - t0}  # fmt: skip


def wide(a: argparse.Namespace, rec: Run, t_start: float) -> None:
    """``--wide``: ERM / QT-DoG / SWAD where FP ERM reaches >= 50 % on every target."""
    targets = a.targets if a.targets is not None else [0, 1, 2, 3]
    styles = ("photo", "art", "cartoon", "sketch")
    narrow_steps = min(2000, a.pretrain_steps)  # the default regime's (fewer under --quick)
    settings = {
        "narrow": (16, ("photo",), narrow_steps),
        "wide": (a.width, styles, a.pretrain_steps),
        "width_only": (a.width, ("photo",), a.pretrain_steps),  # control: width without styles
    }
    backbones, infos = {}, {}
    for key, (w, st, steps) in settings.items():
        xp, yp = PretrainDigits(size=16, n=8000, seed=0, styles=st)
        backbones[key], infos[key] = pretrain_backbone(xp, yp, width=w, n_steps=steps, seed=0)
        _log(f"pre-trained {key}: width {w}, styles {st}, {steps} steps, {infos[key]}")
    ds_kw = {"size": 16, "n_per_domain": a.n_per_domain, "seed": 0}
    names = StyledDigits(**ds_kw).env_names
    q_start = int(0.4 * a.steps)
    cfg_kw = {"n_steps": a.steps, "checkpoint_freq": max(1, a.steps // 10)}

    def hp_of(key: str) -> dict:
        return {"pretrained": backbones[key], "freeze_bn": True, "width": settings[key][0],
                "lr": a.lr, "bits": a.bits, "quant_start_step": q_start,
                "swa_start_step": a.steps // 2, "swa_freq": 10}  # fmt: skip

    jobs = [("wide", m, te, s) for s in range(a.seeds) for te in targets for m in WIDE_METHODS]
    jobs += [(k, "ERM", te, s) for k in ("narrow", "width_only") for s in range(a.seeds)
             for te in targets]  # fmt: skip
    keys = {j: repr((j, sorted(ds_kw.items()), sorted(cfg_kw.items()), a.lr, a.bits,
                     settings[j[0]])) for j in jobs}  # fmt: skip
    todo = [j for j in jobs if not rec.is_cached(keys[j])]
    _log(f"{len(jobs)} runs, {len(jobs) - len(todo)} cached, {a.jobs} processes")
    out = {}
    with ProcessPoolExecutor(max_workers=max(1, min(a.jobs, len(todo) or 1))) as ex:
        futs = {j: ex.submit(_train_one, (ds_kw, j[1], j[2], hp_of(j[0]), cfg_kw, j[3]))
                for j in todo}  # fmt: skip
        for j in jobs:
            out[j] = rec.cached(keys[j], futs[j].result if j in futs else None)
            _log(f"{j}: {out[j]['acc']:.3f}  [{time.time() - t_start:.0f}s]")
            rec.sample_load()

    acc = {m: np.array([[out[("wide", m, te, s)]["acc"] for te in targets]
                        for s in range(a.seeds)]) for m in WIDE_METHODS}  # fmt: skip
    narrow, width_only = (np.array([[out[(k, "ERM", te, s)]["acc"] for te in targets]
                                    for s in range(a.seeds)]) for k in ("narrow", "width_only"))  # fmt: skip
    cpu = {m: np.mean([out[("wide", m, te, s)]["cpu"] for s in range(a.seeds) for te in targets])
           for m in WIDE_METHODS}  # fmt: skip
    rows = [method_row(m, acc, cpu[m], per_target=True) for m in WIDE_METHODS]
    curve = {m: np.mean([out[("wide", m, te, s)]["curve"] for s in range(a.seeds)
                         for te in targets], axis=0).round(3).tolist() for m in WIDE_METHODS}  # fmt: skip
    q = (acc["QT-DoG (learned steps)"] - acc["ERM"]).mean(axis=1)
    sw = (acc["SWAD"] - acc["ERM"]).mean(axis=1)
    min_t = acc["ERM"].mean(axis=0).min()
    rec.table(
        "accuracy_wide",
        ["method", *(names[t] for t in targets), "average", "vs ERM, 95% CI over seeds",
         "vs ERM, CI over runs", "vs ERM per target (CI over seeds)", "CPU s/run"],
        rows, fmt=[None] * (len(targets) + 5) + [".0f"], seeds=list(range(a.seeds)),
        per_seed={name: acc[name].tolist() for name in WIDE_METHODS},
        title=f"Wide regime: target accuracy (%, training-domain validation), {a.seeds} seeds",
        notes=[f"SmallCNN(width={a.width}) pre-trained {a.pretrain_steps} steps on PretrainDigits "
               f"in all four styles (held-out acc {infos['wide']['val_acc']:.3f}), then "
               f"fine-tuned on three StyledDigits domains and tested on the fourth: {a.steps} "
               f"steps, Adam {a.lr}, BatchNorm frozen, {a.bits}-bit quantization from step "
               f"{q_start}. FP ERM's lowest per-target mean: {100 * min_t:.1f} % (target >= 50).",
               "Training curves, mean source-validation accuracy at the first -> last checkpoint: "
               + "; ".join(f"{n} {c[0]:.2f} -> {c[-1]:.2f}" for n, c in curve.items()) + "."],
        timing=True, extra={"curves": curve, "pretrain": infos},
        headline=f"wide regime: QT-DoG - ERM {fmt(*ci95(q))} points, SWAD - ERM "
                 f"{fmt(*ci95(sw))} ({a.seeds} seeds; ERM >= {100 * min_t:.1f} % on every target)",
    )  # fmt: skip
    rec.table(
        "wide_probe",
        ["setting", *(names[t] for t in targets), "average"],
        [["width 16, photo-only pre-training (the default regime)",
          *(100 * narrow.mean(axis=0)), 100 * narrow.mean()],
         [f"width {a.width}, photo-only pre-training (width alone)",
          *(100 * width_only.mean(axis=0)), 100 * width_only.mean()],
         [f"width {a.width}, all-style pre-training (wide)",
          *(100 * acc["ERM"].mean(axis=0)), 100 * acc["ERM"].mean()]],
        fmt=".1f", seeds=list(range(a.seeds)),
        per_seed={"narrow": narrow.tolist(), "width_only": width_only.tolist(),
                  "wide": acc["ERM"].tolist()},
        title="FP ERM target accuracy (%) in the default and the wide regime, same seeds",
        notes=[f"The middle row is the control: the wide regime's network and pre-training steps "
               f"({a.pretrain_steps}) with the default regime's photo-only pre-training images."],
    )  # fmt: skip
    print(f"\ntotal wall time {time.time() - t_start:.0f}s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--targets", type=int, nargs="*", default=None, help="default: all 4")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--pretrain-steps", type=int, default=2000)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--bits", type=int, default=7)
    ap.add_argument("--n-per-domain", type=int, default=500)
    ap.add_argument("--flat-dirs", type=int, default=20)
    ap.add_argument("--png", default="qatdg_flatness.png")
    ap.add_argument(
        "--swad-flatness", action="store_true", help="also SWAD's absolute-radius flatness"
    )
    ap.add_argument("--wide", action="store_true", help="the wide regime (see the docstring)")
    ap.add_argument("--jobs", type=int, default=1, help="processes (--wide only)")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    rec = Run("qat-dg", out=tempfile.mkdtemp() if a.quick else None)
    if a.wide and "--width" not in sys.argv:
        a.width = 64
    if a.wide and "--pretrain-steps" not in sys.argv:
        a.pretrain_steps = 3000
    if a.quick:
        a.seeds, a.targets, a.steps, a.pretrain_steps, a.flat_dirs = 2, [0, 3], 300, 600, 5
        a.width = 16 if a.wide else a.width
    torch.set_num_threads(1)
    t_start = time.time()
    if a.wide:
        wide(a, rec, t_start)
        return
    targets = a.targets if a.targets is not None else [0, 1, 2, 3]

    # ---- 1. pre-training --------------------------------------------------------------------
    xp, yp = PretrainDigits(size=16, n=8000, seed=0)
    t0 = time.process_time()
    backbone, info = pretrain_backbone(xp, yp, width=a.width, n_steps=a.pretrain_steps, seed=0)
    print(
        f"## Pre-training: SmallCNN(width={a.width}) on PretrainDigits (20 classes, 8000 images), "
        f"{a.pretrain_steps} steps, {time.process_time() - t0:.0f} CPU s\n\n"
        f"loss {info['loss_first']:.2f} -> {info['loss_last']:.2f}, train acc "
        f"{info['train_acc']:.3f}, held-out acc {info['val_acc']:.3f}\n"
    )
    ds = StyledDigits(size=16, n_per_domain=a.n_per_domain, seed=0)
    q_start = int(0.4 * a.steps)
    hp = {
        "pretrained": backbone,
        "freeze_bn": True,
        "width": a.width,
        "lr": a.lr,
        "bits": a.bits,
        "quant_start_step": q_start,
        "sma_start_step": 100,
        "swa_start_step": a.steps // 2,
        "swa_freq": 10,
    }
    cfg_kw = {"n_steps": a.steps, "checkpoint_freq": max(1, a.steps // 10)}
    print(
        f"## Domain generalization: StyledDigits {ds.env_names}, {a.n_per_domain} images per "
        f"domain, {a.steps} steps (quantization from step {q_start}, {a.bits} bits), lr {a.lr}, "
        f"BatchNorm frozen, {a.seeds} seeds x targets {[ds.env_names[t] for t in targets]}\n"
    )

    # ---- 2. training ------------------------------------------------------------------------
    acc = {m: np.zeros((a.seeds, len(targets))) for m in METHODS}
    models: dict[str, dict[tuple[int, int], object]] = {m: {} for m in METHODS}
    data: dict[int, tuple] = {}
    cpu: dict[str, float] = dict.fromkeys(METHODS, 0.0)
    curves: dict[str, list] = {m: [] for m in METHODS}
    for s in range(a.seeds):
        for j, te in enumerate(targets):
            for name, (alg, extra) in METHODS.items():
                t0 = time.process_time()
                r = train_domain(ds, alg, te, {**hp, **extra}, TrainConfig(seed=s, **cfg_kw))
                cpu[name] += time.process_time() - t0
                acc[name][s, j] = r["iid"]
                models[name][(s, te)] = r["model"]
                curves[name].append([rec["src_val"] for rec in r["records"]])
                data[te] = (r["source"], r["target_in"])
            _log(
                f"seed {s} target {ds.env_names[te]}: "
                + ", ".join(f"{n.split(' ')[0]} {acc[n][s, j]:.3f}" for n in METHODS)
                + f"  [{time.time() - t_start:.0f}s]"
            )

    n_runs = a.seeds * len(targets)
    rows = [method_row(name, acc, cpu[name] / n_runs) for name in METHODS]
    curve = {
        name: np.mean(np.asarray(curves[name], dtype=float), axis=0).round(3).tolist()
        for name in METHODS
    }
    q = (acc["QT-DoG (learned steps)"] - acc["ERM"]).mean(axis=1)
    sw = (acc["SWAD"] - acc["ERM"]).mean(axis=1)
    rec.table(
        "accuracy",
        ["method", *(ds.env_names[t] for t in targets), "average", "vs ERM, 95% CI over seeds",
         "vs ERM, CI over runs", "CPU s/run"],
        rows, fmt=[None] * (len(targets) + 4) + [".1f"], seeds=list(range(a.seeds)),
        per_seed={name: acc[name].tolist() for name in METHODS},
        title=f"Target accuracy (%, training-domain validation), {a.seeds} seeds",
        notes=[f"SmallCNN(width={a.width}) pre-trained on PretrainDigits ({a.pretrain_steps} steps; "
               f"held-out acc {info['val_acc']:.3f}), then fine-tuned on three StyledDigits domains "
               f"({a.n_per_domain} images each) and tested on the fourth: {a.steps} steps, Adam "
               f"{a.lr}, BatchNorm frozen, {a.bits}-bit quantization from step {q_start}; mean ± std "
               f"over seeds; differences to ERM paired, in points.",
               "Training curves, mean source-validation accuracy at the first -> last of the 10 "
               "checkpoints (all 10 in the results file): " + "; ".join(
                   f"{n} {c[0]:.2f} -> {c[-1]:.2f}" for n, c in curve.items()) + "."],
        timing=True,
        extra={"curves": curve, "pretrain": info},
        headline=f"QT-DoG - ERM {100 * q.mean():+.1f} points, SWAD - ERM {100 * sw.mean():+.1f} "
                 f"(target accuracy, {a.seeds} seeds, StyledDigits)",
    )  # fmt: skip

    # ---- 3. ensembles -----------------------------------------------------------------------
    if a.seeds >= 2:
        members = min(5, a.seeds)
        ens_acc = {}
        for ename, (member, cls) in ENSEMBLES.items():
            row = []
            for te in targets:
                ens = cls([models[member][(s, te)] for s in range(members)])
                row.append(accuracy(ens, *data[te][1]))
            ens_acc[ename] = np.asarray(row)
        erm_net = models["ERM"][(0, targets[0])].predict_network()
        eoq = EoQ([models["QT-DoG (learned steps)"][(s, targets[0])] for s in range(members)])
        ratio = eoq.size_bits() / model_size_bits(erm_net)
        rec.table(
            "ensembles",
            ["ensemble", *(ds.env_names[t] for t in targets), "average"],
            [[e, *(100 * v for v in r), 100 * float(np.mean(r))] for e, r in ens_acc.items()],
            fmt=".1f", seeds=list(range(members)),
            per_seed={e: r.tolist() for e, r in ens_acc.items()},
            title=f"Ensembles of {members} members (the seeds' models), per target",
            notes=f"EoQ size / one full-precision model: {ratio:.3f}x ({members} x {a.bits}-bit "
                  "convs; the classifier, BatchNorm and step sizes stay 32-bit). Paper (ResNet-50, "
                  "DomainBed): EoQ 68.4 >= EoA 68.0 >= ERM ensemble 66.8, at about 1.1x one model.",
        )  # fmt: skip

    if not a.swad_flatness:
        return
    # ---- 4. flatness ------------------------------------------------------------------------
    norms = [
        float(torch.sqrt(sum((p.detach() ** 2).sum() for p in m.network.features.parameters())))
        for m in models["ERM"].values()
    ]
    ref = float(np.mean(norms))
    radii = [round(ref * f, 2) for f in (0, 0.02, 0.05, 0.1, 0.2, 0.3)]
    print(
        f"\n### Local flatness (SWAD protocol): L(w + d) - L(w) for ||d|| = gamma, "
        f"{a.flat_dirs} random directions per model, absolute radii {radii} "
        f"(mean ERM weight norm {ref:.2f}), every trained model, mean [95% CI over models]\n"
    )
    variants = [(n, "weights") for n in FLAT] + [("QT-DoG (learned steps)", "all")]
    flat: dict[tuple[str, str, str], np.ndarray] = {}
    for name, include in variants:
        for split in ("source", "target"):
            rows = []
            for (_s, te), algo in models[name].items():
                xy = data[te][0] if split == "source" else data[te][1]
                f = local_flatness(
                    algo,
                    F.cross_entropy,
                    xy,
                    radii=("abs", radii),
                    n_directions=a.flat_dirs,
                    include=include,
                    seed=1,
                )
                rows.append(f["mean"])
            flat[(name, include, split)] = np.asarray(rows)
    print("| model | perturbed | data | " + " | ".join(f"γ={r}" for r in radii[1:]) + " |")
    print("|---" * (len(radii) + 2) + "|")
    for (name, include, split), rows in flat.items():
        cells = []
        for k in range(1, len(radii)):
            m, h = ci95(rows[:, k])
            cells.append(f"{m:.3f} [{m - h:.3f}, {m + h:.3f}]")
        what = "weights + steps" if include == "all" else "weights"
        print(f"| {name} | {what} | {split} | " + " | ".join(cells) + " |")
    k = len(radii) - 1
    q = flat[("QT-DoG (learned steps)", "weights", "source")][:, k]
    for other in ("ERM", "SWA", "SWAD"):
        o = flat[(other, "weights", "source")][:, k]
        m, h = ci95(q - o)
        verdict = "flatter" if m + h < 0 else ("sharper" if m - h > 0 else "no difference")
        print(
            f"\nFig. 2 ordering at γ={radii[k]} (source): QT-DoG - {other} = {m:+.3f} "
            f"[{m - h:+.3f}, {m + h:+.3f}] -> QT-DoG {verdict}"
        )
    if a.png:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
            for ax, split in zip(axes, ("source", "target"), strict=True):
                for (name, include, sp), rows in flat.items():
                    if sp != split:
                        continue
                    m = rows.mean(axis=0)
                    h = np.array([ci95(rows[:, i])[1] if i else 0.0 for i in range(len(radii))])
                    label = name + (" (+steps)" if include == "all" else "")
                    ax.plot(radii, m, marker="o", label=label)
                    ax.fill_between(radii, m - h, m + h, alpha=0.2)
                ax.set_xlabel("perturbation radius γ (absolute)")
                ax.set_ylabel("loss increase")
                ax.set_title(f"local flatness, {split} domains")
            axes[0].legend(fontsize=7)
            fig.tight_layout()
            fig.savefig(a.png, dpi=110)
            print(f"\nflatness plot: {a.png}")
        except ImportError:
            print("\n(matplotlib not installed: no plot)")
    print(f"\ntotal wall time {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
