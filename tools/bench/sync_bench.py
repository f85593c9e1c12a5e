"""Benchmark: SYNC vs ERM, ERM-last, IRM, LSSAE (and the paper's ablations) on evolving domains.

Every model gets the same backbone width, optimiser, iterations, batch per domain and
intermediate-domain model selection; runs are side by side in one process, one thread, over
seeds. Prints target Avg / Wst accuracy (mean ± std) per dataset, paired differences to SYNC,
the MI estimate over training, and (spurious Circle) the drop against plain Circle.

Every table gives, per model, the target Avg / Wst accuracy and the paired difference to SYNC
with a 95% t-interval over seeds.

``--official`` switches to the official schedule (30 epochs x 200 iterations, width 512, the
official per-dataset learning rates; the batch stays at ``--batch``, 32 per domain by default
against the official 64; about 16 CPU min per SYNC run and 3 per ERM run on Circle),
writes its tables with the suffix ``_official`` and adds the per-epoch validation / target curve
(``curve_<dataset>_official``); ``--models`` restricts the models and ``--jobs`` runs the
(dataset, seed, model) items in parallel processes; every item is cached on disk under its
settings (``tools/bench/.cache``), so a stopped run resumes where it stopped. ``--epoch-analysis`` reads a recorded
official run's curves and compares the models at the selected, the last and the best target
epoch (``epochs_<dataset>_official``). ``--data onp=PATH`` or ``--data portraits=PATH`` runs all five models on a real
evolving-domain dataset from a local copy (UCI Online News Popularity CSV; the Portraits image
folders ``<year>/<F|M>/*.png``).

    uv run python tools/bench/sync_bench.py                       # Circle, Sine, spurious Circle
    uv run python tools/bench/sync_bench.py --ablations          # + variants B, C, D on Circle
    uv run python tools/bench/sync_bench.py --datasets rotated_digits --ablations  # Table 2
    uv run python tools/bench/sync_bench.py --official --datasets circle --models SYNC ERM --jobs 2
    uv run python tools/bench/sync_bench.py --official --datasets circle rotated_digits
    uv run python tools/bench/sync_bench.py --data onp=~/data/OnlineNewsPopularity.csv
    uv run python tools/bench/sync_bench.py --diagnose-sine       # why SYNC is at chance on Sine
    uv run python tools/bench/sync_bench.py --quick
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import torch
from record import RESULTS, Run, fmt_ci, fmt_sd

import evolving_dg as edg
from evolving_dg.loaders import load_domain_pickle, load_onp, load_portraits

DATASETS = {
    "circle": lambda s: edg.make_circle(seed=s),
    "sine": lambda s: edg.make_sine(seed=s),
    "spurious_circle": lambda s: edg.make_spurious_circle(seed=s),
    "rotated_digits": lambda s: edg.make_rotated_digits(seed=s),
}
# the official schedule's learning rates (per-dataset registry of the official code)
OFFICIAL_LR = {"circle": 5e-6, "cida_circle": 5e-6, "spurious_circle": 5e-6, "sine": 5e-6,
               "rotated_digits": 1e-4}  # fmt: skip
# per-dataset SYNC weights (official scripts) and d_z
HP = {
    "circle": dict(z_dim=20, lambda_evolve=0.01, lambda_mi=1.0, lambda_causal=0.02),
    "cida_circle": dict(z_dim=20, lambda_evolve=0.01, lambda_mi=1.0, lambda_causal=0.02),
    "spurious_circle": dict(z_dim=20, lambda_evolve=0.01, lambda_mi=1.0, lambda_causal=0.02),
    "sine": dict(z_dim=32, lambda_evolve=0.001, lambda_mi=1.0, lambda_causal=0.001),
    "rotated_digits": dict(z_dim=32, lambda_evolve=0.005, lambda_mi=0.005, lambda_causal=0.001),
}


# the switches with which tools/parity/evolving-dg.py --components matches the official modules
PARITY_SWITCHES = {"contrast_eps": 1e-6, "prior_state_grad": False}


def models(ds_name: str, args, seed: int) -> dict:
    common = dict(lr=args.lr, epochs=args.epochs, iters_per_epoch=args.iters, width=args.width,
                  batch_per_domain=args.batch, random_state=seed,
                  backbone="cnn" if ds_name in ("rotated_digits", "portraits") else "mlp")  # fmt: skip
    hp = HP.get(ds_name, HP["sine"])
    arch = {"arch": args.arch, "transductive_state": args.transductive_state,
            **(PARITY_SWITCHES if args.parity_switches else {})}  # fmt: skip
    out = {
        "ERM": edg.ERM(**common),
        "ERMLast": edg.ERMLast(**common),
        "IRM": edg.IRM(**common),
        "LSSAE": edg.LSSAE(
            z_dim=hp["z_dim"],
            lambda_evolve=hp["lambda_evolve"],
            **common,
            **{k: v for k, v in arch.items() if k != "contrast_eps"},
        ),
        "SYNC": edg.SYNC(**hp, **arch, **common),
    }
    if args.ablations and ds_name in ("circle", "rotated_digits"):  # paper Table 2: RMNIST
        for v in ("B", "C", "D"):
            out[f"abl-{v}"] = edg.ablation(v, **hp, **arch, **common)
    return out


def run_item(item: tuple, args) -> dict:
    """Fit one (dataset, seed, model), scoring the targets after every epoch (monitoring)."""
    ds_name, seed, name = item
    torch.set_num_threads(1)
    lr = OFFICIAL_LR.get(ds_name, args.lr) if args.official else args.lr
    src, val, tgt = DATASETS[ds_name](seed).default_split()
    m = models(ds_name, argparse.Namespace(**{**vars(args), "lr": lr}), seed)[name]
    t0 = time.process_time()
    accs = m.fit(src, val_domains=val, eval_domains=tgt).score_sequence(tgt)
    cpu = time.process_time() - t0
    alt = None
    if getattr(m, "transductive_state", "advance") != "advance":
        # the same trained, selected model read with the other test-time state (paired)
        m.set_params(transductive_state="advance")
        m._after_training(src)
        m._score(val, len(src), advance=True)
        alt = edg.evolving_report(m.score_sequence(tgt))
        m.set_params(transductive_state=args.transductive_state)
    r = edg.evolving_report(accs)
    print(f"{ds_name:<16} seed {seed} {name:<8} avg {r['avg']:.3f} worst {r['worst']:.3f} "
          f"({cpu:.0f} CPU s, best epoch {m.best_epoch_})", flush=True)  # fmt: skip
    return {
        "row": (r["avg"], r["worst"], cpu, m.best_epoch_),
        "alt": None if alt is None else (alt["avg"], alt["worst"]),
        "mi": [h["mi"] for h in m.history_] if "mi" in m.history_[0] else None,
        "val": [h.get("val_acc", float("nan")) for h in m.history_],
        "target": [h["eval_acc"] for h in m.history_],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["circle", "sine", "spurious_circle"],
                    choices=sorted(DATASETS))  # fmt: skip
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--ablations", action="store_true",
                    help="also SYNC variants B, C, D (Circle, Rotated digits)")  # fmt: skip
    ap.add_argument("--official", action="store_true",
                    help="the official schedule: 30 x 200 iterations, width 512, official lr")  # fmt: skip
    ap.add_argument("--models", nargs="+", default=None,
                    choices=["ERM", "ERMLast", "IRM", "LSSAE", "SYNC"],
                    help="a subset of the models (default: all)")  # fmt: skip
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (one thread each)")
    ap.add_argument("--data", default=None,
                    help="onp=PATH, portraits=PATH or cida_circle=PATH (CIDA's half-circle.pkl)")  # fmt: skip
    ap.add_argument("--arch", default="ours", choices=["ours", "reference"],
                    help="SYNC / LSSAE modules: ours or the official sizes and initialisation")  # fmt: skip
    ap.add_argument("--transductive-state", default="advance", choices=["advance", "source"],
                    help="SYNC/LSSAE: 'source' starts every later domain from the source-end "
                         "LSTM states (official code)")  # fmt: skip
    ap.add_argument("--parity-switches", action="store_true",
                    help=f"SYNC/LSSAE with {PARITY_SWITCHES} (the official code's training step)")  # fmt: skip
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--epoch-analysis", action="store_true",
                    help="from the recorded official curves: target accuracy by selection rule")  # fmt: skip
    ap.add_argument("--diagnose-sine", action="store_true",
                    help="only the Sine diagnosis: SYNC's logit split by static / dynamic / drift")  # fmt: skip
    args = ap.parse_args()
    if args.models and not {"SYNC", "ERM"} <= set(args.models):
        ap.error("--models must include SYNC and ERM (the tables' reference and headline)")
    if args.official:
        args.epochs, args.iters, args.width = 30, 200, 512
    if args.quick:  # after --official: a smoke run of whichever schedule
        args.epochs, args.iters, args.seeds = 2, 5, 1
    if args.data:
        kind, _, path = args.data.partition("=")
        loader = {"onp": load_onp, "portraits": load_portraits,
                  "cida_circle": load_domain_pickle}.get(kind)  # fmt: skip
        if loader is None or not path:
            ap.error("--data takes onp=PATH, portraits=PATH or cida_circle=PATH")
        DATASETS[kind] = lambda s, loader=loader, path=path: loader(path)
        args.datasets = [kind]
    torch.set_num_threads(1)
    run = Run("evolving-dg", out=tempfile.mkdtemp() if args.quick else None)
    if args.diagnose_sine:
        diagnose_sine(run, args)
        return
    if args.epoch_analysis:
        for ds_name in args.datasets:
            epoch_analysis(run, ds_name)
        return
    items = [(ds, seed, name) for ds in args.datasets for seed in range(args.seeds)
             for name in (args.models or models(ds, args, seed))]  # fmt: skip
    items.sort(key=lambda it: it[2] not in ("SYNC", "LSSAE"))  # the long runs first (stable)
    res: dict = {}
    mi_curves: dict = {}
    ep_curves: dict = {}  # (ds, model) -> per seed: (val curve, target curve)
    # each (dataset, seed, model) is cached under its own settings, so a long official run can be
    # stopped and resumed (a later session picks up the finished items)
    same = {
        k: v
        for k, v in sorted(vars(args).items())
        if k not in ("seeds", "jobs", "models", "datasets")
    }
    keys = [repr((it, same)) for it in items]
    todo = [(it, k) for it, k in zip(items, keys, strict=True) if not run.is_cached(k)]
    print(f"{len(items)} items, {len(items) - len(todo)} cached", flush=True)
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 and todo else contextlib.nullcontext()
    with pool as ex:
        futs = {k: ex.submit(run_item, it, args) for it, k in todo} if ex else {}
        outs = []
        for it, k in zip(items, keys, strict=True):
            fn = futs[k].result if k in futs else (lambda it=it: run_item(it, args))
            outs.append(run.cached(k, fn))
            run.sample_load()
    alts: dict = {}
    for (ds_name, _, name), out in zip(items, outs, strict=True):
        res.setdefault((ds_name, name), []).append(out["row"])
        if out.get("alt") is not None:
            alts.setdefault((ds_name, name), []).append(out["alt"])
        if out["mi"] is not None:
            mi_curves.setdefault((ds_name, name), []).append(out["mi"])
        ep_curves.setdefault((ds_name, name), []).append((out["val"], out["target"]))
    seeds = list(range(args.seeds))
    sfx = "_official" if args.official else ""  # never overwrite the default schedule's tables
    sfx += f"_b{args.batch}" if args.official and args.batch != 32 else ""
    sfx += "_reference" if args.arch == "reference" else ""
    sfx += "_source" if args.transductive_state == "source" else ""
    sfx += "_switches" if args.parity_switches else ""
    cfg = (f"{args.epochs} epochs x {args.iters} iterations, batch {args.batch}/domain, width "
           f"{args.width}, lr {'official' if args.official else args.lr}, SYNC modules "
           f"{args.arch}, transductive state {args.transductive_state}"
           + (f", {PARITY_SWITCHES}" if args.parity_switches else ""))  # fmt: skip
    for ds_name in args.datasets:
        names = [n for (d, n) in res if d == ds_name]
        ref = np.array(res[(ds_name, "SYNC")])
        rows = []
        for name in names:
            a = np.array(res[(ds_name, name)])
            rows.append([name, fmt_sd(100 * a[:, 0], 1), fmt_sd(100 * a[:, 1], 1),
                         fmt_ci(100 * (a[:, 0] - ref[:, 0]), 1, sign=True),
                         fmt_ci(100 * (a[:, 1] - ref[:, 1]), 1, sign=True), float(a[:, 2].mean())])  # fmt: skip
            if alts.get((ds_name, name)):
                b = np.array(alts[(ds_name, name)])
                rows.append([f"{name}, same models read with state 'advance'", fmt_sd(100 * b[:, 0], 1),
                             fmt_sd(100 * b[:, 1], 1), fmt_ci(100 * (b[:, 0] - ref[:, 0]), 1, sign=True),
                             fmt_ci(100 * (b[:, 1] - ref[:, 1]), 1, sign=True), None])  # fmt: skip
        erm = np.array(res[(ds_name, "ERM")])
        run.table(
            ds_name + sfx,
            [
                "model",
                "target Avg %",
                "target Wst %",
                "Avg − SYNC [95% CI]",
                "Wst − SYNC [95% CI]",
                "CPU s / run",
            ],
            rows,
            fmt=[None] * 5 + [".0f"],
            seeds=seeds,
            per_seed={
                **{n: [list(r) for r in res[(ds_name, n)]] for n in names},
                **{
                    f"{n} (state advance)": alts[(ds_name, n)]
                    for n in names
                    if alts.get((ds_name, n))
                },
            },
            title=f"{ds_name}: {cfg}",
            headline=(
                f"{ds_name}, {args.seeds} seeds: SYNC − ERM target Avg "
                f"{fmt_ci(100 * (ref[:, 0] - erm[:, 0]), 1, sign=True)} points"
            )
            if ds_name == args.datasets[0]
            else None,
        )
    if "circle" in args.datasets and "spurious_circle" in args.datasets:
        rows = []
        for name in ("ERM", "ERMLast", "IRM", "LSSAE", "SYNC"):
            c = np.array(res[("circle", name)])[:, 0]
            s_ = np.array(res[("spurious_circle", name)])[:, 0]
            rows.append([name, fmt_ci(100 * (c - s_), 1)])
        run.table("spurious_drop" + sfx, ["model", "Avg drop, plain − spurious Circle (points)"], rows,
                  seeds=seeds, title="Spurious Circle: drop against plain Circle")  # fmt: skip
    rows = []
    for (ds_name, name), curves in mi_curves.items():
        c = np.mean(np.array(curves), 0)
        rows.append([ds_name, name, c[0], c[len(c) // 2], c[-1]])
    if rows:
        default = set(args.datasets) == {"circle", "sine", "spurious_circle"}
        name = ("mi" if default else "mi_" + "_".join(args.datasets)) + sfx  # one per dataset set
        run.table(name, ["dataset", "model", "MI epoch 1", "MI mid", "MI last"], rows,
                  fmt=[None, None, ".4f", ".4f", ".4f"], seeds=seeds,
                  title="MI estimate between z^st and z^dy (nats per domain, mean over seeds)")  # fmt: skip

    if args.official:
        for ds_name in args.datasets:
            names = [n for (d, n) in ep_curves if d == ds_name]
            n_ep = len(ep_curves[(ds_name, names[0])][0][0])
            marks = sorted({0, *range(2, n_ep, 3), n_ep - 1})
            rows = []
            for name in names:
                v = 100 * np.array([c[0] for c in ep_curves[(ds_name, name)]])  # (seeds, epochs)
                t = 100 * np.array([c[1] for c in ep_curves[(ds_name, name)]])
                best = [int(np.argmax(x)) for x in v]
                rows.append([f"{name} validation", *(float(v[:, e].mean()) for e in marks),
                             float(np.mean([x[b] for x, b in zip(v, best, strict=True)]))])  # fmt: skip
                rows.append([f"{name} target", *(float(t[:, e].mean()) for e in marks),
                             float(np.mean([x[b] for x, b in zip(t, best, strict=True)]))])  # fmt: skip
            run.table(
                f"curve_{ds_name}{sfx}",
                ["model, domains", *(f"epoch {e + 1}" for e in marks), "at best val epoch"],
                rows, fmt=[None] + [".1f"] * (len(marks) + 1), seeds=seeds,
                per_seed={f"{ds}/{n}": {"val": [c[0] for c in cs], "target": [c[1] for c in cs]}
                          for (ds, n), cs in ep_curves.items() if ds == ds_name},
                title=f"{ds_name}, official schedule: accuracy % per epoch, mean over seeds",
                notes="Validation: the intermediate domains used for model selection; target: "
                      "the test domains, scored after every epoch for this curve only "
                      "(`fit(eval_domains=...)`, never used for selection). Last column: each "
                      "seed's curve at its best-validation epoch (the reported model).",
            )  # fmt: skip


def epoch_analysis(run: Run, ds_name: str) -> None:
    """Which epoch the intermediate-domain selection picks, and what the targets say there.

    Reads the recorded ``curve_<dataset>_official`` results (per-seed validation and target
    curves of one ``--official`` run) and compares SYNC and ERM at three epochs: the one the
    validation domains select (the reported models), the last one, and the best target epoch
    (an oracle no method may use, shown as the ceiling).
    """
    import json

    from scipy.stats import spearmanr

    path = RESULTS / "evolving-dg" / f"curve_{ds_name}_official.json"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run --official --datasets {ds_name} first")
    rec = json.loads(path.read_text())
    curves = {k.split("/", 1)[1]: (100 * np.array(v["val"]), 100 * np.array(v["target"]))
              for k, v in rec["per_seed"].items()}  # fmt: skip
    rules = {
        "best validation epoch (reported)": lambda v, t: np.argmax(v, axis=1),
        "last epoch": lambda v, t: np.full(len(v), v.shape[1] - 1),
        "best target epoch (oracle ceiling)": lambda v, t: np.argmax(t, axis=1),
    }
    at = {(m, r): np.take_along_axis(t, f(v, t)[:, None], 1)[:, 0]
          for m, (v, t) in curves.items() for r, f in rules.items()}  # fmt: skip
    rows = []
    for m, (v, t) in curves.items():
        with warnings.catch_warnings():  # a constant target curve (one class predicted) has none
            warnings.simplefilter("ignore")
            rhos = [spearmanr(a, b).statistic for a, b in zip(v, t, strict=True)]
        rho = float(np.nanmean(rhos)) if not np.all(np.isnan(rhos)) else float("nan")
        flat = int(np.sum(np.ptp(t, axis=1) == 0))
        rows.append([m, *(fmt_sd(at[(m, r)], 1) for r in rules), rho, flat,
                     float(np.mean(np.argmax(v, axis=1)) + 1)])  # fmt: skip
    diffs = {r: at[("SYNC", r)] - at[("ERM", r)] for r in rules}
    rows.append(["SYNC − ERM (paired)", *(fmt_ci(diffs[r], 1, sign=True) for r in rules),
                 None, None, None])  # fmt: skip
    per_seed_lines = []
    for m, (v, t) in curves.items():
        for k in range(len(v)):
            b = int(np.argmax(v[k]))
            per_seed_lines.append(
                f"{m} seed {rec['seeds'][k]}: best validation {v[k, b]:.1f} % at epoch {b + 1} "
                f"(target {t[k, b]:.1f} %), last epoch validation {v[k, -1]:.1f} %, target "
                f"{t[k, -1]:.1f} %"
            )
    run.table(
        f"epochs_{ds_name}_official",
        ["model", *(f"target Avg % at {r}" for r in rules),
         "Spearman(validation, target) over epochs", "seeds with a constant target curve",
         "mean selected epoch"],
        rows, fmt=[None, None, None, None, ".2f", None, ".1f"],
        seeds=rec["seeds"], per_seed={"target_at": {f"{m}/{r}": v.tolist() for (m, r), v in at.items()}},
        title=f"{ds_name}, official schedule: target accuracy by epoch-selection rule",
        notes=f"From {path.name} (command: `{rec['command']}`, commit {rec['commit'][:7]}): "
              "each seed's target accuracy (mean over the target domains) at the epoch a rule "
              "picks; the reported models use the first rule. Spearman: rank correlation of the "
              "validation and target curves over the epochs, mean over the seeds whose target curve "
              "varies (a constant one: the model predicts one class on every target point). "
              "Per seed: " + "; ".join(per_seed_lines) + ".",
    )  # fmt: skip


def diagnose_sine(run: Run, args) -> None:
    """Where SYNC's Sine predictions come from: the classifier's logit difference (class 1 -
    class 0) split into its static, dynamic and drift parts (``SYNC.logit_parts``), per group of
    domains, beside the accuracy and the share of points predicted class 1."""
    groups = {"source": [], "validation": [], "target": []}
    per_seed: dict = {}
    for seed in range(args.seeds):
        src, val, tgt = DATASETS["sine"](seed).default_split()
        m = models("sine", args, seed)["SYNC"].fit(src, val_domains=val)
        t = 0
        for g, doms in (("source", src), ("validation", val), ("target", tgt)):
            for X, y in doms:
                parts = {k: v[:, 1] - v[:, 0] for k, v in m.logit_parts(X, domain_index=t).items()}
                pred = sum(parts.values()) > 0
                rec = {"acc": float(np.mean(pred == y)), "pred1": float(pred.mean()),
                       "true1": float(np.mean(y == 1)),
                       **{k: float(v.mean()) for k, v in parts.items()},
                       "static_sd": float(parts["static"].std())}  # fmt: skip
                groups[g].append(rec)
                per_seed.setdefault(str(seed), []).append({"group": g, "t": t, **rec})
                t += 1
        print(f"sine diagnosis seed {seed} done", flush=True)
    rows = []
    for g, recs in groups.items():
        a = {k: np.mean([r[k] for r in recs]) for k in recs[0]}
        rows.append([g, 100 * a["acc"], 100 * a["pred1"], 100 * a["true1"], a["static"],
                     a["static_sd"], a["dynamic"], a["drift"], a["bias"]])  # fmt: skip
    run.table(
        "sine_diagnosis",
        ["domains", "accuracy %", "predicted class 1 %", "true class 1 %",
         "static part", "static part sd (within domain)", "dynamic part", "drift part", "bias"],
        rows, fmt=[None, ".1f", ".1f", ".1f", "+.2f", ".2f", "+.2f", "+.2f", "+.2f"],
        seeds=list(range(args.seeds)), per_seed=per_seed,
        title=f"Sine: where SYNC's predictions come from ({args.seeds} seeds, the bench's schedule)",
        notes="Logit difference (class 1 - class 0) of SYNC's linear classifier split by input "
              "(SYNC.logit_parts, non-transductive, each domain at its own time index), mean "
              "over the domains of each group and over seeds; the parts plus the bias are the "
              "logit difference. Source = domains 0-11, validation 12-15, target 16-23.",
    )  # fmt: skip


if __name__ == "__main__":
    main()
