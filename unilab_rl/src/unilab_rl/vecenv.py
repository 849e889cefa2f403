"""The vector-env protocol unilab_rl trains on.

unilab_rl knows nothing of MuJoCo or of unilab: any object with these attributes and methods can be
trained, for instance a wrapped Gymnasium vector env. Tensors live on :attr:`VecEnv.device`; the
learner moves them to its own device.

Observations come in named groups: ``"actor"`` (what the policy sees, possibly noisy) and
``"critic"`` (privileged, noise-free; may equal the actor group). Actions are in the env's own units;
:attr:`VecEnv.action_low` / :attr:`VecEnv.action_high` bound them, and the learner squashes its
outputs into that box.

Optional: left/right symmetry. An env whose observations and actions have a mirror image (a
bilateral robot reflected through its sagittal plane) may expose ``env.mirror``, a
:class:`Mirror`: per observation group and for the action vector an index permutation and a sign
vector, ``mirrored = x[..., perm] * sign``. The learners' ``symmetry`` setting reads it through
:func:`learner_mirror`; an env without the attribute does not support symmetry augmentation.

Optional: split steps. An env may expose ``step_async(actions, physics)``, which checks and
applies the actions and submits its simulation to ``physics`` (an object with
``concurrent.futures.Executor.submit``), returning that ``Future``, and ``step_wait()``, which
finishes the step once the simulation is done and returns what ``step`` returns. The async
collector's ``runtime.shard_stepping="pipeline"`` runs several shards' simulations on one
worker thread this way, while its own thread does their env code; an env without the pair has
its whole ``step`` run on the worker instead.
"""

from __future__ import annotations


from typing import NamedTuple, Protocol, runtime_checkable

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


def learner_spaces(env: VecEnv, learner: str, device: torch.device):
    """Check that ``env`` offers what an off-policy learner needs and return its spaces.

    The actor reads the ``"actor"`` group; the critic reads ``"critic"`` when the env has it
    (asymmetric actor-critic), else ``"actor"``.

    Args:
        env: the vector env.
        learner: the learner's name, for messages (``"SAC"``, ``"FlashSAC"``).
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
    actor_group = "actor"
    critic_group = "critic" if "critic" in env.obs_dims else "actor"
    obs_dims = {g: env.obs_dims[g] for g in dict.fromkeys((actor_group, critic_group))}
    low = env.action_low.detach().to(device, torch.float32)
    high = env.action_high.detach().to(device, torch.float32)
    return actor_group, critic_group, obs_dims, low, high


class Mirror(NamedTuple):
    """A left/right mirror of an env's observations and actions (an involution).

    Each pair is ``(perm, sign)``: ``perm`` (d,) int64 indices, ``sign`` (d,) float32 of +-1, and
    the mirror image of ``x`` (..., d) is ``x[..., perm] * sign`` (:func:`apply_mirror`).
    Mirroring twice gives ``x`` back: ``perm[perm] == arange(d)`` and ``sign * sign[perm] == 1``.

    Attributes:
        obs: group -> (perm, sign) of width ``obs_dims[group]``.
        actions: (perm, sign) of width ``num_actions``.
    """

    obs: dict[str, tuple[torch.Tensor, torch.Tensor]]
    actions: tuple[torch.Tensor, torch.Tensor]


def apply_mirror(x: torch.Tensor, pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """The mirror image ``x[..., perm] * sign`` of ``x`` (..., d) float; a new tensor.

    Args:
        x: (..., d) float tensor.
        pair: ``(perm, sign)``, (d,) int64 and (d,) float32 on ``x``'s device.
    """
    perm, sign = pair
    return x[..., perm] * sign


def check_mirror_pair(pair: tuple[torch.Tensor, torch.Tensor], width: int, what: str) -> None:
    """Check that ``pair`` is a width-``width`` involution: a permutation with +-1 signs that gives
    ``x`` back when applied twice.

    Raises:
        ValueError: naming ``what`` and the first problem found.
    """
    perm, sign = pair
    if tuple(perm.shape) != (width,) or tuple(sign.shape) != (width,):
        raise ValueError(f"mirror of {what}: perm and sign must be ({width},), got {tuple(perm.shape)} and {tuple(sign.shape)}")
    if perm.dtype != torch.long or not torch.equal(torch.sort(perm.cpu()).values, torch.arange(width)):
        raise ValueError(f"mirror of {what}: perm must be a permutation of 0..{width - 1} (int64)")
    if not bool(((sign == 1) | (sign == -1)).all()):
        raise ValueError(f"mirror of {what}: sign must hold only +1 and -1")
    perm_c, sign_c = perm.cpu(), sign.cpu()
    if not torch.equal(perm_c[perm_c], torch.arange(width)) or not bool((sign_c * sign_c[perm_c] == 1).all()):
        raise ValueError(f"mirror of {what}: mirroring twice must give the input back (perm[perm] == arange, "
                         f"sign * sign[perm] == 1)")


def learner_mirror(env: VecEnv, learner: str, obs_dims: dict[str, int], device: torch.device) -> Mirror:
    """The env's :class:`Mirror` for the learner groups ``obs_dims``, checked and moved to ``device``.

    Args:
        env: the vector env; it supports symmetry when it has a ``mirror`` attribute.
        learner: the learner's name, for messages.
        obs_dims: group -> width of the groups the learner stores (from :func:`learner_spaces`).
        device: the learner device.

    Returns:
        a :class:`Mirror` with only those groups, tensors on ``device`` (perm int64, sign float32).

    Raises:
        ValueError: naming ``algo.symmetry``: the env has no ``mirror`` (or building it failed, e.g.
            an observation term without a mirror rule), or it does not fit the env's sizes.
    """
    try:
        mirror = getattr(env, "mirror", None)
    except ValueError as exc:
        raise ValueError(f"algo.symmetry=true: {learner} cannot mirror this {type(env).__name__}: {exc}") from exc
    if mirror is None:
        raise ValueError(
            f"algo.symmetry=true: {learner} needs an env with a left/right mirror specification "
            f"(env.mirror); {type(env).__name__} has none. Set algo.symmetry=false"
        )
    missing = [g for g in obs_dims if g not in mirror.obs]
    if missing:
        raise ValueError(f"algo.symmetry=true: env.mirror lacks observation groups {missing}")
    obs = {}
    for group, width in obs_dims.items():
        check_mirror_pair(mirror.obs[group], width, f"observation group {group!r}")
        perm, sign = mirror.obs[group]
        obs[group] = (perm.to(device, torch.long), sign.to(device, torch.float32))
    check_mirror_pair(mirror.actions, env.num_actions, "actions")
    actions = (mirror.actions[0].to(device, torch.long), mirror.actions[1].to(device, torch.float32))
    return Mirror(obs=obs, actions=actions)


__all__ = ["Mirror", "VecEnv", "apply_mirror", "check_mirror_pair", "learner_mirror", "learner_spaces"]
