"""Short demo of the package's main job, used by ``aware-ml demo``."""

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Merge two digit models (rotated / inverted inputs) and sweep preferences.

    Parameters
    ----------
    seed : int, default=0
        Random seed for data, training and preference sampling.

    Returns
    -------
    str
        Test accuracy per task for each baseline and along the Pareto Merging sweep.
    """
    import torch

    from pareto_merge.experiment import merging_experiment

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: extra intra-op threads only add overhead
    try:
        r = merging_experiment(
            ("rot90", "invert"), objectives=("ce",), n_points=5, n_steps=150, seed=seed
        )
    finally:
        torch.set_num_threads(threads)
    t1, t2 = r["tasks"]
    lines = [f"{'method':<36}{t1:>8}{t2:>8}{'mean':>8}", "-" * 60]
    for name, (a, b) in r["points"].items():
        lines.append(f"{name:<36}{a:>8.3f}{b:>8.3f}{(a + b) / 2:>8.3f}")
    prefs, front = r["fronts"]["ce"]
    for pref, (a, b) in zip(prefs, front, strict=True):
        label = f"Pareto Merging pref=({pref[0]:.2f}, {pref[1]:.2f})"
        lines.append(f"{label:<36}{a:>8.3f}{b:>8.3f}{(a + b) / 2:>8.3f}")
    lines.append(
        f"merge() for a new preference: {r['merge_ms']:.2f} ms; {r['extra_params']} extra "
        f"parameters on a {r['model_params']}-parameter backbone"
    )
    return "\n".join(lines)
