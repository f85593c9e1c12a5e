"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Vanilla fusion vs I2MoE on planted interactions; type-conditional expert weights.

    Returns
    -------
    str
    """
    import numpy as np
    import torch

    from interaction_moe.data import make_interaction_data
    from interaction_moe.estimator import I2MoEClassifier
    from interaction_moe.metrics import routing_report

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        xs, y, _ = make_interaction_data(1000, seed=seed)
        xt, yt, tt = make_interaction_data(600, seed=seed + 100)
        kw = dict(epochs=5, random_state=seed)
        van = I2MoEClassifier(moe=False, **kw).fit(xs, y)
        moe = I2MoEClassifier(**kw).fit(xs, y)
        rep = routing_report(moe.interaction_weights(xt), tt)
    finally:
        torch.set_num_threads(threads)
    names = ["uni_1", "uni_2", "syn", "red"]
    lines = [
        "interaction-moe demo: 2 modalities, planted types (unique-1, unique-2, synergy, redundancy)",
        f"test accuracy: vanilla concat fusion {van.score(xt, yt):.3f}, I2MoE {moe.score(xt, yt):.3f}",
        "mean expert weight by planted type (rows) and expert (columns):",
        "          " + "".join(f"{n:>8}" for n in names),
    ]
    for i, n in enumerate(names):
        lines.append(f"{n:<10}" + "".join(f"{v:>8.2f}" for v in rep["W"][i]))
    lines.append(
        "routing accuracy per type: "
        + ", ".join(f"{n} {a:.2f}" for n, a in zip(names, rep["routing_accuracy"], strict=True))
    )
    return "\n".join(np.atleast_1d(lines).tolist())
