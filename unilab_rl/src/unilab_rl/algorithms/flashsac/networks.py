"""FlashSAC networks: unit-norm layers, the inverted residual trunk, the tanh-Gaussian actor and the
fused twin categorical critic.

Architecture (arXiv 2604.04539; the official ``Holiday-Robot/FlashSAC`` at 87edc90,
``flash_rl/agents/flashSAC/layer.py`` and ``network.py``):

- input: batch norm on the *raw* observation (it is the observation normalizer), then a
  bias-free linear map to width h;
- blocks: ``x + ReLU(BN(W2 ReLU(BN(W1 x))))`` with ``W1: h -> 4h``, ``W2: 4h -> h``, no biases;
- one RMSNorm after the last block;
- actor head: two unit-norm linear maps plus biases for the mean and the raw log-std,
  ``log_std = min + (max - min) (1 + tanh(raw)) / 2``;
- critic: two critics evaluated as one batched network, each ending in 101 logits over a fixed
  support; Q is the expectation over the atoms (:class:`CategoricalCritic`). Not in the paper,
  an ablation toward SAC: :class:`MLPCritic`, SAC's scalar twin MLP critic behind the same input
  batch norm; likewise :class:`MLPActor`, SAC's MLP actor behind an input batch norm;
- parameters: orthogonal init, then projected: each weight row onto the unit sphere, each norm
  layer's scale (and shift) onto the sphere of radius sqrt(d) (:meth:`normalize_parameters`).

Every layer takes an ``ensemble`` size E (0 for a plain layer): parameters get a leading (E,) axis
and inputs a leading (E,) axis, so the two critics run as batched matrix products. Batch norms take
``training`` explicitly, as in the official code, because one update uses the same network in both
modes (batch statistics for the critic loss, running statistics for the actor loss).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from unilab_rl.algorithms.sac.networks import (
    _box,
    equivariant_average,
    mirror_observation,
    mlp,
    register_mirror,
    squashed_gaussian_log_prob,
)


def _member_shape(ensemble: int, *shape: int) -> tuple[int, ...]:
    return (ensemble, *shape) if ensemble else shape


def _broadcast(p: torch.Tensor, ensemble: int) -> torch.Tensor:
    """(E, d) per-member vector -> (E, 1, d) to broadcast over (E, B, d); (d,) unchanged."""
    return p.unsqueeze(-2) if ensemble else p


@torch.no_grad()
def _rescale_to_radius(tensors: list[torch.Tensor], radius: float) -> None:
    """Scale ``tensors`` jointly (along their last axis, per leading index) to L2 norm ``radius``."""
    sq = tensors[0].float().square().sum(-1, keepdim=True)  # (..., 1)
    for t in tensors[1:]:
        sq = sq + t.float().square().sum(-1, keepdim=True)
    factor = radius * torch.rsqrt(sq + 1e-8)
    for t in tensors:
        t.mul_(factor.to(t.dtype))


class UnitLinear(nn.Module):
    """Bias-free linear map whose weight rows are kept on the unit sphere.

    Args:
        in_dim, out_dim: sizes.
        ensemble: E > 0 gives (E, out, in) weights applied to (E, B, in) inputs; 0 a plain layer.
    """

    def __init__(self, in_dim: int, out_dim: int, ensemble: int = 0) -> None:
        super().__init__()
        self.ensemble = ensemble
        self.weight = nn.Parameter(torch.empty(_member_shape(ensemble, out_dim, in_dim)))
        for w in self.weight.view(-1, out_dim, in_dim):
            nn.init.orthogonal_(w, gain=1.0)
        self.normalize_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, in) -> (B, out), or (E, B, in) -> (E, B, out)."""
        return x @ self.weight.transpose(-1, -2)  # not .mT: the TorchScript ONNX exporter lacks aten::mT

    @torch.no_grad()
    def normalize_parameters(self) -> None:
        """Each output unit's weight row to unit L2 norm."""
        self.weight.copy_(nn.functional.normalize(self.weight, dim=-1, eps=1e-8))


class UnitBatchNorm(nn.Module):
    """Batch normalization with explicit mode; its (scale, shift) pair is kept at norm sqrt(d).

    ``training=True`` normalizes with the batch's mean and (biased) variance and moves the running
    statistics towards them (``running <- running + momentum (batch - running)``, unbiased variance,
    as :func:`torch.nn.functional.batch_norm`); ``training=False`` uses the running statistics, so
    in evaluation it is a fixed affine map (the deployed observation normalizer for the input
    layer).

    Args:
        dim: features d.
        ensemble: E > 0 keeps separate statistics and parameters per member, inputs (E, B, d).
        momentum: rate of the running statistics.
        eps: added to the variance.
    """

    running_mean: torch.Tensor
    running_var: torch.Tensor

    def __init__(self, dim: int, ensemble: int = 0, momentum: float = 0.01, eps: float = 1e-5) -> None:
        super().__init__()
        self.ensemble, self.momentum, self.eps = ensemble, momentum, eps
        self.weight = nn.Parameter(torch.ones(_member_shape(ensemble, dim)))
        self.bias = nn.Parameter(torch.zeros(_member_shape(ensemble, dim)))
        self.register_buffer("running_mean", torch.zeros(_member_shape(ensemble, dim)))
        self.register_buffer("running_var", torch.ones(_member_shape(ensemble, dim)))

    def forward(self, x: torch.Tensor, training: bool) -> torch.Tensor:
        """(B, d) or (E, B, d) -> same shape. Statistics are computed in float32.

        Written as ``(x - mean) * s + shift`` with the per-feature ``s = weight / sqrt(var + eps)``
        formed on the (d,) statistics first, so the (B, d) activations pass through two
        elementwise kernels (the subtraction and one multiply-add) rather than four.
        """
        e = self.ensemble
        xf = x.float()
        if training:
            var, mean = torch.var_mean(xf, dim=-2, correction=0, keepdim=True)  # (E, 1, d) or (1, d)
            with torch.no_grad():
                n = x.shape[-2]
                torch._foreach_lerp_([self.running_mean, self.running_var],
                                     [mean.squeeze(-2), var.squeeze(-2) * (n / max(n - 1, 1))], self.momentum)
        else:
            mean, var = _broadcast(self.running_mean, e), _broadcast(self.running_var, e)
        scale = torch.rsqrt(var + self.eps) * _broadcast(self.weight, e)  # (E, 1, d) or (1, d)
        y = torch.addcmul(_broadcast(self.bias, e), xf - mean, scale)
        return y.to(x.dtype)

    @torch.no_grad()
    def normalize_parameters(self) -> None:
        """Rescale (scale, shift) jointly to norm sqrt(d) (their value at init: ones and zeros)."""
        _rescale_to_radius([self.weight, self.bias], math.sqrt(self.weight.shape[-1]))


class UnitRMSNorm(nn.Module):
    """``x / sqrt(mean(x^2) + eps) * scale`` over the last axis; the scale kept at norm sqrt(d).

    Written out rather than ``nn.RMSNorm`` so that it exports to ONNX at any opset.
    """

    def __init__(self, dim: int, ensemble: int = 0, eps: float = 1e-6) -> None:
        super().__init__()
        self.ensemble, self.eps = ensemble, eps
        self.weight = nn.Parameter(torch.ones(_member_shape(ensemble, dim)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, d) or (E, B, d) -> same shape."""
        return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + self.eps) * _broadcast(self.weight, self.ensemble)

    @torch.no_grad()
    def normalize_parameters(self) -> None:
        """Rescale the scale vector to norm sqrt(d)."""
        _rescale_to_radius([self.weight], math.sqrt(self.weight.shape[-1]))


class InvertedResidualBlock(nn.Module):
    """``x + ReLU(BN2(W2 ReLU(BN1(W1 x))))``, ``W1: h -> expansion h``, ``W2: expansion h -> h``."""

    def __init__(self, dim: int, expansion: int = 4, ensemble: int = 0, momentum: float = 0.01) -> None:
        super().__init__()
        self.w1 = UnitLinear(dim, expansion * dim, ensemble)
        self.norm1 = UnitBatchNorm(expansion * dim, ensemble, momentum)
        self.w2 = UnitLinear(expansion * dim, dim, ensemble)
        self.norm2 = UnitBatchNorm(dim, ensemble, momentum)

    def forward(self, x: torch.Tensor, training: bool) -> torch.Tensor:
        h = torch.relu(self.norm1(self.w1(x), training))
        return x + torch.relu(self.norm2(self.w2(h), training))


class Trunk(nn.Module):
    """Embedder (BN on the raw input, bias-free linear) -> blocks -> RMSNorm; output width h."""

    def __init__(
        self, in_dim: int, hidden_dim: int, num_blocks: int, expansion: int = 4, ensemble: int = 0,
        momentum: float = 0.01,
    ) -> None:
        super().__init__()
        self.input_norm = UnitBatchNorm(in_dim, ensemble, momentum)
        self.embed = UnitLinear(in_dim, hidden_dim, ensemble)
        self.blocks = nn.ModuleList(
            InvertedResidualBlock(hidden_dim, expansion, ensemble, momentum) for _ in range(num_blocks)
        )
        self.post_norm = UnitRMSNorm(hidden_dim, ensemble)

    def forward(self, x: torch.Tensor, training: bool) -> torch.Tensor:
        x = self.embed(self.input_norm(x, training))
        for block in self.blocks:
            x = block(x, training)
        return self.post_norm(x)


class _SquashedActor(nn.Module):
    """What both actors share: the action box and log-std bounds (:meth:`_init_box`), the
    equivariant pass over an observation and its mirror image (:meth:`forward`), the squash onto
    the box, the reparameterized sample, the held-noise exploration action and the deterministic
    action. A subclass calls :meth:`_init_box` and defines ``_heads(obs, training) -> (mean,
    raw)``, float32 (B, A) each, ``raw`` the log std before its bounding."""

    action_centre: torch.Tensor
    action_half_range: torch.Tensor
    entropy_units: str

    def _init_box(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        log_std_min: float,
        log_std_max: float,
        entropy_units: str,
        mirror: tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]] | None,
    ) -> int:
        """Check ``entropy_units``, keep the box and the log-std bounds, register the mirror;
        returns the number of actions A.

        Raises:
            ValueError: as the subclasses document.
        """
        if entropy_units not in ("action", "squashed"):
            raise ValueError(f"entropy_units must be 'action' or 'squashed', got {entropy_units!r}")
        self.entropy_units = entropy_units
        centre, half_range = _box(action_low, action_high)
        self.log_std_min, self.log_std_max = log_std_min, log_std_max
        self.register_buffer("action_centre", centre)
        self.register_buffer("action_half_range", half_range)
        self.equivariant = mirror is not None
        if mirror is not None:
            register_mirror(self, mirror, obs_dim, centre, half_range)
        return centre.shape[0]

    def _heads(self, obs: torch.Tensor, training: bool) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def forward(self, obs: torch.Tensor, training: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Gaussian parameters before the squash.

        Args:
            obs: (B, obs_dim) raw observations.
            training: batch statistics in the batch norms (and update their running statistics).

        Returns:
            mean: (B, A); log_std: (B, A) in ``[log_std_min, log_std_max]``; float32. In
            equivariant mode ``mean(M_o o) = M_a mean(o)`` and ``log_std(M_o o) = log_std(o)[..., perm_a]``.
        """
        if self.equivariant:
            rows = obs.shape[0]
            # one batch of 2B rows: the batch norms' statistics in training mode span both halves
            means, raws = self._heads(torch.cat((obs, mirror_observation(self, obs))), training)
            mean, raw = equivariant_average(self, means[:rows], raws[:rows], means[rows:], raws[rows:])
        else:
            mean, raw = self._heads(obs, training)
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (1.0 + torch.tanh(raw))
        return mean, log_std

    def squash(self, u: torch.Tensor) -> torch.Tensor:
        """Pre-tanh values (B, A) -> actions in the box."""
        return self.action_centre + self.action_half_range * torch.tanh(u)

    def sample(self, obs: torch.Tensor, training: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterized action (B, A) and its log-probability (B,), in nats, in the units named
        by ``entropy_units``."""
        mean, log_std = self(obs, training)
        u = mean + torch.exp(log_std) * torch.randn_like(mean)
        half_range = self.action_half_range if self.entropy_units == "action" else None
        return self.squash(u), squashed_gaussian_log_prob(u, mean, log_std, half_range)

    def explore(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Exploration action ``squash(mean + std * noise)`` with the given (held) noise (B, A);
        running statistics (the official code acts with ``training=False``)."""
        return self.explore_from(*self(obs, False), noise)

    def explore_from(self, mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """:meth:`explore`'s action from the Gaussian parameters :meth:`forward` returned:
        ``squash(mean + exp(log_std) * noise)``, all (B, A) float32."""
        return self.squash(mean + torch.exp(log_std) * noise)

    def deterministic_action(self, obs: torch.Tensor) -> torch.Tensor:
        """Evaluation action ``squash(mean)`` with running statistics, (B, A)."""
        mean, _ = self(obs, False)
        return self.squash(mean)


class FlashActor(_SquashedActor):
    """Tanh-squashed diagonal Gaussian policy on the env's action box, on a FlashSAC trunk.

    Args:
        obs_dim: actor observation size (raw: the input batch norm normalizes).
        action_low, action_high: (A,) bounds of the env's action box.
        hidden_dim, num_blocks, expansion, momentum: trunk settings.
        log_std_min, log_std_max: bounds of the pre-tanh log std.
        entropy_units: units of :meth:`sample`'s log-probability: ``"action"``, the env's action
            units (it includes the box's Jacobian ``-sum_i log(half_range_i)``), or ``"squashed"``,
            the ``[-1, 1]`` units of ``tanh(u)`` (see ``FlashSACConfig.entropy_units``).
        mirror: ``((obs_perm, obs_sign), (action_perm, action_sign))`` for equivariant mode, as
            :class:`unilab_rl.algorithms.sac.networks.Actor` takes it, or None. In equivariant
            mode the observations and their mirror images go through the trunk as one batch of
            2B rows (batch statistics over both in training mode), and ``mean(o) = (f(o) +
            M_a f(M_o o)) / 2``, the pre-tanh log std likewise with the action permutation alone
            (Abdolhosseini et al., MIG 2019, doi 10.1145/3359566.3360070).

    Raises:
        ValueError: bad action bounds or ``entropy_units``; a mirror whose sizes do not fit, that
            is not a signed permutation equal to its inverse, or an action box that is not its own
            mirror image.
    """

    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        hidden_dim: int = 128,
        num_blocks: int = 2,
        expansion: int = 4,
        momentum: float = 0.01,
        log_std_min: float = -10.0,
        log_std_max: float = 2.0,
        entropy_units: str = "action",
        mirror: tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> None:
        super().__init__()
        num_actions = self._init_box(obs_dim, action_low, action_high, log_std_min, log_std_max, entropy_units, mirror)
        self.trunk = Trunk(obs_dim, hidden_dim, num_blocks, expansion, 0, momentum)
        self.mean_head = UnitLinear(hidden_dim, num_actions)
        self.mean_bias = nn.Parameter(torch.zeros(num_actions))
        self.log_std_head = UnitLinear(hidden_dim, num_actions)
        self.log_std_bias = nn.Parameter(torch.zeros(num_actions))

    def _heads(self, obs: torch.Tensor, training: bool) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(obs, training)
        return (self.mean_head(h) + self.mean_bias).float(), (self.log_std_head(h) + self.log_std_bias).float()


class MLPActor(_SquashedActor):
    """SAC's tanh-Gaussian MLP actor behind FlashSAC's input batch norm (``FlashSACConfig.actor="mlp"``;
    not part of the FlashSAC paper).

    ``mean, raw = heads(MLP(BN(o)))``: one :class:`UnitBatchNorm` on the raw observation (the
    observation normalizer, as the first layer of FlashSAC's :class:`Trunk`), then
    :func:`unilab_rl.algorithms.sac.networks.mlp` (``Linear -> LayerNorm -> SiLU`` per width,
    PyTorch's default init) and two zero-initialized linear heads, so the first policy is centred
    in the box, as :class:`unilab_rl.algorithms.sac.networks.Actor` (FastSAC, arXiv 2512.01996);
    ``log_std = min + (max - min) (1 + tanh(raw)) / 2`` with SAC's bounds [-5, 0] by default. No
    layer is kept on a sphere: the learner does not project this actor's weights.

    Called as :class:`FlashActor` is (``forward(obs, training)``, :meth:`sample`, :meth:`explore`,
    :meth:`deterministic_action`), so the update's objectives, the collectors and export treat both
    alike.

    Args:
        obs_dim: actor observation size (raw).
        action_low, action_high: (A,) bounds of the env's action box.
        hidden: MLP widths.
        momentum: rate of the input batch norm's running statistics.
        log_std_min, log_std_max: bounds of the pre-tanh log std.
        entropy_units: as :class:`FlashActor`.
        mirror: as :class:`FlashActor`: in equivariant mode the observations and their mirror
            images pass the batch norm and the MLP as one batch of 2B rows, and the Gaussian's
            parameters are averaged over the pair.

    Raises:
        ValueError: ``hidden`` empty or a width below 1; as :class:`FlashActor` otherwise.
    """

    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        hidden: tuple[int, ...] = (512, 256, 128),
        momentum: float = 0.01,
        log_std_min: float = -5.0,
        log_std_max: float = 0.0,
        entropy_units: str = "action",
        mirror: tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> None:
        super().__init__()
        hidden = tuple(hidden)
        if not hidden or min(hidden) < 1:
            raise ValueError(f"MLPActor needs widths >= 1, got hidden={hidden!r}")
        num_actions = self._init_box(obs_dim, action_low, action_high, log_std_min, log_std_max, entropy_units, mirror)
        self.input_norm = UnitBatchNorm(obs_dim, 0, momentum)
        self.trunk = mlp(obs_dim, hidden)
        self.mean_head = nn.Linear(hidden[-1], num_actions)
        self.log_std_head = nn.Linear(hidden[-1], num_actions)
        for head in (self.mean_head, self.log_std_head):
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)

    def _heads(self, obs: torch.Tensor, training: bool) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(self.input_norm(obs, training))
        return self.mean_head(h).float(), self.log_std_head(h).float()


class CategoricalCritic(nn.Module):
    """``num_qs`` distributional Q-functions over a fixed support, run as one batched network.

    Each critic reads ``concat(obs, action)`` (raw; the input batch norm normalizes) and outputs
    logits over ``num_bins`` atoms ``linspace(v_min, v_max, num_bins)``; its Q-value is the
    expectation of the atoms under ``softmax(logits)``.

    Args:
        obs_dim: critic observation size.
        num_actions: A.
        hidden_dim, num_blocks, expansion, momentum: trunk settings.
        num_bins, v_min, v_max: the support.
        num_qs: number of critics E (2: clipped double Q).
    """

    support: torch.Tensor

    def __init__(
        self,
        obs_dim: int,
        num_actions: int,
        hidden_dim: int = 256,
        num_blocks: int = 2,
        expansion: int = 4,
        momentum: float = 0.01,
        num_bins: int = 101,
        v_min: float = -5.0,
        v_max: float = 5.0,
        num_qs: int = 2,
    ) -> None:
        super().__init__()
        self.num_qs = num_qs
        self.trunk = Trunk(obs_dim + num_actions, hidden_dim, num_blocks, expansion, num_qs, momentum)
        self.value_head = UnitLinear(hidden_dim, num_bins, num_qs)
        self.value_bias = nn.Parameter(torch.zeros(num_qs, num_bins))
        self.register_buffer("support", torch.linspace(v_min, v_max, num_bins))

    def forward(self, obs: torch.Tensor, action: torch.Tensor, training: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Q-values and log-probabilities over the atoms.

        Args:
            obs: (B, obs_dim); action: (B, A) in the env's units.
            training: batch statistics in the batch norms (and update their running statistics).

        Returns:
            q: (E, B) float32; log_probs: (E, B, num_bins) float32.
        """
        x = torch.cat([obs, action], dim=-1).expand(self.num_qs, -1, -1)  # (E, B, obs_dim + A)
        logits = self.value_head(self.trunk(x, training)) + self.value_bias.unsqueeze(-2)  # (E, B, K)
        log_probs = torch.log_softmax(logits.float(), dim=-1)
        q = (log_probs.exp() * self.support).sum(-1)
        return q, log_probs


class MLPCritic(nn.Module):
    """``num_qs`` scalar soft Q-functions, SAC's MLP critic behind FlashSAC's input batch norm
    (``FlashSACConfig.critic="mlp"``; not part of the FlashSAC paper).

    ``q_e(s, a) = head_e(MLP_e(BN(concat(s, a))))``: one :class:`UnitBatchNorm` on the raw
    ``concat(obs, action)`` shared by the critics (the observation normalizer, as the first layer
    of FlashSAC's :class:`Trunk`; its statistics are the same for every member, so one suffices),
    then per critic :func:`unilab_rl.algorithms.sac.networks.mlp` (``Linear -> LayerNorm -> SiLU``
    per width, PyTorch's default init, as :class:`unilab_rl.algorithms.sac.networks.Critic`) and a
    ``Linear(hidden[-1], 1)`` head. Twin critics for clipped double Q (Fujimoto et al. 2018,
    arXiv 1802.09477; SAC: Haarnoja et al. 2018, arXiv 1812.05905). No layer is kept on a sphere:
    the learner does not project this critic's weights. Actions enter in the env's units; the
    batch norm's per-feature affine map makes a rescaling of them irrelevant.

    Called as :class:`CategoricalCritic` is, so the update's objectives and the compiled and
    captured steps treat both alike: ``critic(obs, action, training) -> (q, None)``.

    Args:
        obs_dim: critic observation size (raw).
        num_actions: A.
        hidden: widths of each Q MLP.
        momentum: rate of the input batch norm's running statistics.
        num_qs: number of critics E (2: clipped double Q).

    Raises:
        ValueError: ``hidden`` empty or a width below 1, or ``num_qs < 1``.
    """

    def __init__(
        self,
        obs_dim: int,
        num_actions: int,
        hidden: tuple[int, ...] = (768, 384, 192),
        momentum: float = 0.01,
        num_qs: int = 2,
    ) -> None:
        super().__init__()
        hidden = tuple(hidden)
        if not hidden or min(hidden) < 1 or num_qs < 1:
            raise ValueError(f"MLPCritic needs widths >= 1 and num_qs >= 1, got hidden={hidden!r}, num_qs={num_qs!r}")
        self.num_qs = num_qs
        in_dim = obs_dim + num_actions
        self.input_norm = UnitBatchNorm(in_dim, 0, momentum)
        self.qs = nn.ModuleList(nn.Sequential(mlp(in_dim, hidden), nn.Linear(hidden[-1], 1)) for _ in range(num_qs))

    def forward(self, obs: torch.Tensor, action: torch.Tensor, training: bool) -> tuple[torch.Tensor, None]:
        """Q-values of every critic.

        Args:
            obs: (B, obs_dim) raw; action: (B, A) in the env's units.
            training: batch statistics in the input batch norm (and update its running statistics);
                False: its running statistics.

        Returns:
            q: (E, B) float32, in the units of the rewards it was trained on (raw); ``None`` in
            place of :class:`CategoricalCritic`'s log-probabilities.
        """
        x = self.input_norm(torch.cat([obs, action], dim=-1), training)  # (B, obs_dim + A)
        return torch.stack([q(x).squeeze(-1) for q in self.qs]).float(), None  # (E, B)


class TrunkCritic(nn.Module):
    """``num_qs`` scalar soft Q-functions on FlashSAC's trunks (``FlashSACConfig.critic="trunk"``;
    an ablation, not part of the FlashSAC paper).

    ``q_e(s, a) = w_e . Trunk_e(concat(s, a)) + b_e``: the :class:`CategoricalCritic`'s trunk (input
    batch norm, unit-norm embedding, inverted residual blocks with batch norms, RMSNorm), whose
    layers the learner projects as the categorical critic's, and in place of its distributional
    head a plain linear scalar head per critic, trained as :class:`MLPCritic` is (the mean squared
    soft TD error on raw rewards). It separates the two parts in which FlashSAC's critic differs
    from SAC's: the trunk and the categorical head with its cross-entropy loss. The head is not
    kept on the unit sphere: the trunk's output has norm about ``sqrt(hidden_dim)``, so a unit-norm
    head would bound ``|Q|`` near that, below raw returns. Its init is PyTorch's ``nn.Linear``
    default, ``U(-1/sqrt(h), 1/sqrt(h))`` for weight and bias.

    Called as :class:`CategoricalCritic` is: ``critic(obs, action, training) -> (q, None)``.

    Args:
        obs_dim: critic observation size (raw).
        num_actions: A.
        hidden_dim, num_blocks, expansion, momentum: trunk settings (as :class:`CategoricalCritic`).
        num_qs: number of critics E (2: clipped double Q).
    """

    def __init__(
        self,
        obs_dim: int,
        num_actions: int,
        hidden_dim: int = 256,
        num_blocks: int = 2,
        expansion: int = 4,
        momentum: float = 0.01,
        num_qs: int = 2,
    ) -> None:
        super().__init__()
        self.num_qs = num_qs
        self.trunk = Trunk(obs_dim + num_actions, hidden_dim, num_blocks, expansion, num_qs, momentum)
        bound = 1.0 / math.sqrt(hidden_dim)
        self.head_weight = nn.Parameter(torch.empty(num_qs, hidden_dim).uniform_(-bound, bound))
        self.head_bias = nn.Parameter(torch.empty(num_qs).uniform_(-bound, bound))

    def forward(self, obs: torch.Tensor, action: torch.Tensor, training: bool) -> tuple[torch.Tensor, None]:
        """Q-values of every critic.

        Args:
            obs: (B, obs_dim) raw; action: (B, A) in the env's units.
            training: batch statistics in the trunk's batch norms (and update their running
                statistics); False: their running statistics.

        Returns:
            q: (E, B) float32 in raw reward units; ``None`` in place of the log-probabilities.
        """
        x = torch.cat([obs, action], dim=-1).expand(self.num_qs, -1, -1)  # (E, B, obs_dim + A)
        h = self.trunk(x, training)  # (E, B, hidden_dim)
        q = (h @ self.head_weight.to(h.dtype).unsqueeze(-1)).squeeze(-1)  # (E, B)
        return (q.float() + self.head_bias.unsqueeze(-1)), None


class DeterministicPolicy(nn.Module):
    """Deployment policy: raw actor observation -> ``squash(mean)``, batch norms on running
    statistics (the input batch norm is the observation normalizer). Shares the actor's weights."""

    def __init__(self, actor: FlashActor | MLPActor) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, obs_dim) raw float32 -> (B, A) float32 in the env's units."""
        return self.actor.deterministic_action(obs)


class ExplorationPolicy(nn.Module):
    """Collection policy: raw actor observation -> ``squash(mean + std * held_noise)`` on running
    statistics, as :meth:`FlashSAC.act` does. Shares the actor (and the held noise) it is given.

    The async collector runs a CPU deep copy: its floating-point state (weights *and* the batch
    norms' running statistics, which are the observation normalizer) is refreshed from the
    learner's broadcasts, and its copy of the :class:`~unilab_rl.algorithms.flashsac.exploration.HeldNoise`
    holds the noise on the collector's side (a copy starts without noise; the noise is drawn on
    the observations' device).

    Args:
        actor: the :class:`FlashActor` or :class:`MLPActor`.
        noise: a :class:`~unilab_rl.algorithms.flashsac.exploration.HeldNoise` (a plain attribute,
            not module state: it is not broadcast).
    """

    def __init__(self, actor: FlashActor | MLPActor, noise) -> None:
        super().__init__()
        self.actor = actor
        self.noise = noise

    @torch.no_grad()
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, obs_dim) raw float32 -> (B, A) float32 exploration action in the env's units (the
        noise is drawn from torch's global RNG of ``obs``'s device): ``explore_from(*gaussian(obs))``."""
        return self.explore_from(*self.gaussian(obs))

    @torch.no_grad()
    def gaussian(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The deterministic half of :meth:`forward`: (B, obs_dim) raw float32 -> ``(mean,
        log_std)``, (B, A) float32 each, on running statistics. No randomness: the async
        runtime's acting server runs this part (``runtime.policy_device=server``)."""
        return self.actor(obs, False)

    @torch.no_grad()
    def explore_from(self, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
        """The random half of :meth:`forward`: ``(mean, log_std)`` (B, A) float32 from
        :meth:`gaussian` -> (B, A) float32 ``squash(mean + std * held_noise)``, the held noise
        taken (or redrawn) on ``mean``'s device from :attr:`noise`."""
        return self.actor.explore_from(mean, log_std, self.noise(mean.shape[0], mean.device))

    @torch.no_grad()
    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, obs_dim) raw float32 -> (B, A) float32 ``squash(mean)`` on running statistics."""
        return self.actor.deterministic_action(obs)


class WeightProjection:
    """The unit-norm projections of every layer inside a module, applied together in place.

    Built once per network: :meth:`__call__` is what :func:`normalize_parameters` does, with the
    tensors gathered up front and the elementwise work batched into ``torch._foreach_*`` calls
    (one launch for all tensors where shapes allow), instead of one module method call, and its
    casts and temporaries, per layer. Results equal the per-layer methods' to float rounding.

    Projections (FlashSAC, official ``flash_rl/agents/flashSAC/layer.py``, ``normalize_parameters``):

    * :class:`UnitLinear`: each weight row to unit L2 norm, ``w / max(|w|, 1e-8)``;
    * :class:`UnitBatchNorm`: (scale, shift) jointly to norm ``sqrt(d)``;
    * :class:`UnitRMSNorm`: the scale to norm ``sqrt(d)``.

    Args:
        module: the network; its layers are found once, here.
    """

    def __init__(self, module: nn.Module) -> None:
        layers = list(module.modules())
        self.rows = [m.weight for m in layers if isinstance(m, UnitLinear)]
        norms = [m for m in layers if isinstance(m, (UnitBatchNorm, UnitRMSNorm))]
        self.scales = [m.weight for m in norms]  # every norm layer's scale ...
        self.has_shift = [isinstance(m, UnitBatchNorm) for m in norms]
        self.shifts = [m.bias for m in norms if isinstance(m, UnitBatchNorm)]  # ... and the batch norms' shifts
        self.radii = [math.sqrt(m.weight.shape[-1]) for m in norms]

    @torch.no_grad()
    def __call__(self) -> None:
        """Project every weight in place."""
        if self.rows:
            row_norms = [torch.linalg.vector_norm(w, dim=-1, keepdim=True) for w in self.rows]
            torch._foreach_clamp_min_(row_norms, 1e-8)
            torch._foreach_div_(self.rows, row_norms)
        if self.scales:
            squares = torch._foreach_mul(self.scales, self.scales)
            if self.shifts:
                torch._foreach_addcmul_([q for q, has in zip(squares, self.has_shift) if has], self.shifts, self.shifts)
            sq = [q.sum(-1, keepdim=True) for q in squares]  # (..., 1): |scale|^2 (+ |shift|^2)
            torch._foreach_add_(sq, 1e-8)
            torch._foreach_rsqrt_(sq)
            torch._foreach_mul_(sq, self.radii)
            torch._foreach_mul_(self.scales, sq)
            if self.shifts:
                torch._foreach_mul_(self.shifts, [f for f, has in zip(sq, self.has_shift) if has])


def normalize_parameters(module: nn.Module) -> None:
    """Apply every unit-norm projection inside ``module`` (after init and each optimizer step);
    see :class:`WeightProjection`, which a training loop builds once and calls instead."""
    WeightProjection(module)()


__all__ = [
    "CategoricalCritic", "DeterministicPolicy", "ExplorationPolicy", "FlashActor", "InvertedResidualBlock",
    "MLPActor", "MLPCritic", "Trunk", "TrunkCritic", "UnitBatchNorm", "UnitLinear", "UnitRMSNorm", "WeightProjection", "normalize_parameters",
]
