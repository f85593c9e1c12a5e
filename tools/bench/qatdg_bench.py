"""QT-DoG benchmark: leave-one-domain-out DG on digits domains, ERM / SAM / QT-DoG / ERM ensemble / EoQ.

Prints held-out-domain accuracy (training-domain validation selection; mean +- std over trials),
ratios to ERM, model size in bytes, training seconds per model (x M for ensembles), checkpoint
stability (std of target accuracy over the checkpoints after the QAT switch) and local flatness
(loss increase under random weight perturbations of relative radius r, source and target data).
Ensemble trial t uses the members trained with seeds t, t+1, ..., t+M-1 (mod --seeds), so the
ensemble trials overlap and their std is optimistic.

    uv run python tools/bench/qatdg_bench.py            # ~5 min on a shared 2-core CPU
    uv run python tools/bench/qatdg_bench.py --quick    # ~1 min
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from qat_dg import (
    CorruptedDigits,
    Ensemble,
    EoQ,
    RotatedDigits,
    TrainConfig,
    accuracy,
    local_flatness,
    model_size_bytes,
    train_domain,
)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=["rotated", "corrupted"], default="rotated")
    ap.add_argument("--arch", choices=["mlp", "small_cnn"], default="mlp")
    ap.add_argument("--size", type=int, default=8, help="image side (8 = native digits)")
    ap.add_argument("--steps", type=int, default=250)
    ap.add_argument("--quant-start", type=int, default=None, help="default 0.4 * steps")
    ap.add_argument("--bits", type=int, default=7)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seeds", type=int, default=4, help="trials per algorithm (>= members)")
    ap.add_argument("--members", type=int, default=3, help="ensemble size M")
    ap.add_argument("--test-envs", type=int, nargs="*", default=None)
    ap.add_argument("--extras", action="store_true", help="also NoiseInjection, PTQ, ERM_SMA")
    ap.add_argument("--flat-dirs", type=int, default=10)
    ap.add_argument("--radii", type=float, nargs="*", default=[0.1, 0.25, 0.5])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2 targets, 3 seeds, M=2, 150 steps")
    ap.add_argument("--png", default=None, help="save flatness curves here")
    a = ap.parse_args()
    if a.quick:
        a.steps, a.seeds, a.members = 150, 3, 2
        a.test_envs = a.test_envs or [0, len(_dataset(a)) - 1]
    if a.members > a.seeds:
        ap.error("--members must be <= --seeds")
    torch.set_num_threads(a.threads)
    ds = _dataset(a)
    envs = list(range(len(ds))) if not a.test_envs else a.test_envs
    q_start = a.quant_start if a.quant_start is not None else int(0.4 * a.steps)
    hp = {
        "arch": a.arch,
        "lr": a.lr,
        "batch_size": a.batch_size,
        "bits": a.bits,
        "quant_start_step": q_start,
    }
    algs = ["ERM", "SAM", "QTDoG"] + (["NoiseInjection", "PTQ", "ERM_SMA"] if a.extras else [])
    torch.optim.Adam(torch.nn.Linear(1, 1).parameters())  # pay torch's one-off lazy imports now
    t_all = time.time()
    # runs[alg][env][seed] = result of train_domain
    runs: dict[str, dict[int, list[dict]]] = {alg: {e: [] for e in envs} for alg in algs}
    secs = {alg: 0.0 for alg in algs}
    for e in envs:
        for alg in algs:
            for s in range(a.seeds):
                t0 = time.time()
                cfg = TrainConfig(n_steps=a.steps, checkpoint_freq=max(1, a.steps // 10), seed=s)
                runs[alg][e].append(train_domain(ds, alg, e, hp, cfg))
                secs[alg] += (time.time() - t0) / (a.seeds * len(envs))
        _log(
            f"[{time.time() - t_all:6.0f}s] target {ds.env_names[e]}: "
            + "  ".join(f"{alg} {np.mean([r['iid'] for r in runs[alg][e]]):.3f}" for alg in algs)
        )

    # per trial: mean over targets of the selected model's target accuracy
    def single(alg: str) -> np.ndarray:
        return np.array([np.mean([runs[alg][e][s]["iid"] for e in envs]) for s in range(a.seeds)])

    def per_env(alg: str) -> list[float]:
        return [float(np.mean([r["iid"] for r in runs[alg][e]])) for e in envs]

    def ensemble(alg: str, cls: type) -> tuple[np.ndarray, list[float], float]:
        accs = np.zeros((a.seeds, len(envs)))
        size = 0.0
        for t in range(a.seeds):  # trial t: members t, t+1, ..., t+M-1 (mod seeds)
            idx = [(t + k) % a.seeds for k in range(a.members)]
            for j, e in enumerate(envs):
                ens = cls([runs[alg][e][i]["model"] for i in idx])
                accs[t, j] = accuracy(ens, *runs[alg][e][t]["target_in"])
                size = ens.size_bits() / 8
        return accs.mean(1), list(accs.mean(0)), size

    def stability(alg: str) -> float:
        vals = []
        for e in envs:
            for r in runs[alg][e]:
                acc = [rec["target"] for rec in r["records"] if rec["step"] > q_start]
                vals.append(np.std(acc))
        return float(np.mean(vals))

    rows = []
    for alg in algs:
        size = model_size_bytes(runs[alg][envs[0]][0]["model"].predict_network())
        rows.append((alg, 1, single(alg), per_env(alg), size, secs[alg], stability(alg)))
    for name, alg, cls in (("ERM Ens.", "ERM", Ensemble), ("EoQ", "QTDoG", EoQ)):
        tr, pe, size = ensemble(alg, cls)
        rows.append((name, a.members, tr, pe, size, secs[alg] * a.members, float("nan")))

    erm_acc, erm_size, erm_time = rows[0][2].mean(), rows[0][4], rows[0][5]
    print(
        f"\nqat-dg bench: {a.dataset} digits {a.size}x{a.size}, "
        f"{len(ds)} domains, targets {[ds.env_names[e] for e in envs]}, arch={a.arch}, "
        f"steps={a.steps}, QAT from step {q_start}, {a.bits}-bit, {a.seeds} trials, M={a.members}"
    )
    envh = "".join(f"{ds.env_names[e]:>8}" for e in envs)
    print(
        f"{'algorithm':<15}{'M':>2}{'target acc':>16}{'dAcc':>7}{'ratio':>7}{envh}"
        f"{'bytes':>9}{'size':>7}{'train s':>9}{'time':>7}{'ckpt std':>9}"
    )
    for name, m, tr, pe, size, sec, stab in rows:
        envs_s = "".join(f"{v:>8.3f}" for v in pe)
        stab_s = f"{stab:>9.3f}" if np.isfinite(stab) else f"{'-':>9}"
        print(
            f"{name:<15}{m:>2}{tr.mean():>9.3f}±{tr.std(ddof=1) if len(tr) > 1 else 0:.3f}"
            f"{tr.mean() - erm_acc:>+7.3f}{tr.mean() / erm_acc:>7.3f}{envs_s}"
            f"{size:>9.0f}{size / erm_size:>6.2f}x{sec:>9.1f}{sec / erm_time:>6.2f}x{stab_s}"
        )

    # local flatness of the selected single models, averaged over targets and trials
    rel = [0.0, *a.radii]
    curves = {}
    print(f"\nlocal flatness: mean loss increase, {a.flat_dirs} random directions, radius r*||w||")
    hdr = "".join(f"{'S r=' + str(r):>10}" for r in a.radii) + "".join(
        f"{'T r=' + str(r):>10}" for r in a.radii
    )
    print(f"{'algorithm':<15}{hdr}{'S ratio':>9}{'T ratio':>9}")
    base_flat = None
    for alg in algs:
        fs, ft = [], []
        for e in envs:
            for r in runs[alg][e]:
                model = r["model"]
                kw = {"radii": ("rel", rel), "n_directions": a.flat_dirs, "seed": 0}
                fs.append(local_flatness(model, F.cross_entropy, r["source"], **kw)["mean"][1:])
                ft.append(local_flatness(model, F.cross_entropy, r["target"], **kw)["mean"][1:])
        fs_m, ft_m = np.mean(fs, axis=0), np.mean(ft, axis=0)
        curves[alg] = {"radius": rel, "mean": [0.0, *ft_m]}
        if base_flat is None:
            base_flat = (fs_m[-1], ft_m[-1])
        vals = "".join(f"{v:>10.3f}" for v in [*fs_m, *ft_m])
        print(f"{alg:<15}{vals}{fs_m[-1] / base_flat[0]:>9.2f}{ft_m[-1] / base_flat[1]:>9.2f}")
    print(f"\ntotal wall time {time.time() - t_all:.0f} s")
    if a.png:
        import matplotlib

        matplotlib.use("Agg")
        from qat_dg.plotting import plot_flatness

        ax = plot_flatness(curves, title=f"target-domain flatness ({a.dataset})")
        ax.set_xlabel("relative radius r")
        ax.figure.savefig(a.png, dpi=120, bbox_inches="tight")


def _dataset(a: argparse.Namespace):
    if a.dataset == "rotated":
        return RotatedDigits(size=a.size, seed=0)
    return CorruptedDigits(size=a.size, seed=0)


if __name__ == "__main__":
    main()
