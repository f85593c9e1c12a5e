"""Waypoint controller used to collect D4RL-style Maze2D data.

D4RL collected Maze2D by driving the ball to random goal cells with a PD
controller that tracks the next cell centre on a shortest grid path.  Grid paths
are computed once for all cell pairs with ``scipy.sparse.csgraph``.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

from lomap_planner.layouts import free_cells

__all__ = ["WaypointController"]


class WaypointController:
    """PD controller that follows shortest 4-connected grid paths.

    Parameters
    ----------
    walls : ndarray of bool, shape (n_rows, n_cols)
    p_gain : float, default=10.0
        Proportional gain on the position error (D4RL: 10).
    d_gain : float, default=-1.0
        Gain on the velocity (D4RL: -1).
    reach_radius : float, default=0.2
        Distance at which the goal counts as reached.
    """

    def __init__(
        self,
        walls: np.ndarray,
        p_gain: float = 10.0,
        d_gain: float = -1.0,
        reach_radius: float = 0.2,
    ) -> None:
        if reach_radius <= 0:
            raise ValueError(f"reach_radius must be > 0, got {reach_radius}")
        self.walls = np.asarray(walls, dtype=bool)
        self.p_gain, self.d_gain, self.reach_radius = p_gain, d_gain, reach_radius
        cells = free_cells(self.walls)
        self.cells = cells
        index = -np.ones(self.walls.shape, dtype=np.int64)
        index[cells[:, 0], cells[:, 1]] = np.arange(len(cells))
        self.index = index
        rows, cols = [], []
        for di, dj in [(1, 0), (-1, 0), (0, 1), (0, -1)]:
            nb = index[cells[:, 0] + di, cells[:, 1] + dj]
            ok = nb >= 0
            rows.append(np.flatnonzero(ok))
            cols.append(nb[ok])
        r, c = np.concatenate(rows), np.concatenate(cols)
        graph = coo_matrix((np.ones(len(r)), (r, c)), shape=(len(cells), len(cells)))
        # predecessors[g, s] is the cell before s on a shortest path from g, i.e. the
        # next step when walking from s towards g.
        self.dist, self.pred = shortest_path(
            graph.tocsr(), unweighted=True, return_predecessors=True
        )

    def cell_of(self, pos: np.ndarray) -> np.ndarray | int:
        """Index of the free cell containing ``pos`` (nearest free cell if none).

        ``pos`` of shape (2,) gives an int; shape (n, 2) gives an array (n,).
        """
        p = np.asarray(pos, dtype=float)
        flat = p.reshape(-1, 2)
        ij = np.clip(np.floor(flat + 0.5).astype(int), 0, np.array(self.walls.shape) - 1)
        k = self.index[ij[:, 0], ij[:, 1]]
        bad = k < 0
        if bad.any():
            d = ((flat[bad, None] - self.cells[None]) ** 2).sum(-1)
            k[bad] = d.argmin(1)
        return int(k[0]) if p.ndim == 1 else k

    def waypoint(self, pos: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Next position to track: the next cell centre on the path, or the goal.

        Works on one point (2,) or a batch (n, 2) of positions and goals.
        """
        p = np.atleast_2d(np.asarray(pos, dtype=float))
        g = np.broadcast_to(np.atleast_2d(np.asarray(goal, dtype=float)), p.shape)
        s, gc = np.atleast_1d(self.cell_of(p)), np.atleast_1d(self.cell_of(g))
        nxt = self.pred[gc, s]
        wp = np.where((nxt >= 0)[:, None], self.cells[np.maximum(nxt, 0)].astype(float), p)
        wp = np.where((s == gc)[:, None], g, wp)
        return wp[0] if np.asarray(pos).ndim == 1 else wp

    def path_length(self, start: np.ndarray, goal: np.ndarray) -> float:
        """Number of grid moves on a shortest path between the cells of two points."""
        return float(self.dist[self.cell_of(goal), self.cell_of(start)])

    def __call__(self, state: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray | bool]:
        """Action for ``state = [x, y, vx, vy]`` and whether the goal is reached.

        ``state`` may be (4,) or a batch (n, 4) with goals (2,) or (n, 2).
        """
        st = np.asarray(state, dtype=float)
        pos, vel = st[..., :2], st[..., 2:4]
        wp = self.waypoint(pos, goal)
        action = np.clip(self.p_gain * (wp - pos) + self.d_gain * vel, -1.0, 1.0)
        done = np.linalg.norm(pos - goal, axis=-1) <= self.reach_radius
        return action, (bool(done) if st.ndim == 1 else done)
