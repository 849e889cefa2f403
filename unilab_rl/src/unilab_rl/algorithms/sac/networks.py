"""SAC networks: a tanh-squashed Gaussian actor and twin soft Q critics.

Layers are ``Linear -> LayerNorm -> SiLU`` as in FastSAC (arXiv 2512.01996; holosoma 0.0.3
``agents/fast_sac/``); the actor's mean and log-std heads start at zero, so the first policy is
centred in the action box with a small std.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from unilab_rl.normalizer import RunningMeanStd

_LOG_2 = math.log(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def mlp(in_dim: int, hidden: Sequence[int]) -> nn.Sequential:
    """``Linear -> LayerNorm -> SiLU`` for each width in ``hidden``; output size ``hidden[-1]``."""
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_dim, width), nn.LayerNorm(width), nn.SiLU()]
        in_dim = width
    return nn.Sequential(*layers)


def _box(action_low: torch.Tensor, action_high: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Centre and half-width, each (A,) float32, of the box ``[low, high]``.

    Raises:
        ValueError: shapes differ, a bound is not finite, or ``high <= low`` somewhere.
    """
    low = torch.as_tensor(action_low, dtype=torch.float32).detach().cpu()
    high = torch.as_tensor(action_high, dtype=torch.float32).detach().cpu()
    if low.ndim != 1 or low.shape != high.shape:
        raise ValueError(f"action_low and action_high must both be (A,), got {tuple(low.shape)} and {tuple(high.shape)}")
    if not (torch.isfinite(low).all() and torch.isfinite(high).all()):
        raise ValueError("action bounds must be finite: SAC squashes actions into a bounded box")
    if not (high > low).all():
        bad = torch.nonzero(high <= low).flatten().tolist()
        raise ValueError(f"action_high must exceed action_low in every dimension; it does not at {bad}")
    return (high + low) / 2, (high - low) / 2


def squashed_gaussian_log_prob(
    u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor, half_range: torch.Tensor | None
) -> torch.Tensor:
    """Log-density of ``a = centre + half_range * tanh(u)`` with ``u ~ N(mean, exp(log_std)^2)``.

    Change of variables (Haarnoja et al. 2018, arXiv 1801.01290, appendix C, eq. 21, extended by
    the affine map to the box as in cleanrl's and FastSAC's ``log(action_scale * (1 - y^2))``)::

        log pi(a) = sum_i [ log N(u_i; mean_i, std_i) - log(1 - tanh(u_i)^2) - log(half_range_i) ]

    with the numerically stable ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))``
    (as in Spinning Up's SAC).

    Args:
        u: (..., A) pre-tanh sample.
        mean: (..., A) Gaussian mean.
        log_std: (..., A) Gaussian log std.
        half_range: (A,) half-widths of the action box; ``None``: the density of ``tanh(u)``
            itself, in the squashed ``[-1, 1]`` units (the last term is dropped).

    Returns:
        (...,) log-density of the action, in nats, w.r.t. Lebesgue measure in the env's units
        (or in ``[-1, 1]`` units when ``half_range`` is ``None``).
    """
    gaussian = -0.5 * ((u - mean) * torch.exp(-log_std)).square() - log_std - _LOG_SQRT_2PI  # (..., A)
    log_det_tanh = 2.0 * (_LOG_2 - u - nn.functional.softplus(-2.0 * u))  # (..., A)
    if half_range is None:
        return (gaussian - log_det_tanh).sum(-1)
    return (gaussian - log_det_tanh - torch.log(half_range)).sum(-1)


def _perturb(mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """The pre-tanh sample ``mean + exp(log_std) * eps``, (B, A), ``eps = randn_like(mean)`` from
    the global RNG of ``mean``'s device: the one draw :meth:`Actor.sample` and
    :meth:`Actor.explore_from` share."""
    return mean + torch.exp(log_std) * torch.randn_like(mean)


def _check_mirror(perm: torch.Tensor, sign: torch.Tensor, width: int, what: str) -> None:
    """Raise ValueError unless (perm, sign) is a signed-permutation involution of ``width`` columns."""
    perm, sign = perm.detach().cpu().long(), sign.detach().cpu().float()
    if perm.shape != (width,) or sign.shape != (width,):
        raise ValueError(f"equivariant actor: the {what} mirror must be ({width},), got {tuple(perm.shape)} and {tuple(sign.shape)}")
    if not (torch.equal(torch.sort(perm).values, torch.arange(width)) and torch.equal(perm[perm], torch.arange(width))
            and torch.equal(sign.abs(), torch.ones(width)) and torch.equal(sign * sign[perm], torch.ones(width))):
        raise ValueError(f"equivariant actor: the {what} mirror is not a signed permutation that is its own inverse")


def register_mirror(
    module: nn.Module,
    mirror: tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    obs_dim: int,
    centre: torch.Tensor,
    half_range: torch.Tensor,
) -> None:
    """Check an equivariant actor's mirror and keep it on ``module`` as the buffers
    ``mirror_obs_perm``, ``mirror_obs_sign``, ``mirror_action_perm``, ``mirror_action_sign``
    (int64 / float32, on the CPU until the module moves; in its ``state_dict``).

    Args:
        mirror: ``((obs_perm, obs_sign), (action_perm, action_sign))``, (obs_dim,) and (A,) each.
        centre, half_range: (A,) the action box, which must be its own mirror image.

    Raises:
        ValueError: sizes that do not fit, not a signed permutation equal to its inverse, or a box
            that the action mirror does not map onto itself.
    """
    (obs_perm, obs_sign), (act_perm, act_sign) = mirror
    _check_mirror(obs_perm, obs_sign, obs_dim, "observation")
    _check_mirror(act_perm, act_sign, centre.shape[0], "action")
    act_perm, act_sign = act_perm.detach().cpu().long(), act_sign.detach().cpu().float()
    if not (torch.allclose(centre[act_perm] * act_sign, centre, atol=1e-6)
            and torch.allclose(half_range[act_perm], half_range, atol=1e-6)):
        raise ValueError("equivariant actor: the action box is not its own mirror image")
    module.register_buffer("mirror_obs_perm", obs_perm.detach().cpu().long())
    module.register_buffer("mirror_obs_sign", obs_sign.detach().cpu().float())
    module.register_buffer("mirror_action_perm", act_perm)
    module.register_buffer("mirror_action_sign", act_sign)


def mirror_observation(module: nn.Module, obs: torch.Tensor) -> torch.Tensor:
    """``M_o obs``: (..., obs_dim) mirrored by the buffers of :func:`register_mirror`."""
    return obs[..., module.mirror_obs_perm] * module.mirror_obs_sign


def equivariant_average(
    module: nn.Module, mean: torch.Tensor, raw: torch.Tensor, mean_m: torch.Tensor, raw_m: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The equivariant actor's Gaussian parameters from the head outputs on ``o`` (``mean``,
    ``raw``: the pre-tanh log std) and on ``M_o o`` (``mean_m``, ``raw_m``), (B, A) each:
    ``(mean + M_a mean_m) / 2`` and ``(raw + P_a raw_m) / 2`` (``P_a`` the action permutation
    without signs: a standard deviation has no direction)."""
    perm = module.mirror_action_perm
    return 0.5 * (mean + mean_m[..., perm] * module.mirror_action_sign), 0.5 * (raw + raw_m[..., perm])


class Actor(nn.Module):
    """Tanh-squashed diagonal Gaussian policy mapped onto the env's action box.

    ``log_std = log_std_min + (log_std_max - log_std_min) * (tanh(raw) + 1) / 2`` keeps the std
    bounded and smooth (cleanrl / FastSAC); the action is ``centre + half_range * tanh(u)``.

    Equivariant mode (``mirror`` given): the Gaussian's parameters are symmetrized over a
    left/right mirror ``M`` (observations ``x[..., perm] * sign``, actions likewise, both
    involutions), ``mean(o) = (f(o) + M_a f(M_o o)) / 2`` and ``log_std(o)`` the same with the
    action permutation alone, ``f`` the MLP. Then ``pi(M_o o) = M_a pi(o)`` exactly, for the
    sampled and the deterministic action, and ``log pi`` is mirror-invariant: the policy cannot
    learn a gait that favours one side (the "network architecture" way to symmetric locomotion of
    Abdolhosseini et al., MIG 2019, doi 10.1145/3359566.3360070; mirrored replay samples alone
    leave an asymmetric policy a fixed point of the off-policy update). One MLP pass over the
    stacked pair, i.e. twice the rows.

    Args:
        obs_dim: actor observation size (already normalized by the caller; in equivariant mode the
            normalization must commute with the mirror, as symmetric running statistics do).
        action_low, action_high: (A,) bounds of the env's action box.
        hidden: MLP widths.
        log_std_min, log_std_max: bounds of the pre-tanh log std.
        mirror: ``((obs_perm, obs_sign), (action_perm, action_sign))``, (obs_dim,) and (A,) each,
            perm int64 and sign float (:class:`unilab_rl.vecenv.Mirror`'s convention), or None.
            Kept as buffers (in the ``state_dict``).

    Raises:
        ValueError: bad action bounds (see :func:`_box`); a mirror whose sizes do not fit, or an
            action box that is not its own mirror image.
    """

    action_centre: torch.Tensor
    action_half_range: torch.Tensor

    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        hidden: Sequence[int] = (512, 256, 128),
        log_std_min: float = -5.0,
        log_std_max: float = 0.0,
        mirror: tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> None:
        super().__init__()
        centre, half_range = _box(action_low, action_high)
        num_actions = centre.shape[0]
        self.trunk = mlp(obs_dim, hidden)
        self.mean_head = nn.Linear(hidden[-1], num_actions)
        self.log_std_head = nn.Linear(hidden[-1], num_actions)
        for head in (self.mean_head, self.log_std_head):  # FastSAC: zero-initialized heads
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)
        self.log_std_min = log_std_min
        self.log_std_max = log_std_max
        self.register_buffer("action_centre", centre)
        self.register_buffer("action_half_range", half_range)
        self.equivariant = mirror is not None
        if mirror is not None:
            register_mirror(self, mirror, obs_dim, centre, half_range)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Gaussian parameters before the squash.

        Args:
            obs: (B, obs_dim) float32.

        Returns:
            mean: (B, A); log_std: (B, A) in ``[log_std_min, log_std_max]``; in equivariant mode
            ``mean(M_o o) = M_a mean(o)`` and ``log_std(M_o o) = log_std(o)[..., perm_a]``.
        """
        if self.equivariant:
            h = self.trunk(torch.stack((obs, mirror_observation(self, obs))))  # (2, B, hidden[-1])
            means, raws = self.mean_head(h), self.log_std_head(h)  # (2, B, A) each
            mean, raw = equivariant_average(self, means[0], raws[0], means[1], raws[1])
        else:
            h = self.trunk(obs)  # (B, hidden[-1])
            mean, raw = self.mean_head(h), self.log_std_head(h)
        log_std = torch.tanh(raw)
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (log_std + 1.0)
        return mean, log_std

    def squash(self, u: torch.Tensor) -> torch.Tensor:
        """Map pre-tanh values (B, A) into the action box."""
        return self.action_centre + self.action_half_range * torch.tanh(u)

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterized sample and its log-probability.

        Args:
            obs: (B, obs_dim) float32.

        Returns:
            action: (B, A) float32 inside ``[action_low, action_high]`` (up to float rounding at the
                faces); log_prob: (B,) float32 log pi(action | obs), see
                :func:`squashed_gaussian_log_prob`. Both differentiable w.r.t. the parameters.
        """
        u, mean, log_std = self._draw(obs)
        log_prob = squashed_gaussian_log_prob(u, mean, log_std, self.action_half_range)  # (B,)
        return self.squash(u), log_prob

    def _draw(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(u, mean, log_std), (B, A) each: the pre-tanh sample ``u = mean + std * eps`` with
        ``eps = randn_like(mean)`` from the global RNG of ``obs``'s device (the reparameterization
        trick), shared by :meth:`sample` and :meth:`explore` so both draw the same action."""
        mean, log_std = self(obs)
        return _perturb(mean, log_std), mean, log_std

    def explore(self, obs: torch.Tensor) -> torch.Tensor:
        """The action of :meth:`sample` without its log-probability, for collection.

        Shares :meth:`sample`'s draw (:meth:`_draw`), so the action is bit-identical to
        ``sample(obs)[0]`` from the same RNG state; skipping the density saves about a third of
        the acting kernels.

        Args:
            obs: (B, obs_dim) float32.

        Returns:
            (B, A) float32 inside ``[action_low, action_high]``.
        """
        return self.explore_from(*self(obs))

    def explore_from(self, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
        """:meth:`explore`'s action from the Gaussian parameters :meth:`forward` returned:
        ``squash(mean + exp(log_std) * eps)``, ``eps = randn_like(mean)`` from the global RNG of
        ``mean``'s device. ``explore(obs)`` is ``explore_from(*self(obs))``, so the forward pass
        may run elsewhere (the async runtime's acting server) and the noise here.

        Args:
            mean, log_std: (B, A) float32.

        Returns:
            (B, A) float32 inside ``[action_low, action_high]``.
        """
        return self.squash(_perturb(mean, log_std))

    def deterministic_action(self, obs: torch.Tensor) -> torch.Tensor:
        """Evaluation action ``centre + half_range * tanh(mean)``, (B, A) float32."""
        mean, _ = self(obs)
        return self.squash(mean)


class Critic(nn.Module):
    """Twin soft Q-functions ``Q1(s, a)``, ``Q2(s, a)`` (Haarnoja et al. 2018, arXiv 1812.05905).

    Actions are rescaled from the env's box to ``[-1, 1]`` before entering the MLPs, so their
    scale matches the normalized observations whatever the env's units.

    Args:
        obs_dim: critic observation size (already normalized by the caller).
        action_low, action_high: (A,) bounds of the env's action box.
        hidden: widths of each Q MLP.

    Raises:
        ValueError: bad action bounds.
    """

    action_centre: torch.Tensor
    action_half_range: torch.Tensor

    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        hidden: Sequence[int] = (768, 384, 192),
    ) -> None:
        super().__init__()
        centre, half_range = _box(action_low, action_high)
        in_dim = obs_dim + centre.shape[0]
        self.qf1 = nn.Sequential(mlp(in_dim, hidden), nn.Linear(hidden[-1], 1))
        self.qf2 = nn.Sequential(mlp(in_dim, hidden), nn.Linear(hidden[-1], 1))
        self.register_buffer("action_centre", centre)
        self.register_buffer("action_half_range", half_range)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both Q estimates.

        Args:
            obs: (B, obs_dim) float32.
            action: (B, A) float32 in the env's units.

        Returns:
            qf1, qf2: (B,) float32 each.
        """
        x = torch.cat([obs, (action - self.action_centre) / self.action_half_range], dim=-1)  # (B, obs_dim + A)
        return self.qf1(x).squeeze(-1), self.qf2(x).squeeze(-1)


class DeterministicPolicy(nn.Module):
    """Deployment policy: raw actor observation -> deterministic action (for play and export).

    Shares (does not copy) the actor and normalizer it is given.

    Args:
        actor: the trained :class:`Actor`.
        normalizer: the actor-group :class:`RunningMeanStd`, or ``None`` when observations are not
            normalized.
    """

    def __init__(self, actor: Actor, normalizer: RunningMeanStd | None) -> None:
        super().__init__()
        self.actor = actor
        self.normalizer = normalizer if normalizer is not None else nn.Identity()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, obs_dim) raw float32 observation -> (B, A) float32 action in the env's units."""
        return self.actor.deterministic_action(self.normalizer(obs))


class ExplorationPolicy(nn.Module):
    """Collection policy: raw actor observation -> sampled action, as :meth:`SAC.act` does.

    Shares (does not copy) the actor and normalizer it is given; the async collector runs a CPU
    copy of it and refreshes its weights from the learner's broadcasts.

    Args:
        actor: the :class:`Actor`.
        normalizer: the actor-group :class:`RunningMeanStd`, or ``None``.
    """

    def __init__(self, actor: Actor, normalizer: RunningMeanStd | None) -> None:
        super().__init__()
        self.actor = actor
        self.normalizer = normalizer if normalizer is not None else nn.Identity()

    @torch.no_grad()
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, obs_dim) raw float32 observation -> (B, A) float32 sampled action in the env's units
        (draws from torch's global RNG of ``obs``'s device): ``explore_from(*gaussian(obs))``."""
        return self.explore_from(*self.gaussian(obs))

    @torch.no_grad()
    def gaussian(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The deterministic half of :meth:`forward`: (B, obs_dim) raw float32 observation ->
        ``(mean, log_std)``, (B, A) float32 each, the pre-squash Gaussian the action is drawn
        from. No randomness: the async runtime's acting server runs this part
        (``runtime.policy_device=server``)."""
        return self.actor(self.normalizer(obs))

    @torch.no_grad()
    def explore_from(self, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
        """The random half of :meth:`forward`: ``(mean, log_std)`` (B, A) float32 from
        :meth:`gaussian` -> (B, A) float32 sampled action in the env's units, the noise drawn
        from torch's global RNG of ``mean``'s device (:meth:`Actor.explore_from`)."""
        return self.actor.explore_from(mean, log_std)


__all__ = ["Actor", "Critic", "DeterministicPolicy", "ExplorationPolicy", "mlp", "squashed_gaussian_log_prob"]
