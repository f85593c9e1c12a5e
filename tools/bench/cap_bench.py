"""CAP benchmark (vlm-pseudolabel): detection, the three paradigms, ablations, margin sweep.

Every method runs in one process on the same tasks and seeds, one thread, the released
schedule (50 epochs x 50 iterations, batch 32) unless ``--epochs`` says otherwise.

A1  synthetic task with planted mismatched classes: detection precision / recall, and whether
    the chosen description is the good one (the candidate closest to the class's true image mean).
A2  synthetic task with nothing planted: number of classes detected.
B1  glyph digits, unsupervised (UL); B2 semi-supervised (2 shots); B3 transductive zero-shot
    (6 seen / 4 unseen): ZeroShot, FPL, IFPL, GRIP, CPL, FixMatchST, CAP, Oracle.
C1  ablations (alignment, margin, independent adapters, delta) on B1 and on the synthetic task.
C2  synthetic: accuracy of the confused groups' classes vs margin_scale.
P   the prompt-learning path (``prompt="coop"``: context tokens through the CLIP text encoder) on
    random CLIPs built offline (a tiny one and one with a ViT-B/32-size text tower): the
    untrained context against the hand-written template, and its CPU cost against the
    frozen-embedding prompts. Random weights: a cost and identity check, not an accuracy.
G   the alignment gate (this package's option, not the paper's): CAP with and without it on
    glyph digits in the three paradigms and on the synthetic task, paired over seeds.

Run: ``uv run python tools/bench/cap_bench.py`` (about 25 min on 2 cores; ``--quick`` ~1 min).
Every table is written to ``results/vlm-pseudolabel/`` (see ``record.py``); the README's tables are
generated from those files.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import numpy as np
import torch
from record import Run, fmt_ci

from vlm_pseudolabel import (
    CAP,
    CPL,
    FPL,
    GRIP,
    IFPL,
    FixMatchST,
    Oracle,
    ZeroShot,
    evaluate,
    expected_calibration_error,
    make_glyph_digits_task,
    make_synthetic_vlm_task,
)


def ms(x) -> str:
    x = np.asarray(x, dtype=float)
    return f"{x.mean():.3f} ± {x.std(ddof=1) if len(x) > 1 else 0.0:.3f}"


def methods(sched: dict, seed: int) -> dict:
    kw = dict(sched, random_state=seed)
    return {
        "ZeroShot": ZeroShot(),
        "FPL": FPL(**kw),
        "IFPL": IFPL(**kw),
        "GRIP": GRIP(**kw),
        "CPL": CPL(**kw),
        "FixMatchST": FixMatchST(**kw),
        "CAP": CAP(**kw),
        "Oracle (true pool labels)": Oracle(**kw),
    }


ABLATIONS = {
    "CAP (full)": {},
    "- alignment": {"use_alignment": False},
    "- margin": {"use_margin": False},
    "- independent adapters": {"independent_adapters": False},
    "delta linear": {"delta": "linear"},
    "- alignment - margin": {"use_alignment": False, "use_margin": False},
}


def good_description(task, c: int) -> int:
    mean = task.X_unlabeled[task.y_unlabeled == c].mean(0)
    d = task.descriptions[c]
    return int(np.argmax(d @ mean / np.linalg.norm(d, axis=1)))


def part_a(run: Run, seeds: list[int], n_init: int) -> None:
    rec, prec, hit, none, rows = [], [], [], [], []
    for s in seeds:
        task = make_synthetic_vlm_task(seed=s)
        cap = CAP(epochs=1, iters_per_epoch=1, kmeans_n_init=n_init, random_state=s).fit(task)
        det, pl = set(cap.mismatch_classes_), set(task.planted_mismatch)
        tp = len(det & pl)
        p = tp / len(det) if det else 1.0
        r = tp / len(pl)
        h = [cap.descriptions_chosen_[c] == good_description(task, c) for c in det & pl]
        clean = make_synthetic_vlm_task(n_mismatch=0, n_confused_groups=0, seed=s)
        n0 = len(
            CAP(epochs=1, iters_per_epoch=1, kmeans_n_init=n_init, random_state=s)
            .fit(clean)
            .mismatch_classes_
        )
        rec.append(r), prec.append(p), none.append(n0)
        hit += h
        rows.append([s, str(sorted(pl)), str(sorted(det)), p, r, f"{sum(h)}/{len(h)}", n0])
    run.table(
        "detection",
        ["seed", "planted", "detected", "precision", "recall", "good description chosen",
         "none planted: detected"],
        rows,
        fmt=[None, None, None, ".2f", ".2f", None, None],
        seeds=seeds,
        per_seed={"recall": rec, "precision": prec, "none_planted_detected": none},
        title="A1/A2 mismatch detection on the synthetic task (40 classes, 8 groups)",
        notes=f"recall {ms(rec)}, precision {ms(prec)}, good-description hit rate "
        f"{np.mean(hit) if hit else float('nan'):.2f}, classes detected with none planted: "
        f"max {max(none)}",
        headline=f"mismatch detection recall {np.mean(rec):.2f}, precision {np.mean(prec):.2f}, "
        f"{max(none)} false classes with none planted",
    )  # fmt: skip


def run_table(run: Run, name: str, title: str, paradigm: str, seeds: list[int],
              sched: dict) -> None:  # fmt: skip
    rows: dict[str, dict[str, list]] = {}
    for s in seeds:
        task = make_glyph_digits_task(paradigm, seed=s)
        for mname, est in methods(sched, s).items():
            t0 = time.process_time()
            est.fit(task)
            r = evaluate(
                task.y_test,
                est.predict(task.X_test),
                est.predict_proba(task.X_test),
                n_classes=task.n_classes,
                seen=task.seen,
            )
            d = rows.setdefault(
                mname, {k: [] for k in ("acc", "bacc", "ratio", "minrec", "H", "s", "u", "cpu")}
            )
            d["acc"].append(r["accuracy"]), d["bacc"].append(r["balanced_accuracy"])
            d["ratio"].append(r["max_min_ratio"]), d["minrec"].append(r["min_recall"])
            d["cpu"].append(time.process_time() - t0)
            if paradigm == "trzsl":
                d["H"].append(r["H"]), d["s"].append(r["acc_seen"]), d["u"].append(r["acc_unseen"])
            print(f"  seed {s} {mname}: acc {r['accuracy']:.3f}", file=sys.stderr, flush=True)
        run.sample_load()
    key = "H" if paradigm == "trzsl" else "acc"
    if paradigm == "trzsl":
        cols = ["method", "H", "seen acc", "unseen acc", "accuracy", "CPU s"]
        table = [[n, ms(d["H"]), ms(d["s"]), ms(d["u"]), ms(d["acc"]), float(np.mean(d["cpu"]))]
                 for n, d in rows.items()]  # fmt: skip
    else:
        cols = ["method", "accuracy", "balanced acc", "max/min predicted count",
                "min class recall", "CPU s"]  # fmt: skip
        table = [[n, ms(d["acc"]), ms(d["bacc"]), ms(d["ratio"]), ms(d["minrec"]),
                  float(np.mean(d["cpu"]))] for n, d in rows.items()]  # fmt: skip
    notes = ["Mean ± sd over seeds; CPU s is the mean fit + predict CPU time, one thread."]
    for base in ("FPL", "GRIP", "CPL"):
        diff = np.array(rows["CAP"][key]) - np.array(rows[base][key])
        notes.append(
            f"CAP - {base} ({key}, paired, 95% CI): {fmt_ci(diff, sign=True)}; CAP ahead in "
            f"{int((diff > 0).sum())}/{len(diff)} seeds"
        )
    d_fpl = np.array(rows["CAP"][key]) - np.array(rows["FPL"][key])
    run.table(
        name,
        cols,
        table,
        fmt=[None] * (len(cols) - 1) + [".1f"],
        seeds=seeds,
        per_seed={n: {k: v for k, v in d.items() if v} for n, d in rows.items()},
        title=title,
        notes=notes,
        headline=f"glyph digits {paradigm.upper()}: CAP {key} {np.mean(rows['CAP'][key]):.3f} vs "
        f"FPL {np.mean(rows['FPL'][key]):.3f} (ahead in {int((d_fpl > 0).sum())}/{len(d_fpl)} "
        "seeds)",
    )


def part_c1(run: Run, seeds: list[int], sched: dict) -> None:
    res = {n: ([], []) for n in ABLATIONS}
    for s in seeds:
        tasks = (make_glyph_digits_task("ul", seed=s), make_synthetic_vlm_task(seed=s))
        for n, kw in ABLATIONS.items():
            for j, task in enumerate(tasks):
                est = CAP(**sched, random_state=s, **kw).fit(task)
                res[n][j].append(evaluate(task.y_test, est.predict(task.X_test))["accuracy"])
        run.sample_load()
    run.table(
        "ablations",
        ["variant", "glyph UL", "synthetic"],
        [[n, ms(g), ms(y)] for n, (g, y) in res.items()],
        seeds=seeds,
        per_seed={n: {"glyph_ul": g, "synthetic": y} for n, (g, y) in res.items()},
        title="C1 ablations (accuracy; glyph digits UL and the synthetic task)",
        notes="Mean ± sd over seeds.",
    )


def part_c2(run: Run, seeds: list[int], sched: dict) -> None:
    scales = [0.0, 4.0, 8.0, 12.0, 16.0]
    group, overall = {m: [] for m in scales}, {m: [] for m in scales}
    g_ece = {m: [] for m in scales}
    for s in seeds:
        task = make_synthetic_vlm_task(seed=s)
        cls = np.concatenate([np.asarray(g) for g in task.confusion_groups])
        sel = np.isin(task.y_test, cls)
        for m in scales:
            est = CAP(**sched, margin_scale=m, use_margin=m > 0, random_state=s).fit(task)
            yhat = est.predict(task.X_test)
            group[m].append(float((yhat[sel] == task.y_test[sel]).mean()))
            proba = est.predict_proba(task.X_test[sel])
            g_ece[m].append(expected_calibration_error(task.y_test[sel], proba))
            overall[m].append(float((yhat == task.y_test).mean()))
    run.table(
        "margin_scale",
        ["margin_scale", *(f"{m:g}" for m in scales)],
        [["confused-group acc", *(ms(group[m]) for m in scales)],
         ["confused-group ECE", *(ms(g_ece[m]) for m in scales)],
         ["overall acc", *(ms(overall[m]) for m in scales)]],
        seeds=seeds,
        per_seed={"confused_group": {f"{m:g}": group[m] for m in scales},
                  "confused_group_ece": {f"{m:g}": g_ece[m] for m in scales},
                  "overall": {f"{m:g}": overall[m] for m in scales}},
        title="C2 confused groups vs margin_scale (synthetic; accuracy and ECE of the confused classes)",
        notes="Mean ± sd over seeds; margin_scale 0 = no margin. Group ECE: top-label ECE (15 bins) "
              "of the test images whose true class lies in a confusion group (spec C2: the margin "
              "should raise group accuracy and lower group ECE).",
    )  # fmt: skip


def part_g(run: Run, seeds: list[int], sched: dict) -> None:
    tasks = {
        "glyph UL": lambda s: make_glyph_digits_task("ul", seed=s),
        "glyph SSL": lambda s: make_glyph_digits_task("ssl", seed=s),
        "glyph TRZSL": lambda s: make_glyph_digits_task("trzsl", seed=s),
        "synthetic (planted mismatch)": lambda s: make_synthetic_vlm_task(seed=s),
    }
    res = {k: {"CAP": [], "gated": [], "aligned": [], "aligned_gated": []} for k in tasks}
    for s in seeds:
        for name, make in tasks.items():
            task = make(s)
            for key, gate in (("CAP", False), ("gated", True)):
                est = CAP(**sched, alignment_gate=gate, random_state=s).fit(task)
                acc = evaluate(task.y_test, est.predict(task.X_test))["accuracy"]
                res[name][key].append(acc)
                res[name]["aligned_gated" if gate else "aligned"].append(
                    sorted(est.descriptions_chosen_)
                )
            print(f"  seed {s} {name}: {res[name]['CAP'][-1]:.3f} -> {res[name]['gated'][-1]:.3f}",
                  file=sys.stderr, flush=True)  # fmt: skip
        run.sample_load()
    rows = []
    for name, r in res.items():
        d = np.array(r["gated"]) - np.array(r["CAP"])
        rows.append([name, ms(r["CAP"]), ms(r["gated"]), fmt_ci(d, sign=True),
                     f"{int((d > 0).sum())}/{int((d < 0).sum())}",
                     "; ".join(f"{a} -> {b}" for a, b in zip(r["aligned"], r["aligned_gated"],
                                                              strict=True))])  # fmt: skip
    ul = np.array(res["glyph UL"]["gated"]) - np.array(res["glyph UL"]["CAP"])
    run.table(
        "alignment_gate",
        ["task", "CAP (paper's alignment)", "CAP + alignment gate (ours)", "Δ accuracy [95% CI]",
         "seeds better / worse", "aligned classes per seed (paper -> gated)"],
        rows,
        seeds=seeds,
        per_seed=res,
        title="G the alignment gate: a description is used only if it wins its cluster",
        notes="Accuracy, mean ± sd over seeds; Δ = gated − paper's rule, paired.",
        headline=f"alignment gate (ours) on glyph UL: {fmt_ci(ul, sign=True)} accuracy vs the "
        "paper's alignment",
    )  # fmt: skip


DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def part_p(run: Run, iters: int) -> None:
    from vlm_pseudolabel import TextContextPrompts
    from vlm_pseudolabel.backbones import HFCLIPBackbone, encode_task
    from vlm_pseudolabel.testing import tiny_hf_clip

    sizes = {
        "tiny (width 16, 1 layer)": (16, 1, 2),
        "ViT-B/32 text tower (512, 12 layers)": (512, 12, 8),
    }
    rows = []
    for label, (width, layers, heads) in sizes.items():
        model, processor = tiny_hf_clip(tempfile.mkdtemp(), text_width=width, text_layers=layers,
                                        text_heads=heads, projection_dim=64)  # fmt: skip
        bb = HFCLIPBackbone(model, processor)
        imgs = torch.rand(250, 3, 32, 32, generator=torch.Generator().manual_seed(0))
        task = encode_task(bb, imgs[:200], imgs[200:], np.arange(50) % 10, DIGITS,
                           templates=("a photo of a {}.",))  # fmt: skip
        with torch.no_grad():
            ctx = TextContextPrompts(bb, [f"{n}." for n in DIGITS])()
        diff = float(np.abs(ctx.numpy() - task.text_features).max())
        cost = {}
        for prompt in ("shared_lowrank", "coop"):
            est = CAP(prompt=prompt, epochs=1, iters_per_epoch=iters, kmeans_n_init=1)
            est.fit(task)  # warm-up
            t0 = time.process_time()
            est.fit(task)
            cost[prompt] = time.process_time() - t0
        n_par = sum(p.numel() for p in est.model_.parameters())
        rows.append([label, sum(p.numel() for p in model.text_model.parameters()) / 1e6, n_par,
                     diff, cost["shared_lowrank"], cost["coop"], cost["coop"] / cost["shared_lowrank"]])  # fmt: skip
        print(f"  {label}: max |untrained - template| {diff:.1e}, CPU s {cost}", flush=True)
    run.table(
        "prompt_path",
        ["text tower", "text params (M)", "learned parameters (coop)",
         "max abs diff untrained vs template", "CAP shared_lowrank CPU s", "CAP coop CPU s",
         "coop / shared_lowrank"],
        rows, fmt=[None, ".1f", None, ".1e", ".2f", ".2f", ".1f"],
        title=f"P prompt learning through the CLIP text encoder: identity and cost (1 epoch x {iters} iterations)",
        notes="Random CLIPs built offline (vlm_pseudolabel.testing.tiny_hf_clip: real CLIPTokenizer "
              "and CLIPProcessor, 10 digit-name classes, 200 pool / 50 test random images, "
              "projection 64). Max abs diff: the untrained context (initialised from 'a photo of "
              "a') against encode_texts of the hand-written template. CPU s: one CAP fit of 1 "
              f"epoch x {iters} iterations after a warm-up fit, one thread; coop runs the text "
              "encoder over the 10 class prompts once per training iteration (and at each "
              "prediction). Random weights: no accuracy "
              "is reported (no pretrained CLIP is downloaded here).",
        timing=True,
        headline=f"prompt learning through CLIP: untrained context equals the template to "
                 f"{max(r[3] for r in rows):.0e}; {rows[-1][-1]:.0f}x the frozen-embedding "
                 "prompts' CPU with a ViT-B/32-size text tower",
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="1 seed, 4 epochs x 10 iterations")
    ap.add_argument("--parts", default="a,b,c,g,p", help="subset of a,b,c,g,p (c = c1,c2)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = list(range(1 if args.quick else args.seeds))
    sched = {
        "epochs": 4 if args.quick else args.epochs,
        "iters_per_epoch": 10 if args.quick else args.iters,
    }
    parts = args.parts.split(",")
    run = Run("vlm-pseudolabel", out=tempfile.mkdtemp() if args.quick else None)
    print(
        f"# CAP benchmark: seeds {seeds}, {sched['epochs']} epochs x {sched['iters_per_epoch']} iterations, 1 thread"
    )
    if "a" in parts:
        part_a(run, seeds, 10)
    if "b" in parts:
        run_table(run, "ul", "B1 glyph digits, unsupervised", "ul", seeds, sched)
        run_table(run, "ssl", "B2 glyph digits, semi-supervised (2 shots per class)", "ssl",
                  seeds, sched)  # fmt: skip
        run_table(run, "trzsl", "B3 glyph digits, transductive zero-shot (6 seen / 4 unseen)",
                  "trzsl", seeds, sched)  # fmt: skip
    if "c" in parts or "c1" in parts:
        part_c1(run, seeds, sched)
    if "c" in parts or "c2" in parts:
        part_c2(run, seeds, sched)
    if "g" in parts:
        part_g(run, seeds, sched)
    if "p" in parts:
        part_p(run, sched["iters_per_epoch"])


if __name__ == "__main__":
    main()
