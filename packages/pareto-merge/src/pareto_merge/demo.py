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
            ("rot90", "invert"),
            objective="entropy",
            n_points=5,
            n_steps=150,
            adamerging_front=False,
            seed=seed,
        )
    finally:
        torch.set_num_threads(threads)
    t1, t2 = r["tasks"]
    lines = [
        "unlabeled setting (entropy on the test inputs); test accuracy per task",
        f"{'method':<40}{t1:>8}{t2:>8}{'mean':>8}",
        "-" * 64,
    ]
    for name, (a, b) in r["points"].items():
        lines.append(f"{name:<40}{a:>8.3f}{b:>8.3f}{(a + b) / 2:>8.3f}")
    prefs, front = r["fronts"]["Pareto Merging"]
    for pref, (a, b) in zip(prefs, front, strict=True):
        label = f"Pareto Merging pref=({pref[0]:.2f}, {pref[1]:.2f})"
        lines.append(f"{label:<40}{a:>8.3f}{b:>8.3f}{(a + b) / 2:>8.3f}")
    lines.append(
        f"hypervolume: Pareto Merging front {r['hv']['Pareto Merging (front)']:.3f}, weighted "
        f"task arithmetic front {r['hv']['weighted task arithmetic (front)']:.3f}, capacity "
        f"control {r['hv']['capacity control (no preference)']:.3f}"
    )
    lines.append(
        f"merge() for a new preference: {r['merge_ms']:.2f} ms; {r['extra_params']} extra "
        f"parameters on a {r['model_params']}-parameter backbone"
    )
    return "\n".join(lines)
