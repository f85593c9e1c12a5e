"""Gymnasium point-mass maze environment with the D4RL Maze2D layouts."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lomap_planner._checks import check_int, check_real
from lomap_planner.layouts import DEFAULT_GOALS, LAYOUTS, free_cells, get_layout
from lomap_planner.physics import PhysicsParams, _step, in_wall

__all__ = ["D4RL_MAX_EPISODE_STEPS", "PointMazeEnv", "register_envs"]

# ``max_episode_steps`` of maze2d-{umaze,medium,large}-v1, in physics steps.
D4RL_MAX_EPISODE_STEPS: dict[str, int] = {"umaze": 300, "medium": 600, "large": 800, "tiny": 200}


class PointMazeEnv(gym.Env):
    """Point mass in a 2-D maze (D4RL Maze2D semantics, numpy physics).

    Observation ``[x, y, vx, vy]``; action: force in ``[-1, 1]^2``; sparse reward 1
    per physics step while the ball is within 0.5 of the goal (D4RL ``sparse``).
    Episodes never terminate; they are truncated after ``max_episode_steps``.

    Parameters
    ----------
    layout : str, default="umaze"
        ``umaze``, ``medium``, ``large``, ``tiny`` or a D4RL ``maze_spec`` string.
    frame_skip : int, default=1
        Physics steps per ``step`` call; the reward is summed over them, so
        returns stay on the D4RL scale whatever the frame skip.
    max_episode_steps : int, optional
        Defaults to the D4RL episode length divided by ``frame_skip``.
    physics : PhysicsParams, optional
    goal : array-like of shape (2,), optional
        Fixed goal position; defaults to the layout's D4RL goal cell.
    reset_noise : float, default=0.1
        Uniform noise on the start position (D4RL: 0.1).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self,
        layout: str = "umaze",
        frame_skip: int = 1,
        max_episode_steps: int | None = None,
        physics: PhysicsParams | None = None,
        goal: np.ndarray | None = None,
        reset_noise: float = 0.1,
    ) -> None:
        frame_skip = check_int("frame_skip", frame_skip, 1)
        reset_noise = check_real("reset_noise", reset_noise, 0.0)
        if reset_noise >= 0.4:
            raise ValueError(f"reset_noise must be in [0, 0.4), got {reset_noise}")
        if not isinstance(layout, str):
            raise TypeError(f"layout must be a layout name or a maze_spec string, got {type(layout).__name__}")  # fmt: skip
        if physics is not None and not isinstance(physics, PhysicsParams):
            raise TypeError(f"physics must be a PhysicsParams or None, got {type(physics).__name__}")  # fmt: skip
        self.layout = layout
        self.layout_name = layout if layout in LAYOUTS else "custom"
        self.walls = get_layout(layout)
        self.physics = physics or PhysicsParams()
        self.frame_skip = int(frame_skip)
        if max_episode_steps is None:
            base = D4RL_MAX_EPISODE_STEPS.get(self.layout_name, 600)
            max_episode_steps = int(np.ceil(base / self.frame_skip))
        self.max_episode_steps = check_int("max_episode_steps", max_episode_steps, 1)
        self.reset_noise = float(reset_noise)
        self.free = free_cells(self.walls)
        if goal is None:
            goal = DEFAULT_GOALS.get(self.layout_name, tuple(self.free[-1]))
        self.goal = self._check_point(goal, "goal")
        n_rows, n_cols = self.walls.shape
        high = np.array([n_rows, n_cols, self.physics.max_speed, self.physics.max_speed])
        self.observation_space = spaces.Box(-high, high, dtype=np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
        self._pos = np.zeros(2)
        self._vel = np.zeros(2)
        self._t = 0

    def spawn(self) -> PointMazeEnv:
        """A fresh environment with the same layout, physics, goal and limits (for rollouts)."""
        return PointMazeEnv(
            self.layout,
            frame_skip=self.frame_skip,
            max_episode_steps=self.max_episode_steps,
            physics=self.physics,
            goal=self.goal,
            reset_noise=self.reset_noise,
        )

    def _check_point(self, p: Any, name: str) -> np.ndarray:
        p = np.asarray(p, dtype=float)
        if p.shape != (2,) or not np.isfinite(p).all():
            raise ValueError(f"{name} must be a finite array of shape (2,)")
        if in_wall(p, self.walls):
            raise ValueError(f"{name}={p.tolist()} lies inside a wall")
        return p

    @property
    def state(self) -> np.ndarray:
        """Current observation ``[x, y, vx, vy]`` (a copy)."""
        return np.concatenate([self._pos, self._vel])

    def set_goal(self, goal: np.ndarray) -> None:
        """Move the goal (used by the dataset generator and multi-goal evaluation)."""
        self.goal = self._check_point(goal, "goal")

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset to a random free cell (or ``options['start']``) with zero velocity.

        ``options`` may hold ``start`` and ``goal`` positions of shape (2,).
        """
        super().reset(seed=seed)
        options = options or {}
        if options.get("goal") is not None:
            self.set_goal(options["goal"])
        if options.get("start") is not None:
            start = self._check_point(options["start"], "start")
        else:
            cell = self.free[self.np_random.integers(len(self.free))]
            start = cell + self.np_random.uniform(-self.reset_noise, self.reset_noise, 2)
        self._pos = np.asarray(start, dtype=float).copy()
        self._vel = np.zeros(2)
        self._t = 0
        return self.state, {"goal": self.goal.copy()}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = np.asarray(action, dtype=float)
        if a.shape != (2,):
            raise ValueError(f"action must have shape (2,), got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError("action contains NaN or inf")
        reward = 0.0
        pos, vel = self._pos[None], self._vel[None]
        for _ in range(self.frame_skip):
            pos, vel = _step(pos, vel, a[None], self.walls, self.physics)
            reward += float(np.linalg.norm(pos[0] - self.goal) <= 0.5)
        self._pos, self._vel = pos[0], vel[0]
        self._t += 1
        truncated = self._t >= self.max_episode_steps
        return self.state, reward, False, truncated, {"goal": self.goal.copy()}


def register_envs(frame_skip: int = 1) -> list[str]:
    """Register ``lomap_planner/PointMaze-{UMaze,Medium,Large}-v0`` with gymnasium.

    Returns the registered ids. Calling it again with another ``frame_skip`` re-registers
    them (``gym.make`` then builds environments with the new frame skip).
    """
    frame_skip = check_int("frame_skip", frame_skip, 1)
    ids = []
    for name, tag in [("umaze", "UMaze"), ("medium", "Medium"), ("large", "Large")]:
        env_id = f"lomap_planner/PointMaze-{tag}-v0"
        spec = gym.registry.get(env_id)
        if spec is not None and spec.kwargs.get("frame_skip") != frame_skip:
            del gym.registry[env_id]  # a stale registration would keep its old frame skip
            spec = None
        if spec is None:
            gym.register(
                id=env_id,
                entry_point=PointMazeEnv,
                kwargs={"layout": name, "frame_skip": frame_skip},
            )
        ids.append(env_id)
    return ids
