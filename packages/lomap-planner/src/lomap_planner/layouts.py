"""D4RL Maze2D layouts and grid parsing.

The strings are the ``maze_spec`` layouts of D4RL's ``pointmaze/maze_model.py``
(``#`` wall, ``O`` free, ``G`` default goal).  Cell ``(i, j)`` (row, column) is the
unit square centred at the continuous position ``(x, y) = (i, j)``, as in D4RL.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_GOALS", "LAYOUTS", "free_cells", "get_layout", "parse_layout"]

LAYOUTS: dict[str, str] = {
    "umaze": "#####\\#GOO#\\###O#\\#OOO#\\#####",
    "medium": "########\\#OO##OO#\\#OO#OOO#\\##OOO###\\#OO#OOO#\\#O#OO#O#\\#OOO#OG#\\########",
    "large": (
        "############\\#OOOO#OOOOO#\\#O##O#O#O#O#\\#OOOOOO#OOO#\\#O####O###O#"
        "\\#OO#O#OOOOO#\\##O#O#O#O###\\#OO#OOO#OGO#\\############"
    ),
    # Not a D4RL layout: a 3x4 corridor with one inner wall, for fast tests.
    "tiny": "######\\#OOOO#\\#O##G#\\######",
}

# Goal cells of the single-task D4RL environments (``maze2d-*-v1``).
DEFAULT_GOALS: dict[str, tuple[int, int]] = {
    "umaze": (1, 1),
    "medium": (6, 6),
    "large": (7, 9),
    "tiny": (2, 4),
}


def parse_layout(spec: str) -> np.ndarray:
    """Parse a D4RL ``maze_spec`` string into a boolean wall grid.

    Parameters
    ----------
    spec : str
        Rows separated by a backslash (D4RL style) or a newline; ``#`` is a wall,
        ``O``/``G`` are free cells.

    Returns
    -------
    walls : ndarray of bool, shape (n_rows, n_cols)
        ``True`` where the cell is a wall.
    """
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a str, got {type(spec).__name__}")
    rows = [r for r in spec.replace("\n", "\\").split("\\") if r]
    if not rows:
        raise ValueError("spec is empty")
    if len({len(r) for r in rows}) != 1:
        raise ValueError("spec rows must all have the same length")
    bad = set("".join(rows)) - set("#OG")
    if bad:
        raise ValueError(f"spec has unknown tiles {sorted(bad)}; use '#', 'O' or 'G'")
    walls = np.array([[c == "#" for c in r] for r in rows], dtype=bool)
    # The border must be walls so that the physics never indexes outside the grid.
    if not (walls[0].all() and walls[-1].all() and walls[:, 0].all() and walls[:, -1].all()):
        raise ValueError("spec must be enclosed by walls ('#') on every side")
    if walls.all():
        raise ValueError("spec has no free cell")
    return walls


def get_layout(name_or_spec: str) -> np.ndarray:
    """Return the wall grid of a named layout (``umaze``, ``medium``, ``large``,
    ``tiny``) or parse a custom ``maze_spec`` string."""
    if name_or_spec in LAYOUTS:
        return parse_layout(LAYOUTS[name_or_spec])
    if "#" not in str(name_or_spec):
        raise ValueError(
            f"name_or_spec: layout must be one of {sorted(LAYOUTS)} or a maze_spec string, "
            f"got {name_or_spec!r}"
        )
    return parse_layout(name_or_spec)


def free_cells(walls: np.ndarray) -> np.ndarray:
    """Integer coordinates of the free cells, shape (n_free, 2), row-major order."""
    return np.argwhere(~np.asarray(walls, dtype=bool))
