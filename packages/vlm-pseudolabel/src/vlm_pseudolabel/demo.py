"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Zero-shot vs FPL vs CAP on the synthetic task with planted mismatch and confusion.

    Returns
    -------
    str
        Detected mismatched classes against the planted ones, and test accuracy and
        prediction balance (max/min predicted-class count) of each method.
    """
    import torch

    from vlm_pseudolabel.baselines import FPL, ZeroShot
    from vlm_pseudolabel.cap import CAP
    from vlm_pseudolabel.data import make_synthetic_vlm_task
    from vlm_pseudolabel.metrics import evaluate

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        task = make_synthetic_vlm_task(
            n_classes=20, n_groups=4, n_mismatch=2, n_confused_groups=2, seed=seed
        )
        rows = []
        for name, est in (
            ("zero-shot", ZeroShot()),
            ("FPL", FPL(epochs=5, iters_per_epoch=20, random_state=seed)),
            (
                "CAP",
                CAP(
                    epochs=5, iters_per_epoch=20, update_every=2, kmeans_n_init=2, random_state=seed
                ),
            ),
        ):
            est.fit(task)
            r = evaluate(task.y_test, est.predict(task.X_test), n_classes=task.n_classes)
            rows.append((name, r["accuracy"], r["max_min_ratio"], est))
    finally:
        torch.set_num_threads(threads)
    cap = rows[-1][3]
    lines = [
        "vlm-pseudolabel demo: synthetic VLM embeddings, 20 classes, 2 mismatched, 2 confused groups",
        f"planted mismatch {task.planted_mismatch}, CAP detected {cap.mismatch_classes_}",
        f"{'method':<11}{'test acc':>9}{'max/min predicted':>19}",
    ]
    for name, acc, ratio, _ in rows:
        lines.append(f"{name:<11}{acc:>9.3f}{ratio:>19.1f}")
    return "\n".join(lines)
