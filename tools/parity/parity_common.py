"""What every parity script shares: the difference measure and the per-component record.

Imported by the scripts beside it (``python tools/parity/<pkg>.py`` puts this folder first on
``sys.path``); the scripts keep their own names and what they compare.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys

import torch


def import_official(root: pathlib.Path, *names: str) -> list:
    """Import modules of an official checkout by name, with the checkout first on ``sys.path``
    and as the working directory while they load (official code resolves files relative to
    it)."""
    sys.path.insert(0, str(root))
    cwd = os.getcwd()
    os.chdir(root)
    try:
        return [importlib.import_module(n) for n in names]
    finally:
        os.chdir(cwd)


def official_source(root: pathlib.Path, repo: str) -> dict:
    """Which official code a harness ran: ``{"repo", "commit", "dirty"}``.

    The commit is the checkout's ``git rev-parse HEAD``; an exported tree without ``.git``
    (``git archive``, or blobs written out of a snapshot) may carry it in ``.official_commit``.
    ``commit`` is None when neither says it.
    """
    root = pathlib.Path(root).resolve()
    marker = root / ".official_commit"
    if marker.is_file():
        return {"repo": repo, "commit": marker.read_text().split()[0], "dirty": None}

    def git(*args: str, where: pathlib.Path = root) -> str:
        return subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True,
                              text=True).stdout.strip()  # fmt: skip

    commit, dirty = None, None
    try:
        top = pathlib.Path(git("rev-parse", "--show-toplevel")).resolve()
        ours = pathlib.Path(
            git("rev-parse", "--show-toplevel", where=pathlib.Path(__file__).parent)
        )
        if top != ours.resolve():  # a tree exported inside this project is not the official git
            commit = git("rev-parse", "HEAD")
            dirty = bool(git("status", "--porcelain", "-uno"))
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"repo": repo, "commit": commit, "dirty": dirty}


def diff(a, b) -> tuple[float, float]:
    """Largest absolute difference of two tensors (flattened, float64), and that difference
    relative to the official value's largest magnitude."""
    a = torch.as_tensor(a).detach().double().reshape(-1)
    b = torch.as_tensor(b).detach().double().reshape(-1)
    d = (a - b).abs().max().item()
    return d, d / max(b.abs().max().item(), 1e-300)


def within_target(rows: list[list], tag: str = "package default", target: float = 1e-5):
    """(rows without ``tag`` in their name, how many of them are <= ``target`` relative): the
    comparisons at the official switches, apart from the rows kept at the package defaults."""
    main = [r for r in rows if tag not in r[0]]
    return main, sum(r[3] <= target for r in main)


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
