"""What every parity script shares: the difference measure and the per-component record.

Imported by the scripts beside it (``python tools/parity/<pkg>.py`` puts this folder first on
``sys.path``); the scripts keep their own names and what they compare.
"""

from __future__ import annotations

import torch


def diff(a, b) -> tuple[float, float]:
    """Largest absolute difference of two tensors (flattened, float64), and that difference
    relative to the official value's largest magnitude."""
    a = torch.as_tensor(a).detach().double().reshape(-1)
    b = torch.as_tensor(b).detach().double().reshape(-1)
    d = (a - b).abs().max().item()
    return d, d / max(b.abs().max().item(), 1e-300)


class Record:
    """Differences per component over seeds; ``rows`` gives one table row per component."""

    def __init__(self) -> None:
        self.comps: dict[str, list[tuple[float, float]]] = {}

    def __call__(self, name: str, ours, official) -> None:
        self.comps.setdefault(name, []).append(diff(ours, official))

    def rows(self, where: dict[str, str]) -> list[list]:
        return [
            [n, where[n], max(x[0] for x in v), max(x[1] for x in v)] for n, v in self.comps.items()
        ]

    def per_seed(self) -> dict[str, list[list[float]]]:
        return {name: [list(x) for x in v] for name, v in self.comps.items()}
