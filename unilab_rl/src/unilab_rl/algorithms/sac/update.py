"""SAC update math, in paper order, with the paper's names.

Haarnoja et al., "Soft Actor-Critic Algorithms and Applications" (2018, arXiv 1812.05905),
algorithm 1, with the naming of cleanrl's ``sac_continuous_action.py``:

1. soft Q target ``next_q_value = r + gamma (1 - terminated) (min_qf_next_target - alpha log pi')``
   (eq. 2-3, clipped double-Q from Fujimoto et al. 2018);
2. critic loss ``MSE(qf1, next_q_value) + MSE(qf2, next_q_value)`` (eq. 5);
3. actor loss ``E[alpha log pi(a|s) - Q(s, a)]``, ``a`` reparameterized (eq. 7);
4. temperature loss ``E[-alpha (log pi + target_entropy)]`` (eq. 18);
5. Polyak averaging of the target critics.

Only ``terminated`` cuts the bootstrap: a truncated (time-out) transition keeps
``gamma * V(s')`` with ``s'`` the pre-reset observation (Pardo et al. 2018, "Time Limits in
Reinforcement Learning", arXiv 1712.00378).

Layers: the loss functions (``soft_q_target`` ... ``alpha_loss``) are pure tensor math;
``critic_objective`` / ``actor_objective`` run the networks forward and return losses with no side
effect, so each compiles to one graph (``torch.compile(fullgraph=True)``); ``apply_gradients`` is the
eager ``zero_grad -> backward -> step``; ``update_critic`` / ``update_actor_and_temperature`` compose
them. Everything returns *detached* tensors and never calls ``.item()``: the caller synchronizes
once per iteration.
Shapes: B = batch size, A = action size, Da / Dc = actor / critic observation sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
from torch import nn

from unilab_rl.algorithms.sac.networks import Actor, Critic


def reduce_q(qf1: torch.Tensor, qf2: torch.Tensor, reduction: str) -> torch.Tensor:
    """Combine the twin estimates: ``"min"`` (clipped double-Q, textbook) or ``"mean"`` (FastSAC).

    Args:
        qf1, qf2: (B,) float.

    Returns:
        (B,) float.

    Raises:
        ValueError: unknown ``reduction``.
    """
    if reduction == "min":
        return torch.minimum(qf1, qf2)
    if reduction == "mean":
        return 0.5 * (qf1 + qf2)
    raise ValueError(f"critic reduction must be 'min' or 'mean', got {reduction!r}")


def soft_q_target(
    rewards: torch.Tensor,  # (B,)
    terminated: torch.Tensor,  # (B,) bool
    qf1_next_target: torch.Tensor,  # (B,)
    qf2_next_target: torch.Tensor,  # (B,)
    next_log_pi: torch.Tensor,  # (B,)
    alpha: torch.Tensor | float,  # ()
    gamma: float,
    reduction: str = "min",
) -> torch.Tensor:
    """Soft Bellman target ``r + gamma (1 - terminated) (min_qf_next_target - alpha log pi(a'|s'))``.

    Returns:
        next_q_value: (B,) float, no gradient expected (call under ``torch.no_grad``).
    """
    min_qf_next_target = reduce_q(qf1_next_target, qf2_next_target, reduction) - alpha * next_log_pi  # (B,)
    not_done = (~terminated.bool()).to(rewards.dtype)  # (B,): truncated rows keep the bootstrap
    return rewards + gamma * not_done * min_qf_next_target


def critic_loss(qf1: torch.Tensor, qf2: torch.Tensor, next_q_value: torch.Tensor) -> torch.Tensor:
    """``MSE(qf1, y) + MSE(qf2, y)`` over the batch; qf1, qf2, next_q_value: (B,). Returns ()."""
    return nn.functional.mse_loss(qf1, next_q_value) + nn.functional.mse_loss(qf2, next_q_value)


def actor_loss(
    log_pi: torch.Tensor,  # (B,)
    qf1_pi: torch.Tensor,  # (B,)
    qf2_pi: torch.Tensor,  # (B,)
    alpha: torch.Tensor | float,  # ()
    reduction: str = "min",
) -> torch.Tensor:
    """``mean(alpha log pi(a|s) - Q(s, a))`` with ``a`` the reparameterized sample. Returns ()."""
    return (alpha * log_pi - reduce_q(qf1_pi, qf2_pi, reduction)).mean()


def alpha_loss(log_alpha: torch.Tensor, log_pi: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """Temperature loss ``mean(-alpha (log pi + target_entropy))`` (cleanrl / FastSAC form).

    Its gradient raises alpha when the policy entropy ``-log pi`` is below ``target_entropy``.

    Args:
        log_alpha: () parameter.
        log_pi: (B,) log-probabilities; detached here.
        target_entropy: target entropy in nats.

    Returns:
        () loss.
    """
    return (-log_alpha.exp() * (log_pi.detach() + target_entropy)).mean()


@torch.no_grad()
def polyak_update(target_params: Iterable[torch.Tensor], online_params: Iterable[torch.Tensor], tau: float) -> None:
    """In place ``target <- (1 - tau) target + tau online`` (Lillicrap et al. 2015, "soft updates").

    Args:
        target_params, online_params: matching sequences of tensors (same shapes, same order).
        tau: in (0, 1]; 1 copies the online values.
    """
    torch._foreach_lerp_(list(target_params), list(online_params), tau)


def critic_objective(
    actor: Actor,
    critic: Critic,
    critic_target: Critic,
    critic_obs: torch.Tensor,  # (B, Dc)
    actions: torch.Tensor,  # (B, A)
    rewards: torch.Tensor,  # (B,)
    terminated: torch.Tensor,  # (B,) bool
    next_actor_obs: torch.Tensor,  # (B, Da)
    next_critic_obs: torch.Tensor,  # (B, Dc)
    alpha: torch.Tensor,  # ()
    gamma: float,
    reduction: str = "min",
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Soft Bellman target from the target critics and the critic loss (steps 1-2); forward only.

    Observations are already normalized. No optimizer or in-place state is touched, so this is
    one graph under ``torch.compile(fullgraph=True)``.

    Returns:
        qf_loss: () with gradient w.r.t. the critic; info: ``{"qf1", "qf2", "next_q_value"}``,
        () detached batch means.
    """
    with torch.no_grad():
        next_actions, next_log_pi = actor.sample(next_actor_obs)  # (B, A), (B,)
        qf1_next_target, qf2_next_target = critic_target(next_critic_obs, next_actions)  # (B,), (B,)
        next_q_value = soft_q_target(
            rewards, terminated, qf1_next_target, qf2_next_target, next_log_pi, alpha, gamma, reduction
        )  # (B,)
    qf1, qf2 = critic(critic_obs, actions)  # (B,), (B,)
    qf_loss = critic_loss(qf1, qf2, next_q_value)
    info = {"qf1": qf1.detach().mean(), "qf2": qf2.detach().mean(), "next_q_value": next_q_value.mean()}
    return qf_loss, info


def actor_objective(
    actor: Actor,
    critic: Critic,
    log_alpha: torch.Tensor,  # ()
    actor_obs: torch.Tensor,  # (B, Da)
    critic_obs: torch.Tensor,  # (B, Dc)
    target_entropy: float,
    reduction: str = "min",
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Actor loss (step 3) and temperature loss (step 4) on one reparameterized sample; forward only.

    The actor loss sees ``alpha`` detached, the temperature loss sees ``log_pi`` detached, so the
    two losses share no parameter and can be back-propagated together.

    Returns:
        actor_loss: () with gradient w.r.t. the actor (and, unused, the critic); alpha_loss: () with
        gradient w.r.t. ``log_alpha``; info: ``{"entropy"}``, the () estimate ``-mean(log_pi)``.
    """
    pi, log_pi = actor.sample(actor_obs)  # (B, A), (B,)
    qf1_pi, qf2_pi = critic(critic_obs, pi)  # (B,), (B,)
    loss = actor_loss(log_pi, qf1_pi, qf2_pi, log_alpha.detach().exp(), reduction)
    temperature_loss = alpha_loss(log_alpha, log_pi, target_entropy)
    return loss, temperature_loss, {"entropy": -log_pi.detach().mean()}


def apply_gradients(
    loss: torch.Tensor,
    optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer],
    clip_params: Iterable[torch.Tensor] | None = None,
    max_grad_norm: float = 0.0,
    grad_sync: Callable[[list[torch.Tensor]], None] | None = None,
) -> None:
    """``zero_grad -> backward -> (grad_sync) -> (clip) -> step`` for one or several optimizers.

    Gradients accumulate only into the optimizers' own parameters (``backward(inputs=...)``): the
    actor loss, for instance, leaves the critic's ``.grad`` alone, which saves the critic's weight
    gradients and keeps CUDA-graph outputs of the critic step untouched. Losses on disjoint
    parameters are back-propagated together as their sum (one backward pass: a compiled objective
    with several outputs can only be back-propagated once).

    Args:
        loss: () scalar.
        optimizers: the optimizers to step.
        clip_params: parameters whose total gradient norm is clipped to ``max_grad_norm`` (when > 0).
        grad_sync: data-parallel training: called with the optimizers' parameters after the
            backward pass and before clipping and stepping (eager, outside any compiled region);
            :func:`unilab_rl.distributed.average_gradients` replaces each ``.grad`` by its mean
            over ranks, so every rank takes the same step.
    """
    optimizers = [optimizers] if isinstance(optimizers, torch.optim.Optimizer) else list(optimizers)
    params = [p for optimizer in optimizers for group in optimizer.param_groups for p in group["params"]]
    for optimizer in optimizers:
        optimizer.zero_grad(set_to_none=True)
    loss.backward(inputs=params)
    if grad_sync is not None:
        grad_sync(params)
    if max_grad_norm > 0 and clip_params is not None:
        nn.utils.clip_grad_norm_(clip_params, max_grad_norm)
    for optimizer in optimizers:
        optimizer.step()


def update_critic(
    actor: Actor,
    critic: Critic,
    critic_target: Critic,
    critic_optimizer: torch.optim.Optimizer,
    critic_obs: torch.Tensor,  # (B, Dc)
    actions: torch.Tensor,  # (B, A)
    rewards: torch.Tensor,  # (B,)
    terminated: torch.Tensor,  # (B,) bool
    next_actor_obs: torch.Tensor,  # (B, Da)
    next_critic_obs: torch.Tensor,  # (B, Dc)
    alpha: torch.Tensor,  # ()
    gamma: float,
    reduction: str = "min",
    max_grad_norm: float = 0.0,
) -> dict[str, torch.Tensor]:
    """One gradient step on both Q-functions (:func:`critic_objective` + :func:`apply_gradients`).

    The target networks are not updated here (see :func:`polyak_update`).

    Returns:
        ``{"critic_loss", "qf1", "qf2", "next_q_value"}``: () detached tensors.
    """
    qf_loss, info = critic_objective(
        actor, critic, critic_target, critic_obs, actions, rewards, terminated, next_actor_obs, next_critic_obs,
        alpha, gamma, reduction,
    )
    apply_gradients(qf_loss, critic_optimizer, critic.parameters(), max_grad_norm)
    return {"critic_loss": qf_loss.detach(), **info}


def update_actor_and_temperature(
    actor: Actor,
    critic: Critic,
    log_alpha: torch.Tensor,  # ()
    actor_optimizer: torch.optim.Optimizer,
    alpha_optimizer: torch.optim.Optimizer,
    actor_obs: torch.Tensor,  # (B, Da)
    critic_obs: torch.Tensor,  # (B, Dc)
    target_entropy: float,
    reduction: str = "min",
    max_grad_norm: float = 0.0,
) -> dict[str, torch.Tensor]:
    """One gradient step on the policy and one on ``log_alpha`` (:func:`actor_objective`).

    The critic's weights are neither stepped nor given a gradient.

    Returns:
        ``{"actor_loss", "alpha_loss", "alpha", "entropy"}``: () detached tensors; ``alpha`` is the
        value after the step.
    """
    loss, temperature_loss, info = actor_objective(actor, critic, log_alpha, actor_obs, critic_obs, target_entropy, reduction)
    apply_gradients(loss + temperature_loss, [actor_optimizer, alpha_optimizer], actor.parameters(), max_grad_norm)
    return {
        "actor_loss": loss.detach(),
        "alpha_loss": temperature_loss.detach(),
        "alpha": log_alpha.detach().exp(),
        **info,
    }


def update_temperature(
    log_alpha: torch.Tensor,  # ()
    alpha_optimizer: torch.optim.Optimizer,
    log_pi: torch.Tensor,  # (B,)
    target_entropy: float,
) -> dict[str, torch.Tensor]:
    """One gradient step on ``log_alpha`` alone, given log-probabilities (step 4).

    Returns:
        ``{"alpha_loss", "alpha", "entropy"}``: () detached tensors; ``alpha`` is the value after the
        step, ``entropy`` the estimate ``-mean(log_pi)``.
    """
    loss = alpha_loss(log_alpha, log_pi, target_entropy)
    apply_gradients(loss, alpha_optimizer)
    return {"alpha_loss": loss.detach(), "alpha": log_alpha.detach().exp(), "entropy": -log_pi.mean()}


__all__ = [
    "actor_loss",
    "actor_objective",
    "alpha_loss",
    "apply_gradients",
    "critic_loss",
    "critic_objective",
    "polyak_update",
    "reduce_q",
    "soft_q_target",
    "update_actor_and_temperature",
    "update_critic",
    "update_temperature",
]
