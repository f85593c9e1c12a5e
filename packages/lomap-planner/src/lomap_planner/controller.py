"""Waypoint controller used to collect D4RL-style Maze2D data.

D4RL collected Maze2D by driving the ball to random goal cells with a PD
controller that tracks the next cell centre on a shortest grid path.  Grid paths
are computed once for all cell pairs with ``scipy.sparse.csgraph``.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

from lomap_planner._checks import check_real
from lomap_planner.layouts import free_cells

__all__ = ["D4RLWaypointController", "WaypointController"]


def _check_walls(walls: object) -> np.ndarray:
    """A 2-D bool wall grid with at least one free cell (a copy)."""
    w = np.array(walls)
    if w.ndim != 2 or w.dtype.kind not in "biu" or (w.dtype.kind != "b" and not np.isin(w, (0, 1)).all()):  # fmt: skip
        raise ValueError(f"walls must be a 2-D grid of bools (or 0/1), got dtype {w.dtype}, shape {w.shape}")  # fmt: skip
    w = w.astype(bool)
    if w.all():
        raise ValueError("walls has no free cell")
    return w


def _check_points(value: object, name: str, width: int) -> np.ndarray:
    """Finite float points of shape (width,) or (n, width)."""
    a = np.asarray(value, dtype=float)
    if a.ndim not in (1, 2) or a.shape[-1] != width or a.size == 0:
        raise ValueError(f"{name} must have shape ({width},) or (n, {width}), got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf")
    return a


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
        reach_radius = check_real("reach_radius", reach_radius, 0.0, strict=True)
        self.walls = _check_walls(walls)
        self.p_gain, self.d_gain = check_real("p_gain", p_gain), check_real("d_gain", d_gain)
        self.reach_radius = reach_radius
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
        p = np.atleast_2d(_check_points(pos, "pos", 2))
        g = np.atleast_2d(_check_points(goal, "goal", 2))
        if len(g) not in (1, len(p)):
            raise ValueError(f"goal must have shape (2,) or ({len(p)}, 2), got {g.shape}")
        g = np.broadcast_to(g, p.shape)
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
        st = _check_points(state, "state", 4)
        goal = _check_points(goal, "goal", 2)
        pos, vel = st[..., :2], st[..., 2:4]
        wp = self.waypoint(pos, goal)
        action = np.clip(self.p_gain * (wp - pos) + self.d_gain * vel, -1.0, 1.0)
        done = np.linalg.norm(pos - goal, axis=-1) <= self.reach_radius
        return action, (bool(done) if st.ndim == 1 else done)


# grid moves in the order D4RL's grid world tries them (argmax ties go to the first): up (y - 1),
# down (y + 1), left (x - 1), right (x + 1); x is the maze string's row, y its column
_D4RL_MOVES = np.array([[0, -1], [0, 1], [-1, 0], [1, 0]])


class D4RLWaypointController:
    """D4RL's Maze2D data-collection controller, in D4RL's frame (``qpos``).

    Re-implemented from ``d4rl/pointmaze/waypoint_controller.py``'s behaviour:

    * when the target's cell changes, a grid path from the ball's cell (``round(location)``) to
      the target cell is planned (shortest path; equal-length ties broken up/down/left/right as
      D4RL's q-iteration argmax does); every waypoint except the last is its cell minus
      ``U(0, 1)·0.2`` per axis, the last is the target *cell* itself;
    * ``action = p_gain·(waypoint − location) + d_gain·velocity``, clipped to ``[-1, 1]``;
    * the ball moves to the next waypoint only when it is within ``solve_thresh`` of the current
      one **and** has moved less than ``vel_thresh`` since the previous call; the task is solved
      (``done``) under the same two conditions at the target cell.

    Parameters
    ----------
    walls : ndarray of bool, shape (n_rows, n_cols)
    p_gain, d_gain : float, default=10.0, -1.0
    solve_thresh, vel_thresh : float, default=0.1
    rng : numpy.random.Generator or None
        Source of the waypoint jitter.
    """

    def __init__(
        self,
        walls: np.ndarray,
        p_gain: float = 10.0,
        d_gain: float = -1.0,
        solve_thresh: float = 0.1,
        vel_thresh: float = 0.1,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.walls = _check_walls(walls)
        self.solve_thresh = check_real("solve_thresh", solve_thresh, 0.0, strict=True)
        self.vel_thresh = check_real("vel_thresh", vel_thresh, 0.0, strict=True)
        self.p_gain, self.d_gain = check_real("p_gain", p_gain), check_real("d_gain", d_gain)
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator or None, got {type(rng).__name__}")
        self.rng = rng if rng is not None else np.random.default_rng()
        self._grid = WaypointController(self.walls)  # all-pairs grid distances (scipy)
        self._target = np.full(2, -1000.0)
        self._waypoints = np.zeros((0, 2))
        self._idx = 0
        self._prev = np.zeros(2)

    def _cell(self, p: np.ndarray) -> tuple[int, int]:
        i = int(np.clip(np.round(p[0]), 0, self.walls.shape[0] - 1))
        j = int(np.clip(np.round(p[1]), 0, self.walls.shape[1] - 1))
        return i, j

    def _distances(self, target: tuple[int, int]) -> np.ndarray:
        """Grid distance of every cell to ``target`` (walls and unreachable cells: inf)."""
        dist = np.full(self.walls.shape, np.inf)
        g = self._grid
        if g.index[target] >= 0:  # a wall target leaves every cell unreachable
            dist[g.cells[:, 0], g.cells[:, 1]] = g.dist[g.index[target]]
        return dist

    def plan(self, location: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Plan waypoints from ``location`` to ``target``'s cell; returns them, shape (k, 2)."""
        location, target = (
            _check_points(location, "location", 2),
            _check_points(target, "target", 2),
        )
        if location.shape != (2,) or target.shape != (2,):
            raise ValueError("location and target must have shape (2,)")
        start, goal = self._cell(location), self._cell(target)
        dist = self._distances(goal)
        s, out = start, []
        for _ in range(100):  # D4RL's max rollout length
            if s == goal:
                out.append(np.array(goal, dtype=float))
                break
            moves = [(s[0] + dx, s[1] + dy) for dx, dy in _D4RL_MOVES]
            reach = [dist[m] if 0 <= m[0] < dist.shape[0] and 0 <= m[1] < dist.shape[1] else np.inf
                     for m in moves]  # fmt: skip
            if not np.isfinite(min(reach)) or min(reach) >= dist[s]:  # unreachable: stay put
                out.append(np.array(goal, dtype=float))
                break
            s = moves[int(np.argmin(reach))]
            wp = np.array(s, dtype=float)
            if s == goal:
                out.append(wp)
                break
            out.append(wp - self.rng.uniform(size=2) * 0.2)
        self._waypoints = np.array(out)
        self._idx = 0
        self._prev = np.array(start, dtype=float)
        self._target = np.array(goal, dtype=float)
        return self._waypoints.copy()

    def __call__(
        self, location: np.ndarray, velocity: np.ndarray, target: np.ndarray
    ) -> tuple[np.ndarray, bool]:
        """Action (2,) for the ball at ``location`` with ``velocity`` and whether it is done."""
        loc = np.asarray(location, dtype=float)
        vel = np.asarray(velocity, dtype=float)
        if loc.shape != (2,) or vel.shape != (2,):
            raise ValueError("location and velocity must have shape (2,)")
        target = _check_points(target, "target", 2)
        if target.shape != (2,) or not (np.isfinite(loc).all() and np.isfinite(vel).all()):
            raise ValueError("target must have shape (2,); location and velocity must be finite")
        if np.linalg.norm(self._target - np.array(self._cell(target), dtype=float)) > 1e-3:
            self.plan(loc, np.asarray(target, dtype=float))
        moved = np.linalg.norm(self._prev - loc)
        unsolved = (
            np.linalg.norm(loc - self._target) >= self.solve_thresh or moved >= self.vel_thresh
        )
        wp = self._waypoints[min(self._idx, len(self._waypoints) - 1)] if unsolved else self._target
        action = self.p_gain * (wp - loc) + self.d_gain * vel
        if unsolved and np.linalg.norm(loc - wp) < self.solve_thresh and moved < self.vel_thresh:
            self._idx += 1
        self._prev = loc
        return np.clip(action, -1.0, 1.0), not unsolved
