"""Short demo of the package's main job, used by ``aware-ml demo``."""

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Run the package's main job on generated data and return a result table.

    Parameters
    ----------
    seed : int, default=0
        Random seed for the generated data.

    Returns
    -------
    str
        A plain-text table of the demo's results.
    """
    return "isocal: placeholder demo (the method lands with its issue)"
