"""The vector-env protocol unilab_rl trains on.

unilab_rl knows nothing of MuJoCo or of unilab: any object with these attributes and methods can be
trained, for instance a wrapped Gymnasium vector env. Tensors live on :attr:`VecEnv.device`; the
learner moves them to its own device.

Observations come in named groups: ``"actor"`` (what the policy sees, possibly noisy) and
``"critic"`` (privileged, noise-free; may equal the actor group). Actions are in the env's own units;
:attr:`VecEnv.action_low` / :attr:`VecEnv.action_high` bound them, and the learner squashes its
outputs into that box.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class VecEnv(Protocol):
    """A batch of ``num_envs`` environments that auto-reset.

    Attributes:
        num_envs: number of parallel environments.
        num_actions: action dimension A.
        obs_dims: size of each observation group, e.g. ``{"actor": 99, "critic": 111}``.
        action_low, action_high: (A,) float32 bounds of a valid action.
        max_episode_length: env steps after which an episode is truncated.
        device: device of every tensor the env returns.
    """

    num_envs: int
    num_actions: int
    obs_dims: dict[str, int]
    action_low: torch.Tensor
    action_high: torch.Tensor
    max_episode_length: int
    device: torch.device

    def reset(self) -> dict[str, torch.Tensor]:
        """Reset every environment.

        Returns:
            obs: group name -> (num_envs, obs_dims[group]) float32.
        """
        ...

    def step(
        self, actions: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """Advance every environment by one env step; finished ones reset automatically.

        Args:
            actions: (num_envs, num_actions) float32 within [action_low, action_high].

        Returns:
            obs: group -> (num_envs, d) float32, the first observation of the new episode for
                rows that just ended.
            reward: (num_envs,) float32.
            terminated: (num_envs,) bool, the episode ended in a terminal state (no bootstrap).
            truncated: (num_envs,) bool, the episode was cut (time-out); bootstrap from
                ``extras["final_obs"]``.
            extras: ``"final_obs"``: group -> (num_envs, d) float32 observation reached by this
                step before any reset (equal to ``obs`` for rows that did not end);
                ``"log"``: dict str -> float of episode statistics for the rows that ended
                (e.g. ``"Episode_Reward/track_linear_velocity"``), may be empty.
        """
        ...

    def close(self) -> None:
        """Release the env's resources."""
        ...


__all__ = ["VecEnv"]
