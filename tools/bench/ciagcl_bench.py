"""CIA-GCL benchmark on generated multi-site connectomes (spec brain-gcl §5), CPU scale.

B2  leave-the-reversed-site-out (train sites 0-3, test site 4 where the shortcut circuit's
    agreement with the label drops from 0.8-0.9 to 0.1), every model and the CIA-GCL ablations,
    plus the in-distribution accuracy of a held-out 20 % of the training sites for the drop.
B3  edge recovery of the planted invariant circuit on the test site: AUROC over existing edges,
    precision@|planted|; CIA-GCL / CIGA-like edge probabilities, GIN gradient saliency, |edge-LR
    coefficients|; share of selected edges inside the spurious circuit.
B1  pooled stratified 5-fold CV over all sites (seed 0 only): edge LR, GCN, GIN, GraphCL, CIA-GCL.

Same graphs (top-20 % |FC| edges, 8 topological node features), same epochs / patience / batch /
validation split (15 %, label x site stratified) for every neural model; seeds vary the generator,
the split and the model.

    uv run python tools/bench/ciagcl_bench.py                      # ~1 h on 2 cores
    uv run python tools/bench/ciagcl_bench.py --seeds 2 --parts b2 --epochs 20   # quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from brain_gcl import CIAGCL, FCSVM, GCN, GIN, BrainNetCNN, CIGALike, FCLogReg, GraphCL
from brain_gcl.data import build_graphs, cv_splits, make_multisite_connectomes, site_splits
from brain_gcl.metrics import brain_report, edge_recovery

PAPER = "ABIDE I acc 73.42 (CIA-GCL) vs 71.89 (best baseline), pooled setting (spec §5.2)"


def zoo(a, seed):
    kw = dict(epochs=a.epochs, patience=a.patience, random_state=seed)
    return {
        "edge LR (Fisher-z)": lambda: FCLogReg(),
        "edge SVM (Fisher-z)": lambda: FCSVM(),
        "BrainNetCNN": lambda: BrainNetCNN(**kw),
        "GCN": lambda: GCN(**kw),
        "GIN": lambda: GIN(**kw),
        "GraphCL": lambda: GraphCL(**kw),
        "CIGA-like": lambda: CIGALike(**kw),
        "CIA-GCL": lambda: CIAGCL(**kw),
        "CIA-GCL, random (label-agnostic) mixing": lambda: CIAGCL(mixing="random", **kw),
        "CIA-GCL without L_inv": lambda: CIAGCL(lambda_inv=0.0, **kw),
        "CIA-GCL without L_con": lambda: CIAGCL(lambda_con=0.0, **kw),
    }


def ms(v):
    v = np.asarray(v, dtype=float)
    return f"{np.nanmean(v):.3f} ± {np.nanstd(v):.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--patience", type=int, default=15)
    ap.add_argument("--parts", default="b2,b1")
    ap.add_argument(
        "--node-features", default="topo", help="topo | profile | identity | topo+profile"
    )
    ap.add_argument("--models", default=None, help="comma-separated subset of the B2 models")
    a = ap.parse_args()
    torch.set_num_threads(1)
    print(f"# CIA-GCL benchmark: 40 ROIs, 5 sites x 120 subjects, {a.seeds} seeds, <= {a.epochs} "
          f"epochs (patience {a.patience}), batch 32, Adam 1e-3, node features {a.node_features!r}; paper: {PAPER}")  # fmt: skip
    names = list(zoo(a, 0))
    if a.models:
        names = [n for n in names if n in a.models.split(",")]
    if "b2" in a.parts:
        res = {n: {"ood": [], "id": [], "auc": [], "avg": [], "cpu": [], "ep": []} for n in names}
        edges = {
            n: {"auroc": [], "p@k": [], "sp": []}
            for n in ("CIA-GCL", "CIGA-like", "GIN", "edge LR (Fisher-z)")
        }
        for seed in range(a.seeds):
            d = make_multisite_connectomes(seed=seed)
            g = build_graphs(d.fc, density=0.2, node_features=a.node_features)
            tr, te = site_splits(d.site, 4)
            rng = np.random.default_rng(seed)
            hold = np.zeros(len(tr), bool)
            hold[rng.permutation(len(tr))[: len(tr) // 5]] = True
            fit_idx, id_idx = tr[~hold], tr[hold]
            for n in names:
                make = zoo(a, seed)[n]
                t0 = time.process_time()
                m = make().fit(g[fit_idx], d.y[fit_idx], sites=d.site[fit_idx])
                r = brain_report(d.y[te], m.predict_proba(g[te]))
                rid = brain_report(d.y[id_idx], m.predict_proba(g[id_idx]))
                res[n]["ood"].append(r["accuracy"]), res[n]["auc"].append(r["auc"])
                res[n]["avg"].append(r["avg"]), res[n]["id"].append(rid["accuracy"])
                res[n]["cpu"].append(time.process_time() - t0)
                res[n]["ep"].append(len(getattr(m, "history_", [])))
                if n in edges:
                    if n in ("CIA-GCL", "CIGA-like"):
                        S = m.edge_scores(g[te])
                        M = m.invariant_mask(g[te])
                        edges[n]["sp"].append(M[:, d.truth["spurious_edges"]].sum() / M.sum())
                    elif n == "GIN":
                        S = m.edge_saliency(g[te])
                    else:
                        S = np.broadcast_to(m.coef_matrix_, g[te].A.shape) * (g[te].A > 0)
                    er = edge_recovery(S, d.truth["invariant_edges"], g[te].A)
                    (
                        edges[n]["auroc"].append(er["auroc"]),
                        edges[n]["p@k"].append(er["precision_at_k"]),
                    )
                print(f"seed {seed} {n}: OOD acc {r['accuracy']:.3f} ID acc {rid['accuracy']:.3f} "
                      f"[{time.process_time() - t0:.0f}s]", flush=True)  # fmt: skip
        print(f"\n### B2: leave the reversed site out ({a.seeds} seeds, mean ± std)\n")
        print(
            "| model | ID accuracy (held-out 20 % of sites 0-3) | OOD accuracy (site 4) | drop | OOD AUC | OOD Avg of six | CPU s / fit | epochs run |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for n in names:
            r = res[n]
            drop = np.asarray(r["id"]) - np.asarray(r["ood"])
            ep = f"{np.mean(r['ep']):.0f}" if np.mean(r["ep"]) else "-"
            print(f"| {n} | {ms(r['id'])} | {ms(r['ood'])} | {ms(drop)} | {ms(r['auc'])} | {ms(r['avg'])} | "
                  f"{np.mean(r['cpu']):.0f} | {ep} |")  # fmt: skip
        print("\n### B3: planted invariant-edge recovery on the test site\n")
        print(
            "| edge scores | AUROC | precision@|planted| | share of selected edges in the spurious circuit |"
        )
        print("|---|---|---|---|")
        for n, e in edges.items():
            sp = ms(e["sp"]) if e["sp"] else "-"
            label = {
                "GIN": "GIN gradient saliency",
                "edge LR (Fisher-z)": "|edge-LR coefficient|",
            }.get(n, n + " edge probability")
            print(f"| {label} | {ms(e['auroc'])} | {ms(e['p@k'])} | {sp} |")
    if "b1" in a.parts:
        d = make_multisite_connectomes(seed=0)
        g = build_graphs(d.fc, density=0.2, node_features=a.node_features)
        pick = ["edge LR (Fisher-z)", "GCN", "GIN", "GraphCL", "CIA-GCL"]
        out = {n: [] for n in pick}
        for k, (tr, te) in enumerate(cv_splits(d.y, d.site, k=5, seed=0)):
            for n in pick:
                m = zoo(a, k)[n]().fit(g[tr], d.y[tr], sites=d.site[tr])
                out[n].append(brain_report(d.y[te], m.predict_proba(g[te])))
            print(f"fold {k} done", flush=True)
        print("\n### B1: pooled stratified 5-fold CV, all sites (seed 0)\n")
        keys = ["accuracy", "precision", "recall", "f1", "bacc", "auc", "avg"]
        print("| model | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        for n in pick:
            print(f"| {n} | " + " | ".join(ms([f[k] for f in out[n]]) for k in keys) + " |")


if __name__ == "__main__":
    main()
