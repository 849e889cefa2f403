"""FlashSAC update math, in the order one update runs, with the paper's names.

FlashSAC (arXiv 2604.04539; official ``Holiday-Robot/FlashSAC`` at 87edc90,
``flash_rl/agents/flashSAC/update.py`` and ``agent.py``). One update of
:class:`~unilab_rl.algorithms.flashsac.FlashSAC`:

1. actor loss ``mean(alpha log pi(a|s) - min(Q1, Q2)(s, a))``, delayed (every
   ``actor_update_period``-th update); the actor runs in training mode on ``concat(s, s')`` so its
   batch norms see both halves, the loss uses the first half; the critic runs on running
   statistics with its weights frozen;
2. temperature loss ``alpha (H(pi) - H_target)`` with the *unified* entropy target
   ``0.5 |A| log(2 pi e sigma^2)`` (:func:`unified_target_entropy`);
3. critic loss: cross-entropy between each critic's distribution over the atoms and the
   projected target distribution (:func:`categorical_td_target`); both the online and the target
   critic run in training mode on ``concat((s, a), (s', a'))`` so prediction and target share
   batch statistics (CrossQ-style); the target takes the distribution of the target critic with
   the lower expected Q (:func:`select_min_q_distribution`), ``a' ~ pi(.|s')`` on running statistics;
   with ``FlashSACConfig.categorical_target="hl_gauss"`` (not in the paper) the target is instead
   a Gaussian histogram around that distribution's scalar soft TD target (:func:`hl_gauss_target`);
4. EMA of the target critic's parameters (:func:`ema_update`).

With ``FlashSACConfig.critic="mlp"`` or ``"trunk"`` (ablations, not in the paper) step 3 is SAC's
scalar one instead, on raw rewards: the mean squared error to ``r + gamma^n (1 - terminated)
(min_e Q'_e(s', a') - alpha log pi(a'|s'))`` (:func:`scalar_td_target`,
:func:`scalar_critic_loss`, :func:`scalar_critic_objective`), with the same batch-norm modes.

After each optimizer step the network's weights are projected back onto their spheres
(:func:`unilab_rl.algorithms.flashsac.networks.normalize_parameters`, called by the agent; with
the scalar critic the actor's only).

Only ``terminated`` cuts the bootstrap; a time-out bootstraps from the pre-reset observation.
Everything returns detached tensors and never calls ``.item()``.
Shapes: B = batch size, A = action size, E = number of critics (2), K = number of atoms,
Da / Dc = actor / critic observation sizes.
"""

from __future__ import annotations

import math

import torch

from unilab_rl.algorithms.flashsac.networks import CategoricalCritic, FlashActor, MLPActor, MLPCritic
from unilab_rl.algorithms.sac.update import apply_gradients, polyak_update

ema_update = polyak_update
"""``target <- target + tau (online - target)`` in place over matching parameter lists."""


# ============================================================================ targets and losses
def unified_target_entropy(num_actions: int, target_sigma: float) -> float:
    """Entropy target ``0.5 |A| log(2 pi e sigma^2)``, in nats: the entropy of ``N(0, sigma^2 I)``
    in |A| dimensions (FlashSAC's unified target: -13.87 for 29 DoF at sigma = 0.15), in the
    units of the policy's log-probability (``FlashSACConfig.entropy_units``).

    Args:
        num_actions: |A|.
        target_sigma: sigma > 0.
    """
    return 0.5 * num_actions * math.log(2.0 * math.pi * math.e * target_sigma**2)


def scale_rewards(
    rewards: torch.Tensor,  # (B,)
    return_var: torch.Tensor,  # () or (1,)
    return_abs_max: torch.Tensor,  # ()
    normalized_g_max: float,
    eps: float = 1e-8,
) -> torch.Tensor:
    """``r / max(sqrt(Var G + eps), max|G| / normalized_g_max)``, (B,).

    ``G`` is the running discounted return per env. The first term gives returns unit scale; the
    second keeps the largest return seen inside ``[-normalized_g_max, normalized_g_max]``, the
    critic's support (official ``reward_normalization.py``).
    """
    denominator = torch.maximum(torch.sqrt(return_var + eps), return_abs_max / normalized_g_max)
    return rewards / denominator.reshape(())


def select_min_q_distribution(
    next_q: torch.Tensor,  # (E, B)
    next_log_probs: torch.Tensor,  # (E, B, K)
) -> torch.Tensor:
    """Per row, the log-distribution of the critic whose expected Q is lowest: (B, K).

    Clipped double Q (Fujimoto et al. 2018, arXiv 1802.09477) choosing a whole distribution.
    """
    index = next_q.argmin(dim=0)  # (B,)
    index = index.view(1, -1, 1).expand(1, -1, next_log_probs.shape[-1])  # (1, B, K)
    return next_log_probs.gather(0, index).squeeze(0)


def categorical_td_target(
    next_probs: torch.Tensor,  # (B, K)
    rewards: torch.Tensor,  # (B,)
    terminated: torch.Tensor,  # (B,) bool
    next_entropy_term: torch.Tensor,  # (B,) alpha * log pi(a'|s')
    gamma: float,
    support: torch.Tensor,  # (K,) evenly spaced atoms
) -> torch.Tensor:
    """Project the shifted target distribution back onto the support (C51, Bellemare et al. 2017,
    arXiv 1707.06887, algorithm 1), soft-Q version.

    Each atom ``z_j`` carrying probability ``p_j`` moves to
    ``z'_j = clamp(r + gamma (1 - terminated) (z_j - alpha log pi(a'|s')), v_min, v_max)`` and its
    mass is split between the two atoms around it in proportion to closeness: with
    ``b = (z'_j - v_min) / dz``, ``l = floor(b)``, atom ``l`` gets ``p_j (1 - (b - l))`` and atom
    ``l + 1`` gets ``p_j (b - l)``. Total mass is conserved.

    Returns:
        target_probs: (B, K), each row summing to the row sum of ``next_probs``.
    """
    num_bins = support.shape[0]
    v_min, v_max = support[0], support[-1]
    delta_z = (v_max - v_min) / (num_bins - 1)
    not_done = (~terminated.bool()).to(next_probs.dtype).unsqueeze(-1)  # (B, 1)
    shifted = rewards.unsqueeze(-1) + gamma * not_done * (support - next_entropy_term.unsqueeze(-1))  # (B, K)
    b = (shifted.clamp(v_min, v_max) - v_min) / delta_z  # (B, K) in [0, K - 1]
    lower = b.floor().clamp(0, num_bins - 1)
    upper_weight = b - lower  # (B, K) in [0, 1)
    lower_index = lower.long()
    upper_index = (lower_index + 1).clamp(max=num_bins - 1)
    target = torch.zeros_like(next_probs)
    target.scatter_add_(1, lower_index, next_probs * (1.0 - upper_weight))
    target.scatter_add_(1, upper_index, next_probs * upper_weight)
    return target


def hl_gauss_target(
    values: torch.Tensor,  # (B,) scalar targets
    support: torch.Tensor,  # (K,) evenly spaced atoms
    sigma_bins: float,
) -> torch.Tensor:
    """Histogram loss target with a Gaussian (HL-Gauss): each atom's bin probability under
    ``N(y, (sigma_bins dz)^2)``, renormalized over the support.

    Atom ``z_k`` owns the bin ``[z_k - dz / 2, z_k + dz / 2]``; its probability is
    ``Phi((z_k + dz/2 - y) / sigma) - Phi((z_k - dz/2 - y) / sigma)``, divided by the mass of the
    whole support ``[z_0 - dz/2, z_{K-1} + dz/2]`` so each row sums to 1 (Imani & White 2018,
    "Improving Regression Performance with Distributional Losses", ICML; Farebrother et al. 2024,
    arXiv 2403.03950, section 3.1, who recommend ``sigma / dz = 0.75``). For ``y`` more than
    about 2 sigma inside the support the target's mean is ``y`` to within
    ``exp(-2 pi^2 sigma_bins^2) dz`` (1.5e-5 bin widths at 0.75). ``y`` is clamped to the support
    first; nearer an end the Gaussian is cut there, so its mass is spread over the last few
    atoms and its mean lies inside ``y`` by up to about 0.4 bin widths at 0.75 (the projection
    instead puts a target past an end wholly on the end atom).

    Args:
        values: (B,) scalar targets, any float dtype (computed in float32 at least).
        support: (K,) evenly spaced atoms, K >= 2.
        sigma_bins: the Gaussian's standard deviation in bin widths, > 0.

    Returns:
        (B, K) probabilities in ``values``' dtype, each row summing to 1 (to that dtype's rounding).
    """
    dtype = torch.promote_types(values.dtype, torch.float32)  # bf16 bin edges would be uneven
    support = support.to(dtype)
    v_min, v_max = support[0], support[-1]
    delta_z = (v_max - v_min) / (support.shape[0] - 1)
    edges = torch.cat([support - 0.5 * delta_z, (v_max + 0.5 * delta_z).reshape(1)])  # (K + 1,)
    y = values.to(dtype).clamp(v_min, v_max).unsqueeze(-1)  # (B, 1)
    cdf = torch.special.ndtr((edges - y) / (sigma_bins * delta_z))  # (B, K + 1)
    mass = cdf[:, 1:] - cdf[:, :-1]  # (B, K)
    return (mass / (cdf[:, -1:] - cdf[:, :1])).to(values.dtype)


def critic_loss(target_probs: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """Cross-entropy ``-sum_k target_k log p_k``, averaged over critics and batch.

    Args:
        target_probs: (B, K), no gradient.
        log_probs: (E, B, K) each critic's log-distribution at (s, a).

    Returns:
        () loss.
    """
    return -(target_probs.unsqueeze(0) * log_probs).sum(-1).mean()


def scalar_td_target(
    next_q: torch.Tensor,  # (E, B) target critics at (s', a')
    next_log_pi: torch.Tensor,  # (B,) log pi(a'|s')
    rewards: torch.Tensor,  # (B,) raw (n-step sums when n_step > 1)
    terminated: torch.Tensor,  # (B,) bool
    alpha: torch.Tensor | float,  # ()
    gamma: float,
) -> torch.Tensor:
    """Soft TD target of the scalar critic (``FlashSACConfig.critic="mlp"`` or ``"trunk"``), clipped double Q:

    ``y = r + gamma (1 - terminated) (min_e Q'_e(s', a') - alpha log pi(a'|s'))``

    (SAC's soft Bellman backup, Haarnoja et al. 2018, arXiv 1812.05905, with the soft value
    ``V(s') = E[Q(s', a') - alpha log pi(a'|s')]`` estimated from one ``a' ~ pi(.|s')``; the
    minimum over two critics, which SAC's practical algorithm takes: Fujimoto et al. 2018, arXiv
    1802.09477. The same as :func:`unilab_rl.algorithms.sac.update.soft_q_target` with
    ``reduction="min"``.) ``gamma`` is the bootstrap's discount, ``gamma ** n_step`` for n-step
    rows. Only ``terminated`` cuts the bootstrap; a time-out keeps it.

    Returns:
        y: (B,) in the rewards' units and dtype; call under ``torch.no_grad`` (no gradient is
        meant to flow into it).
    """
    soft_next_value = next_q.min(dim=0).values - alpha * next_log_pi  # (B,)
    not_done = (~terminated.bool()).to(rewards.dtype)  # (B,)
    return rewards + gamma * not_done * soft_next_value


def scalar_critic_loss(q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``sum_e mean_b (Q_e(s, a) - y)^2``: each critic's mean squared TD error, summed over the
    critics, no 0.5 factor, as :func:`unilab_rl.algorithms.sac.update.critic_loss`
    (``MSE(qf1, y) + MSE(qf2, y)``), so each critic gets the gradient it gets in our SAC; twice
    the mean over the critics. The paper's ``J_Q`` (arXiv 1812.05905) carries a factor 1/2;
    under Adam a constant factor on the loss changes the steps only through Adam's epsilon.

    Args:
        q: (E, B) each critic's Q at (s, a).
        target: (B,) the TD target, no gradient.

    Returns:
        () loss.
    """
    return (q - target.unsqueeze(0)).square().mean(-1).sum()


def actor_loss(log_pi: torch.Tensor, q: torch.Tensor, alpha: torch.Tensor | float) -> torch.Tensor:
    """``mean(alpha log pi(a|s) - min_e Q_e(s, a))``; log_pi (B,), q (E, B). Returns ()."""
    return (alpha * log_pi - q.min(dim=0).values).mean()


def temperature_loss(log_temperature: torch.Tensor, entropy: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """``alpha (H - H_target)`` with ``alpha = exp(log_temperature)`` and ``H`` detached.

    Its gradient lowers alpha while the policy entropy is above the target and raises it below.
    """
    return log_temperature.exp() * (entropy.detach() - target_entropy)


def cosine_learning_rate(step: int, total_steps: int, lr: float, lr_end: float) -> float:
    """Cosine decay from ``lr`` at step 0 to ``lr_end`` at ``total_steps`` (held after), no warmup."""
    progress = min(max(step / max(total_steps, 1), 0.0), 1.0)
    return lr_end + 0.5 * (lr - lr_end) * (1.0 + math.cos(math.pi * progress))


# ============================================================================ objectives (forward only)
def critic_objective(
    actor: FlashActor | MLPActor,
    critic: CategoricalCritic,
    critic_target: CategoricalCritic,
    critic_obs: torch.Tensor,  # (B, Dc)
    actions: torch.Tensor,  # (B, A)
    rewards: torch.Tensor,  # (B,) scaled
    terminated: torch.Tensor,  # (B,) bool
    next_actor_obs: torch.Tensor,  # (B, Da)
    next_critic_obs: torch.Tensor,  # (B, Dc)
    alpha: torch.Tensor,  # ()
    gamma: float,
    target: str = "projected",
    hl_gauss_sigma: float = 0.75,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Categorical soft TD target and the critic loss (step 3); forward only.

    ``target="projected"`` (the paper's): the target critic's distribution at ``(s', a')``,
    shifted and projected onto the support (:func:`categorical_td_target`). ``target="hl_gauss"``:
    the scalar soft TD target ``y = r + gamma (1 - terminated) (E[Z'] - alpha log pi(a'|s'))`` of
    that same distribution (:func:`scalar_td_target` of the target critics' expected Qs, whose
    minimum is that distribution's mean), spread over the atoms by :func:`hl_gauss_target` with
    standard deviation ``hl_gauss_sigma`` bin widths; the critic then learns a classification of the
    expected return rather than the return's distribution. Any other ``target`` raises
    ``ValueError``.

    Updates the batch-norm running statistics of ``critic`` and ``critic_target`` (training-mode
    forward), nothing else.

    Returns:
        loss: () with gradient w.r.t. the critic; info: ``{"mean_q", "target_q"}`` () detached.
    """
    if target not in ("projected", "hl_gauss"):
        raise ValueError(f"critic_objective: target must be 'projected' or 'hl_gauss', got {target!r}")
    batch = critic_obs.shape[0]
    with torch.no_grad():
        next_actions, next_log_pi = actor.sample(next_actor_obs, training=False)  # (B, A), (B,)
    obs_all = torch.cat([critic_obs, next_critic_obs])  # (2B, Dc)
    actions_all = torch.cat([actions, next_actions])  # (2B, A)
    with torch.no_grad():
        q_all_target, log_probs_all_target = critic_target(obs_all, actions_all, training=True)  # (E, 2B), (E, 2B, K)
        next_log_probs = select_min_q_distribution(q_all_target[:, batch:], log_probs_all_target[:, batch:])  # (B, K)
        if target == "hl_gauss":
            # The chosen distribution's mean is the lower of the target critics' expected Qs.
            values = scalar_td_target(q_all_target[:, batch:], next_log_pi, rewards, terminated, alpha, gamma)  # (B,)
            target_probs = hl_gauss_target(values, critic.support, hl_gauss_sigma)  # (B, K)
        else:
            target_probs = categorical_td_target(
                next_log_probs.exp(), rewards, terminated, alpha * next_log_pi, gamma, critic.support
            )  # (B, K)
    q_all, log_probs_all = critic(obs_all, actions_all, training=True)  # (E, 2B), (E, 2B, K)
    loss = critic_loss(target_probs, log_probs_all[:, :batch])
    target_q = (target_probs * critic.support).sum(-1).mean()
    return loss, {"mean_q": q_all[:, :batch].detach().mean(), "target_q": target_q}


def scalar_critic_objective(
    actor: FlashActor | MLPActor,
    critic: MLPCritic,
    critic_target: MLPCritic,
    critic_obs: torch.Tensor,  # (B, Dc)
    actions: torch.Tensor,  # (B, A)
    rewards: torch.Tensor,  # (B,) raw
    terminated: torch.Tensor,  # (B,) bool
    next_actor_obs: torch.Tensor,  # (B, Da)
    next_critic_obs: torch.Tensor,  # (B, Dc)
    alpha: torch.Tensor,  # ()
    gamma: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Scalar soft TD target and the critic's squared-error loss (step 3 with
    ``FlashSACConfig.critic="mlp"``); forward only, the same signature and call pattern as
    :func:`critic_objective`.

    ``a' ~ pi(.|s')`` with the actor on running statistics; both the online and the target critic
    run in training mode on ``concat((s, a), (s', a'))``, so their input batch norms normalize
    prediction and target with one batch's statistics, as the categorical critic's do. Target:
    :func:`scalar_td_target` from the target critics' Q at the second half, without gradient;
    loss: :func:`scalar_critic_loss` of the online critics' Q at the first half.

    Updates the input batch norms' running statistics of ``critic`` and ``critic_target``, nothing
    else.

    Returns:
        loss: () with gradient w.r.t. the critic; info: ``{"mean_q", "target_q"}``, () detached
        batch means of ``Q_e(s, a)`` over both critics and of ``y``, in raw reward units.
    """
    batch = critic_obs.shape[0]
    with torch.no_grad():
        next_actions, next_log_pi = actor.sample(next_actor_obs, training=False)  # (B, A), (B,)
    obs_all = torch.cat([critic_obs, next_critic_obs])  # (2B, Dc)
    actions_all = torch.cat([actions, next_actions])  # (2B, A)
    with torch.no_grad():
        q_all_target, _ = critic_target(obs_all, actions_all, training=True)  # (E, 2B)
        target = scalar_td_target(q_all_target[:, batch:], next_log_pi, rewards, terminated, alpha, gamma)  # (B,)
    q_all, _ = critic(obs_all, actions_all, training=True)  # (E, 2B)
    q = q_all[:, :batch]  # (E, B)
    loss = scalar_critic_loss(q, target)
    return loss, {"mean_q": q.detach().mean(), "target_q": target.mean()}


def actor_objective(
    actor: FlashActor | MLPActor,
    critic: CategoricalCritic | MLPCritic,
    log_temperature: torch.Tensor,  # ()
    actor_obs: torch.Tensor,  # (B, Da)
    next_actor_obs: torch.Tensor,  # (B, Da)
    critic_obs: torch.Tensor,  # (B, Dc)
    target_entropy: float,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Actor loss (step 1) and temperature loss (step 2) on one reparameterized sample; forward only.

    Updates the actor's batch-norm running statistics (training-mode forward on ``concat(s, s')``).
    The actor loss sees alpha detached and the temperature loss the entropy detached, so their sum
    can be back-propagated at once into disjoint parameters.

    Returns:
        actor_loss: (); temperature_loss: (); info: ``{"entropy"}`` = ``-mean(log pi)``, detached.
    """
    batch = actor_obs.shape[0]
    pi_all, log_pi_all = actor.sample(torch.cat([actor_obs, next_actor_obs]), training=True)  # (2B, A), (2B,)
    pi, log_pi = pi_all[:batch], log_pi_all[:batch]
    q, _ = critic(critic_obs, pi, training=False)  # (E, B)
    loss = actor_loss(log_pi, q, log_temperature.detach().exp())
    entropy = -log_pi.mean()
    return loss, temperature_loss(log_temperature, entropy, target_entropy), {"entropy": entropy.detach()}


__all__ = [
    "actor_loss", "actor_objective", "apply_gradients", "categorical_td_target", "cosine_learning_rate",
    "critic_loss", "critic_objective", "ema_update", "hl_gauss_target", "scalar_critic_loss", "scalar_critic_objective",
    "scalar_td_target", "scale_rewards", "select_min_q_distribution", "temperature_loss", "unified_target_entropy",
]
