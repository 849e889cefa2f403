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

The first five functions are pure tensor math. ``update_critic`` / ``update_actor`` /
``update_temperature`` run one optimizer step each and return dicts of *detached* tensors: no
``.item()`` here, so the caller can ``torch.compile`` them and synchronize once per iteration.
Shapes: B = batch size, A = action size, Da / Dc = actor / critic observation sizes.
"""

from __future__ import annotations

from collections.abc import Iterable

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


def _clip_and_step(module: nn.Module, optimizer: torch.optim.Optimizer, max_grad_norm: float) -> None:
    if max_grad_norm > 0:
        nn.utils.clip_grad_norm_(module.parameters(), max_grad_norm)
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
    """One gradient step on both Q-functions towards the soft Bellman target (steps 1-2).

    Observations are already normalized. The target networks are not updated here (see
    :func:`polyak_update`).

    Returns:
        ``{"critic_loss", "qf1", "qf2", "next_q_value"}``: () detached tensors (the Q values are
        batch means).
    """
    with torch.no_grad():
        next_actions, next_log_pi = actor.sample(next_actor_obs)  # (B, A), (B,)
        qf1_next_target, qf2_next_target = critic_target(next_critic_obs, next_actions)  # (B,), (B,)
        next_q_value = soft_q_target(
            rewards, terminated, qf1_next_target, qf2_next_target, next_log_pi, alpha, gamma, reduction
        )  # (B,)

    qf1, qf2 = critic(critic_obs, actions)  # (B,), (B,)
    qf_loss = critic_loss(qf1, qf2, next_q_value)

    critic_optimizer.zero_grad(set_to_none=True)
    qf_loss.backward()
    _clip_and_step(critic, critic_optimizer, max_grad_norm)
    return {
        "critic_loss": qf_loss.detach(),
        "qf1": qf1.detach().mean(),
        "qf2": qf2.detach().mean(),
        "next_q_value": next_q_value.mean(),
    }


def update_actor(
    actor: Actor,
    critic: Critic,
    actor_optimizer: torch.optim.Optimizer,
    actor_obs: torch.Tensor,  # (B, Da)
    critic_obs: torch.Tensor,  # (B, Dc)
    alpha: torch.Tensor,  # ()
    reduction: str = "min",
    max_grad_norm: float = 0.0,
) -> dict[str, torch.Tensor]:
    """One gradient step on the policy (step 3). The critic's weights are not stepped.

    The critic's ``.grad`` receives a (discarded) contribution here; :func:`update_critic` clears it
    before its own backward pass.

    Returns:
        ``{"actor_loss": (), "log_pi": (B,)}`` detached; ``log_pi`` feeds
        :func:`update_temperature`.
    """
    pi, log_pi = actor.sample(actor_obs)  # (B, A), (B,)
    qf1_pi, qf2_pi = critic(critic_obs, pi)  # (B,), (B,)
    loss = actor_loss(log_pi, qf1_pi, qf2_pi, alpha, reduction)

    actor_optimizer.zero_grad(set_to_none=True)
    loss.backward()
    _clip_and_step(actor, actor_optimizer, max_grad_norm)
    return {"actor_loss": loss.detach(), "log_pi": log_pi.detach()}


def update_temperature(
    log_alpha: torch.Tensor,  # ()
    alpha_optimizer: torch.optim.Optimizer,
    log_pi: torch.Tensor,  # (B,)
    target_entropy: float,
) -> dict[str, torch.Tensor]:
    """One gradient step on ``log_alpha`` (step 4), reusing the actor step's ``log_pi``.

    Returns:
        ``{"alpha_loss", "alpha", "entropy"}``: () detached tensors; ``alpha`` is the value after the
        step, ``entropy`` the estimate ``-mean(log_pi)``.
    """
    loss = alpha_loss(log_alpha, log_pi, target_entropy)
    alpha_optimizer.zero_grad(set_to_none=True)
    loss.backward()
    alpha_optimizer.step()
    return {"alpha_loss": loss.detach(), "alpha": log_alpha.detach().exp(), "entropy": -log_pi.mean()}


__all__ = [
    "actor_loss",
    "alpha_loss",
    "critic_loss",
    "polyak_update",
    "reduce_q",
    "soft_q_target",
    "update_actor",
    "update_critic",
    "update_temperature",
]
