"""Optional adapter to gymnasium-robotics' MuJoCo PointMaze, in this package's D4RL frame.

``pip install "lomap-planner[robotics]"`` brings gymnasium-robotics (and MuJoCo). The wrapper
builds ``PointMaze_UMaze-v3`` with the D4RL layout's maze map and converts between frames so
that planners trained on :class:`~lomap_planner.env.PointMazeEnv` data can act in it:
gymnasium-robotics centres the maze at the origin with ``y`` pointing up, while D4RL puts cell
``(i, j)`` at ``(x, y) = (i, j)``. Observations are ``(x, y, vx, vy)`` in the D4RL frame and
actions are D4RL-frame forces in ``[-1, 1]^2``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lomap_planner.layouts import DEFAULT_GOALS, LAYOUTS, get_layout

__all__ = ["RoboticsPointMazeEnv"]


class RoboticsPointMazeEnv(gym.Wrapper):
    """gymnasium-robotics PointMaze with D4RL-frame flat observations.

    Parameters
    ----------
    layout : str, default="umaze"
        A name from :data:`~lomap_planner.layouts.LAYOUTS` or a D4RL ``maze_spec`` string.
    max_episode_steps : int, default=300
    continuing_task : bool, default=True
        As gymnasium-robotics: keep going after the goal is reached (D4RL Maze2D behaviour).
    **kwargs
        Passed to ``gymnasium.make`` (e.g. ``reward_type="dense"``).

    Notes
    -----
    ``info["goal"]`` holds the goal position in the D4RL frame after ``reset`` and ``step``.
    """

    def __init__(
        self,
        layout: str = "umaze",
        max_episode_steps: int = 300,
        continuing_task: bool = True,
        **kwargs: Any,
    ) -> None:
        try:
            import gymnasium_robotics
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise ImportError(
                "RoboticsPointMazeEnv needs gymnasium-robotics: pip install 'lomap-planner[robotics]'"
            ) from exc
        if not (isinstance(max_episode_steps, int) and max_episode_steps >= 1):
            raise ValueError(
                f"max_episode_steps: must be a positive int, got {max_episode_steps!r}"
            )
        gym.register_envs(gymnasium_robotics)
        self.layout = layout
        self.walls = get_layout(layout)
        self.max_episode_steps = max_episode_steps
        self._continuing, self._kwargs = continuing_task, kwargs
        # D4RL's fixed evaluation goal (a cell (i, j) is the D4RL position (i, j))
        name = layout if layout in LAYOUTS else None
        self.goal = np.asarray(DEFAULT_GOALS[name], dtype=float) if name in DEFAULT_GOALS else None
        maze_map = self.walls.astype(int).tolist()
        env = gym.make(
            "PointMaze_UMaze-v3",
            maze_map=maze_map,
            max_episode_steps=max_episode_steps,
            continuing_task=continuing_task,
            **kwargs,
        )
        super().__init__(env)
        self._h, self._w = self.walls.shape
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64)

    def to_d4rl(self, xy: np.ndarray) -> np.ndarray:
        """Positions ``(..., 2)`` from the gymnasium-robotics frame to the D4RL frame."""
        xy = np.asarray(xy, dtype=np.float64)
        return np.stack([self._h / 2 - 0.5 - xy[..., 1], xy[..., 0] + self._w / 2 - 0.5], axis=-1)

    def _obs(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        o = obs["observation"]
        info["goal"] = self.to_d4rl(obs["desired_goal"])
        return np.concatenate([self.to_d4rl(o[:2]), [-o[3], o[2]]])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset; returns the D4RL-frame observation ``(x, y, vx, vy)`` and info."""
        if options is None and self.goal is not None:
            options = {"goal_cell": self.goal.astype(int)}
        obs, info = self.env.reset(seed=seed, options=options)
        return self._obs(obs, info), info

    def spawn(self) -> RoboticsPointMazeEnv:
        """A fresh environment with the same layout, goal and limits (for rollouts)."""
        return RoboticsPointMazeEnv(
            self.layout, self.max_episode_steps, self._continuing, **self._kwargs
        )

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply a D4RL-frame action ``(a_x, a_y)`` in ``[-1, 1]^2``."""
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (2,) or not np.isfinite(a).all():
            raise ValueError(f"action: expected 2 finite numbers, got {a!r}")
        a = np.clip(a, -1.0, 1.0)
        obs, reward, terminated, truncated, info = self.env.step(np.array([a[1], -a[0]]))
        return self._obs(obs, info), float(reward), terminated, truncated, info
