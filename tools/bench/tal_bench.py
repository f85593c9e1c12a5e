"""Benchmark: TAL vs GHN, GHNMultiTask, TAL without ancestry, TAL without TSL, weight selection
and random init on the 16×16 mini-Decathlon (spec §5.3, experiments T1-T6).

Per seed, in one process at one thread: the data, the ancestry (cached on disk), two stage-1
hypernetworks (with and without the ancestry's distillation) and four stage-2 runs from them
(with / without the task-specific layer), all with the same steps, meta-batch, batch and
optimiser. Then: untrained accuracy of held-out descendants (T1), larger descendants (T2),
accuracy after 1 and 3 fine-tuning epochs (T3), the ablation (T4), unseen tasks with 5
fine-tuning epochs (T5) and the PCA of TAL's node embeddings across tasks (T6, PNG + silhouette).
Seeds run in parallel worker processes (``--jobs``); the table is mean ± std over seeds.

    uv run python tools/bench/tal_bench.py                    # 3 seeds, 2 jobs (~45 min on 2 cores)
    uv run python tools/bench/tal_bench.py --no-ablation --s1-steps 2400 --s2-steps 3000
    uv run python tools/bench/tal_bench.py --quick            # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

CACHE = os.path.join(os.path.dirname(__file__), ".cache", "learngene")


def _ancestry(proxy, args, seed):
    import torch

    from learngene import TinyViT, ViTSpec, evaluate_init, train_ancestry

    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"ancestry_s{seed}_n{args.n_per_class}_e{args.anc_epochs}.pt")
    spec = ViTSpec(6, 128, 4)
    if os.path.exists(path):
        net = TinyViT(spec, 62, head_hidden=64)
        net.load_state_dict(torch.load(path, weights_only=True))
        net.eval()
        return net, evaluate_init(net, proxy), 0.0
    t0 = time.process_time()
    net = train_ancestry(
        proxy, depth=6, width=128, heads=4, epochs=args.anc_epochs, seed=seed, verbose=0
    )
    torch.save(net.state_dict(), path)
    return net, net.test_accuracy_, time.process_time() - t0


def run_seed(seed: int, args) -> dict:
    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="a target tensor")
    import learngene as lg

    proxy = lg.make_proxy_task(seed, n_per_class=args.n_per_class, n_test_per_class=50)
    tasks = lg.make_mini_decathlon(seed)
    unseen = lg.make_unseen_tasks(seed)
    anc, anc_acc, anc_time = _ancestry(proxy, args, seed)
    E = {k: lg.task_embedding(anc, t) for k, t in {**tasks, **unseen}.items()}
    space = lg.ViTSpace()
    train, held = space.split(args.held_out, seed=seed)
    larger = [lg.ViTSpec(6, 128, 4), lg.ViTSpec(5, 128, 4)]
    kw = dict(random_state=seed, verbose=0, standardize_embeddings=not args.raw_embeddings)
    s1 = dict(steps=args.s1_steps, meta_batch=args.meta_batch, batch_size=args.batch, lr=args.lr)
    s2 = dict(steps=args.s2_steps, meta_batch=args.meta_batch, batch_size=args.batch, lr=args.lr)
    log = {"seed": seed, "ancestry_acc": anc_acc, "ancestry_cpu_s": anc_time}

    kd = lg.TAL(**kw).fit_stage1(proxy, anc, train, kd_alpha=0.2, kd_T=3.0, **s1)
    ghn = lg.GHN(**kw).fit(proxy, train, **s1)
    models = {"TAL": lg.TAL.from_stage1(kd).fit_stage2(tasks, E, train, **s2)}
    if not args.no_ablation:
        models["TAL w/o TSL"] = lg.GHNMultiTask.from_stage1(kd).fit_stage2(tasks, None, train, **s2)
        models["TAL w/o ancestry"] = lg.TALNoAncestry.from_stage1(ghn, use_tsl=True).fit_stage2(
            tasks, E, train, **s2
        )
        models["GHNMultiTask"] = lg.GHNMultiTask.from_stage1(ghn).fit_stage2(
            tasks, None, train, **s2
        )
    log["cpu_s"] = {
        "stage1 KD": kd.history_["stage1_seconds"],
        "stage1 CE (GHN)": ghn.history_["stage1_seconds"],
        **{k: m.history_["stage2_seconds"] for k, m in models.items()},
    }
    log["loss_curves"] = {
        "stage1 KD": kd.history_["stage1_loss"][:: max(1, args.s1_steps // 50)],
        "stage1 CE": ghn.history_["stage1_loss"][:: max(1, args.s1_steps // 50)],
        **{k: m.history_["stage2_loss"][:: max(1, args.s2_steps // 50)] for k, m in models.items()},
    }
    inits = {
        "RandInit": lg.RandInit(seed),
        "WeightSelection": lg.WeightSelection(anc, seed),
        "GHN": ghn,
        **models,
    }
    log["proxy_acc"] = {
        name: float(np.mean([lg.evaluate_init(m.predict(s, None, 62), proxy) for s in held]))
        for name, m in (("GHN", ghn), ("TAL stage 1", kd))
    }

    def untrained(specs, names):
        return {
            name: {t: float(np.mean([lg.evaluate_init(inits[name].predict(s, E[t], tk.n_classes), tk) for s in specs]))
                   for t, tk in tasks.items()}
            for name in names
        }  # fmt: skip

    log["T1"] = untrained(held, list(inits))
    log["T2"] = untrained(
        larger, [k for k in ("RandInit", "GHN", "GHNMultiTask", "TAL") if k in inits]
    )
    ft_specs = held[: args.ft_specs]
    log["T3"] = {}
    for name in ("RandInit", "WeightSelection", "GHN", "TAL"):
        row = {}
        for ep in (1, 3):
            accs = []
            for s in ft_specs:
                for t, tk in tasks.items():
                    net = inits[name].predict(s, E[t], tk.n_classes)
                    accs.append(lg.finetune(net, tk, epochs=ep, seed=seed)[1][-1])
            row[f"{ep}ep"] = float(np.mean(accs))
        log["T3"][name] = row
    log["T5"] = {}
    for name in ("RandInit", "GHN", "TAL"):
        row = {}
        for t, tk in unseen.items():
            u, f = [], []
            for s in ft_specs:
                net = inits[name].predict(s, E[t], tk.n_classes)
                u.append(lg.evaluate_init(net, tk))
                f.append(lg.finetune(net, tk, epochs=5, seed=seed)[1][-1])
            row[t] = {"untrained": float(np.mean(u)), "5ep": float(np.mean(f))}
        log["T5"][name] = row
    # T6: node embeddings of one held-out spec under each task
    from sklearn.metrics import silhouette_score

    Z = {t: models["TAL"].encode(held[0], E[t]) for t in tasks}
    X = np.concatenate(list(Z.values()))
    lab = np.repeat(np.arange(len(Z)), len(next(iter(Z.values()))))
    log["T6_silhouette"] = float(silhouette_score(X, lab))
    log["T6_embeddings"] = {t: z.tolist() for t, z in Z.items()} if seed == args.seeds[0] else None
    return log


def _fmt(vals, pct=True):
    v = np.asarray(vals, float) * (100 if pct else 1)
    return f"{v.mean():6.1f} ± {v.std():4.1f}"


def report(logs, args) -> None:
    from learngene.data import DECATHLON_TASKS

    n = len(logs)
    print(f"\n# learngene TAL benchmark: {n} seeds, stage 1 {args.s1_steps} + stage 2 {args.s2_steps} steps, "
          f"meta-batch {args.meta_batch}, batch {args.batch}, lr {args.lr}")  # fmt: skip
    print(
        f"ancestry (depth 6, width 128) proxy test accuracy: {_fmt([lg['ancestry_acc'] for lg in logs])} %"
    )
    print("proxy (glyph-62) accuracy of untrained held-out descendants: "
          + ", ".join(f"{k} {_fmt([lg['proxy_acc'][k] for lg in logs])}" for k in logs[0]["proxy_acc"]))  # fmt: skip
    print("\nCPU seconds per run (one thread): "
          + ", ".join(f"{k} {np.mean([lg['cpu_s'][k] for lg in logs]):.0f}" for k in logs[0]["cpu_s"]))  # fmt: skip
    tasks = list(DECATHLON_TASKS)
    for key, title in (("T1", "T1 untrained held-out descendants (depth 1-4, width 32-96)"),
                       ("T2", "T2 untrained larger descendants (depth 5-6, width 128; tiled)")):  # fmt: skip
        print(f"\n## {title}: test accuracy %, mean ± std over seeds")
        print(f"{'init':<18}" + "".join(f"{t[:10]:>13}" for t in tasks) + f"{'avg':>15}")
        print(f"{'chance':<18}" + "".join(f"{100 / DECATHLON_TASKS[t]:>13.1f}" for t in tasks)
              + f"{np.mean([100 / c for c in DECATHLON_TASKS.values()]):>15.1f}")  # fmt: skip
        for name in logs[0][key]:
            per = [[lg[key][name][t] for lg in logs] for t in tasks]
            avg = [np.mean([lg[key][name][t] for t in tasks]) for lg in logs]
            print(
                f"{name:<18}"
                + "".join(f"{100 * np.mean(p):>13.1f}" for p in per)
                + f"{_fmt(avg):>15}"
            )
        if "TAL" in logs[0][key] and "GHN" in logs[0][key]:
            d = [np.mean([lg[key]["TAL"][t] - lg[key]["GHN"][t] for t in tasks]) for lg in logs]
            print(f"TAL − GHN (avg, paired): {_fmt(d)} points; per seed "
                  + ", ".join(f"{100 * x:.1f}" for x in d))  # fmt: skip
    print("\n## T3 fine-tuning from each init (held-out specs × 7 tasks), test accuracy %")
    for name, row in logs[0]["T3"].items():
        print(
            f"{name:<18}"
            + "".join(f"{k:>6} {_fmt([lg['T3'][name][k] for lg in logs])}" for k in row)
        )
    print("\n## T4 ablation (T1 average, paired vs TAL)")
    for name in [
        k for k in ("TAL", "TAL w/o TSL", "TAL w/o ancestry", "GHNMultiTask") if k in logs[0]["T1"]
    ]:
        avg = [np.mean([lg["T1"][name][t] for t in tasks]) for lg in logs]
        d = [np.mean([lg["T1"][name][t] - lg["T1"]["TAL"][t] for t in tasks]) for lg in logs]
        print(f"{name:<18} avg {_fmt(avg)}   Δ vs TAL {_fmt(d)}")
    print(
        "\n## T5 unseen tasks (e_τ from the ancestry), test accuracy %: untrained / after 5 epochs"
    )
    for name, row in logs[0]["T5"].items():
        print(f"{name:<18}" + "".join(
            f"  {t}: {_fmt([lg['T5'][name][t]['untrained'] for lg in logs])} / {_fmt([lg['T5'][name][t]['5ep'] for lg in logs])}"
            for t in row))  # fmt: skip
    print(f"\n## T6 silhouette of TAL node embeddings by task (one held-out spec): "
          f"{_fmt([lg['T6_silhouette'] for lg in logs], pct=False)}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--s1-steps", type=int, default=800)
    ap.add_argument("--s2-steps", type=int, default=1200)
    ap.add_argument("--meta-batch", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--n-per-class", type=int, default=200)
    ap.add_argument("--anc-epochs", type=int, default=12)
    ap.add_argument("--held-out", type=int, default=8)
    ap.add_argument("--ft-specs", type=int, default=2)
    ap.add_argument("--json", default=None, help="write the per-seed logs here")
    ap.add_argument("--png", default=None, help="write the T6 PCA plot here")
    ap.add_argument("--raw-embeddings", action="store_true", help="feed ancestry means unscaled")
    ap.add_argument("--no-ablation", action="store_true", help="TAL and GHN only (no T4 variants)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.s1_steps, args.s2_steps, args.n_per_class, args.anc_epochs = 20, 20, 10, 1
        args.held_out, args.seeds = 2, args.seeds[:1]
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=min(args.jobs, len(args.seeds))) as ex:
        logs = list(ex.map(run_seed, args.seeds, [args] * len(args.seeds)))
    report(logs, args)
    print(f"\nwall time {time.time() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: v for k, v in lg.items() if k != "T6_embeddings"} for lg in logs], f)
    if args.png and logs[0]["T6_embeddings"]:
        from learngene.plotting import plot_task_pca

        plot_task_pca({t: np.asarray(z) for t, z in logs[0]["T6_embeddings"].items()}, args.png,
                      "TAL node embeddings of one held-out spec, by task")  # fmt: skip


if __name__ == "__main__":
    main()
