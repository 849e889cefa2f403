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

import logging

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


def learner_spaces(env: VecEnv, learner: str, configured_num_envs: int, device: torch.device):
    """Check that ``env`` offers what an off-policy learner needs and return its spaces.

    The actor reads the ``"actor"`` group; the critic reads ``"critic"`` when the env has it
    (asymmetric actor-critic), else ``"actor"``.

    Args:
        env: the vector env.
        learner: the learner's name, for messages (``"SAC"``, ``"FlashSAC"``).
        configured_num_envs: the config's ``num_envs``; a mismatch is logged (the env's count wins).
        device: where the action bounds are put.

    Returns:
        (actor_group, critic_group, obs_dims, action_low, action_high): the two group names,
        group -> width for those groups, and (A,) float32 bounds on ``device``.

    Raises:
        ValueError: the env has no ``"actor"`` group or its action box is not (num_actions,).
    """
    if "actor" not in env.obs_dims:
        raise ValueError(f"{learner} needs an 'actor' observation group; the env has {sorted(env.obs_dims)}")
    if tuple(env.action_low.shape) != (env.num_actions,) or tuple(env.action_high.shape) != (env.num_actions,):
        raise ValueError(
            f"env.action_low/high must be ({env.num_actions},), got "
            f"{tuple(env.action_low.shape)} and {tuple(env.action_high.shape)}"
        )
    if configured_num_envs != env.num_envs:
        logging.getLogger(__name__).warning(
            "%s config num_envs=%d but the env has %d envs; using the env's", learner, configured_num_envs, env.num_envs
        )
    actor_group = "actor"
    critic_group = "critic" if "critic" in env.obs_dims else "actor"
    obs_dims = {g: env.obs_dims[g] for g in dict.fromkeys((actor_group, critic_group))}
    low = env.action_low.detach().to(device, torch.float32)
    high = env.action_high.detach().to(device, torch.float32)
    return actor_group, critic_group, obs_dims, low, high


__all__ = ["VecEnv", "learner_spaces"]
