"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Circle (30 domains rotating 0→180°): ERM and SYNC trained on the first 15 domains,
    selected on the next 5, scored on the last 10 in order.

    Returns
    -------
    str
    """
    import torch

    from evolving_dg.baselines import ERM
    from evolving_dg.data import make_circle
    from evolving_dg.metrics import evolving_report
    from evolving_dg.sync import SYNC

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        src, val, tgt = make_circle(seed=seed).default_split()
        kw = dict(
            epochs=3, iters_per_epoch=12, batch_per_domain=32, width=48, lr=3e-3, random_state=seed
        )
        lines = [
            "evolving-dg demo: Circle, 15 source / 5 validation / 10 target domains "
            f"({kw['epochs']} x {kw['iters_per_epoch']} iterations)",
            f"{'model':<6}{'avg':>7}{'worst':>7}  per target domain",
        ]
        for name, m in (("ERM", ERM(**kw)), ("SYNC", SYNC(z_dim=8, **kw))):
            r = evolving_report(m.fit(src, val_domains=val).score_sequence(tgt))
            per = " ".join(f"{a:.2f}" for a in r["per_domain"])
            lines.append(f"{name:<6}{r['avg']:>7.3f}{r['worst']:>7.3f}  {per}")
        lines.append(
            "one seed at a demo budget; over 3 seeds at 10 x 30 iterations ERM is ahead on Circle "
            "(tools/bench/sync_bench.py)"
        )
        return "\n".join(lines)
    finally:
        torch.set_num_threads(old)
